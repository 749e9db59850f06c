@testable import Backgroundable
import Dispatch
import Foundation
import Synchronization
import Testing

/// The inbox is the lock-free stack unnamed units are pushed to. Its one subtle
/// property: a pusher must never touch the unit it links behind, because the queue may
/// take that unit and release it at any moment (and its memory may hold a new unit by
/// the time the compare-and-swap runs).
@Suite("Inbox")
struct InboxTests {
    private final class Shared: Sendable {
        let inbox = Inbox()
    }

    private func unit() -> AsyncTask {
        AsyncTask { $0.finish() }
    }

    @Test func takesEveryUnitOldestFirstAndSaysWhenItWasEmpty() {
        let inbox = Inbox()
        let units = (0..<5).map { _ in unit() }
        // (`#expect` cannot take the noncopyable inbox itself: each result is read first.)
        let wasEmpty = units.map { inbox.push($0) }
        #expect(wasEmpty == [true, false, false, false, false])
        let emptyAfterPushes = inbox.isEmpty
        #expect(!emptyAfterPushes)
        let taken = inbox.takeAll()
        #expect(taken.map(ObjectIdentifier.init) == units.map(ObjectIdentifier.init))
        let emptyAfterTaking = inbox.isEmpty
        #expect(emptyAfterTaking)
        let takenAgain = inbox.takeAll()
        #expect(takenAgain.isEmpty)
        let emptyBeforePushingAgain = inbox.push(units[0])
        #expect(emptyBeforePushingAgain)
        _ = inbox.takeAll()
    }

    @Test func holdsItsUnitsUntilTakenAndNoLonger() {
        let inbox = Inbox()
        weak var pushed: AsyncTask?
        do {
            let unit = unit()
            pushed = unit
            _ = inbox.push(unit)
        }
        #expect(pushed != nil, "the inbox holds what it was given")
        do {
            let taken = inbox.takeAll()
            #expect(taken.count == 1)
        }
        #expect(pushed == nil, "taken units belong to the taker alone")
    }

    /// Pushers add units nobody else holds while a taker keeps taking and dropping
    /// them, so units are released — and their memory reused by the next pushes —
    /// while other pushers are linking behind them. Every unit must come out exactly
    /// once, and all of them must be released. (The sanitizer run checks that no
    /// pusher touches a released unit.)
    @Test func concurrentPushersAndATakerLoseNothingAndLeakNothing() async {
        let shared = Shared()
        let pushers = 3
        let perPusher = 20_000
        let taken = Atomic<Int>(0)
        let pushersDone = Atomic<Int>(0)
        let live = Recorder<Int>()
        await withCheckedContinuation { (finished: CheckedContinuation<Void, Never>) in
            let group = DispatchGroup()
            for _ in 0..<pushers {
                group.enter()
                Thread.detachNewThread {
                    for _ in 0..<perPusher {
                        _ = shared.inbox.push(AsyncTask { $0.finish() })
                    }
                    pushersDone.add(1, ordering: .releasing)
                    group.leave()
                }
            }
            group.enter()
            Thread.detachNewThread {
                var weakUnits: [WeakUnit] = []
                while true {
                    let done = pushersDone.load(ordering: .acquiring) == pushers
                    let units = shared.inbox.takeAll()
                    taken.add(units.count, ordering: .relaxed)
                    if weakUnits.count < 1_000, let first = units.first { weakUnits.append(WeakUnit(first)) }
                    if done && units.isEmpty { break }
                }
                live.append(weakUnits.filter { $0.unit != nil }.count)
                group.leave()
            }
            group.notify(queue: .global()) { finished.resume() }
        }
        #expect(taken.load(ordering: .relaxed) == pushers * perPusher)
        #expect(live.all == [0], "every taken unit was released")
        let empty = shared.inbox.isEmpty
        #expect(empty)
    }
}
