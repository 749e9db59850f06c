import Foundation
import Testing

@testable import Backgroundable

@Suite struct JobIndexTests {
    private let now = Date(timeIntervalSince1970: 1_000_000)

    private func job(
        _ index: inout JobIndex, kind: String = "k", name: String? = nil, lane: String? = nil, priority: UInt8 = 0,
        at runAt: Date? = nil
    ) -> DurableJobID {
        let record = DurableJobRecord(
            id: DurableJobID(), kind: kind, payload: Data(), name: name, lane: lane, priority: priority, timeout: nil,
            maxAttempts: 1, backoff: .fixed(.zero), runAt: runAt ?? now, enqueuedAt: now,
            sequence: index.takeSequence())
        index.insert(record)
        return record.id
    }

    @Test func claimsGoByPriorityThenArrival() {
        var index = JobIndex()
        let low = job(&index)
        let high = job(&index, priority: TaskPriority.high.rawValue)
        let lowAgain = job(&index)
        #expect(index.claim(kinds: ["k"], limit: 10, now: now).map(\.id) == [high, low, lowAgain])
        #expect(index.claim(kinds: ["k"], limit: 10, now: now).isEmpty)
    }

    @Test func aLaneGivesOutOneJobAtATimeInOrder() {
        var index = JobIndex()
        let first = job(&index, lane: "a")
        let second = job(&index, lane: "a")
        let other = job(&index, lane: "b")
        #expect(index.claim(kinds: ["k"], limit: 10, now: now).map(\.id) == [first, other])
        #expect(index.claim(kinds: ["k"], limit: 10, now: now).isEmpty)
        index.remove(first)
        #expect(index.claim(kinds: ["k"], limit: 10, now: now).map(\.id) == [second])
    }

    @Test func aLaneWaitsForItsFirstJobEvenWhenItIsNotDue() {
        var index = JobIndex()
        let later = now.addingTimeInterval(60)
        let first = job(&index, lane: "a", at: later)
        _ = job(&index, lane: "a")
        #expect(index.claim(kinds: ["k"], limit: 10, now: now).isEmpty)
        #expect(index.nextDueDate(kinds: ["k"], now: now) == later)
        #expect(index.claim(kinds: ["k"], limit: 10, now: later).map(\.id) == [first])
    }

    @Test func aGivenBackJobIsEligibleAgainAtItsNewTime() {
        var index = JobIndex()
        let id = job(&index)
        var claimed = index.claim(kinds: ["k"], limit: 1, now: now)[0]
        #expect(claimed.attempt == 1)
        claimed.runAt = now.addingTimeInterval(5)
        index.update(claimed, claimed: false)
        #expect(index.claim(kinds: ["k"], limit: 1, now: now).isEmpty)
        #expect(index.claim(kinds: ["k"], limit: 1, now: now.addingTimeInterval(5)).map(\.attempt) == [2])
        #expect(index.isClaimed(id))
    }

    @Test func kindsNotAskedForWaitWithoutBlockingOthers() {
        var index = JobIndex()
        let unknown = job(&index, kind: "future")
        let known = job(&index)
        #expect(index.nextDueDate(kinds: ["k"], now: now) == now)
        #expect(index.claim(kinds: ["k"], limit: 10, now: now).map(\.id) == [known])
        #expect(index.nextDueDate(kinds: ["k"], now: now) == nil)
        #expect(index.claim(kinds: ["k", "future"], limit: 10, now: now).map(\.id) == [unknown])
    }

    @Test func claimsOfSeveralKindsGoByPriorityThenArrivalAcrossThem() {
        var index = JobIndex()
        let a1 = job(&index, kind: "a")
        let b1 = job(&index, kind: "b", priority: TaskPriority.high.rawValue)
        let a2 = job(&index, kind: "a", priority: TaskPriority.high.rawValue)
        let b2 = job(&index, kind: "b")
        let c1 = job(&index, kind: "c", priority: TaskPriority.high.rawValue)
        let laterA = job(&index, kind: "a", at: now.addingTimeInterval(20))
        let laterB = job(&index, kind: "b", at: now.addingTimeInterval(10))
        // Claims of one kind, then of another, as two queues on one store make them.
        #expect(index.claim(kinds: ["a"], limit: 1, now: now).map(\.id) == [a2])
        // The other kinds' jobs were not looked at: they wait where they were.
        #expect(index.lineEntries(of: "b") == (notDue: 3, due: 0))
        #expect(index.lineEntries(of: "c") == (notDue: 1, due: 0))
        #expect(index.claim(kinds: ["b"], limit: 1, now: now).map(\.id) == [b1])
        #expect(index.claim(kinds: ["a", "b"], limit: 10, now: now).map(\.id) == [a1, b2])
        #expect(index.nextDueDate(kinds: ["a"], now: now) == now.addingTimeInterval(20))
        #expect(index.nextDueDate(kinds: ["a", "b"], now: now) == now.addingTimeInterval(10))
        #expect(index.nextDueDate(kinds: ["c"], now: now) == now)
        #expect(index.nextDueDate(kinds: ["d"], now: now) == nil)
        let later = now.addingTimeInterval(30)
        #expect(index.claim(kinds: ["a", "b", "c"], limit: 10, now: later).map(\.id) == [c1, laterA, laterB])
        #expect(index.nextDueDate(kinds: ["a", "b", "c"], now: later) == nil)
    }

    @Test func aJobOfAnotherKindGivenBackGoesBackToItsOwnLine() {
        var index = JobIndex()
        let a = job(&index, kind: "a")
        let b = job(&index, kind: "b")
        var claimed = index.claim(kinds: ["a", "b"], limit: 10, now: now)
        #expect(claimed.map(\.id) == [a, b])
        claimed[1].runAt = now.addingTimeInterval(5)
        index.update(claimed[1], claimed: false)
        #expect(index.claim(kinds: ["a"], limit: 10, now: now.addingTimeInterval(10)).isEmpty)
        #expect(index.nextDueDate(kinds: ["b"], now: now) == now.addingTimeInterval(5))
        #expect(index.claim(kinds: ["b"], limit: 10, now: now.addingTimeInterval(10)).map(\.id) == [b])
    }

    @Test func aKindNoClaimAsksForKeepsNoMoreEntriesThanJobsGiveOrTakeAFew() {
        var index = JobIndex()
        let ids = (0..<200).map { _ in job(&index, kind: "future") }
        for id in ids.prefix(150) { index.remove(id) }
        // Swept once most of the line was stale; a few stale entries may stay.
        #expect(index.lineEntries(of: "future").notDue <= 50 + 64)
        for id in ids.suffix(50) { index.remove(id) }
        #expect(index.lineEntries(of: "future").notDue <= 64)
        let later = job(&index, kind: "future")
        #expect(index.claim(kinds: ["future"], limit: 10, now: now).map(\.id) == [later])
    }

    @Test func aGivenBackJobIsQueuedOnceHoweverOftenItsLaneMoves() {
        var index = JobIndex()
        let head = job(&index, lane: "l")
        let second = job(&index, lane: "l")
        let third = job(&index, lane: "l")
        // Removing later jobs of the lane makes its first one eligible again: once.
        index.remove(third)
        index.remove(second)
        #expect(index.lineEntries(of: "k") == (notDue: 1, due: 0))
        #expect(index.claim(kinds: ["k"], limit: 10, now: now).map(\.id) == [head])
    }

    @Test func namesPointAtTheirJobUntilItIsRemoved() {
        var index = JobIndex()
        let id = job(&index, name: "sync")
        #expect(index.job(named: "sync") == id)
        index.remove(id)
        #expect(index.job(named: "sync") == nil)
        #expect(index.count == 0)
    }
}
