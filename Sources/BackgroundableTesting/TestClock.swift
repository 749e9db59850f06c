package import Backgroundable
import Synchronization

/// A clock that moves only when the test says: a queue created with
/// `BackgroundQueue(clock:)` counts its timeouts, delayed starts, retry delays and
/// progress samples on it, so a test of a 30-second timeout advances the clock by 30
/// seconds instead of waiting.
///
/// ```swift
/// let clock = TestClock()
/// let queue = BackgroundQueue(clock: clock)
/// let unit = queue.add(timeout: .seconds(30)) { _ in }  // never finishes
/// clock.advance(by: .seconds(30))
/// #expect(await unit.outcome.kind == .timedOut)
/// ```
///
/// A timeout counts from the unit's start and a delay from its add, as on the real
/// clock. A unit added to a queue with a free slot has started when `add` returns; one
/// that waits for a slot starts later, so wait for its `started` event (see
/// `AsyncStream<BackgroundQueue.Event>.Iterator.next(where:)`) before advancing.
///
/// It is also a `Clock`, so code of yours that sleeps on an injected clock can share it.
///
/// ## Concurrency contract
/// Every member may be called from any thread or task. ``advance(by:)`` resumes the
/// sleepers whose deadline passed before it returns; what they do next (a queue timing
/// a unit out, starting a delayed one) happens on their own tasks, so await the
/// outcome, an event or `BackgroundQueue.waitUntilIdle()` to see it.
/// A sleep whose deadline has already passed returns at once, so a sleeper armed after
/// the clock moved never misses its wake-up.
public final class TestClock: Clock, Sendable {
    /// A point in time on a ``TestClock``.
    public struct Instant: InstantProtocol, Sendable {
        /// Nanoseconds since an arbitrary origin.
        package let nanoseconds: Int64

        package init(nanoseconds: Int64) {
            self.nanoseconds = nanoseconds
        }

        /// This instant moved by `duration`, saturating at the clock's range.
        public func advanced(by duration: Duration) -> Instant {
            Instant(nanoseconds: Self.adding(nanoseconds, Self.nanoseconds(of: duration)))
        }

        /// The duration from this instant to `other`.
        public func duration(to other: Instant) -> Duration {
            .nanoseconds(other.nanoseconds) - .nanoseconds(nanoseconds)
        }

        public static func < (lhs: Instant, rhs: Instant) -> Bool {
            lhs.nanoseconds < rhs.nanoseconds
        }

        /// `duration` in whole nanoseconds, clamped to `Int64` (±292 years).
        private static func nanoseconds(of duration: Duration) -> Int64 {
            let (seconds, attoseconds) = duration.components
            let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
            if overflow { return seconds < 0 ? -.max : .max }
            return adding(scaled, attoseconds / 1_000_000_000)
        }

        private static func adding(_ lhs: Int64, _ rhs: Int64) -> Int64 {
            let (sum, overflow) = lhs.addingReportingOverflow(rhs)
            return overflow ? (rhs < 0 ? -.max : .max) : sum
        }
    }

    private typealias Waiter = (deadline: Int64, continuation: Continuation<Void>)

    private struct State {
        var now: Int64 = 1_000_000_000
        var sleepers: [UInt64: Waiter] = [:]
        /// Tests waiting for a sleeper to sleep until a given deadline.
        var watchers: [UInt64: Waiter] = [:]
        var nextID: UInt64 = 0
    }

    private let state = Lock(State())

    /// Creates a clock that stands still until ``advance(by:)``.
    public init() {}

    /// Now, on this clock.
    public var now: Instant { Instant(nanoseconds: state.withLock { $0.now }) }

    /// One nanosecond.
    public var minimumResolution: Duration { .nanoseconds(1) }

    /// Moves the clock forward by `duration` and resumes every sleeper whose deadline
    /// has passed. A zero or negative duration does nothing (the clock never goes back).
    public func advance(by duration: Duration) {
        let due = state.withLock { state in
            let target = Instant(nanoseconds: state.now).advanced(by: duration).nanoseconds
            guard target > state.now else { return [Continuation<Void>]() }
            state.now = target
            let due = state.sleepers.filter { $0.value.deadline <= target }
            for id in due.keys { state.sleepers[id] = nil }
            return due.values.map(\.continuation)
        }
        // Resumed after unlocking: the sleepers' code is not ours.
        for continuation in due { continuation.resume() }
    }

    /// Suspends until the clock reaches `deadline` (at once if it has).
    ///
    /// - Throws: `CancellationError` when the calling task is cancelled first.
    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        await sleep(until: deadline.nanoseconds)
        try Task.checkCancellation()
    }

    /// Returns once something sleeps on this clock until exactly `deadline` (at once if
    /// something already does): for a queue, its sleeper has handled everything due
    /// earlier and is waiting for that deadline — say, the timeout of a unit that just
    /// started. Returns early when the calling task is cancelled.
    public func waitForSleeper(until deadline: Instant) async {
        await waitCancellably(
            register: { continuation in
                state.withLock { state in
                    if state.sleepers.values.contains(where: { $0.deadline == deadline.nanoseconds }) { return nil }
                    state.nextID += 1
                    state.watchers[state.nextID] = (deadline.nanoseconds, continuation)
                    return state.nextID
                }
            },
            unregister: { id in self.state.withLock { $0.watchers.removeValue(forKey: id) }?.continuation.resume() })
    }

    /// The clock a queue reads and sleeps on.
    package var queueClock: QueueClock {
        QueueClock(now: { self.state.withLock { $0.now } }, sleep: { await self.sleep(until: $0) })
    }

    /// Suspends until the clock reaches `deadline`, or the calling task is cancelled.
    private func sleep(until deadline: Int64) async {
        await waitCancellably(
            register: { continuation in
                let (id, watchers) = state.withLock { state -> (UInt64?, [Continuation<Void>]) in
                    guard deadline > state.now else { return (nil, []) }
                    state.nextID += 1
                    state.sleepers[state.nextID] = (deadline, continuation)
                    let watching = state.watchers.filter { $0.value.deadline == deadline }
                    for id in watching.keys { state.watchers[id] = nil }
                    return (state.nextID, watching.values.map(\.continuation))
                }
                for watcher in watchers { watcher.resume() }
                return id
            },
            unregister: { id in self.state.withLock { $0.sleepers.removeValue(forKey: id) }?.continuation.resume() })
    }
}
