import BackgroundableTesting
import Dispatch
import Foundation
import Testing

@testable import Backgroundable

@Suite(.timeLimit(.minutes(1)))
struct BackgroundOperationQueueTests {
    @Test func unnamedOperationsIgnorePolicies() async {
        let (queue, _) = makeOperationQueue()
        let ran = Recorder<Int>()
        let operations = (0..<3).map { index in
            AsyncOperation(uniquenessPolicy: index == 1 ? .drop : .replace) { operation in
                ran.append(index)
                operation.finish()
            }
        }
        for operation in operations { queue.addOperation(operation) }
        await queue.waitUntilIdle()
        #expect(ran.all.sorted() == [0, 1, 2])
        #expect(operations.allSatisfy { $0.currentOutcome?.kind == .finished })
    }

    @Test func ignoreIsTheDefaultAndSameNamesAllRun() async {
        let (queue, _) = makeOperationQueue()
        let ran = Recorder<Int>()
        queue.isSuspended = true
        for index in 0..<3 {
            queue.addAsyncOperation(name: "same") { operation in
                ran.append(index)
                operation.finish()
            }
        }
        queue.isSuspended = false
        await queue.waitUntilIdle()
        #expect(ran.count == 3)
    }

    @Test func dropKeepsTheFirstOfSeveralLiveOperations() async {
        let (queue, _) = makeOperationQueue()
        let ran = Recorder<Int>()
        queue.isSuspended = true
        let operations = (0..<4).map { index in
            queue.addAsyncOperation(name: "sync", uniquenessPolicy: .drop) { operation in
                ran.append(index)
                operation.finish()
            }
        }
        // Dropped ones are observable at once, before the queue even runs.
        #expect(operations.dropFirst().allSatisfy { $0.currentOutcome?.kind == .dropped })
        #expect(operations.dropFirst().allSatisfy { $0.isCancelled })
        #expect(operations[0].currentOutcome == nil)
        queue.isSuspended = false
        await queue.waitUntilIdle()
        #expect(ran.all == [0])
        #expect(operations.allSatisfy { $0.isFinished })  // dropped ones were finished by the queue
        #expect(operations[0].currentOutcome?.kind == .finished)
    }

    @Test func dropIsAtomicUnderRacingAdds() async {
        let (queue, _) = makeOperationQueue()
        queue.isSuspended = true
        let added = Recorder<AsyncOperation>()
        await offThePool {
            DispatchQueue.concurrentPerform(iterations: 64) { _ in
                added.append(queue.addAsyncOperation(name: "race", uniquenessPolicy: .drop) { $0.finish() })
            }
        }
        let survivors = added.all.filter { $0.currentOutcome?.kind != .dropped }
        #expect(survivors.count == 1)
        queue.isSuspended = false
        await queue.waitUntilIdle()
        #expect(survivors.first?.currentOutcome?.kind == .finished)
    }

    /// An operation cancelled before it was added is admitted (Foundation finishes it
    /// once its queue gets to it), but its name is free at once: a later `.drop` of that
    /// name is not dropped.
    @Test func anOperationCancelledBeforeItsAddLeavesItsNameFree() async {
        let (queue, _) = makeOperationQueue()
        queue.isSuspended = true
        let cancelled = AsyncOperation(name: "sync") { $0.finish() }
        cancelled.cancel()
        queue.addOperation(cancelled)
        let ran = Signal()
        let next = queue.addAsyncOperation(name: "sync", uniquenessPolicy: .drop) { operation in
            ran.signal()
            operation.finish()
        }
        #expect(next.currentOutcome == nil, "dropped beside an operation that was cancelled")
        queue.isSuspended = false
        await queue.waitUntilIdle()
        #expect(ran.isSignalled && next.currentOutcome?.kind == .finished)
    }

    @Test func replaceKeepsTheLastAndCancelsExecutingAndPendingOnes() async {
        let (queue, _) = makeOperationQueue()
        let started = Signal()
        let first = gatedOperation(name: "save", uniquenessPolicy: .replace, started: started, release: Signal())
        queue.addOperation(first)
        await started.wait()
        #expect(first.isExecuting)

        queue.isSuspended = true
        let ran = Recorder<Int>()
        let second = queue.addAsyncOperation(name: "save", uniquenessPolicy: .replace) { operation in
            ran.append(2)
            operation.finish()
        }
        // The executing one was replaced: cancelled at once.
        #expect(first.currentOutcome?.kind == .replaced)
        #expect(first.isCancelled)
        let third = queue.addAsyncOperation(name: "save", uniquenessPolicy: .replace) { operation in
            ran.append(3)
            operation.finish()
        }
        #expect(second.isCancelled)
        #expect(second.currentOutcome?.kind == .replaced)
        queue.isSuspended = false
        await queue.waitUntilIdle()
        #expect(ran.all == [3])
        #expect(first.isFinished && second.isFinished && third.isFinished)
        #expect(third.currentOutcome?.kind == .finished)
    }

    /// A replaced operation whose closure still runs (here it blocks its Foundation
    /// thread) reports `isFinished` only once the closure returned: the newcomer, which
    /// depends on it, never runs its closure beside it.
    @Test func aReplacedOperationFinishesOnlyOnceItsClosureReturned() async {
        let (queue, _) = makeOperationQueue()
        let firstStarted = Signal()
        let secondStarted = Signal()
        let firstReturned = Signal()
        let overlapped = Signal()
        let releaseFirst = DispatchSemaphore(value: 0)
        let first = AsyncOperation(name: "n", timeout: .infinity) { operation in
            firstStarted.signal()
            releaseFirst.wait()  // a Foundation thread, not the cooperative pool
            firstReturned.signal()
            operation.finish()
        }
        queue.addOperation(first)
        await firstStarted.wait()
        let second = AsyncOperation(name: "n", timeout: .infinity, uniquenessPolicy: .replace) { operation in
            if !firstReturned.isSignalled { overlapped.signal() }
            secondStarted.signal()
            operation.finish()
        }
        queue.addOperation(second)
        // Replaced at once, but not finished while its closure runs: the newcomer, which
        // depends on it, cannot start.
        #expect(first.currentOutcome?.kind == .replaced)
        #expect(!first.isFinished)
        releaseFirst.signal()
        await secondStarted.wait()
        await queue.waitUntilIdle()
        #expect(first.isFinished && second.isFinished)
        #expect(second.currentOutcome?.kind == .finished)
        #expect(!overlapped.isSignalled, "the newcomer's closure ran while the replaced one's still ran")
    }

    /// The table of replaced operations (swept under the queue's lock) never holds the
    /// last reference to one: a subclass's `deinit` never runs under the lock.
    @Test func aReplacedOperationIsNotKeptAliveByTheQueue() {
        weak var released: Operation?
        let replaced: ReplacedOperation
        do {
            let operation = BlockOperation {}
            released = operation
            replaced = ReplacedOperation(operation)
            #expect(!replaced.hasReturned)
        }
        #expect(released == nil)
        #expect(replaced.hasReturned)
        replaced.watch()  // nothing to watch: already counts as returned
        #expect(replaced.hasReturned)
    }

    /// The same for an operation wrapping a unit (`addTask`): a replaced unit's async
    /// body that ignores its cancellation keeps its operation unfinished until it
    /// returns, so the newcomer's body never runs beside it.
    @Test func aReplacedWrappedUnitFinishesOnlyOnceItsBodyReturned() async {
        let (queue, _) = makeOperationQueue()
        let firstStarted = Signal()
        let releaseFirst = Signal()
        let firstReturned = Signal()
        let secondStarted = Signal()
        let overlapped = Signal()
        let first = AsyncTaskHandle(.init(name: "n", timeout: nil)) {
            firstStarted.signal()
            await releaseFirst.wait()  // not cancellable: the body outlives its unit
            firstReturned.signal()
        }
        let firstOperation = queue.addTask(first.task)
        await firstStarted.wait()
        let second = AsyncTaskHandle(.init(name: "n", timeout: nil, uniquenessPolicy: .replace)) {
            if !firstReturned.isSignalled { overlapped.signal() }
            secondStarted.signal()
        }
        let secondOperation = queue.addTask(second.task)
        #expect(first.task.currentOutcome?.kind == .replaced)
        #expect(!firstOperation.isFinished)
        // A bound, not an ordering: with the defect, the newcomer runs before the release.
        #expect(await secondStarted.wait(upTo: .milliseconds(200)) == false)
        releaseFirst.signal()
        await queue.waitUntilIdle()
        #expect(firstOperation.isFinished && secondOperation.isFinished)
        #expect(second.task.currentOutcome?.kind == .finished)
        #expect(!overlapped.isSignalled, "the newcomer's body ran while the replaced one's still ran")
    }

    @Test func finishedAndCancelledOperationsDoNotBlockANewcomer() async {
        let (queue, _) = makeOperationQueue()
        let done = queue.addAsyncOperation(name: "a") { $0.finish() }
        await waitUntilFinished(done)
        let afterFinished = queue.addAsyncOperation(name: "a", uniquenessPolicy: .drop) { $0.finish() }
        #expect(afterFinished.currentOutcome?.kind != .dropped)

        queue.isSuspended = true
        let cancelled = queue.addAsyncOperation(name: "b") { $0.finish() }
        cancelled.cancel()
        let afterCancelled = queue.addAsyncOperation(name: "b", uniquenessPolicy: .drop) { $0.finish() }
        #expect(afterCancelled.currentOutcome?.kind != .dropped)
        queue.isSuspended = false
        await queue.waitUntilIdle()
        #expect(afterFinished.currentOutcome?.kind == .finished)
        #expect(afterCancelled.currentOutcome?.kind == .finished)
        #expect(cancelled.currentOutcome?.kind == .cancelled)
    }

    @Test func plainNamedOperationsCountAsLiveWithIgnoreSemantics() async {
        let (queue, _) = makeOperationQueue()
        queue.isSuspended = true
        let plain = BlockOperation {}
        plain.name = "x"
        let plainTwin = BlockOperation {}
        plainTwin.name = "x"
        queue.addOperation(plain)
        queue.addOperation(plainTwin)  // plain operations never drop each other
        let dropped = queue.addAsyncOperation(name: "x", uniquenessPolicy: .drop) { $0.finish() }
        #expect(dropped.currentOutcome?.kind == .dropped)
        let replacing = queue.addAsyncOperation(name: "x", uniquenessPolicy: .replace) { $0.finish() }
        #expect(plain.isCancelled && plainTwin.isCancelled)
        queue.isSuspended = false
        await queue.waitUntilIdle()
        #expect(replacing.currentOutcome?.kind == .finished)
    }

    /// A plain operation cancelled while its queue is suspended (Foundation finishes it
    /// only once the queue resumes) no longer counts for its name, as a cancelled
    /// ``AsyncOperation`` does not.
    @Test func aCancelledPlainOperationNoLongerCountsForItsName() async {
        let (queue, _) = makeOperationQueue()
        queue.isSuspended = true
        let plain = BlockOperation {}
        plain.name = "x"
        queue.addOperation(plain)
        plain.cancel()
        let afterDrop = queue.addAsyncOperation(name: "x", uniquenessPolicy: .drop) { $0.finish() }
        #expect(afterDrop.currentOutcome == nil)
        let cancelled = BlockOperation {}
        cancelled.name = "y"
        queue.addOperations([cancelled], waitUntilFinished: false)
        cancelled.cancel()
        let afterBatch = AsyncOperation(name: "y", uniquenessPolicy: .drop) { $0.finish() }
        queue.addOperations([afterBatch], waitUntilFinished: false)
        #expect(afterBatch.currentOutcome == nil)
        queue.isSuspended = false
        await queue.waitUntilIdle()
        #expect(afterDrop.currentOutcome?.kind == .finished)
        #expect(afterBatch.currentOutcome?.kind == .finished)
    }

    /// A plain operation cancelled while it executes still counts: its `main()` runs on.
    @Test func aPlainOperationCancelledWhileExecutingCountsUntilItFinished() async {
        let (queue, _) = makeOperationQueue()
        let started = Signal()
        let release = DispatchSemaphore(value: 0)
        let plain = BlockOperation {
            started.signal()
            release.wait()  // a Foundation thread, not the cooperative pool
        }
        plain.name = "x"
        queue.addOperation(plain)
        await started.wait()
        plain.cancel()
        let dropped = queue.addAsyncOperation(name: "x", uniquenessPolicy: .drop) { $0.finish() }
        #expect(dropped.currentOutcome?.kind == .dropped)
        release.signal()
        await queue.waitUntilIdle()
    }

    @Test func suspensionIsCounted() async {
        let (queue, _) = makeOperationQueue()
        queue.isSuspended = true
        queue.isSuspended = true
        queue.isSuspended = true
        let operation = queue.addAsyncOperation { $0.finish() }
        queue.isSuspended = false
        #expect(queue.isSuspended)
        queue.isSuspended = false
        #expect(queue.isSuspended)
        #expect(!operation.isExecuting && !operation.isFinished)
        queue.isSuspended = false
        #expect(!queue.isSuspended)
        await waitUntilFinished(operation)
        #expect(operation.currentOutcome?.kind == .finished)

        queue.isSuspended = false  // extra: ignored, not banked
        queue.isSuspended = true
        #expect(queue.isSuspended)
        queue.isSuspended = false
        #expect(!queue.isSuspended)
    }

    @Test func delegateSeesBusyAndIdleInOrderExactlyOncePerPeriodUnderLoad() async {
        let (queue, provider) = makeOperationQueue()
        let delegate = RecordingOperationQueueDelegate()
        queue.delegate = delegate
        let operations = Recorder<AsyncOperation>()
        for _ in 0..<20 {
            await offThePool {
                DispatchQueue.concurrentPerform(iterations: 8) { index in
                    let operation = AsyncOperation(timeout: .infinity) { operation in
                        if index.isMultiple(of: 2) {
                            DispatchQueue.global().async { operation.finish() }
                        } else {
                            operation.finish()
                        }
                    }
                    operations.append(operation)
                    queue.addOperation(operation)
                }
            }
        }
        await queue.waitUntilIdle()
        await mainActorDeliveries()
        #expect(operations.all.allSatisfy { $0.currentOutcome?.kind == .finished })
        let calls = delegate.calls.all
        #expect(!calls.isEmpty)
        #expect(calls.count.isMultiple(of: 2))
        #expect(calls.enumerated().allSatisfy { $0.element == ($0.offset.isMultiple(of: 2) ? .willStart : .didFinish) })
        #expect(delegate.concurrentCalls.maximum == 1)
        // One background-time assertion per busy period, never leaked.
        #expect(provider.log.count == calls.count)
        #expect(isBalanced(provider))
        #expect(!queue.isBusy)
    }

    @Test func aDelegateSetWhileBusyHearsTheNextPeriodInPairs() async {
        let (queue, _) = makeOperationQueue()
        let first = RecordingOperationQueueDelegate()
        let second = RecordingOperationQueueDelegate()
        queue.delegate = first
        let started = Signal()
        let release = Signal()
        queue.addOperation(gatedOperation(started: started, release: release))
        await started.wait()  // the period's will-start went to `first`
        queue.delegate = second
        release.signal()
        await queue.waitUntilIdle()
        queue.addOperation {}
        await queue.waitUntilIdle()
        await mainActorDeliveries()
        #expect(first.calls.all == [.willStart])
        #expect(second.calls.all == [.willStart, .didFinish])
    }

    @Test func oneAssertionPerBusyPeriod() async {
        let (queue, provider) = makeOperationQueue()
        let delegate = RecordingOperationQueueDelegate()
        queue.delegate = delegate
        let started = Signal()
        let release = Signal()
        queue.addOperation(gatedOperation(started: started, release: release))
        queue.addAsyncOperation { $0.finish() }
        await started.wait()
        #expect(provider.activeIdentifiers.count == 1)
        #expect(queue.isBusy)
        release.signal()
        await queue.waitUntilIdle()
        #expect(provider.activeIdentifiers.isEmpty)
        queue.addOperation {}
        await queue.waitUntilIdle()
        #expect(provider.log.count == 4)
        #expect(isBalanced(provider))
        await mainActorDeliveries()
        #expect(delegate.calls.all == [.willStart, .didFinish, .willStart, .didFinish])
    }

    @Test func expiringBackgroundTimeCancelsTheOperations() async {
        let (queue, provider) = makeOperationQueue()
        let started = Signal()
        let operation = gatedOperation(started: started, release: Signal())
        queue.addOperation(operation)
        await started.wait()
        provider.expireAll()
        await waitUntilFinished(operation)
        #expect(operation.currentOutcome?.kind == .cancelled)
        await queue.waitUntilIdle()
        #expect(isBalanced(provider))
    }

    @Test func backgroundIsTheSharedInstance() {
        #expect(OperationQueue.background === OperationQueue.background)
        #expect(OperationQueue.background.name == "Backgroundable.background")
    }

    @Test func aJoiningAsyncOperationFinishesWithTheLiveOnesOutcome() async {
        let (queue, _) = makeOperationQueue()
        let ran = Recorder<String>()
        let gate = Signal()
        let first = AsyncOperation(name: "sync", timeout: .infinity) { operation in
            ran.append("first")
            Task {
                await gate.wait()
                operation.finish()
            }
        }
        let second = AsyncOperation(name: "sync", uniquenessPolicy: .join) { operation in
            ran.append("second")
            operation.finish()
        }
        queue.addOperation(first)
        queue.addOperation(second)
        gate.signal()
        #expect(await first.outcome.kind == .finished)
        #expect(await second.outcome.kind == .finished)
        await queue.waitUntilIdle()
        #expect(second.isFinished && ran.all == ["first"])
    }

    @Test func besideAPlainOperationAJoinDrops() async {
        let (queue, _) = makeOperationQueue()
        queue.isSuspended = true
        let plain = BlockOperation {}
        plain.name = "sync"
        let joining = AsyncOperation(name: "sync", uniquenessPolicy: .join) { $0.finish() }
        queue.addOperation(plain)
        queue.addOperation(joining)
        #expect(joining.currentOutcome?.kind == .dropped)
        queue.isSuspended = false
        await queue.waitUntilIdle()
    }
}
