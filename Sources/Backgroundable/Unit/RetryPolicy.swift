import Foundation

/// When and how often a unit whose async body throws runs again.
///
/// A policy sets the maximum number of attempts (the first one included), the wait
/// before each retry — fixed, or exponential with a cap and jitter — and, optionally,
/// which errors are worth a retry. A unit takes it from its ``AsyncTask/Options/retry``,
/// or else from its queue's default (``BackgroundQueue/init(name:maxConcurrentTasks:backgroundTaskProvider:expirationPolicy:retryPolicy:)``).
///
/// ```swift
/// let upload = AsyncTask.Options(
///     name: "upload-\(photo.id)",
///     timeout: .seconds(60),
///     retry: .exponential(maxAttempts: 5, initialDelay: .seconds(1), maximumDelay: .seconds(60)) { error in
///         (error as? URLError)?.code != .cancelled
///     })
/// let receipt = try await uploads.run(upload) { try await api.upload(photo) }
/// ```
///
/// ## What is retried
/// Only async bodies that throw (``AsyncTaskHandle/init(_:_:)``, ``BackgroundQueue``'s
/// `add(_:_:)` with a body, ``BackgroundQueue/run(_:_:)``): the error is the
/// attempt's result. A callback-style unit ends through ``AsyncTask/finish()`` and has
/// no error to retry on; wrap its callback API in an async body
/// (`withCheckedThrowingContinuation`) to get retries. Never retried: a
/// `CancellationError` thrown while the unit is being cancelled, and attempts the queue
/// stopped — a timeout bounds each attempt, and when it elapses the unit ends
/// ``AsyncTask/Outcome/timedOut``, as it would without retries.
///
/// ## Between attempts
/// The unit stays live: enqueued, deduplicating by its name, holding its place in its
/// lane, keeping the queue busy. It holds no concurrency slot and no thread (its `Task`
/// is suspended; the queue's one timer wakes it). ``AsyncTask/cancel()``,
/// ``BackgroundQueue/cancelAll()``, the cancellation of a caller of
/// ``BackgroundQueue/run(_:_:)`` and the expiry of background time end it at once,
/// ``AsyncTask/Outcome/cancelled``, without another attempt. When the wait is over it
/// starts again like any ready unit (by priority, then first come, first served), with
/// its full timeout.
public struct RetryPolicy: Sendable {
    /// The wait before each retry. New shapes come in minor releases: compare a backoff,
    /// or switch over it with a `default`.
    public struct Backoff: Sendable, Hashable, CustomStringConvertible {
        fileprivate enum Shape: Sendable, Hashable {
            case fixed(Duration)
            case exponential(initialDelay: Duration, multiplier: Double, maximumDelay: Duration, jitter: Double)
        }

        fileprivate let shape: Shape

        /// The same delay before every retry.
        public static func fixed(_ delay: Duration) -> Backoff { Backoff(shape: .fixed(delay)) }

        /// `initialDelay` before the first retry, multiplied by `multiplier` before each
        /// next one, capped at `maximumDelay`; then shortened by a random fraction of up
        /// to `jitter` (0: exact; 1: anywhere between zero and the delay), so that units
        /// that failed together do not retry together.
        public static func exponential(
            initialDelay: Duration, multiplier: Double, maximumDelay: Duration, jitter: Double
        ) -> Backoff {
            Backoff(
                shape: .exponential(
                    initialDelay: initialDelay, multiplier: multiplier, maximumDelay: maximumDelay, jitter: jitter))
        }

        public var description: String { "\(shape)" }
    }

    /// The most attempts a unit makes, the first one included: 1...255. A value below 1
    /// is treated as 1 (no retries); above 255, as 255.
    public let maxAttempts: Int
    /// The wait before each retry.
    public let backoff: Backoff
    /// Decides whether an error is worth another attempt; `nil` retries every error.
    /// Called in the unit's `Task`, outside every lock, once per failed attempt that has
    /// attempts left.
    public let shouldRetry: (@Sendable (any Error) -> Bool)?

    /// The most attempts a policy allows (the queue numbers attempts in one byte).
    public static let attemptLimit = 255

    /// A policy of `maxAttempts` attempts with `backoff` between them.
    public init(maxAttempts: Int, backoff: Backoff, retryingIf shouldRetry: (@Sendable (any Error) -> Bool)? = nil) {
        self.maxAttempts = min(max(1, maxAttempts), Self.attemptLimit)
        self.backoff = backoff
        self.shouldRetry = shouldRetry
    }

    /// Up to `maxAttempts` attempts, `delay` apart.
    public static func fixed(
        maxAttempts: Int, delay: Duration, retryingIf shouldRetry: (@Sendable (any Error) -> Bool)? = nil
    ) -> RetryPolicy {
        RetryPolicy(maxAttempts: maxAttempts, backoff: .fixed(delay), retryingIf: shouldRetry)
    }

    /// Up to `maxAttempts` attempts (4 by default, as in swift-jobs), exponential backoff
    /// from `initialDelay`, doubling by default, capped at `maximumDelay`, with `jitter`
    /// (see ``Backoff/exponential(initialDelay:multiplier:maximumDelay:jitter:)``).
    public static func exponential(
        maxAttempts: Int = 4,
        initialDelay: Duration = .milliseconds(500),
        multiplier: Double = 2,
        maximumDelay: Duration = .seconds(30),
        jitter: Double = 0.5,
        retryingIf shouldRetry: (@Sendable (any Error) -> Bool)? = nil
    ) -> RetryPolicy {
        RetryPolicy(
            maxAttempts: maxAttempts,
            backoff: .exponential(
                initialDelay: initialDelay, multiplier: multiplier, maximumDelay: maximumDelay, jitter: jitter),
            retryingIf: shouldRetry)
    }

    /// One attempt: a unit with this policy is never retried, whatever its queue's
    /// default.
    public static let never = RetryPolicy(maxAttempts: 1, backoff: .fixed(.zero))

    /// The wait before attempt `attempt` (2 for the first retry; any lower number counts
    /// as 2), drawing the jitter from `generator`. Negative durations count as zero,
    /// durations longer than about 292 years (`Int64.max` nanoseconds) as 292 years, a
    /// multiplier below 1 or NaN as 1, and a jitter outside 0...1 is clamped (NaN: 0).
    public func delay(beforeAttempt attempt: Int, using generator: inout some RandomNumberGenerator) -> Duration {
        switch backoff.shape {
        case .fixed(let delay):
            return delay.clampedToWait
        case .exponential(let initial, let multiplier, let maximum, let jitter):
            let cap = Self.seconds(maximum.clampedToWait)
            let first = min(Self.seconds(initial.clampedToWait), cap)
            let growth = multiplier.isNaN ? 1 : max(1, multiplier)
            var delay = first == 0 ? 0 : first * pow(growth, Double(attempt > 2 ? attempt - 2 : 0))
            // An infinite product (a huge multiplier or attempt) is the cap too.
            if !(delay <= cap) { delay = cap }
            let jitter = jitter.isNaN ? 0 : min(max(0, jitter), 1)
            if jitter > 0 { delay *= 1 - jitter * Double.random(in: 0..<1, using: &generator) }
            let nanoseconds = delay * 1e9
            return nanoseconds < Double(Int64.max) ? .nanoseconds(Int64(nanoseconds)) : .longestWait
        }
    }

    /// The wait before attempt `attempt`, with the system's random numbers.
    public func delay(beforeAttempt attempt: Int) -> Duration {
        var generator = SystemRandomNumberGenerator()
        return delay(beforeAttempt: attempt, using: &generator)
    }

    /// The delay before attempt `attempt + 1` after `error` ended attempt `attempt`, or
    /// `nil` when there is none (no attempts left, or an error not worth retrying).
    func delay(after error: any Error, attempt: Int) -> Duration? {
        guard attempt < maxAttempts, shouldRetry?(error) ?? true else { return nil }
        return delay(beforeAttempt: attempt + 1)
    }

    private static func seconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}

// A durable job's record keeps its backoff (DurableJobRecord).
extension RetryPolicy.Backoff: Codable {
    private enum CodingKeys: String, CodingKey {
        case fixed, initialDelay, multiplier, maximumDelay, jitter
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        if let delay = try container.decodeIfPresent(Duration.self, forKey: .fixed) {
            self = .fixed(delay)
        } else {
            self = .exponential(
                initialDelay: try container.decode(Duration.self, forKey: .initialDelay),
                multiplier: try container.decode(Double.self, forKey: .multiplier),
                maximumDelay: try container.decode(Duration.self, forKey: .maximumDelay),
                jitter: try container.decode(Double.self, forKey: .jitter))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        switch shape {
        case .fixed(let delay):
            try container.encode(delay, forKey: .fixed)
        case .exponential(let initialDelay, let multiplier, let maximumDelay, let jitter):
            try container.encode(initialDelay, forKey: .initialDelay)
            try container.encode(multiplier, forKey: .multiplier)
            try container.encode(maximumDelay, forKey: .maximumDelay)
            try container.encode(jitter, forKey: .jitter)
        }
    }
}
