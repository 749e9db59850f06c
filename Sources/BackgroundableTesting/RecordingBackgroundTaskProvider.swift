public import Backgroundable
import Synchronization

/// A provider that records every call and lets you expire assertions on demand, so a
/// test can check that a queue holds background time exactly while it is busy, and
/// what its work does when that time runs out.
///
/// Thread-safe. Handlers passed to ``expire(_:)`` and ``expireAll()`` run on the
/// calling thread, outside the provider's lock.
public final class RecordingBackgroundTaskProvider: BackgroundTaskProvider {
    /// One recorded call.
    public enum Entry: Hashable, Sendable {
        case began(BackgroundTaskIdentifier, name: String)
        case ended(BackgroundTaskIdentifier)
    }

    private struct State {
        var nextIdentifier = 1
        var log: [Entry] = []
        var active: [BackgroundTaskIdentifier: @Sendable () -> Void] = [:]
        var unbalancedEnds = 0
    }

    private let state = Lock(State())

    /// Creates a provider with an empty log.
    public init() {}

    /// Every begin and end, in the order they happened.
    public var log: [Entry] { state.withLock { $0.log } }

    /// Identifiers begun and not ended yet.
    public var activeIdentifiers: Set<BackgroundTaskIdentifier> {
        state.withLock { Set($0.active.keys) }
    }

    /// Number of `endBackgroundTask` calls for identifiers that were not active
    /// (ended twice, or never begun): always 0 for a correct client.
    public var unbalancedEndCount: Int { state.withLock { $0.unbalancedEnds } }

    /// Records the begin and keeps `expirationHandler` until the assertion ends. Thread-safe.
    public func beginBackgroundTask(
        named name: String,
        expirationHandler: @escaping @Sendable () -> Void
    ) -> BackgroundTaskIdentifier? {
        state.withLock { state in
            let identifier = BackgroundTaskIdentifier(rawValue: state.nextIdentifier)
            state.nextIdentifier += 1
            state.log.append(.began(identifier, name: name))
            state.active[identifier] = expirationHandler
            return identifier
        }
    }

    /// Records the end; an identifier that is not active counts in ``unbalancedEndCount``. Thread-safe.
    public func endBackgroundTask(_ identifier: BackgroundTaskIdentifier) {
        // The handler is handed out and released after unlocking: what it captured is
        // the caller's.
        _ = state.withLock { state in
            let handler = state.active.removeValue(forKey: identifier)
            if handler == nil {
                state.unbalancedEnds += 1
            } else {
                state.log.append(.ended(identifier))
            }
            return handler
        }
    }

    /// Calls the expiration handler of `identifier`, as the system does when time runs
    /// out. The handler must end the assertion. Does nothing for an inactive identifier.
    public func expire(_ identifier: BackgroundTaskIdentifier) {
        let handler = state.withLock { $0.active[identifier] }
        handler?()
    }

    /// Expires every active assertion.
    public func expireAll() {
        for identifier in activeIdentifiers.sorted(by: { $0.rawValue < $1.rawValue }) {
            expire(identifier)
        }
    }
}
