import Dispatch
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A ``BackgroundTaskProvider`` for servers and command-line tools: while any
/// assertion is held — while any queue using it is busy — SIGTERM and SIGINT do not
/// end the process.
///
/// Install it with one call, early in `main`, before the first queue is created:
///
/// ```swift
/// GracefulShutdown.install(gracePeriod: .seconds(30))
/// ```
///
/// ## What happens on SIGTERM or SIGINT
/// - **No assertion held** (every queue idle): the process exits at once with status 0.
/// - **Assertions held**: the process keeps running. It exits with status 0 as soon as
///   the last assertion ends (every queue went idle). New assertions begun meanwhile
///   (a queue going busy again) are granted and waited for too.
/// - **The grace period runs out first**, or a second SIGTERM / SIGINT arrives: the
///   expiration path runs. Every held assertion's expiration handler is called, so each
///   queue ends its assertion, emits ``BackgroundQueue/Event/backgroundTimeExpiring``
///   and applies its ``BackgroundQueue/ExpirationPolicy``; then one line naming the
///   units that did not finish is written to standard error, and the process exits with
///   ``exitStatus`` (default 75, `EX_TEMPFAIL`: "try again later").
///
/// A provider only learns an assertion's name (a queue's name), so the report names the
/// units of the queues registered with ``monitor(_:)``; for any other held assertion it
/// names the assertion.
///
/// ## Concurrency contract
/// Thread-safe. Signals are handled on a private serial `DispatchQueue` (Dispatch
/// signal sources, no async-signal-safety concerns); expiration handlers run there,
/// outside the provider's lock. The process exits with `exit(3)`, so `atexit`
/// handlers run.
public final class GracefulShutdownBackgroundTaskProvider: BackgroundTaskProvider {
    /// How long held assertions may run on after the first SIGTERM / SIGINT.
    public let gracePeriod: Duration
    /// The status the process exits with when the grace period ran out.
    public let exitStatus: Int32

    private struct Assertion {
        let name: String
        let expirationHandler: @Sendable () -> Void
    }

    private enum Phase {
        /// No shutdown requested.
        case running
        /// A signal arrived; waiting for the last assertion to end or for `deadline`.
        case draining(generation: UInt64)
        /// The grace period ran out: expiration handlers are running.
        case expiring
        /// `terminate` was called.
        case exited
    }

    private struct State {
        var nextIdentifier = 1
        var active: [BackgroundTaskIdentifier: Assertion] = [:]
        var phase = Phase.running
        var generation: UInt64 = 0
        var monitored: [WeakQueue] = []
        var signalSources: [any DispatchSourceSignal] = []
    }

    /// `@unchecked Sendable`: a weak reference to an actor (itself `Sendable`), only
    /// read and written under the provider's lock.
    private struct WeakQueue: @unchecked Sendable {
        weak var queue: BackgroundQueue?
    }

    private let state = Lock(State())
    private let signalQueue = DispatchQueue(label: "Backgroundable.GracefulShutdown")
    private let terminate: @Sendable (Int32) -> Void
    private let report: @Sendable (String) -> Void

    /// Creates a provider that does not listen to signals yet; see
    /// ``GracefulShutdown/install(gracePeriod:exitStatus:)`` for the usual way, or call
    /// ``installSignalHandlers()``.
    ///
    /// - Parameters:
    ///   - gracePeriod: How long held assertions may run on after the first signal.
    ///   - exitStatus: The exit status when the grace period runs out; default 75.
    public convenience init(gracePeriod: Duration, exitStatus: Int32 = 75) {
        self.init(
            gracePeriod: gracePeriod, exitStatus: exitStatus,
            terminate: { status in exit(status) },
            report: { line in writeToStandardError(line) })
    }

    /// For tests: `terminate` replaces `exit(3)`, `report` replaces the write to
    /// standard error.
    init(
        gracePeriod: Duration,
        exitStatus: Int32,
        terminate: @escaping @Sendable (Int32) -> Void,
        report: @escaping @Sendable (String) -> Void
    ) {
        self.gracePeriod = gracePeriod
        self.exitStatus = exitStatus
        self.terminate = terminate
        self.report = report
    }

    // MARK: Signals

    /// Ignores the default action of SIGTERM and SIGINT and handles them through
    /// Dispatch signal sources instead. Idempotent.
    public func installSignalHandlers() {
        let sources = state.withLock { state -> [any DispatchSourceSignal]? in
            guard state.signalSources.isEmpty else { return nil }
            state.signalSources = [SIGTERM, SIGINT].map {
                DispatchSource.makeSignalSource(signal: $0, queue: signalQueue)
            }
            return state.signalSources
        }
        guard let sources else { return }
        for source in sources {
            signal(Int32(source.handle), SIG_IGN)
            source.setEventHandler { [weak self] in self?.shutdownRequested() }
            source.resume()
        }
    }

    /// Registers `queue`, so that the report names its unfinished units. Held weakly;
    /// registering a queue twice changes nothing. Queues created with this provider
    /// register themselves.
    public func monitor(_ queue: BackgroundQueue) {
        state.withLock { state in
            guard !state.monitored.contains(where: { $0.queue === queue }) else { return }
            state.monitored.append(WeakQueue(queue: queue))
        }
    }

    /// What a SIGTERM or SIGINT does; see the type's documentation. Runs on the
    /// provider's signal queue (tests call it directly).
    func shutdownRequested() {
        enum Action {
            case exitNow
            case startGracePeriod(UInt64)
            case expireNow, nothing
        }
        let action = state.withLock { state -> Action in
            switch state.phase {
            case .running:
                guard !state.active.isEmpty else {
                    state.phase = .exited
                    return .exitNow
                }
                state.generation += 1
                state.phase = .draining(generation: state.generation)
                return .startGracePeriod(state.generation)
            case .draining:
                return .expireNow
            case .expiring, .exited:
                return .nothing
            }
        }
        switch action {
        case .exitNow:
            terminate(0)
        case .startGracePeriod(let generation):
            let (seconds, attoseconds) = gracePeriod.components
            let nanoseconds = max(0, seconds) * 1_000_000_000 + max(0, attoseconds) / 1_000_000_000
            signalQueue.asyncAfter(deadline: .now() + .nanoseconds(Int(clamping: nanoseconds))) { [weak self] in
                self?.gracePeriodEnded(generation: generation)
            }
        case .expireNow:
            expire()
        case .nothing:
            break
        }
    }

    private func gracePeriodEnded(generation: UInt64) {
        let due = state.withLock { state in
            if case .draining(generation) = state.phase { true } else { false }
        }
        if due { expire() }
    }

    /// The expiration path: names the unfinished work, calls every held assertion's
    /// expiration handler (outside the lock), reports, exits with ``exitStatus``.
    private func expire() {
        let claimed = state.withLock { state -> (assertions: [Assertion], queues: [BackgroundQueue])? in
            guard case .draining = state.phase else { return nil }
            state.phase = .expiring
            let assertions = state.active.sorted { $0.key.rawValue < $1.key.rawValue }.map(\.value)
            return (assertions, state.monitored.compactMap(\.queue))
        }
        guard let (assertions, queues) = claimed else { return }
        // Read before the handlers run: the expiration policy may end the units.
        let unfinished = Self.unfinishedWork(assertions: assertions, queues: queues)
        for assertion in assertions {
            assertion.expirationHandler()
        }
        report(
            "Backgroundable: grace period of \(gracePeriod) ran out; exiting with status \(exitStatus); unfinished: "
                + (unfinished.isEmpty ? "none" : unfinished.joined(separator: ", ")) + "\n")
        state.withLock { $0.phase = .exited }
        terminate(exitStatus)
    }

    /// `queue "name": [unit, unit]` for each monitored queue holding an assertion, and
    /// `assertion "name"` for every other held assertion. Unnamed units show as `<unnamed>`.
    private static func unfinishedWork(assertions: [Assertion], queues: [BackgroundQueue]) -> [String] {
        var remaining = assertions.map(\.name)
        var lines: [String] = []
        for queue in queues {
            let units = queue.core.read { $0.liveMembers() }
            guard !units.isEmpty else { continue }
            if let index = remaining.firstIndex(of: queue.name) { remaining.remove(at: index) }
            let names = units.map { $0.name.map { "\"\($0)\"" } ?? "<unnamed>" }
            lines.append("queue \"\(queue.name)\": [\(names.joined(separator: ", "))]")
        }
        lines += remaining.map { "assertion \"\($0)\"" }
        return lines
    }

    // MARK: BackgroundTaskProvider

    /// Holds the process open against SIGTERM / SIGINT until the assertion ends; keeps
    /// `expirationHandler` for the grace period's end. Thread-safe.
    public func beginBackgroundTask(
        named name: String,
        expirationHandler: @escaping @Sendable () -> Void
    ) -> BackgroundTaskIdentifier? {
        state.withLock { state in
            let identifier = BackgroundTaskIdentifier(rawValue: state.nextIdentifier)
            state.nextIdentifier += 1
            state.active[identifier] = Assertion(name: name, expirationHandler: expirationHandler)
            return identifier
        }
    }

    /// Releases the assertion; when it was the last one during a shutdown, the process
    /// exits with status 0. Thread-safe.
    public func endBackgroundTask(_ identifier: BackgroundTaskIdentifier) {
        let exitNow = state.withLock { state -> Bool in
            state.active.removeValue(forKey: identifier)
            guard case .draining = state.phase, state.active.isEmpty else { return false }
            state.phase = .exited
            return true
        }
        if exitNow { terminate(0) }
    }

    /// Assertions held now.
    public var activeCount: Int { state.withLock { $0.active.count } }
}

/// Writes `line` to file descriptor 2 in one unbuffered `write(2)` (retried if short).
private func writeToStandardError(_ line: String) {
    var bytes = Array(line.utf8)
    var offset = 0
    while offset < bytes.count {
        let written = bytes.withUnsafeMutableBytes { buffer in
            write(2, buffer.baseAddress! + offset, buffer.count - offset)
        }
        if written <= 0 { return }
        offset += written
    }
}
