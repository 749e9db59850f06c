/// Chooses the platform's default ``BackgroundTaskProvider``, in one place.
///
/// - Linux and other platforms without a background-time mechanism:
///   ``NoopBackgroundTaskProvider/shared``.
public enum DefaultBackgroundTaskProvider {
    /// The provider new queues and assertions use when none is given.
    public static func make() -> any BackgroundTaskProvider {
        NoopBackgroundTaskProvider.shared
    }
}
