import BackgroundableTesting
import Dispatch
import Foundation
import Synchronization

@testable import Backgroundable

/// Waits for `operation` with Foundation's own `waitUntilFinished()` — which only
/// returns once the operation sent its `isFinished` change notification — on a thread
/// of its own. Not on a Dispatch thread: on Linux the cooperative pool *is* Dispatch's
/// global pool, and blocking its few threads stalls every task for seconds.
func waitUntilFinished(_ operation: Operation) async {
    await withCheckedContinuation { continuation in
        Thread.detachNewThread {
            operation.waitUntilFinished()
            continuation.resume()
        }
    }
}

/// `waitUntilAllOperationsAreFinished()`, off the cooperative pool.
func waitUntilAllOperationsAreFinished(_ queue: OperationQueue) async {
    await withCheckedContinuation { continuation in
        Thread.detachNewThread {
            queue.waitUntilAllOperationsAreFinished()
            continuation.resume()
        }
    }
}

/// Runs `body` on a thread of its own (for the blocking, `noasync` APIs) and waits for it.
func offThePool(_ body: @escaping @Sendable () -> Void) async {
    await withCheckedContinuation { continuation in
        Thread.detachNewThread {
            body()
            continuation.resume()
        }
    }
}

/// A delegate that records the two notifications, in order.
final class RecordingOperationQueueDelegate: BackgroundOperationQueueDelegate {
    enum Call: Equatable, Sendable { case willStart, didFinish }

    nonisolated let calls = Recorder<Call>()
    nonisolated let concurrentCalls = Gauge()

    nonisolated init() {}

    func backgroundQueueWillStartOperations(_ queue: BackgroundOperationQueue) {
        concurrentCalls.enter()
        calls.append(.willStart)
        concurrentCalls.leave()
    }

    func backgroundQueueDidFinishOperations(_ queue: BackgroundOperationQueue) {
        concurrentCalls.enter()
        calls.append(.didFinish)
        concurrentCalls.leave()
    }
}

/// A background queue that records its background-time calls.
func makeOperationQueue(
    _ name: String = "test"
) -> (BackgroundOperationQueue, RecordingBackgroundTaskProvider) {
    let provider = RecordingBackgroundTaskProvider()
    return (BackgroundOperationQueue(name: name, backgroundTaskProvider: provider), provider)
}

/// An operation that signals when its closure started and finishes only when released
/// (no timeout unless given: a slow sanitizer run must not time it out behind the test).
func gatedOperation(
    name: String? = nil,
    timeout: TimeInterval = .infinity,
    uniquenessPolicy: UniquenessPolicy = .ignore,
    started: Signal,
    release: Signal
) -> AsyncOperation {
    AsyncOperation(name: name, timeout: timeout, uniquenessPolicy: uniquenessPolicy) { operation in
        started.signal()
        Task {
            await release.wait()
            operation.finish()
        }
    }
}

/// `true` when every begin was ended, in order, and nothing is held.
func isBalanced(_ provider: RecordingBackgroundTaskProvider) -> Bool {
    var held: BackgroundTaskIdentifier?
    for entry in provider.log {
        switch entry {
        case .began(let identifier, _):
            guard held == nil else { return false }
            held = identifier
        case .ended(let identifier):
            guard held == identifier else { return false }
            held = nil
        }
    }
    return held == nil && provider.unbalancedEndCount == 0
}
