import Testing

@testable import Backgroundable

@Suite("Machine: timers")
struct TimersTests {
    private func entry(_ deadline: Int64, slot: Int32) -> DeadlineHeap.Entry {
        DeadlineHeap.Entry(deadline: deadline, slot: slot, ticket: UInt64(slot) + 1)
    }

    @Test func aNewSleeperIsArmedOnlyForAnEarlierTime() {
        var timers = Timers()
        let first = timers.armDeadline(entry(50, slot: 0))
        #expect(first == Timers.Wake(deadline: 50, generation: 1))
        // Later than the sleeper: it covers it.
        #expect(timers.waitForStartTime(entry(80, slot: 1)) == nil)
        // Earlier: a new generation, and the older sleeper is no longer current.
        #expect(timers.wake(at: 20) == Timers.Wake(deadline: 20, generation: 2))
        #expect(timers.isCurrent(2) && !timers.isCurrent(1))
        #expect(timers.timedCount == 1 && timers.delayedCount == 1 && timers.entryCount == 2)
    }

    @Test func dueEntriesComeOutEarliestFirstAndTheSleeperGoesOnUntilTheNext() {
        var timers = Timers()
        _ = timers.armDeadline(entry(30, slot: 0))
        _ = timers.armDeadline(entry(10, slot: 1))
        _ = timers.waitForStartTime(entry(20, slot: 2))
        _ = timers.waitForStartTime(entry(40, slot: 3))
        var due: [Int32] = []
        while let entry = timers.popDeadline(dueBy: 30) { due.append(entry.slot) }
        while let entry = timers.popStartTime(dueBy: 30) { due.append(entry.slot) }
        #expect(due == [1, 0, 2])
        // The start time at 40 is left; a progress sample at 35 comes first.
        let generation: UInt64 = 2
        #expect(timers.sleep(generation, orUntil: 35) == 35)
        #expect(timers.sleep(generation, orUntil: nil) == 40)
        _ = timers.popStartTime(dueBy: 40)
        #expect(timers.sleep(generation, orUntil: nil) == nil)
        // With no sleeper, any time arms a new one.
        #expect(timers.wake(at: 1_000) != nil)
    }

    @Test func staleEntriesAreCompactedOnceTheyOutnumberTheLiveOnes() {
        var timers = Timers()
        for slot: Int32 in 0..<100 { _ = timers.armDeadline(entry(Int64(slot), slot: slot)) }
        #expect(!timers.deadlinesAreMostlyStale)
        for _ in 0..<90 { timers.deadlineLeft() }
        #expect(timers.deadlinesAreMostlyStale)
        timers.compactDeadlines { $0.slot >= 90 }
        #expect(timers.entryCount == 10 && timers.firstDeadline?.slot == 90)
        timers.removeAll()
        #expect(timers.entryCount == 0)
    }
}
