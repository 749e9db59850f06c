import BackgroundableTesting
import Foundation
import Synchronization
import Testing

@testable import Backgroundable

/// Retries: a failed attempt of an async body frees its slot, waits (live, holding no
/// thread) and starts again as often as its ``RetryPolicy`` allows. Time comes from
/// ``TestClock``; "between attempts" is observed through the queue's `retrying` event.
@Suite("Retries")
struct RetryTests {
    /// A body that fails its first `failures` attempts, then returns the attempt number.
    private final class Flaky: Sendable {
        let failures: Int
        private let calls = Lock(0)

        init(failing failures: Int) {
            self.failures = failures
        }

        var attempts: Int { calls.withLock { $0 } }

        func attempt() throws -> Int {
            let call = calls.withLock { calls in
                calls += 1
                return calls
            }
            if call <= failures { throw TestError(code: call) }
            return call
        }
    }

    /// Waits for the next `retrying` event of `events`; returns its attempt and delay.
    private func nextRetry(
        _ events: inout AsyncStream<BackgroundQueue.Event>.Iterator
    ) async -> (attempt: Int, error: TestError?, delay: Duration)? {
        while let event = await events.next() {
            if event.kind == .retrying, let attempt = event.attempt, let delay = event.delay {
                return (attempt, event.error as? TestError, delay)
            }
        }
        return nil
    }

    @Test func aFailingBodyRunsAgainAfterEachDelayUntilItSucceeds() async throws {
        let clock = TestClock()
        let (queue, _) = makeQueue(clock: clock)
        var events = queue.events.makeAsyncIterator()
        let flaky = Flaky(failing: 2)
        let handle = queue.add(.init(retry: .fixed(maxAttempts: 4, delay: .seconds(1)))) { try flaky.attempt() }

        let first = await nextRetry(&events)
        #expect(first?.attempt == 1 && first?.error == TestError(code: 1) && first?.delay == .seconds(1))
        // Between attempts: live and enqueued, not executing, nothing runs until the clock moves.
        #expect(queue.enqueuedCount == 1 && queue.executingCount == 0 && handle.task.attempts == 1)
        #expect(!handle.task.isExecuting && handle.task.currentOutcome == nil)
        #expect(flaky.attempts == 1)
        clock.advance(by: .seconds(1))
        let second = await nextRetry(&events)
        #expect(second?.attempt == 2 && second?.error == TestError(code: 2))
        clock.advance(by: .seconds(1))
        #expect(try await handle.value == 3)
        #expect(handle.task.attempts == 3)
        #expect(handle.task.lastError as? TestError == TestError(code: 2))
    }

    @Test func theEventsReportEveryAttempt() async throws {
        let clock = TestClock()
        let (queue, _) = makeQueue(clock: clock)
        let events = queue.events
        let flaky = Flaky(failing: 1)
        let handle = queue.add(.init(retry: .fixed(maxAttempts: 2, delay: .zero))) { try flaky.attempt() }
        #expect(try await handle.value == 2)
        var seen: [String] = []
        for await event in events {
            switch event.kind {
            case .enqueued: seen.append("enqueued")
            case .started: seen.append("started")
            case .retrying: seen.append("retrying \(event.attempt!)")
            case .ended: seen.append("ended \(event.outcome!.kind)")
            default: continue
            }
            if seen.last?.hasPrefix("ended") == true { break }
        }
        #expect(seen == ["enqueued", "started", "retrying 1", "started", "ended finished"])
    }

    @Test func whenAttemptsRunOutTheUnitFailsWithTheLastError() async {
        let (queue, _) = makeQueue()
        let flaky = Flaky(failing: 10)
        let handle = queue.add(.init(retry: .fixed(maxAttempts: 3, delay: .zero))) { try flaky.attempt() }
        let outcome = await handle.outcome
        #expect(outcome.error as? TestError == TestError(code: 3))
        #expect(flaky.attempts == 3 && handle.task.attempts == 3)
        #expect(handle.task.lastError as? TestError == TestError(code: 3))
    }

    @Test func anErrorThePolicyDoesNotRetryFailsAtOnce() async {
        let (queue, _) = makeQueue()
        let flaky = Flaky(failing: 10)
        let policy = RetryPolicy.fixed(maxAttempts: 5, delay: .zero) { ($0 as? TestError)?.code != 1 }
        let handle = queue.add(.init(retry: policy)) { try flaky.attempt() }
        #expect(await handle.outcome.kind == .failed)
        #expect(flaky.attempts == 1 && handle.task.attempts == 1)
    }

    @Test func aUnitThatSucceedsAtOnceMakesOneAttempt() async throws {
        let (queue, _) = makeQueue()
        let handle = queue.add(.init(retry: .exponential())) { 7 }
        #expect(try await handle.value == 7)
        #expect(handle.task.attempts == 1 && handle.task.lastError == nil)
    }

    @Test func theWaitHoldsNoSlot() async throws {
        let clock = TestClock()
        let (queue, _) = makeQueue(clock: clock, maxConcurrentTasks: 1)
        var events = queue.events.makeAsyncIterator()
        let flaky = Flaky(failing: 1)
        let retrying = queue.add(.init(retry: .fixed(maxAttempts: 2, delay: .seconds(5)))) { try flaky.attempt() }
        _ = await nextRetry(&events)
        // The only slot is free while it waits.
        let other = queue.add { $0.finish() }
        #expect(await other.outcome.kind == .finished)
        clock.advance(by: .seconds(5))
        #expect(try await retrying.value == 2)
    }

    @Test func cancellingBetweenAttemptsEndsTheUnitAtOnce() async {
        let clock = TestClock()
        let (queue, _) = makeQueue(clock: clock)
        var events = queue.events.makeAsyncIterator()
        let flaky = Flaky(failing: 10)
        let handle = queue.add(.init(retry: .fixed(maxAttempts: 5, delay: .seconds(1)))) { try flaky.attempt() }
        _ = await nextRetry(&events)
        handle.cancel()
        #expect(await handle.outcome.kind == .cancelled)
        await queue.waitUntilIdle()
        clock.advance(by: .seconds(10))
        #expect(flaky.attempts == 1 && handle.task.attempts == 1)
        #expect(handle.task.lastError as? TestError == TestError(code: 1))
    }

    @Test func cancelAllAndExpiryStopTheRetries() async {
        let clock = TestClock()
        let (queue, provider) = makeQueue(clock: clock)
        var events = queue.events.makeAsyncIterator()
        let flaky = Flaky(failing: 10)
        let policy = RetryPolicy.fixed(maxAttempts: 5, delay: .seconds(1))
        let first = queue.add(.init(retry: policy)) { try flaky.attempt() }
        _ = await nextRetry(&events)
        queue.cancelAll()
        #expect(await first.outcome.kind == .cancelled)
        let second = queue.add(.init(retry: policy)) { try flaky.attempt() }
        _ = await nextRetry(&events)
        provider.expireAll()
        #expect(await second.outcome.kind == .cancelled)
        clock.advance(by: .seconds(10))
        await queue.waitUntilIdle()
        #expect(flaky.attempts == 2)
    }

    @Test func theCallersCancellationStopsTheRetries() async {
        let clock = TestClock()
        let (queue, _) = makeQueue(clock: clock)
        var events = queue.events.makeAsyncIterator()
        let flaky = Flaky(failing: 10)
        let caller = Task {
            try await queue.run(.init(retry: .fixed(maxAttempts: 5, delay: .seconds(1)))) { try flaky.attempt() }
        }
        _ = await nextRetry(&events)
        caller.cancel()
        await #expect(throws: CancellationError.self) { try await caller.value }
        await queue.waitUntilIdle()
        #expect(flaky.attempts == 1)
    }

    @Test func eachAttemptGetsTheFullTimeout() async {
        let clock = TestClock()
        let (queue, _) = makeQueue(clock: clock)
        let calls = Lock(0)
        let (firstStarted, failFirst, secondStarted) = (Signal(), Signal(), Signal())
        let added = clock.now
        let ended = Latch()
        let handle = queue.add(.init(timeout: .seconds(2), retry: .fixed(maxAttempts: 2, delay: .zero))) {
            if calls.withLock({
                $0 += 1
                return $0
            }) == 1 {
                firstStarted.signal()
                await failFirst.wait()
                throw TestError(code: 1)
            }
            secondStarted.signal()
            await suspendUntilCancelled()
        }
        handle.task.whenEnded { _ in _ = ended.open() }
        await firstStarted.wait()
        clock.advance(by: .seconds(1))
        failFirst.signal()
        await secondStarted.wait()
        // The first attempt's deadline (2 s after its start) passes: it must not end the
        // second attempt, which started 1 s later. Once the sleeper sleeps until the
        // second one's deadline, it has handled the first one's.
        clock.advance(by: .seconds(1))
        let first = await firstToReturn([
            { await clock.waitForSleeper(until: added.advanced(by: .seconds(3))) }, { await ended.wait() },
        ])
        #expect(first == 0 && handle.task.currentOutcome == nil)
        clock.advance(by: .seconds(1))
        #expect(await handle.outcome.kind == .timedOut)
        #expect(handle.task.attempts == 2)
    }

    @Test func theQueuesDefaultAppliesUnlessTheUnitHasItsOwn() async {
        let queue = BackgroundQueue(
            backgroundTaskProvider: NoopBackgroundTaskProvider(), retryPolicy: .fixed(maxAttempts: 3, delay: .zero))
        let byDefault = Flaky(failing: 10)
        let optedOut = Flaky(failing: 10)
        let own = Flaky(failing: 10)
        let first = queue.add { try byDefault.attempt() }
        let second = queue.add(.init(retry: .never)) { try optedOut.attempt() }
        let third = queue.add(.init(retry: .fixed(maxAttempts: 2, delay: .zero))) { try own.attempt() }
        _ = await (first.outcome, second.outcome, third.outcome)
        #expect(byDefault.attempts == 3 && optedOut.attempts == 1 && own.attempts == 2)
    }

    @Test func aCallbackUnitIsNeverRetried() async {
        let (queue, _) = makeQueue()
        let runs = Lock(0)
        let unit = queue.add(.init(retry: .fixed(maxAttempts: 3, delay: .zero))) { unit in
            runs.withLock { $0 += 1 }
            unit.finish()
        }
        #expect(await unit.outcome.kind == .finished)
        #expect(runs.withLock { $0 } == 1 && unit.attempts == 1)
    }

    @Test func aUnitNoQueueHoldsWaitsTheDelayItself() async throws {
        let flaky = Flaky(failing: 2)
        let handle = AsyncTaskHandle(.init(retry: .fixed(maxAttempts: 3, delay: .milliseconds(1)))) {
            try flaky.attempt()
        }
        // The Operation bridge starts it: no queue holds it between attempts.
        _ = OperationQueue().addTask(handle.task)
        #expect(try await handle.value == 3)
        #expect(handle.task.attempts == 3)
    }

    @Test func aRetryingUnitHoldsItsLaneAndItsName() async throws {
        let clock = TestClock()
        let (queue, _) = makeQueue(clock: clock)
        var events = queue.events.makeAsyncIterator()
        let flaky = Flaky(failing: 1)
        let retrying = queue.add(
            .init(name: "sync", lane: "account", retry: .fixed(maxAttempts: 2, delay: .seconds(1)))
        ) { try flaky.attempt() }
        _ = await nextRetry(&events)
        let behind = queue.add(.init(lane: "account")) { $0.finish() }
        let duplicate = queue.add(.init(name: "sync", uniquenessPolicy: .drop)) { $0.finish() }
        #expect(duplicate.currentOutcome?.kind == .dropped)
        #expect(!behind.isExecuting && behind.currentOutcome == nil)
        clock.advance(by: .seconds(1))
        #expect(try await retrying.value == 2)
        #expect(await behind.outcome.kind == .finished)
    }

    @Test func aDelayedUnitWithRetriesWaitsForItsStartTimeFirst() async throws {
        let clock = TestClock()
        let (queue, _) = makeQueue(clock: clock)
        var events = queue.events.makeAsyncIterator()
        let flaky = Flaky(failing: 1)
        let handle = queue.add(
            .init(notBefore: .after(.seconds(10)), retry: .fixed(maxAttempts: 2, delay: .seconds(1)))
        ) { try flaky.attempt() }
        #expect(flaky.attempts == 0)
        clock.advance(by: .seconds(10))
        #expect(await nextRetry(&events)?.attempt == 1)
        clock.advance(by: .seconds(1))
        #expect(try await handle.value == 2)
    }

    /// A deinitialised queue cancels its units between attempts; one whose attempt was
    /// running then fails makes no further attempt either.
    @Test func aQueueReleasedDuringAnAttemptMakesNoFurtherAttempt() async {
        let started = Signal()
        let fail = Signal()
        let flaky = Flaky(failing: 3)
        weak var weakQueue: BackgroundQueue?
        var task: AsyncTask?
        do {
            let (queue, _) = makeQueue()
            weakQueue = queue
            let handle = queue.add(.init(retry: .fixed(maxAttempts: 3, delay: .zero))) {
                started.signal()
                await fail.wait()
                _ = try flaky.attempt()
            }
            task = handle.task
            await started.wait()
        }
        #expect(weakQueue == nil)
        fail.signal()
        #expect(await task?.outcome.kind == .cancelled)
        #expect(flaky.attempts == 1)
    }
}

/// The policy's arithmetic and its clamping of bad input.
@Suite("Retry policies")
struct RetryPolicyTests {
    @Test func exponentialBackoffDoublesUpToItsCap() {
        let policy = RetryPolicy.exponential(
            maxAttempts: 10, initialDelay: .seconds(1), multiplier: 2, maximumDelay: .seconds(5), jitter: 0)
        let delays = (2...6).map { policy.delay(beforeAttempt: $0) }
        #expect(delays == [.seconds(1), .seconds(2), .seconds(4), .seconds(5), .seconds(5)])
    }

    @Test func jitterShortensTheDelayByAtMostItsFraction() {
        var generator = SplitMix64(seed: 42)
        let policy = RetryPolicy.exponential(initialDelay: .seconds(8), maximumDelay: .seconds(8), jitter: 0.25)
        let delays = (0..<200).map { _ in policy.delay(beforeAttempt: 2, using: &generator) }
        #expect(delays.allSatisfy { $0 > .seconds(6) - .milliseconds(1) && $0 <= .seconds(8) })
        #expect(Set(delays).count > 100, "drawn, not fixed")
    }

    @Test func badInputIsClamped() {
        #expect(RetryPolicy.fixed(maxAttempts: 0, delay: .zero).maxAttempts == 1)
        #expect(RetryPolicy.fixed(maxAttempts: -3, delay: .zero).maxAttempts == 1)
        #expect(RetryPolicy.fixed(maxAttempts: 1_000, delay: .zero).maxAttempts == RetryPolicy.attemptLimit)
        #expect(RetryPolicy.fixed(maxAttempts: 2, delay: .seconds(-1)).delay(beforeAttempt: 2) == .zero)
        let wild = RetryPolicy.exponential(
            initialDelay: .seconds(-1), multiplier: 0.1, maximumDelay: .seconds(3), jitter: 7)
        #expect(wild.delay(beforeAttempt: 5) == .zero)
        let huge = RetryPolicy.exponential(
            maxAttempts: 255, initialDelay: .seconds(1), multiplier: 1e300, maximumDelay: .seconds(1e15), jitter: 0)
        #expect(huge.delay(beforeAttempt: 200) > .seconds(1e9))
        // Non-finite products: a zero first delay stays zero; anything else reaches the cap.
        let infinite = RetryPolicy.exponential(initialDelay: .zero, multiplier: .infinity, jitter: 0)
        #expect(infinite.delay(beforeAttempt: 5) == .zero)
        let capped = RetryPolicy.exponential(
            initialDelay: .seconds(1), multiplier: .infinity, maximumDelay: .seconds(3), jitter: 0)
        #expect(capped.delay(beforeAttempt: 3) == .seconds(3))
        #expect(capped.delay(beforeAttempt: .max) == .seconds(3))
        let flat = RetryPolicy.exponential(initialDelay: .seconds(2), multiplier: .nan, jitter: .nan)
        #expect(flat.delay(beforeAttempt: 4) == .seconds(2))
    }
}
