import Dispatch
import Foundation
import Testing

@testable import Backgroundable

/// The 1.x README examples, adapted only by the documented renames (the 1.x
/// `BackgroundQueue` class is `BackgroundOperationQueue`, its delegate protocol is
/// `BackgroundOperationQueueDelegate`; closures are `@Sendable`).
@Suite(.timeLimit(.minutes(1)))
struct LegacyReadmeTests {
    // "Run something in the background" — OperationQueue.background.addOperation { }
    @Test func addOperationOnTheBackgroundQueue() async {
        let done = Signal()
        let ranOffMain = Recorder<Bool>()
        OperationQueue.background.addOperation {
            ranOffMain.append(!Thread.isMainThread)
            done.signal()
        }
        await done.wait()
        #expect(ranOffMain.all == [true])
    }

    // "Async operations" — AsyncOperation, finished by calling finish()
    @Test func asyncOperationFinishedByHand() async {
        let operation = AsyncOperation { operation in
            DispatchQueue.global().async {
                // ... some asynchronous work ...
                operation.finish()
            }
        }
        OperationQueue.background.addOperation(operation)
        await waitUntilFinished(operation)
        #expect(operation.currentOutcome?.kind == .finished)
    }

    // OperationQueue.background.addAsyncOperation { operation in ... }
    @Test func addAsyncOperation() async {
        let operation = OperationQueue.background.addAsyncOperation { operation in
            operation.finish()
        }
        await waitUntilFinished(operation)
        #expect(operation.currentOutcome?.kind == .finished)
    }

    // "Timeouts" — AsyncOperation(timeout:onTimeoutCallback:)
    @Test func timeoutCallback() async {
        let timedOut = Signal()
        let operation = AsyncOperation(timeout: 0.05, onTimeoutCallback: { _ in timedOut.signal() }) { _ in }
        OperationQueue.background.addOperation(operation)
        await timedOut.wait()
        #expect(operation.isFinished)
    }

    // "Sequential operations" — addSequentialOperations(_:waitUntilFinished:)
    @Test func sequentialOperations() async {
        let order = Recorder<Int>()
        let operations: [Operation] = [
            BlockOperation { order.append(1) },
            AsyncOperation { operation in
                DispatchQueue.global().async {
                    order.append(2)
                    operation.finish()
                }
            },
            BlockOperation { order.append(3) },
        ]
        await offThePool {
            OperationQueue.background.addSequentialOperations(operations, waitUntilFinished: false)
        }
        await waitUntilFinished(operations[2])
        #expect(order.all == [1, 2, 3])
    }

    // "Uniqueness" — named operations with a uniqueness policy
    @Test func uniquenessPolicies() async {
        let queue = BackgroundOperationQueue()
        queue.isSuspended = true
        let first = AsyncOperation(name: "refresh", uniquenessPolicy: .drop) { $0.finish() }
        let second = AsyncOperation(name: "refresh", uniquenessPolicy: .drop) { $0.finish() }
        queue.addOperation(first)
        queue.addOperation(second)
        queue.isSuspended = false
        await queue.waitUntilIdle()
        #expect(first.currentOutcome?.kind == .finished)
        #expect(second.currentOutcome?.kind == .dropped)
    }

    @available(*, deprecated, message: "exercises the deprecated 1.x alias")
    private func legacyPolicy() -> AsyncOperationUniquenessPolicy { .replace }

    @available(*, deprecated, message: "exercises the deprecated 1.x alias")
    @Test func theOldPolicyNameStillCompiles() {
        let operation = AsyncOperation(name: "old", uniquenessPolicy: legacyPolicy()) { $0.finish() }
        #expect(operation.uniquenessPolicy == .replace)
    }

    // "Background queue delegate" — a custom queue with a delegate
    @Test func customQueueWithDelegate() async {
        let queue = BackgroundOperationQueue()
        let delegate = RecordingOperationQueueDelegate()
        queue.delegate = delegate
        queue.addOperation {}
        await queue.waitUntilIdle()
        await mainActorDeliveries()
        #expect(delegate.calls.all == [.willStart, .didFinish])
    }

    // "Convenience functions" — inTheBackground { } and onTheMainThread { }
    @MainActor
    @Test func inTheBackgroundThenOnTheMainThread() async {
        let key = DispatchSpecificKey<Bool>()
        DispatchQueue.main.setSpecific(key: key, value: true)
        let backgroundWasOffMain = Recorder<Bool>()
        let mainWasOnMain = Recorder<Bool>()
        let done = Signal()
        inTheBackground {
            backgroundWasOffMain.append(DispatchQueue.getSpecific(key: key) == nil)
            onTheMainThread {
                mainWasOnMain.append(DispatchQueue.getSpecific(key: key) == true)
                done.signal()
            }
        }
        await done.wait()
        #expect(backgroundWasOffMain.all == [true])
        #expect(mainWasOnMain.all == [true])
    }
}
