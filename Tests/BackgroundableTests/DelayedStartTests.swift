import BackgroundableTesting
import Testing

@testable import Backgroundable

/// `notBefore`: a delayed unit is live (enqueued, deduplicating, keeping its queue busy)
/// but holds no slot and no `Task` until its start time, which the queue's one sleeper
/// serves. Time comes from ``TestClock``: nothing here sleeps.
@Suite("Delayed starts")
struct DelayedStartTests {
    @Test func aDelayedUnitStartsWhenItsTimeComesNotBefore() async {
        let clock = TestClock()
        let (queue, provider) = makeQueue(clock: clock)
        let ran = Recorder<String>()
        let unit = queue.add(.init(notBefore: .after(.seconds(5)))) { unit in
            ran.append("ran")
            unit.finish()
        }
        // Admitted as delayed: only the sleeper can start it, and the clock has not moved.
        #expect(queue.enqueuedCount == 1 && queue.executingCount == 0 && queue.isBusy)
        #expect(!unit.isExecuting && unit.currentOutcome == nil && unit.runningTask == nil)
        #expect(provider.activeIdentifiers.count == 1, "background time is held while it waits")
        clock.advance(by: .seconds(4))
        #expect(ran.all.isEmpty && queue.enqueuedCount == 1)
        clock.advance(by: .seconds(1))
        #expect(await unit.outcome.kind == .finished)
        #expect(ran.all == ["ran"])
        await queue.waitUntilIdle()
        #expect(queue.core.read { $0.footprint.deadlineEntries } == 0)
    }

    @Test func waitUntilIdleWaitsForADelayedUnit() async {
        let clock = TestClock()
        let (queue, _) = makeQueue(clock: clock)
        let unit = queue.add(.init(notBefore: .after(.seconds(1)))) { $0.finish() }
        let idle = Signal()
        let waiter = Task {
            await queue.waitUntilIdle()
            idle.signal()
        }
        #expect(!idle.isSignalled && queue.isBusy)
        clock.advance(by: .seconds(1))
        await waiter.value
        #expect(unit.currentOutcome?.kind == .finished)
    }

    @Test func aDelayedUnitHoldsNoSlot() async {
        let clock = TestClock()
        let (queue, _) = makeQueue(clock: clock, maxConcurrentTasks: 1)
        let delayed = queue.add(.init(notBefore: .after(.seconds(10)))) { $0.finish() }
        let now = queue.add { $0.finish() }
        #expect(await now.outcome.kind == .finished)
        #expect(delayed.currentOutcome == nil && queue.enqueuedCount == 1)
        clock.advance(by: .seconds(10))
        #expect(await delayed.outcome.kind == .finished)
    }

    @Test func dueUnitsStartByStartTimeThenInTheOrderTheyWereAdded() async {
        let clock = TestClock()
        let (queue, _) = makeQueue(clock: clock, maxConcurrentTasks: 1)
        let order = Recorder<String>()
        var units: [AsyncTask] = []
        for (name, delay) in [("c", 3), ("a1", 1), ("b", 2), ("a2", 1)] {
            units.append(
                queue.add(.init(name: name, notBefore: .after(.seconds(delay)))) { unit in
                    order.append(name)
                    unit.finish()
                })
        }
        clock.advance(by: .seconds(5))
        for unit in units { _ = await unit.outcome }
        #expect(order.all == ["a1", "a2", "b", "c"])
    }

    @Test func theTimeoutCountsFromTheStartNotFromTheAdd() async {
        let clock = TestClock()
        let (queue, _) = makeQueue(clock: clock)
        let started = Signal()
        let unit = queue.add(.init(timeout: .seconds(2), notBefore: .after(.seconds(10)))) { _ in
            started.signal()
        }
        clock.advance(by: .seconds(10))
        await started.wait()
        #expect(unit.currentOutcome == nil)
        clock.advance(by: .seconds(2))
        #expect(await unit.outcome.kind == .timedOut)
    }

    @Test func cancellingADelayedUnitEndsItAtOnceAndItNeverRuns() async {
        let clock = TestClock()
        let (queue, _) = makeQueue(clock: clock)
        let ran = Recorder<Int>()
        let unit = queue.add(.init(notBefore: .after(.seconds(60)))) { unit in
            ran.append(1)
            unit.finish()
        }
        unit.cancel()
        #expect(unit.currentOutcome?.kind == .cancelled)
        await queue.waitUntilIdle()
        clock.advance(by: .seconds(60))
        #expect(ran.all.isEmpty && !queue.isBusy)
    }

    @Test func cancelAllAndExpiryEndDelayedUnits() async {
        let clock = TestClock()
        let (queue, provider) = makeQueue(clock: clock)
        let first = queue.add(.init(notBefore: .after(.seconds(60)))) { $0.finish() }
        queue.cancelAll()
        #expect(await first.outcome.kind == .cancelled)
        let second = queue.add(.init(notBefore: .after(.seconds(60)))) { $0.finish() }
        provider.expireAll()
        #expect(await second.outcome.kind == .cancelled)
    }

    @Test func aDelayedUnitDeduplicatesWhileItWaits() async {
        let clock = TestClock()
        let (queue, _) = makeQueue(clock: clock)
        let waiting = queue.add(.init(name: "refresh", notBefore: .after(.seconds(30)))) { $0.finish() }
        let dropped = queue.add(.init(name: "refresh", uniquenessPolicy: .drop)) { $0.finish() }
        #expect(dropped.currentOutcome?.kind == .dropped)
        let replacing = queue.add(.init(name: "refresh", uniquenessPolicy: .replace)) { $0.finish() }
        #expect(waiting.currentOutcome?.kind == .replaced)
        #expect(await replacing.outcome.kind == .finished)
    }

    @Test func anInstantStartTimeIsHonouredToo() async throws {
        let clock = TestClock()
        let (queue, _) = makeQueue(clock: clock)
        // An instant an hour away: converted to a delay on the queue's clock as it is added.
        let unit = queue.add(.init(notBefore: .at(.now + .seconds(3600)))) { $0.finish() }
        clock.advance(by: .seconds(3000))
        #expect(unit.currentOutcome == nil)
        clock.advance(by: .seconds(601))
        #expect(await unit.outcome.kind == .finished)
    }

    @Test func anAsyncBodyCanBeDelayedAndItsValueAwaited() async throws {
        let clock = TestClock()
        let (queue, _) = makeQueue(clock: clock)
        let handle = queue.add(.init(notBefore: .after(.milliseconds(300)))) { 42 }
        clock.advance(by: .milliseconds(300))
        #expect(try await handle.value == 42)
    }

    @Test func theUnitReportsItsStartTime() {
        let unit = AsyncTask(.init(notBefore: .after(.seconds(2)), lane: "account-1")) { $0.finish() }
        #expect(unit.notBefore == .after(.seconds(2)))
        #expect(unit.lane == "account-1")
        let plain = AsyncTask { $0.finish() }
        #expect(plain.notBefore == nil && plain.lane == nil)
    }
}
