import Dispatch
import Synchronization

/// The core of a provider whose API must be called on the main thread (UIKit's
/// `beginBackgroundTask` / `endBackgroundTask`), which never blocks the calling thread.
///
/// A queue begins and ends its background time on whatever thread delivers its
/// notifications, often a thread of the cooperative pool; waiting there for a busy main
/// thread would block that pool thread. So:
/// - On the main thread, both calls are made right away (a `nil` from `begin` is
///   returned as it is).
/// - Elsewhere, ``beginBackgroundTask(named:expirationHandler:)`` returns an identifier
///   of its own at once and makes the call on the main queue. An end that comes first
///   cancels that call; an end that comes later ends what it began, on the main queue.
/// - The expiration handler runs on the main thread, where the assertion ends itself:
///   that end is made right away, inside the handler, as UIKit requires.
///
/// Compiled and tested on every platform; the UIKit provider only supplies the calls.
final class MainThreadBackgroundTasks: Sendable {
    typealias Begin = @MainActor @Sendable (_ name: String, _ expirationHandler: @escaping @Sendable () -> Void) -> Int?
    typealias End = @MainActor @Sendable (_ rawValue: Int) -> Void

    private enum Grant {
        /// The main queue has not made the `begin` call yet; `ended`: nor should it.
        case pending(ended: Bool)
        /// The platform's own identifier.
        case granted(Int)
    }

    private struct State {
        var nextIdentifier = 1
        var grants: [Int: Grant] = [:]

        mutating func add(_ grant: Grant) -> Int {
            defer { nextIdentifier += 1 }
            grants[nextIdentifier] = grant
            return nextIdentifier
        }
    }

    private let begin: Begin
    private let end: End
    private let state = Lock(State())

    init(begin: @escaping Begin, end: @escaping End) {
        self.begin = begin
        self.end = end
    }

    /// Assertions begun (or about to be, on the main queue) and not ended yet.
    var activeCount: Int { state.withLock { $0.grants.count } }

    func beginBackgroundTask(
        named name: String, expirationHandler: @escaping @Sendable () -> Void
    ) -> BackgroundTaskIdentifier? {
        if MainThread.isCurrent {
            guard let rawValue = MainActor.assumeIsolated({ begin(name, expirationHandler) }) else { return nil }
            return BackgroundTaskIdentifier(rawValue: state.withLock { $0.add(.granted(rawValue)) })
        }
        let identifier = state.withLock { $0.add(.pending(ended: false)) }
        DispatchQueue.main.async {
            MainActor.assumeIsolated { self.beginOnMain(identifier, name, expirationHandler) }
        }
        return BackgroundTaskIdentifier(rawValue: identifier)
    }

    func endBackgroundTask(_ identifier: BackgroundTaskIdentifier) {
        let rawValue = state.withLock { state -> Int? in
            switch state.grants[identifier.rawValue] {
            case .granted(let rawValue):
                state.grants[identifier.rawValue] = nil
                return rawValue
            case .pending:
                state.grants[identifier.rawValue] = .pending(ended: true)
                return nil
            case nil:
                return nil
            }
        }
        guard let rawValue else { return }
        if MainThread.isCurrent {
            MainActor.assumeIsolated { end(rawValue) }
        } else {
            DispatchQueue.main.async { [end] in MainActor.assumeIsolated { end(rawValue) } }
        }
    }

    @MainActor private func beginOnMain(
        _ identifier: Int, _ name: String, _ expirationHandler: @escaping @Sendable () -> Void
    ) {
        let ended = state.withLock { state -> Bool in
            guard case .pending(ended: true) = state.grants[identifier] else { return false }
            state.grants[identifier] = nil
            return true
        }
        if ended { return }
        // The handler may come while `begin` runs: its end then finds the grant pending.
        let rawValue = begin(name, expirationHandler)
        let endNow = state.withLock { state -> Bool in
            guard case .pending(let ended) = state.grants[identifier] else { return false }
            if let rawValue, !ended {
                state.grants[identifier] = .granted(rawValue)
                return false
            }
            state.grants[identifier] = nil
            return true
        }
        if endNow, let rawValue { end(rawValue) }
    }
}
