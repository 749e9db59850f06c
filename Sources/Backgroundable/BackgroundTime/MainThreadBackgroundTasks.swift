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
///   that end is made right away, inside the handler, as UIKit requires. An end from
///   another thread that is still on its way to the main queue is made there too, when
///   the handler returns, so the task is never left open past its handler.
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
        /// Ended off the main thread: the `end` call of this platform identifier is on
        /// its way to the main queue (or made sooner, by an expiration handler).
        case ending(Int)
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
        let identifier = state.withLock { $0.add(.pending(ended: false)) }
        let handler: @Sendable () -> Void = {
            expirationHandler()
            // An end made elsewhere and still queued can't wait: UIKit ends the app
            // whose task is still open when the handler returns.
            MainThread.runOrEnqueue { self.finishEnding(identifier) }
        }
        if MainThread.isCurrent {
            MainActor.assumeIsolated { beginOnMain(identifier, name, handler) }
            let granted = state.withLock { $0.grants[identifier] != nil }
            return granted ? BackgroundTaskIdentifier(rawValue: identifier) : nil
        }
        DispatchQueue.main.async {
            MainActor.assumeIsolated { self.beginOnMain(identifier, name, handler) }
        }
        return BackgroundTaskIdentifier(rawValue: identifier)
    }

    func endBackgroundTask(_ identifier: BackgroundTaskIdentifier) {
        let onMain = MainThread.isCurrent
        let rawValue = state.withLock { state -> Int? in
            switch state.grants[identifier.rawValue] {
            case .granted(let rawValue):
                state.grants[identifier.rawValue] = onMain ? nil : .ending(rawValue)
                return rawValue
            case .pending:
                state.grants[identifier.rawValue] = .pending(ended: true)
                return nil
            case .ending, nil:
                return nil
            }
        }
        guard let rawValue else { return }
        if onMain {
            MainActor.assumeIsolated { end(rawValue) }
        } else {
            DispatchQueue.main.async { MainActor.assumeIsolated { self.finishEnding(identifier.rawValue) } }
        }
    }

    /// Makes the `end` call of a task ended off the main thread, unless it was made.
    @MainActor private func finishEnding(_ identifier: Int) {
        let rawValue = state.withLock { state -> Int? in
            guard case .ending(let rawValue) = state.grants[identifier] else { return nil }
            state.grants[identifier] = nil
            return rawValue
        }
        if let rawValue { end(rawValue) }
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
