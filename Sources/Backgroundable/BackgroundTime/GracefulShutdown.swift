import Synchronization

/// One call to opt a server or command-line tool in to graceful shutdown.
public enum GracefulShutdown {
    private static let installed = Lock<GracefulShutdownBackgroundTaskProvider?>(nil)

    /// Creates a ``GracefulShutdownBackgroundTaskProvider``, makes it the process-wide
    /// default (``DefaultBackgroundTaskProvider/processDefault``) and installs its
    /// SIGTERM / SIGINT handlers. Call it once, early, before creating queues; later
    /// calls return the provider installed first and change nothing.
    ///
    /// - Parameters:
    ///   - gracePeriod: How long busy queues may run on after the first signal.
    ///   - exitStatus: The exit status when the grace period runs out; default 75.
    /// - Returns: The provider, for ``GracefulShutdownBackgroundTaskProvider/monitor(_:)``.
    @discardableResult
    public static func install(gracePeriod: Duration, exitStatus: Int32 = 75) -> GracefulShutdownBackgroundTaskProvider
    {
        let (provider, isNew) = installed.withLock { installed in
            if let installed { return (installed, false) }
            let provider = GracefulShutdownBackgroundTaskProvider(gracePeriod: gracePeriod, exitStatus: exitStatus)
            installed = provider
            return (provider, true)
        }
        if isNew {
            DefaultBackgroundTaskProvider.processDefault = provider
            provider.installSignalHandlers()
        }
        return provider
    }
}
