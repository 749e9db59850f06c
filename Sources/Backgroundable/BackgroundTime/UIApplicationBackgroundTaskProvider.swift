#if canImport(UIKit) && !os(watchOS)
    import UIKit

    // Apple-only: not compiled on Linux. The main-thread logic it relies on is
    // `MainThread.run`, which the Linux tests exercise.

    /// The provider backed by `UIApplication.beginBackgroundTask(withName:expirationHandler:)`
    /// and `endBackgroundTask(_:)`: the default on iOS, iPadOS, tvOS, visionOS and Mac
    /// Catalyst.
    ///
    /// `UIApplication` is main-actor isolated, so both calls run on the main actor:
    /// right away when called on the main thread, otherwise through a synchronous
    /// `DispatchQueue.main.sync` hop, so the identifier is known before `begin`
    /// returns. Do not call them from a thread the main thread is blocked waiting
    /// for (that would deadlock); the package calls them from queue transitions and
    /// `defer`s, never while holding a lock.
    ///
    /// UIKit calls the expiration handler on the main thread; the assertion ends the
    /// task synchronously inside it, as UIKit requires. Not available in app
    /// extensions, where `UIApplication.shared` is unavailable.
    public final class UIApplicationBackgroundTaskProvider: BackgroundTaskProvider {
        /// The instance ``DefaultBackgroundTaskProvider`` returns.
        public static let shared = UIApplicationBackgroundTaskProvider()

        /// Creates the provider. It talks to `UIApplication.shared` on the main thread.
        public init() {}

        /// Calls `UIApplication.beginBackgroundTask(withName:expirationHandler:)` on the main
        /// thread (synchronously, hopping there if needed). UIKit calls `expirationHandler` on
        /// the main thread.
        public func beginBackgroundTask(
            named name: String,
            expirationHandler: @escaping @Sendable () -> Void
        ) -> BackgroundTaskIdentifier? {
            let rawValue = MainThread.run { () -> Int? in
                let task = UIApplication.shared.beginBackgroundTask(
                    withName: name, expirationHandler: expirationHandler)
                return task == .invalid ? nil : task.rawValue
            }
            return rawValue.map(BackgroundTaskIdentifier.init(rawValue:))
        }

        /// Calls `UIApplication.endBackgroundTask(_:)` on the main thread, synchronously.
        public func endBackgroundTask(_ identifier: BackgroundTaskIdentifier) {
            MainThread.run {
                UIApplication.shared.endBackgroundTask(UIBackgroundTaskIdentifier(rawValue: identifier.rawValue))
            }
        }
    }
#endif
