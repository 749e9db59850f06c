/// The queue's busy periods (from its first admitted member until none is left), the
/// background time each one holds, and who waits for the queue to be idle.
///
/// A period's members start only once the deliverer began its background time
/// (``backgroundTimeBegun(period:)``); a waiter for idle is handed out when the idle
/// notification of its period was delivered (``idleDelivered(period:)``), so it finds
/// the delegate told.
struct BusyPeriods {
    /// What an admission or a departure did to the busy period.
    enum Change: Equatable {
        /// idle → busy: tell observers (``QueueStateMachine/Delivery/busy(period:)``)
        /// when `reported`.
        case began(period: UInt64, reported: Bool)
        /// busy → idle: tell observers (``QueueStateMachine/Delivery/idle(period:)``)
        /// when `reported`.
        case ended(period: UInt64, reported: Bool)
    }

    /// `false` for a queue with no busy periods to report (the bridge's shared deadline
    /// keeper): its members never wait for background time.
    let reportsBusyPeriods: Bool
    private(set) var isBusy = false
    /// Idle → busy transitions so far: the current or last busy period.
    private(set) var period: UInt64 = 0
    /// Members start only once the busy period's background time is held.
    private(set) var backgroundTimeHeld: Bool
    private var idleDeliveredThrough: UInt64 = 0
    /// Who waits for idle, by registration number: the busy period they wait out.
    private var idleWaiters: [UInt64: (period: UInt64, waiter: Continuation<Void>)] = [:]
    private var idleWaiterIDs: UInt64 = 0

    init(reportsBusyPeriods: Bool) {
        self.reportsBusyPeriods = reportsBusyPeriods
        self.backgroundTimeHeld = !reportsBusyPeriods
    }

    /// A member arrives: an idle queue becomes busy. `nil` when it already was.
    mutating func memberArrived() -> Change? {
        guard !isBusy else { return nil }
        isBusy = true
        period += 1
        if reportsBusyPeriods { backgroundTimeHeld = false }
        return .began(period: period, reported: reportsBusyPeriods)
    }

    /// The last live member left (`liveCount` is 0): a busy queue becomes idle. `nil`
    /// when members are left or it already was idle.
    mutating func membersLeft(liveCount: Int) -> Change? {
        guard isBusy, liveCount == 0 else { return nil }
        isBusy = false
        return .ended(period: period, reported: reportsBusyPeriods)
    }

    /// `true` while `period` is the busy period under way.
    func isCurrent(_ period: UInt64) -> Bool {
        isBusy && period == self.period
    }

    /// The deliverer began the background time of `period`: `true` when that is the
    /// current period's and its members may start now.
    mutating func backgroundTimeBegun(period begun: UInt64) -> Bool {
        guard isBusy, begun == period, !backgroundTimeHeld else { return false }
        backgroundTimeHeld = true
        return true
    }

    /// Registers someone waiting for the queue to be idle: returns the registration
    /// (for ``stopWaitingUntilIdle(_:)``), or `nil` when the queue already is idle (and
    /// everybody was told): the caller returns at once.
    mutating func waitUntilIdle(_ waiter: Continuation<Void>) -> UInt64? {
        if !isBusy && idleDeliveredThrough == period { return nil }
        idleWaiterIDs += 1
        idleWaiters[idleWaiterIDs] = (period, waiter)
        return idleWaiterIDs
    }

    /// The waiter of `registration` stopped waiting (its task was cancelled): returns its
    /// continuation to resume, or `nil` when ``idleDelivered(period:)`` handed it out
    /// already. Either way it is handed out exactly once.
    mutating func stopWaitingUntilIdle(_ registration: UInt64) -> Continuation<Void>? {
        idleWaiters.removeValue(forKey: registration)?.waiter
    }

    /// The idle notification of `period` was delivered: returns the waiters it covers.
    mutating func idleDelivered(period delivered: UInt64) -> [Continuation<Void>] {
        idleDeliveredThrough = Swift.max(idleDeliveredThrough, delivered)
        guard !idleWaiters.isEmpty else { return [] }
        let covered = idleWaiters.filter { $0.value.period <= delivered }
        for registration in covered.keys { idleWaiters[registration] = nil }
        return covered.values.map(\.waiter)
    }
}
