/// Busy-period bookkeeping shared by both queue front ends: whether the queue is busy,
/// which busy period it is in, and who waits for the end of one. Guarded by the
/// owner's lock.
///
/// A waiter is resumed by the delivery of the idle notification that covers its period
/// — after the delegate, the events and the end of background time — never merely
/// because a counter reached zero, so `waitUntilIdle()` returning means "idle, and
/// everybody was told".
struct BusyPeriods {
    private struct Waiter {
        let period: UInt64
        let continuation: Continuation<Void>
    }

    private(set) var isBusy = false
    /// Idle → busy transitions so far: the current or last busy period.
    private(set) var current: UInt64 = 0
    private var idleDeliveredThrough: UInt64 = 0
    private var waiters: [Waiter] = []

    /// idle → busy; returns the new period.
    mutating func begin() -> UInt64 {
        isBusy = true
        current += 1
        return current
    }

    /// busy → idle; returns the period that ended.
    mutating func end() -> UInt64 {
        isBusy = false
        return current
    }

    /// Registers a waiter, or returns `true` when the caller may return at once.
    mutating func wait(_ continuation: Continuation<Void>) -> Bool {
        if !isBusy && idleDeliveredThrough == current { return true }
        waiters.append(Waiter(period: current, continuation: continuation))
        return false
    }

    /// The idle notification of `period` was delivered: the waiters it covers, to resume.
    mutating func idleDelivered(period: UInt64) -> [Continuation<Void>] {
        idleDeliveredThrough = max(idleDeliveredThrough, period)
        var resumed: [Continuation<Void>] = []
        waiters.removeAll { waiter in
            guard waiter.period <= period else { return false }
            resumed.append(waiter.continuation)
            return true
        }
        return resumed
    }
}
