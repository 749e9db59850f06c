#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif
// `timespec` is declared by the C library's headers, which several C modules include:
// its members count as the module's that the compiler met first, and with postgres-nio
// in the build (the `Postgres` trait) that is this one.
#if canImport(SwiftOverlayShims)
    import SwiftOverlayShims
#endif

/// The clock `ContinuousClock` reads (it keeps counting while the system sleeps), as
/// whole nanoseconds: deadlines in 8 bytes of plain integer, where a
/// `ContinuousClock.Instant` is 16 bytes of a resilient type, copied and compared
/// through runtime calls. Every executing unit with a timeout carries its deadline in
/// these units, and the queue compares them under its lock.
enum ContinuousNanoseconds {
    /// Now, read from the system clock `ContinuousClock.now` reads.
    static func now() -> Int64 {
        var time = timespec()
        #if canImport(Darwin)
            clock_gettime(CLOCK_MONOTONIC_RAW, &time)
        #else
            clock_gettime(CLOCK_BOOTTIME, &time)
        #endif
        return Int64(time.tv_sec) &* 1_000_000_000 &+ Int64(time.tv_nsec)
    }

    /// `start` plus `duration`, clamped to `Int64.max` (a timeout of centuries).
    static func deadline(after start: Int64, _ duration: Int64) -> Int64 {
        let (sum, overflow) = start.addingReportingOverflow(duration)
        return overflow ? .max : sum
    }

    /// Suspends until `deadline` has passed on this clock, or the calling task is
    /// cancelled (then it returns early).
    static func sleep(until deadline: Int64) async {
        let remaining = deadline &- now()
        guard remaining > 0 else { return }
        try? await Task.sleep(for: .nanoseconds(remaining), clock: .continuous)
    }
}

/// The clock a queue reads and sleeps on, in nanoseconds: the continuous clock, or a
/// test's (which moves only when the test says). `package`, not `public`: only
/// BackgroundableTesting's `TestClock` makes one outside this module.
package struct QueueClock: Sendable {
    /// Now.
    let now: @Sendable () -> Int64
    /// Suspends until `deadline` has passed, or the calling task is cancelled (then it
    /// returns early).
    let sleep: @Sendable (_ deadline: Int64) async -> Void

    package init(now: @escaping @Sendable () -> Int64, sleep: @escaping @Sendable (_ deadline: Int64) async -> Void) {
        self.now = now
        self.sleep = sleep
    }

    static let continuous = QueueClock(now: ContinuousNanoseconds.now, sleep: ContinuousNanoseconds.sleep(until:))
}
