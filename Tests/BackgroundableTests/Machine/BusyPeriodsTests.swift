import Synchronization
import Testing

@testable import Backgroundable

@Suite("Machine: busy periods")
struct BusyPeriodsTests {
    @Test func aPeriodRunsFromTheFirstArrivalToTheLastDeparture() {
        var busy = BusyPeriods(reportsBusyPeriods: true)
        #expect(!busy.backgroundTimeHeld)
        #expect(busy.memberArrived() == .began(period: 1, reported: true))
        #expect(busy.memberArrived() == nil)
        #expect(busy.membersLeft(liveCount: 1) == nil)
        // Members start once the period's background time is held, once.
        #expect(busy.backgroundTimeBegun(period: 0) == false)
        #expect(busy.backgroundTimeBegun(period: 1) == true)
        #expect(busy.backgroundTimeHeld)
        #expect(busy.backgroundTimeBegun(period: 1) == false)
        #expect(busy.membersLeft(liveCount: 0) == .ended(period: 1, reported: true))
        #expect(busy.membersLeft(liveCount: 0) == nil)
        // The next period waits for its own background time.
        #expect(busy.memberArrived() == .began(period: 2, reported: true))
        #expect(!busy.backgroundTimeHeld)
    }

    @Test func aQueueWithoutBusyPeriodsNeverWaitsForBackgroundTime() {
        var busy = BusyPeriods(reportsBusyPeriods: false)
        #expect(busy.backgroundTimeHeld)
        #expect(busy.memberArrived() == .began(period: 1, reported: false))
        #expect(busy.backgroundTimeHeld)
        #expect(busy.membersLeft(liveCount: 0) == .ended(period: 1, reported: false))
    }

    @Test func idleWaitersAreHandedOutOnceByTheIdleDeliveryOrByTheirCancellation() async {
        let busy = Mutex(BusyPeriods(reportsBusyPeriods: true))
        // Idle and told: nobody waits.
        await withContinuation { (waiter: Continuation<Void>) in
            let registration = busy.withLock { $0.waitUntilIdle(waiter) }
            #expect(registration == nil)
            waiter.resume()
        }
        _ = busy.withLock { $0.memberArrived() }
        await withContinuation { (waiter: Continuation<Void>) in
            let registration = busy.withLock { $0.waitUntilIdle(waiter) }
            #expect(registration != nil)
            _ = busy.withLock { $0.membersLeft(liveCount: 0) }
            // The idle notification covers it; stopping afterwards finds nothing.
            let covered = busy.withLock { $0.idleDelivered(period: 1) }
            #expect(covered.count == 1)
            let stopped = busy.withLock { $0.stopWaitingUntilIdle(registration!) }
            #expect(stopped == nil)
            for waiter in covered { waiter.resume() }
        }
        _ = busy.withLock { $0.memberArrived() }
        await withContinuation { (waiter: Continuation<Void>) in
            let registration = busy.withLock { $0.waitUntilIdle(waiter) }!
            // Cancelled before the idle: handed out by the stop, not by the delivery.
            let stopped = busy.withLock { $0.stopWaitingUntilIdle(registration) }
            #expect(stopped != nil)
            _ = busy.withLock { $0.membersLeft(liveCount: 0) }
            let covered = busy.withLock { $0.idleDelivered(period: 2) }
            #expect(covered.isEmpty)
            stopped?.resume()
        }
    }
}
