import Dispatch
import Synchronization

/// A provider built on the shape of `ProcessInfo.performExpiringActivity(withReason:using:)`:
/// the default on watchOS (``DefaultBackgroundTaskProvider`` passes it
/// `ProcessInfo.processInfo.performExpiringActivity`), and usable with any API of
/// that shape.
///
/// That API grants time for as long as its block runs, so each assertion keeps one
/// blocked dispatch thread: the block waits on a semaphore that
/// ``endBackgroundTask(_:)`` signals. When the system takes the time back it calls
/// the block again with `expired == true`; the provider then runs the assertion's
/// expiration handler on that thread, which ends the assertion (and so releases the
/// waiting block) before it returns. A block called only with `expired == true`
/// means no time was granted: the assertion expires at once.
///
/// Thread-safe; the expiration handler is never called under the provider's lock.
public final class ExpiringActivityBackgroundTaskProvider: BackgroundTaskProvider {
    /// `ProcessInfo.performExpiringActivity(withReason:using:)`, or a stand-in.
    public typealias PerformExpiringActivity =
        @Sendable (_ reason: String, _ block: @escaping @Sendable (_ expired: Bool) -> Void) -> Void

    private struct Activity {
        let release: DispatchSemaphore
        let expirationHandler: @Sendable () -> Void
    }

    private struct State {
        var nextIdentifier = 1
        var active: [Int: Activity] = [:]
    }

    private let performExpiringActivity: PerformExpiringActivity
    private let state = Lock(State())

    /// Creates a provider that asks `performExpiringActivity` for time.
    public init(performExpiringActivity: @escaping PerformExpiringActivity) {
        self.performExpiringActivity = performExpiringActivity
    }

    /// Assertions begun and not ended yet.
    public var activeCount: Int { state.withLock { $0.active.count } }

    /// Starts an expiring activity that lasts until the assertion ends; when the system
    /// asks it to stop (or grants no time), `expirationHandler` runs once. Thread-safe.
    public func beginBackgroundTask(
        named name: String,
        expirationHandler: @escaping @Sendable () -> Void
    ) -> BackgroundTaskIdentifier? {
        let release = DispatchSemaphore(value: 0)
        let identifier = state.withLock { state in
            let identifier = state.nextIdentifier
            state.nextIdentifier += 1
            state.active[identifier] = Activity(release: release, expirationHandler: expirationHandler)
            return identifier
        }
        performExpiringActivity(name) { [self] expired in
            if expired {
                // Ends the assertion (through `endBackgroundTask`), which signals `release`.
                let handler = state.withLock { $0.active[identifier]?.expirationHandler }
                handler?()
            } else {
                // The activity lasts while this block runs. A signal sent before this
                // wait (the assertion already ended) is kept by the semaphore.
                release.wait()
            }
        }
        return BackgroundTaskIdentifier(rawValue: identifier)
    }

    /// Lets the activity's block return. Thread-safe; ending twice does nothing.
    public func endBackgroundTask(_ identifier: BackgroundTaskIdentifier) {
        let activity = state.withLock { $0.active.removeValue(forKey: identifier.rawValue) }
        activity?.release.signal()
    }
}
