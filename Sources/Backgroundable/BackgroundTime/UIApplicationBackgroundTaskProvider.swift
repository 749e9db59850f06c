#if canImport(UIKit) && !os(watchOS)
    import UIKit

    // Apple-only: not compiled on Linux. What it does besides the two UIKit calls is
    // `MainThreadBackgroundTasks`, which the Linux tests exercise.

    /// The provider backed by `UIApplication.beginBackgroundTask(withName:expirationHandler:)`
    /// and `endBackgroundTask(_:)`: the default on iOS, iPadOS, tvOS, visionOS and Mac
    /// Catalyst.
    ///
    /// `UIApplication` is main-actor isolated, so both calls are made on the main thread,
    /// and never wait for it: on the main thread they are made right away; from any other
    /// thread ``beginBackgroundTask(named:expirationHandler:)`` returns an identifier at
    /// once and the call follows on the main queue (an end that comes first cancels it).
    /// So a queue that goes busy or idle on another thread never blocks that thread on a
    /// busy main thread.
    ///
    /// UIKit calls the expiration handler on the main thread; the task is ended
    /// synchronously inside it, as UIKit requires, even when an end made on another
    /// thread is still on its way to the main queue. Not available in app
    /// extensions, where `UIApplication.shared` is unavailable.
    public final class UIApplicationBackgroundTaskProvider: BackgroundTaskProvider {
        /// The instance ``DefaultBackgroundTaskProvider`` returns.
        public static let shared = UIApplicationBackgroundTaskProvider()

        private let tasks = MainThreadBackgroundTasks(
            begin: { name, expirationHandler in
                let task = UIApplication.shared.beginBackgroundTask(
                    withName: name, expirationHandler: expirationHandler)
                return task == .invalid ? nil : task.rawValue
            },
            end: { rawValue in
                UIApplication.shared.endBackgroundTask(UIBackgroundTaskIdentifier(rawValue: rawValue))
            })

        /// Creates the provider. It talks to `UIApplication.shared` on the main thread.
        public init() {}

        /// Calls `UIApplication.beginBackgroundTask(withName:expirationHandler:)`: right here
        /// on the main thread (`nil` when UIKit grants no time), otherwise on the main queue
        /// after returning. UIKit calls `expirationHandler` on the main thread.
        public func beginBackgroundTask(
            named name: String,
            expirationHandler: @escaping @Sendable () -> Void
        ) -> BackgroundTaskIdentifier? {
            tasks.beginBackgroundTask(named: name, expirationHandler: expirationHandler)
        }

        /// Calls `UIApplication.endBackgroundTask(_:)`: right here on the main thread (as
        /// inside the expiration handler), otherwise on the main queue after returning.
        public func endBackgroundTask(_ identifier: BackgroundTaskIdentifier) {
            tasks.endBackgroundTask(identifier)
        }
    }
#endif
