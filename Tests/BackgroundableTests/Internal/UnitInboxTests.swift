import Testing

@testable import Backgroundable

/// The lock-free way into a busy queue (``UnitInbox``). Storage-level tests set the
/// drainer flag by hand (as a scheduled drainer that has not run yet would), so what
/// waits in the inbox is deterministic; the first transition clears it again.
@Suite("Unit inbox")
struct UnitInboxTests {
    private func unit(_ name: String? = nil, _ policy: UniquenessPolicy = .ignore) -> AsyncTask {
        AsyncTask(.init(name: name, timeout: nil, uniquenessPolicy: policy)) { $0.finish() }
    }

    /// A queue whose next adds wait in its inbox, as behind a scheduled drainer, until
    /// the next transition (`suspend()` is one: it is done first).
    private func queueBehindADrainer(limit: Int? = nil, suspended: Bool = false) -> BackgroundQueue {
        let queue = BackgroundQueue(maxConcurrentTasks: limit, backgroundTaskProvider: NoopBackgroundTaskProvider())
        if suspended { queue.suspend() }
        setDrainerFlag(queue)
        return queue
    }

    private func setDrainerFlag(_ queue: BackgroundQueue) {
        #expect(queue.core.inbox.mirror(drainerScheduled: true))
    }

    @Test func theFlagIsClearedOnlyWithAnEmptyStack() {
        let inbox = UnitInbox()
        let (first, second) = (unit(), unit())
        #expect(inbox.push(first), "no drainer: the pusher admits it")
        #expect(inbox.mirror(drainerScheduled: true))
        #expect(!inbox.push(second), "a drainer is scheduled: it admits it")
        #expect(!inbox.mirror(drainerScheduled: false), "units wait: the drainer cannot stop")
        #expect(inbox.takeAll().map(\.member).elementsEqual([first, second], by: ===), "oldest first")
        #expect(inbox.takeAll().isEmpty)
        #expect(inbox.mirror(drainerScheduled: false))
        #expect(inbox.push(unit()), "the flag is clear again")
    }

    @Test func pushedUnitsKeepTheirPlaceAndReadersSeeThem() async {
        let queue = queueBehindADrainer(limit: 1, suspended: true)
        let order = Recorder<Int>()
        let pushed = (0..<3).map { index in
            AsyncTask(.init(timeout: nil)) {
                order.append(index)
                $0.finish()
            }
        }
        for unit in pushed { queue.add(unit) }
        #expect(queue.enqueuedCount == 3, "a reader admits what waits in the inbox")
        queue.add(
            contentsOf: (3..<5).map { index in
                AsyncTask(.init(timeout: nil)) {
                    order.append(index)
                    $0.finish()
                }
            })
        queue.resume()
        await queue.waitUntilIdle()
        #expect(order.all == [0, 1, 2, 3, 4])
    }

    @Test func waitingForIdleAdmitsTheInboxFirst() async {
        let queue = queueBehindADrainer()
        let unit = queue.adding(unit())
        await queue.waitUntilIdle()
        #expect(unit.currentOutcome?.kind == .finished)
    }

    @Test func dropAndReplaceAreDecidedBeforeAddReturns() {
        let queue = queueBehindADrainer(suspended: true)
        let first = queue.adding(unit("sync", .drop))
        setDrainerFlag(queue)
        let dropped = queue.adding(unit("sync", .drop))
        #expect(dropped.currentOutcome?.kind == .dropped)
        setDrainerFlag(queue)
        let replacing = queue.adding(unit("sync", .replace))
        #expect(first.currentOutcome?.kind == .replaced)
        #expect(replacing.currentOutcome == nil)
        queue.cancelAll()
        queue.resume()
    }

    @Test func aUnitCancelledInTheInboxFreesItsNameAtOnce() {
        let queue = queueBehindADrainer(suspended: true)
        let labelled = queue.adding(unit("refresh"))
        labelled.cancel()
        #expect(queue.core.read { !$0.hasLiveMember(named: "refresh") })
        let next = queue.adding(unit("refresh", .drop))
        #expect(next.currentOutcome == nil, "the cancelled unit no longer holds the name")
        #expect(queue.enqueuedCount == 1)
        queue.cancelAll()
        queue.resume()
    }

    @Test func racingPushersAndReadersLoseNoUnit() async {
        let queue = BackgroundQueue(backgroundTaskProvider: NoopBackgroundTaskProvider())
        let units = await withTaskGroup(of: [AsyncTask].self) { group in
            for pusher in 0..<4 {
                group.addTask {
                    (0..<5_000).map { index in
                        if index % 500 == 0 { _ = queue.enqueuedCount + pusher }
                        return queue.adding(AsyncTask(.init(timeout: nil)) { $0.finish() })
                    }
                }
            }
            return await group.reduce(into: []) { $0 += $1 }
        }
        await queue.waitUntilIdle()
        #expect(units.allSatisfy { $0.currentOutcome?.kind == .finished })
        #expect(queue.core.read { $0.liveCount } == 0)
    }
}

extension BackgroundQueue {
    /// `add(_:)`, returning the unit.
    fileprivate nonisolated func adding(_ unit: AsyncTask) -> AsyncTask {
        #expect(add(unit))
        return unit
    }
}
