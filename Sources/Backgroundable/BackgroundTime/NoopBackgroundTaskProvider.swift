import Synchronization

/// A provider that grants nothing — there is no background time to ask for — but
/// counts every begin and end, so the accounting stays observable. The default on
/// platforms without a background-time mechanism of their own (Linux).
///
/// Memory stays constant however many assertions pass through it. Its assertions
/// never expire.
public final class NoopBackgroundTaskProvider: BackgroundTaskProvider {
    /// The instance the default provider uses.
    public static let shared = NoopBackgroundTaskProvider()

    private let begun = Atomic<Int>(0)
    private let ended = Atomic<Int>(0)

    /// Creates a provider with its own counts (tests); apps use ``shared``.
    public init() {}

    /// Assertions begun so far.
    public var beginCount: Int { begun.load(ordering: .acquiring) }
    /// Assertions ended so far.
    public var endCount: Int { ended.load(ordering: .acquiring) }
    /// Assertions begun and not ended.
    public var activeCount: Int { beginCount - endCount }

    /// Counts the begin and returns a fresh identifier; never calls `expirationHandler`.
    /// Thread-safe, lock-free.
    public func beginBackgroundTask(
        named name: String,
        expirationHandler: @escaping @Sendable () -> Void
    ) -> BackgroundTaskIdentifier? {
        BackgroundTaskIdentifier(rawValue: begun.wrappingAdd(1, ordering: .acquiringAndReleasing).newValue)
    }

    /// Counts the end. Thread-safe, lock-free.
    public func endBackgroundTask(_ identifier: BackgroundTaskIdentifier) {
        ended.wrappingAdd(1, ordering: .acquiringAndReleasing)
    }
}
