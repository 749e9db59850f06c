import BackgroundableTesting
import Dispatch
import Foundation
import Synchronization
import Testing

@testable import Backgroundable

@Suite("Cancellation")
struct CancellationTests {
    @Test func cancelBeforeStartMeansTheBodyNeverRunsAndTheSlotIsFree() async {
        let (queue, _) = makeQueue(maxConcurrentTasks: 1)
        queue.suspend()
        let ran = Recorder<Int>()
        let cancelled = queue.add(.init(name: "n")) { task in
            ran.append(1)
            task.finish()
        }
        cancelled.cancel()
        #expect(cancelled.currentOutcome?.kind == .cancelled)
        #expect(queue.enqueuedCount == 0)
        queue.resume()
        await queue.waitUntilIdle()
        #expect(ran.count == 0)
    }

    @Test func cancelWhileExecutingReachesTheBodyAndItsChildTasks() async {
        let (queue, _) = makeQueue()
        let started = Signal()
        let childSawCancellation = Signal()
        let threw = Signal()
        let handle = queue.add {
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    await suspendUntilCancelled()
                    if Task.isCancelled { childSawCancellation.signal() }
                }
                started.signal()
                await group.waitForAll()
            }
            do {
                try Task.checkCancellation()
            } catch {
                threw.signal()
            }
        }
        await started.wait()
        handle.cancel()
        #expect(handle.task.currentOutcome?.kind == .cancelled)
        await childSawCancellation.wait()
        await threw.wait()
    }

    @Test func aBodyThatIgnoresCancellationDoesNotHoldTheQueue() async {
        let (queue, _) = makeQueue(maxConcurrentTasks: 1)
        let started = Signal()
        let release = Signal()
        let stubborn = queue.add {
            started.signal()
            await release.wait()  // ignores cancellation
            return "late"
        }
        let next = queue.add { $0.finish() }
        await started.wait()
        stubborn.cancel()
        #expect(await next.outcome.kind == .finished)
        release.signal()
        await #expect(throws: CancellationError.self) { try await stubborn.value }
    }

    @Test func lateFinishFromACancelledCallbackBodyIsANoOp() async {
        let (queue, _) = makeQueue()
        let started = Signal()
        let unit = queue.add(.init(timeout: nil)) { _ in started.signal() }
        await started.wait()
        unit.cancel()
        unit.finish()
        #expect(await unit.outcome.kind == .cancelled)
    }

    @Test func cancellingAnAwaitingCallerCancelsTheUnit() async {
        let (queue, _) = makeQueue()
        let started = Signal()
        let handle = queue.add {
            started.signal()
            await suspendUntilCancelled()
        }
        await started.wait()
        let caller = Task { try await handle.value }
        caller.cancel()
        await #expect(throws: CancellationError.self) { try await caller.value }
        #expect(handle.task.currentOutcome?.kind == .cancelled)
    }

    @Test func cancelAllCancelsWaitingAndExecutingUnitsAndTheQueueKeepsWorking() async {
        let (queue, _) = makeQueue(maxConcurrentTasks: 2)
        let started = Recorder<Int>()
        let bothStarted = Signal()
        let units = (0..<6).map { index in
            queue.add(.init(timeout: nil)) { _ in
                started.append(index)
                if started.count == 2 { bothStarted.signal() }
            }
        }
        await bothStarted.wait()
        queue.cancelAll()
        for unit in units {
            #expect(await unit.outcome.kind == .cancelled)
        }
        await queue.waitUntilIdle()
        let after = queue.add { $0.finish() }
        #expect(await after.outcome.kind == .finished)
    }
}

@Suite("Timeouts")
struct TimeoutTests {
    @Test func timeoutFiresOnTimeOnceAfterTheOutcomeIsSet() async {
        let (queue, _) = makeQueue()
        let calls = Recorder<AsyncTask.Outcome.Kind?>()
        let fired = Signal()
        let start = ContinuousClock.now
        let unit = queue.add(
            .init(
                timeout: .milliseconds(50),
                onTimeout: { task in
                    calls.append(task.currentOutcome?.kind)
                    fired.signal()
                })
        ) { _ in }
        await fired.wait()
        let elapsed = ContinuousClock.now - start
        #expect(elapsed >= .milliseconds(50))
        // A real clock, shared with the whole suite. The bound tells the unit's own
        // timeout from the default one (10 s).
        #expect(!realTimeBoundsHold || elapsed < .seconds(9))
        #expect(await unit.outcome.kind == .timedOut)
        unit.finish()
        unit.cancel()
        await queue.waitUntilIdle()
        #expect(calls.all == [.timedOut])
        #expect(unit.isFinished)
        #expect(unit.isCancelled)
    }

    @Test func timeoutCancelsTheWrappingTask() async {
        let (queue, _) = makeQueue()
        // The timeout must fire while the body runs, but a unit that times out before its
        // `Task` took the work never runs its body (a loaded sanitizer build can start it
        // hundreds of milliseconds late). So each attempt waits for whichever comes first,
        // the body's start or the unit's end, and a body that lost that race is tried again
        // with a ten times longer timeout.
        for timeout in [Duration.milliseconds(100), .seconds(1), .seconds(10)] {
            let bodyStarted = Lock(false)
            let startedOrEnded = Signal()
            let sawCancellation = Signal()
            let handle = queue.add(.init(timeout: timeout)) {
                bodyStarted.withLock { $0 = true }
                startedOrEnded.signal()
                await suspendUntilCancelled()
                if Task.isCancelled { sawCancellation.signal() }
            }
            handle.task.whenEnded { _ in startedOrEnded.signal() }
            await startedOrEnded.wait()
            guard bodyStarted.withLock({ $0 }) else {
                #expect(await handle.task.outcome.kind == .timedOut)
                continue
            }
            await sawCancellation.wait()
            await #expect(throws: AsyncTaskError.timedOut) { try await handle.value }
            return
        }
        Issue.record("the body never started before its unit timed out, even with a 10 s timeout")
    }

    @Test func aUnitThatFinishesInTimeDoesNotTimeOut() async {
        let (queue, _) = makeQueue()
        // On a sanitizer build, with the stress tests busy on every thread of the pool,
        // a body can start seconds after its unit did: a unit whose body never started
        // before its deadline is tried again with a longer timeout.
        for seconds in [2, 10, 30] {
            let fired = Recorder<Int>()
            let started = Recorder<Bool>()
            let unit = queue.add(.init(timeout: .seconds(seconds), onTimeout: { _ in fired.append(1) })) { task in
                started.append(true)
                task.finish()
            }
            let outcome = await unit.outcome
            if outcome.kind == .timedOut, started.count == 0 { continue }
            #expect(outcome.kind == .finished)
            // A later unit with a longer deadline proves the sleeper passed the first one.
            let later = queue.add(.init(timeout: .seconds(seconds) + .milliseconds(100))) { _ in }
            #expect(await later.outcome.kind == .timedOut)
            #expect(fired.count == 0)
            return
        }
        Issue.record("the body never started before its unit timed out, even with a 30 s timeout")
    }

    @Test func timeoutCountsFromTheStartOfExecution() async {
        let clock = TestClock()
        let (queue, _) = makeQueue(clock: clock, maxConcurrentTasks: 1)
        let release = Signal()
        let blocker = queue.add(.init(timeout: nil)) { await release.wait() }
        let waiting = queue.add(.init(timeout: .seconds(1))) { _ in }
        // Waiting longer than the timeout before starting does not time it out: no
        // deadline is armed until it starts.
        clock.advance(by: .seconds(2))
        #expect(waiting.currentOutcome == nil)
        release.signal()
        _ = await blocker.outcome
        // Started now: its deadline is one second from now.
        await clock.waitForSleeper(until: clock.now.advanced(by: .seconds(1)))
        #expect(waiting.currentOutcome == nil)
        clock.advance(by: .seconds(1))
        #expect(await waiting.outcome.kind == .timedOut)
    }

    @Test(.timeLimit(.minutes(1))) func aSlowEndHookOfAReplacedUnitDoesNotHoldBackTheNewcomersDeadline() async {
        let clock = TestClock()
        let (queue, _) = makeQueue(clock: clock)
        let (hookEntered, release) = (Signal(), DispatchSemaphore(value: 0))
        let slowHook: @Sendable (AsyncTask.Outcome) -> Void = { _ in
            hookEntered.signal()
            release.wait()  // on the adding thread, one of the test's own
        }
        let added = clock.now
        let delayed = queue.add(.init(name: "sync", timeout: nil, notBefore: .after(.seconds(60)), onEnd: slowHook)) {
            _ in
        }
        await clock.waitForSleeper(until: added.advanced(by: .seconds(60)))
        // One step replaces the delayed unit (its hook runs after the step) and starts
        // the newcomer, whose deadline comes first.
        let newcomer = AsyncTask(.init(name: "sync", timeout: .seconds(5), uniquenessPolicy: .replace)) { $0.finish() }
        Thread { queue.add(newcomer) }.start()
        await hookEntered.wait()
        await clock.waitForSleeper(until: added.advanced(by: .seconds(5)))  // armed while the hook runs
        release.signal()
        #expect(await delayed.outcome.kind == .replaced)
        #expect(await newcomer.outcome.kind == .finished)
    }

    @Test(.timeLimit(.minutes(1))) func aSlowEndHookOfATimedOutUnitDoesNotHoldBackTheNextDeadline() async {
        let clock = TestClock()
        let (queue, _) = makeQueue(clock: clock)
        let (hookEntered, release, hookReturns) = (Signal(), DispatchSemaphore(value: 0), Recorder<Bool>())
        let slowHook: @Sendable (AsyncTask.Outcome) -> Void = { _ in
            hookEntered.signal()
            // On the sleeper's thread, a cooperative one: a timeout's step runs nowhere
            // else. Bounded, so that it never stays blocked; `true` when the test
            // released it.
            hookReturns.append(release.wait(timeout: .now() + 10) == .success)
        }
        let (started, firstRuns, secondRuns) = (clock.now, Signal(), Signal())
        let first = queue.add(.init(timeout: .seconds(1), onEnd: slowHook)) { _ in firstRuns.signal() }
        let second = queue.add(.init(timeout: .seconds(2))) { _ in secondRuns.signal() }
        await firstRuns.wait()
        await secondRuns.wait()  // both deadlines count from `started`
        await clock.waitForSleeper(until: started.advanced(by: .seconds(1)))
        clock.advance(by: .seconds(1))
        await hookEntered.wait()
        // The first unit's hook still runs: the second deadline is slept on all the same.
        await clock.waitForSleeper(until: started.advanced(by: .seconds(2)))
        clock.advance(by: .seconds(1))
        #expect(await second.outcome.kind == .timedOut)
        release.signal()
        #expect(await first.outcome.kind == .timedOut)
        #expect(hookReturns.all == [true])
    }

    @Test func anEarlierDeadlineRearmsTheSleeper() async {
        let (queue, _) = makeQueue()
        let long = queue.add(.init(timeout: .seconds(30))) { _ in }
        await waitUntil { long.isExecuting }
        let start = ContinuousClock.now
        let short = queue.add(.init(timeout: .milliseconds(20))) { _ in }
        #expect(await short.outcome.kind == .timedOut)
        #expect(!realTimeBoundsHold || ContinuousClock.now - start < .seconds(10))
        long.cancel()
    }

    @Test func zeroOrNegativeTimeoutExpiresAtStartWithoutRunningTheWork() async {
        let (queue, _) = makeQueue()
        let ran = Recorder<Int>()
        let zero = queue.add(.init(timeout: .zero)) { task in
            ran.append(1)
            task.finish()
        }
        let negative = queue.add(.init(timeout: .seconds(-1))) { task in
            ran.append(2)
            task.finish()
        }
        #expect(await zero.outcome.kind == .timedOut)
        #expect(await negative.outcome.kind == .timedOut)
        #expect(ran.count == 0)
    }

    @Test func noTimeoutMeansNever() async {
        let (queue, _) = makeQueue()
        let unit = queue.add(.init(timeout: nil)) { _ in }
        await waitUntil { unit.isExecuting }
        #expect(queue.core.read { $0.footprint.deadlineEntries } == 0)
        unit.finish()
        #expect(await unit.outcome.kind == .finished)
    }

    @Test(.timeLimit(.minutes(1)))
    @MainActor
    func timeoutFiresWhileTheMainThreadIsBlocked() {
        let (queue, _) = makeQueue()
        let fired = DispatchSemaphore(value: 0)
        queue.add(.init(timeout: .milliseconds(20), onTimeout: { _ in fired.signal() })) { _ in }
        // Blocks the main thread: no run loop, no main queue.
        #expect(fired.wait(timeout: .now() + 30) == .success)
    }
}

@Suite("Timeout storage", .timeLimit(.minutes(1)))
struct TimeoutStorageTests {
    @Test func timeoutsRoundTripAndHugeOnesClamp() {
        #expect(AsyncTask(.init(timeout: .milliseconds(50))) { _ in }.timeout == .milliseconds(50))
        #expect(AsyncTask(.init(timeout: nil)) { _ in }.timeout == nil)
        #expect(AsyncTask { _ in }.timeout == AsyncTask.defaultTimeout)
        #expect(AsyncTask(.init(timeout: .seconds(-1))) { _ in }.timeout == .seconds(-1))
        #expect(AsyncTask(.init(timeout: .seconds(Int64.max))) { _ in }.timeout == .nanoseconds(Int64.max))
    }

    /// A deadline past what the clock's integers hold saturates instead of wrapping
    /// around into the past (where the unit would time out at once).
    @Test func aHugeTimeoutNeverFires() async {
        let (queue, _) = makeQueue()
        let release = Signal()
        let unit = queue.add(.init(timeout: .seconds(Int64.max))) { task in
            Task {
                await release.wait()
                task.finish()
            }
        }
        // A later unit with a short timeout makes the sleeper run past "now" and
        // expire whatever is due, proving the huge deadline is not.
        let short = queue.add(.init(timeout: .milliseconds(1))) { _ in }
        #expect(await short.outcome.kind == .timedOut)
        #expect(unit.currentOutcome == nil)
        release.signal()
        #expect(await unit.outcome.kind == .finished)
        #expect(ContinuousNanoseconds.deadline(after: 10, .max) == .max)
        #expect(ContinuousNanoseconds.deadline(after: 10, 5) == 15)
    }
}
