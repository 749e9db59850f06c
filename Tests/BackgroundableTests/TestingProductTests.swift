import Backgroundable
import BackgroundableTesting
import Testing

/// BackgroundableTesting as a user's tests see it: public API only, no sleeps.
@Suite("The testing product")
struct TestingProductTests {
    private static func isStarted(_ event: BackgroundQueue.Event) -> Bool {
        event.kind == .started
    }

    @Test func aTimeoutFiresWhenTheClockIsAdvancedNotBefore() async {
        let clock = TestClock()
        let queue = BackgroundQueue(clock: clock)
        let unit = queue.add(.init(timeout: .seconds(30))) { _ in }
        clock.advance(by: .seconds(29))
        #expect(unit.currentOutcome == nil)
        clock.advance(by: .seconds(1))
        #expect(await unit.outcome.kind == .timedOut)
    }

    @Test func aUnitWaitingForASlotTimesOutFromItsStart() async {
        let clock = TestClock()
        let queue = BackgroundQueue(maxConcurrentTasks: 1, clock: clock)
        var events = queue.events.makeAsyncIterator()
        let first = queue.add(.init(timeout: nil)) { _ in }
        _ = await events.next(where: Self.isStarted)
        let second = queue.add(.init(timeout: .seconds(5))) { _ in }
        clock.advance(by: .seconds(10))
        #expect(second.currentOutcome == nil, "its timeout counts from its start")
        first.finish()
        let started = await events.next(where: Self.isStarted)
        #expect(started?.unit === second)
        clock.advance(by: .seconds(5))
        #expect(await second.outcome.kind == .timedOut)
    }

    @Test func aDelayedStartAndARetryDelayWaitForTheClock() async throws {
        let clock = TestClock()
        let provider = RecordingBackgroundTaskProvider()
        let queue = BackgroundQueue(backgroundTaskProvider: provider, clock: clock)
        var events = queue.events.makeAsyncIterator()
        let attempts = Recorder<Int>()
        let handle = queue.add(
            .init(notBefore: .after(.seconds(60)), retry: .fixed(maxAttempts: 2, delay: .seconds(1)))
        ) {
            attempts.append(1)
            if attempts.count == 1 { throw TestError(code: 1) }
            return attempts.count
        }
        #expect(provider.activeIdentifiers.count == 1, "a delayed unit keeps the queue busy")
        clock.advance(by: .seconds(60))
        _ = await events.next(where: { $0.kind == .retrying })
        #expect(attempts.count == 1)
        clock.advance(by: .seconds(1))
        #expect(try await handle.value == 2)
        let rest = await events.collect(through: { $0.kind == .idle })
        #expect(rest.count == 3, "started, ended, idle: \(rest)")
        await queue.waitUntilIdle()
        #expect(provider.activeIdentifiers.isEmpty && provider.unbalancedEndCount == 0)
    }

    @Test func waitForSleeperReturnsOnceTheQueueSleepsUntilThatDeadline() async {
        let clock = TestClock()
        let queue = BackgroundQueue(clock: clock)
        let unit = queue.add(.init(timeout: .seconds(3))) { _ in }
        await clock.waitForSleeper(until: clock.now.advanced(by: .seconds(3)))
        clock.advance(by: .seconds(3))
        #expect(await unit.outcome.kind == .timedOut)
    }

    @Test func itIsAClockThatOnlyMovesForward() async throws {
        let clock = TestClock()
        let start = clock.now
        clock.advance(by: .seconds(-5))
        clock.advance(by: .zero)
        #expect(clock.now == start, "going back or nowhere does nothing")
        let sleeper = Task { try await clock.sleep(for: .milliseconds(250)) }
        await clock.waitForSleeper(until: start.advanced(by: .milliseconds(250)))
        clock.advance(by: .milliseconds(250))
        try await sleeper.value
        #expect(start.duration(to: clock.now) == .milliseconds(250))
        #expect(clock.now.advanced(by: .seconds(Int64.max)) > clock.now, "saturates, never wraps")
        let cancelled = Task { try await clock.sleep(for: .seconds(1)) }
        cancelled.cancel()
        await #expect(throws: CancellationError.self) { try await cancelled.value }
    }
}
