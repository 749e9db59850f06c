import BackgroundableTesting
import Dispatch
import Foundation
import Testing

@testable import Backgroundable

@Suite(.timeLimit(.minutes(1)))
struct AsyncOperationTests {
    @Test func finishesFromAnotherThread() async {
        let queue = OperationQueue()
        let finishedOn = Recorder<Bool>()
        let operation = AsyncOperation { operation in
            Thread.detachNewThread {
                finishedOn.append(Thread.isMainThread)
                operation.finish()
            }
        }
        #expect(operation.isAsynchronous)
        #expect(!operation.isExecuting && !operation.isFinished)
        queue.addOperation(operation)
        await waitUntilFinished(operation)
        #expect(operation.isFinished)
        #expect(!operation.isExecuting)
        #expect(!operation.isCancelled)
        #expect(await operation.outcome.kind == .finished)
        #expect(finishedOn.all == [false])
        await waitUntilAllOperationsAreFinished(queue)
        #expect(queue.operationCount == 0)
    }

    /// The main queue is serviced here: Swift Testing runs `@MainActor` tests on the
    /// main actor, whose executor on Linux is the main dispatch queue, so the test
    /// itself proves the main queue is being drained (it could not run otherwise).
    /// On Linux that queue is drained by `dispatchMain()`, which retires the process's
    /// first thread, so `Thread.isMainThread` is `false` there: the check is "on the
    /// main queue", through a queue-specific key only the main queue carries.
    @MainActor
    @Test func finishesFromTheMainQueue() async {
        let key = DispatchSpecificKey<Bool>()
        DispatchQueue.main.setSpecific(key: key, value: true)
        let finishedOnMain = Recorder<Bool>()
        let operation = AsyncOperation(timeout: .infinity) { operation in
            DispatchQueue.main.async {
                finishedOnMain.append(DispatchQueue.getSpecific(key: key) == true)
                operation.finish()
            }
        }
        OperationQueue().addOperation(operation)
        // Suspends the main actor, so the main queue can run the `finish()` block.
        #expect(await operation.outcome.kind == .finished)
        await waitUntilFinished(operation)
        #expect(operation.isFinished)
        #expect(finishedOnMain.all == [true])
    }

    @Test func closureRunsOffTheMainThreadWhileExecuting() async {
        let observed = Recorder<(main: Bool, executing: Bool, finished: Bool)>()
        let operation = AsyncOperation { operation in
            observed.append((Thread.isMainThread, operation.isExecuting, operation.isFinished))
            operation.finish()
        }
        OperationQueue().addOperation(operation)
        await waitUntilFinished(operation)
        #expect(observed.count == 1)
        #expect(observed.all.first.map { !$0.main && $0.executing && !$0.finished } == true)
    }

    @Test func startedByHandWithoutAQueue() async {
        let operation = AsyncOperation { $0.finish() }
        operation.start()
        operation.start()  // a second start does nothing
        await waitUntilFinished(operation)
        #expect(operation.currentOutcome?.kind == .finished)
    }

    @Test func defaultTimeoutIsTenSecondsAsIn1x() {
        let operation = AsyncOperation { _ in }
        #expect(operation.timeout == 10)
        #expect(operation.task.timeout == .seconds(10))
        #expect(operation.uniquenessPolicy == .ignore)
        let untimed = AsyncOperation(timeout: .infinity) { _ in }
        #expect(untimed.task.timeout == nil)
    }

    @Test func customTimeoutFiresOnTimeOnceAndFinishes() async {
        let timeout = 0.05
        let callbacks = Recorder<(finished: Bool, executing: Bool)>()
        let fired = Signal()
        let operation = AsyncOperation(
            name: "slow", timeout: timeout,
            onTimeoutCallback: { operation in
                callbacks.append((operation.isFinished, operation.isExecuting))
                fired.signal()
            }
        ) { _ in
            // Never finishes.
        }
        let clock = ContinuousClock()
        let start = clock.now
        OperationQueue().addOperation(operation)
        await fired.wait()
        let elapsed = clock.now - start
        #expect(elapsed >= .seconds(timeout), "fired early: \(elapsed)")
        // A real clock, shared with the whole suite. The bound tells the custom timeout
        // from the default one (10 s).
        #expect(!realTimeBoundsHold || elapsed < .seconds(9), "fired late: \(elapsed)")
        await waitUntilFinished(operation)
        #expect(operation.currentOutcome?.kind == .timedOut)
        #expect(operation.isCancelled)
        // A late finish or cancel changes nothing and does not call back again.
        operation.finish()
        operation.cancel()
        #expect(operation.currentOutcome?.kind == .timedOut)
        #expect(callbacks.count == 1)
        #expect(callbacks.all.first.map { $0.finished && !$0.executing } == true)
    }

    /// A timeout callback that blocks (legacy code may wait for something) holds back
    /// no other operation's timeout: it does not run on the thread that keeps them.
    @Test func aBlockingTimeoutCallbackDelaysNoOtherTimeout() async {
        let secondTimedOut = DispatchSemaphore(value: 0)
        let waitedForTheSecond = Recorder<Bool>()
        let firstCalledBack = Signal()
        let first = AsyncOperation(
            timeout: 0.01,
            onTimeoutCallback: { _ in
                // Blocks its thread until the second operation timed out too.
                waitedForTheSecond.append(secondTimedOut.wait(timeout: .now() + 30) == .success)
                firstCalledBack.signal()
            }
        ) { _ in }
        let second = AsyncOperation(timeout: 0.1, onTimeoutCallback: { _ in secondTimedOut.signal() }) { _ in }
        let queue = OperationQueue()
        queue.addOperation(first)
        queue.addOperation(second)
        await firstCalledBack.wait()
        #expect(waitedForTheSecond.all == [true], "the second timeout waited for the first callback to return")
        await waitUntilFinished(second)
        #expect(second.currentOutcome?.kind == .timedOut)
    }

    /// A `cancel()` racing `start()` cannot report `isFinished` between `start()`'s
    /// will-change and did-change of `isExecuting`: KVO observers see `isExecuting`
    /// settle before `isFinished` changes. (Foundation's notifications cannot be
    /// intercepted on Linux: this drives the operation's state as the two threads do.)
    @Test func isFinishedWaitsForTheDidChangeOfIsExecuting() {
        var state = BridgeState()
        _ = state.requestStart()
        state.reportExecuting(runsClosure: true)  // between will-change and did-change
        _ = state.noteUnitEnded(.cancelled)  // the racing cancel
        #expect(state.claimFinish(closureReturned: false) == nil)
        state.executingReported()  // did-change sent
        #expect(state.claimFinish(closureReturned: false) == true)
    }

    @Test func timeoutDoesNotFireForAnOperationThatFinishesInTime() async {
        let operation = AsyncOperation(
            timeout: 30, onTimeoutCallback: { _ in Issue.record("timed out") }
        ) { $0.finish() }
        OperationQueue().addOperation(operation)
        await waitUntilFinished(operation)
        #expect(operation.currentOutcome?.kind == .finished)
    }

    @Test func cancelBeforeStart() async {
        let ran = Recorder<Int>()
        let operation = AsyncOperation { operation in
            ran.append(1)
            operation.finish()
        }
        operation.cancel()
        #expect(operation.isCancelled)
        #expect(!operation.isFinished)  // only its queue may finish it
        let queue = OperationQueue()
        queue.addOperation(operation)
        await waitUntilFinished(operation)
        #expect(operation.currentOutcome?.kind == .cancelled)
        #expect(ran.count == 0)
    }

    @Test func finishBeforeStartCancelsAsIn1x() async {
        let ran = Recorder<Int>()
        let operation = AsyncOperation { _ in ran.append(1) }
        operation.finish()
        OperationQueue().addOperation(operation)
        await waitUntilFinished(operation)
        #expect(operation.currentOutcome?.kind == .cancelled)
        #expect(ran.count == 0)
    }

    @Test func cancelWhileExecutingEndsAtOnce() async {
        let started = Signal()
        let operation = AsyncOperation(timeout: .infinity) { _ in
            started.signal()  // and never finishes
        }
        OperationQueue().addOperation(operation)
        await started.wait()
        #expect(operation.isExecuting)
        operation.cancel()
        await waitUntilFinished(operation)
        #expect(operation.isCancelled)
        #expect(!operation.isExecuting)
        #expect(operation.currentOutcome?.kind == .cancelled)
        operation.finish()  // late: a no-op
        #expect(operation.currentOutcome?.kind == .cancelled)
    }

    @Test func cancelAfterFinishChangesNothing() async {
        let operation = AsyncOperation { $0.finish() }
        OperationQueue().addOperation(operation)
        await waitUntilFinished(operation)
        operation.cancel()
        #expect(!operation.isCancelled)
        #expect(operation.currentOutcome?.kind == .finished)
    }

    @Test func completionBlockAndDependantsSeeItFinish() async {
        let queue = OperationQueue()
        let completed = Signal()
        let order = Recorder<String>()
        let first = AsyncOperation(timeout: .infinity) { operation in
            DispatchQueue.global().async {
                order.append("first")
                operation.finish()
            }
        }
        first.completionBlock = { completed.signal() }
        let second = BlockOperation { order.append("second") }
        second.addDependency(first)
        queue.addOperation(second)
        queue.addOperation(first)
        await completed.wait()
        await waitUntilFinished(second)
        #expect(order.all == ["first", "second"])
    }

    /// A cancellation that reaches the unit from outside the operation, before it starts,
    /// still reaches Foundation at once: a cancelled operation is ready even with an
    /// unfinished dependency (the operation listens from the moment `task` is read).
    @Test func cancellingTheUnitBeforeTheStartMakesTheOperationReadyAtOnce() async {
        let queue = OperationQueue()
        let never = BlockOperation {}  // never added: the dependency never finishes
        let ran = Recorder<Int>()
        let operation = AsyncOperation { operation in
            ran.append(1)
            operation.finish()
        }
        operation.addDependency(never)
        queue.addOperation(operation)
        operation.task.cancel()
        await waitUntilFinished(operation)
        #expect(operation.currentOutcome?.kind == .cancelled)
        #expect(ran.count == 0)
    }

    /// The unit of an operation made from a closure belongs to it: handing it to a
    /// ``BackgroundQueue`` is refused (`add` returns `false`) and runs nothing, and the
    /// closure runs once, when the operation starts.
    @Test func theUnitRunsOnlyThroughItsOperation() async {
        let (queue, _) = makeQueue()
        let ran = Recorder<Int>()
        let operation = AsyncOperation { operation in
            ran.append(1)
            operation.finish()
        }
        #expect(!queue.add(operation.task), "the unit belongs to its operation")
        #expect(!queue.isBusy)
        #expect(operation.task.currentOutcome == nil && !operation.task.isExecuting)
        let wrapper = OperationQueue().addTask(operation.task)  // does not run it either
        #expect(ran.count == 0)
        OperationQueue().addOperation(operation)
        #expect(await operation.outcome.kind == .finished)
        await waitUntilFinished(wrapper)
        #expect(ran.count == 1)
        #expect(wrapper.currentOutcome?.kind == .finished)
    }

    @Test func nameIsTheUnitsName() {
        let operation = AsyncOperation(name: "named") { _ in }
        #expect(operation.name == "named")
        #expect(operation.task.name == "named")
    }
}
