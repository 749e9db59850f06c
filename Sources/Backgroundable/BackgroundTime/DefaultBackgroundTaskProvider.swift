import Synchronization

/// Chooses the platform's default ``BackgroundTaskProvider``, in one place.
///
/// - iOS, iPadOS, tvOS, visionOS and Mac Catalyst (UIKit):
///   `UIApplicationBackgroundTaskProvider.shared`.
/// - watchOS: ``ExpiringActivityBackgroundTaskProvider`` over
///   `ProcessInfo.performExpiringActivity(withReason:using:)`.
/// - macOS, Linux and every other platform, which suspend no process for being in
///   the background: ``NoopBackgroundTaskProvider/shared``.
///
/// Two overrides, in order of precedence:
/// 1. ``withProvider(_:operation:)`` replaces the default for the current task and the
///    tasks it creates, for tests;
/// 2. ``processDefault`` replaces it for the whole process — what
///    ``GracefulShutdown/install(gracePeriod:cancellationPeriod:)`` sets on servers and
///    command-line tools.
public enum DefaultBackgroundTaskProvider {
    /// A replacement for the platform default, bound by ``withProvider(_:operation:)``.
    @TaskLocal private static var replacement: (any BackgroundTaskProvider)?

    /// The process-wide replacement, behind a lock so any thread may read or set it.
    private static let processReplacement = Lock<(any BackgroundTaskProvider)?>(nil)

    /// The provider new queues and assertions use when none is given: the
    /// replacement bound by ``withProvider(_:operation:)`` in the current
    /// task, if any, then ``processDefault``, otherwise the platform's default.
    /// Callable from any thread.
    public static func make() -> any BackgroundTaskProvider {
        replacement ?? processDefault ?? platformDefault
    }

    /// A process-wide replacement for the platform default; `nil` (the initial value)
    /// restores it. Thread-safe.
    ///
    /// Queues and assertions read the default when they are created, so set this early,
    /// before the first queue (``BackgroundQueue/shared`` included) exists: a queue keeps
    /// the provider it was created with.
    public static var processDefault: (any BackgroundTaskProvider)? {
        get { processReplacement.withLock { $0 } }
        set {
            // The replaced provider is handed out and released after unlocking: its
            // `deinit` is a caller's.
            _ = processReplacement.withLock { current in
                defer { current = newValue }
                return current
            }
        }
    }

    /// Runs `operation` with ``make()`` returning `provider` — in `operation`, in
    /// the child tasks and unstructured `Task`s it creates, and nowhere else
    /// (a task-local value, so tests running in parallel don't see each other's).
    ///
    /// Use it to observe code that relies on the default provider, such as the
    /// expansion of the `@Backgroundable` macro, with a
    /// `RecordingBackgroundTaskProvider` (`BackgroundableTesting`). `operation` runs on the caller's isolation.
    @discardableResult
    public static func withProvider<Result>(
        _ provider: any BackgroundTaskProvider,
        isolation: isolated (any Actor)? = #isolation,
        operation: () async throws -> Result
    ) async rethrows -> Result {
        try await $replacement.withValue(provider, operation: operation)
    }

    /// The synchronous form of ``withProvider(_:isolation:operation:)``.
    @discardableResult
    public static func withProvider<Result>(
        _ provider: any BackgroundTaskProvider,
        operation: () throws -> Result
    ) rethrows -> Result {
        try $replacement.withValue(provider, operation: operation)
    }

    private static var platformDefault: any BackgroundTaskProvider {
        #if canImport(UIKit) && !os(watchOS)
            UIApplicationBackgroundTaskProvider.shared
        #elseif os(watchOS)
            ExpiringActivityBackgroundTaskProvider.shared
        #else
            NoopBackgroundTaskProvider.shared
        #endif
    }
}
