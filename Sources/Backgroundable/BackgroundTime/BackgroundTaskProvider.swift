/// A source of *background-time assertions*: permission to keep running while the
/// app or process would otherwise be suspended or stopped.
///
/// A ``BackgroundQueue`` holds one assertion for each busy period; ``withBackgroundTime(named:provider:operation:onExpiration:)``
/// and ``BackgroundTimeAssertion`` hold one around any piece of work. Ship your own
/// provider to integrate another platform mechanism, or to observe the calls in tests
/// (`RecordingBackgroundTaskProvider`, in the `BackgroundableTesting` product).
///
/// ## Contract
/// Both methods may be called from any thread. For every identifier it returns, the
/// provider is told ``endBackgroundTask(_:)`` exactly once, either normally or from
/// inside the expiration handler. The provider calls `expirationHandler` at most once,
/// from any thread, when the time runs out before the assertion ended.
public protocol BackgroundTaskProvider: Sendable {
    /// Begins an assertion named `name`. Returns `nil` when none could be granted
    /// (nothing will then be ended).
    func beginBackgroundTask(
        named name: String,
        expirationHandler: @escaping @Sendable () -> Void
    ) -> BackgroundTaskIdentifier?

    /// Ends an assertion this provider began.
    func endBackgroundTask(_ identifier: BackgroundTaskIdentifier)
}

/// Identifies one assertion of a ``BackgroundTaskProvider``.
public struct BackgroundTaskIdentifier: RawRepresentable, Hashable, Sendable {
    /// The provider-specific value.
    public let rawValue: Int

    /// Wraps a provider-specific value.
    public init(rawValue: Int) {
        self.rawValue = rawValue
    }
}
