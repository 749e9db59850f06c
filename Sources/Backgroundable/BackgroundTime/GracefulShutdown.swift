import Dispatch
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Shutdown for servers and command-line tools, as cancellation rather than `exit()`:
/// the program is told that shutdown was requested, its queues stop taking new work
/// and drain within a grace period, work still running then is cancelled and gets a
/// bounded *cancellation period* to save its state, and control returns to the
/// program, which decides the exit status. The library never ends the process.
///
/// ```swift
/// let shutdown = GracefulShutdown.install(gracePeriod: .seconds(30))
/// let exports = BackgroundQueue(name: "exports")
/// // … add work …
/// let report = await shutdown.drain(exports)
/// try writeManifest()  // runs in every case: nothing ends the process under you
/// exit(report.exitStatus)
/// ```
///
/// ## The sequence
/// 1. **A request**: SIGTERM or SIGINT once ``installSignalHandlers()`` (or
///    ``install(gracePeriod:cancellationPeriod:)``) took them over, or
///    ``requestShutdown()``. The program learns it through ``isShutdownRequested``,
///    ``waitForShutdownRequest()`` or ``withShutdownHandler(isolation:_:onShutdown:)``.
/// 2. **Drain** (``drain(_:)-(BackgroundQueue...)``): the queues stop accepting work
///    (``BackgroundQueue/stopAcceptingWork()``: a late add ends cancelled, never
///    silently lost), and their units run on until the queues are idle, for at most
///    ``gracePeriod`` from the request. Idle here also means that the bodies of units
///    that ended while they ran (cancelled or timed out, ignoring it) have returned.
/// 3. **Expiration**, if the grace period runs out or a second request arrives first:
///    every background-time assertion this provider holds expires, so each queue
///    emits ``BackgroundQueue/Event/Kind/backgroundTimeExpiring`` and applies its
///    ``BackgroundQueue/ExpirationPolicy`` (by default it cancels its units). Cancelled
///    bodies see `Task.isCancelled` and get ``cancellationPeriod`` to return — to save
///    their state.
/// 4. **Back to the program**: `drain` returns a ``ShutdownReport`` once the queues'
///    events have been delivered to their listeners; it names the units that had not
///    finished, and suggests an exit status.
///
/// It is also a ``BackgroundTaskProvider``: ``install(gracePeriod:cancellationPeriod:)``
/// makes it the process's default, so every queue's busy period holds one of its
/// assertions, which is how the expiration reaches every queue, drained or not.
///
/// ## Concurrency contract
/// Thread-safe. Signals are handled on a private serial `DispatchQueue` (Dispatch signal
/// sources: no async-signal-safety concerns). Handlers of ``withShutdownHandler(isolation:_:onShutdown:)``
/// and expiration handlers run outside every lock, on the thread that made the
/// request or the draining task. Each wait returns early when its task is cancelled.
public final class GracefulShutdown: BackgroundTaskProvider {
    /// How long queues may run on after the request before their work expires: the
    /// period given to the initializer, within zero...about 292 years.
    public let gracePeriod: Duration
    /// How long cancelled work has, after the expiration, to return before ``drain(_:)-([BackgroundQueue])``
    /// gives up waiting for it: the period given to the initializer, within zero...about
    /// 292 years.
    public let cancellationPeriod: Duration

    /// What asked for the shutdown. New sources come in minor releases: compare a
    /// request (`request == .requested`, `request == .signal(SIGTERM)`), or switch over
    /// it with a `default`.
    public struct Request: Sendable, Hashable, CustomStringConvertible {
        private enum Source: Sendable, Hashable {
            case signal(Int32)
            case requested, serviceGroup
        }

        private let source: Source

        /// A signal: `SIGTERM`, `SIGINT`.
        public static func signal(_ number: Int32) -> Request { Request(source: .signal(number)) }
        /// ``GracefulShutdown/requestShutdown()`` (a test, an admin endpoint).
        public static let requested = Request(source: .requested)
        /// The graceful shutdown of a swift-service-lifecycle `ServiceGroup` (the
        /// `ServiceLifecycle` trait's `BackgroundQueueService`).
        public static let serviceGroup = Request(source: .serviceGroup)

        /// The signal's number, for a request made by a signal.
        public var signal: Int32? {
            if case .signal(let number) = source { number } else { nil }
        }

        public var description: String {
            switch source {
            case .signal(SIGTERM): "SIGTERM"
            case .signal(SIGINT): "SIGINT"
            case .signal(let number): "signal \(number)"
            case .requested: "requestShutdown()"
            case .serviceGroup: "the service group's graceful shutdown"
            }
        }
    }

    private struct Assertion {
        let name: String
        let expirationHandler: @Sendable () -> Void
    }

    private struct State {
        var nextIdentifier = 1
        var active: [BackgroundTaskIdentifier: Assertion] = [:]
        /// The first request and when it came; the second makes the drain hurry.
        var request: (request: Request, at: ContinuousClock.Instant)?
        var hurriedBy: Request?
        var nextHandlerID: UInt64 = 0
        var handlers: [UInt64: @Sendable (Request) -> Void] = [:]
        var signalSources: [any DispatchSourceSignal] = []
    }

    private let state = Lock(State())
    private let requested = Latch()
    private let hurried = Latch()
    private let signalQueue = DispatchQueue(label: "Backgroundable.GracefulShutdown")

    /// Creates a coordinator that does not listen to signals yet; see
    /// ``install(gracePeriod:cancellationPeriod:)`` for the usual way, or call
    /// ``installSignalHandlers()``.
    ///
    /// - Parameters:
    ///   - gracePeriod: How long queues may run on after the request.
    ///   - cancellationPeriod: How long cancelled work has to return once the grace
    ///     period ran out; default 5 seconds.
    ///
    /// A negative period counts as zero; one longer than about 292 years (`Int64.max`
    /// nanoseconds) as 292 years.
    public init(gracePeriod: Duration, cancellationPeriod: Duration = .seconds(5)) {
        self.gracePeriod = gracePeriod.clampedToWait
        self.cancellationPeriod = cancellationPeriod.clampedToWait
    }

    // MARK: Installing

    private static let installed = Lock<GracefulShutdown?>(nil)

    /// Creates a coordinator, makes it the process-wide default provider
    /// (``DefaultBackgroundTaskProvider/processDefault``) and hands it SIGTERM and SIGINT.
    /// Call it once, early, before creating queues; later calls return the one
    /// installed first and change nothing.
    @discardableResult
    public static func install(gracePeriod: Duration, cancellationPeriod: Duration = .seconds(5)) -> GracefulShutdown {
        let (shutdown, isNew) = installed.withLock { installed in
            if let installed { return (installed, false) }
            let shutdown = GracefulShutdown(gracePeriod: gracePeriod, cancellationPeriod: cancellationPeriod)
            installed = shutdown
            return (shutdown, true)
        }
        if isNew {
            DefaultBackgroundTaskProvider.processDefault = shutdown
            shutdown.installSignalHandlers()
        }
        return shutdown
    }

    /// Takes SIGTERM and SIGINT over: their default action (ending the process) is
    /// ignored, and each one is a ``Request/signal(_:)`` instead. Idempotent.
    ///
    /// Returns once the handlers are in place (Dispatch registers signal sources on its
    /// own thread; this waits for that, a few microseconds, at most a second), so a
    /// signal sent after it returns is never lost: call it at startup, from `main`.
    /// From then on the program must observe the request (``drain(_:)-(BackgroundQueue...)``,
    /// ``waitForShutdownRequest()``, …): the signals no longer end it.
    public func installSignalHandlers() {
        let sources = state.withLock { state -> [any DispatchSourceSignal]? in
            guard state.signalSources.isEmpty else { return nil }
            state.signalSources = [SIGTERM, SIGINT].map {
                DispatchSource.makeSignalSource(signal: $0, queue: signalQueue)
            }
            return state.signalSources
        }
        guard let sources else { return }
        let registered = DispatchSemaphore(value: 0)
        for source in sources {
            let number = Int32(source.handle)
            // Before the source is registered: on Linux, Dispatch's registration then
            // installs its own handler in place of this disposition; on Darwin the
            // signal is still delivered and must be ignored.
            signal(number, SIG_IGN)
            // Signals that arrive before the handler runs are coalesced: `data` counts them,
            // so two SIGTERMs in a row are still two requests.
            source.setEventHandler { [weak self] in
                guard let self else { return }
                let count = state.withLock { state in
                    state.signalSources.first { Int32($0.handle) == number }?.data ?? 1
                }
                for _ in 0..<min(max(count, 1), 2) { receive(.signal(number)) }
            }
            source.setRegistrationHandler { registered.signal() }
            source.resume()
        }
        for _ in sources { _ = registered.wait(timeout: .now() + .seconds(1)) }
    }

    // MARK: Requests

    /// Requests the shutdown, as a signal would. A second request makes a drain in
    /// progress skip what is left of the grace period; later ones change nothing.
    public func requestShutdown() {
        receive(.requested)
    }

    /// `true` once shutdown was requested.
    public var isShutdownRequested: Bool { requested.isOpen }

    /// What asked for the shutdown, once it was requested.
    public var request: Request? { state.withLock { $0.request?.request } }

    /// Suspends until shutdown is requested (returns at once if it was), or until the
    /// calling task is cancelled.
    public func waitForShutdownRequest() async {
        await requested.wait()
    }

    /// Runs `operation`; if shutdown is requested while it runs (or was before),
    /// `onShutdown` is called once, on the thread that made the request, so the
    /// operation can wind down (close a listener, stop a loop). Like
    /// swift-service-lifecycle's `withGracefulShutdownHandler`. `operation` runs on the
    /// caller's actor.
    public func withShutdownHandler<Result>(
        isolation: isolated (any Actor)? = #isolation,
        _ operation: () async throws -> sending Result,
        onShutdown: @escaping @Sendable (Request) -> Void
    ) async rethrows -> sending Result {
        let registered = state.withLock { state -> (id: UInt64?, request: Request?) in
            if let request = state.request { return (nil, request.request) }
            state.nextHandlerID += 1
            state.handlers[state.nextHandlerID] = onShutdown
            return (state.nextHandlerID, nil)
        }
        if let request = registered.request { onShutdown(request) }
        defer {
            if let id = registered.id { _ = state.withLock { $0.handlers.removeValue(forKey: id) } }
        }
        return try await operation()
    }

    /// A request arrived (a signal, or ``requestShutdown()``).
    private func receive(_ request: Request) {
        let handlers = state.withLock { state -> [@Sendable (Request) -> Void]? in
            if state.request == nil {
                state.request = (request, .now)
                defer { state.handlers = [:] }
                return Array(state.handlers.values)
            }
            if state.hurriedBy == nil { state.hurriedBy = request }
            return nil
        }
        guard let handlers else {
            hurried.open()
            return
        }
        requested.open()
        for handler in handlers { handler(request) }
    }

    // MARK: Draining

    /// Waits for `queues` to finish their work, through the shutdown sequence if one is
    /// requested meanwhile (or was before); see the type's documentation.
    ///
    /// Without a request it returns ``ShutdownReport/Ending/idle`` as soon as every queue
    /// is idle. With one, the queues stop accepting work and it returns
    /// ``ShutdownReport/Ending/drained`` when they went idle within the grace period (or
    /// are idle already when it has ended, or a second request came, before the drain),
    /// or goes on with the expiration and returns ``ShutdownReport/Ending/expired(_:)`` once
    /// the cancelled work returned or the cancellation period ended. Bodies that still run
    /// although their unit ended (cancelled or timed out, ignoring it) count as work: the
    /// queues are drained once they returned, and when the grace period ends first they
    /// get the cancellation period too (their units are not listed: they have ended).
    /// Every event of the queues has been delivered to their listeners when it returns.
    ///
    /// Cancelling the calling task makes it return at once with what it knows: `.idle`
    /// before a request, `.drained` after one, listing the units still live in
    /// ``ShutdownReport/unfinishedUnits`` (the report is then not complete). Their work
    /// goes on: cancelling the drain cancels none of it.
    public func drain(_ queues: BackgroundQueue...) async -> ShutdownReport {
        await drain(queues)
    }

    /// ``drain(_:)-(BackgroundQueue...)`` for an array of queues.
    public func drain(_ queues: [BackgroundQueue]) async -> ShutdownReport {
        // Every wait returns early when the calling task is cancelled, whichever comes
        // first: the state, not the wait that returned, says what happened.
        let idle: @Sendable () async -> Void = { await QueueShutdown.waitUntilIdle(queues) }
        let requestArrives: @Sendable () async -> Void = { await self.requested.wait() }
        _ = await firstToReturn([idle, requestArrives])
        guard let (request, requestedAt) = state.withLock({ $0.request }) else {
            return report(.idle, request: nil, queues)
        }
        for queue in queues { queue.stopAcceptingWork() }
        let deadline = requestedAt + gracePeriod
        let gracePeriodEnds: @Sendable () async -> Void = { try? await Task.sleep(until: deadline, clock: .continuous) }
        let hurry: @Sendable () async -> Void = { await self.hurried.wait() }
        if await firstToReturn([idle, gracePeriodEnds, hurry]) == 0 || Task.isCancelled {
            return report(.drained, request: request, queues)
        }
        // The grace period had ended, or a second request had come, by the time the
        // queues were idle (a drain called late, two requests before it): nothing is
        // left to expire, and they drained. (Bodies of ended units that still run get
        // the cancellation period, as expired work does.)
        if !queues.contains(where: \.isBusy) && !QueueShutdown.haveLingeringBodies(queues) {
            await idle()
            return report(.drained, request: request, queues)
        }
        return await expire(queues, request: request)
    }

    /// The queues went idle, or the calling task was cancelled: then the report lists the
    /// units still live.
    private func report(_ ending: ShutdownReport.Ending, request: Request?, _ queues: [BackgroundQueue])
        -> ShutdownReport
    {
        let unfinished = Task.isCancelled ? QueueShutdown.unfinishedUnits(in: queues) : []
        return ShutdownReport(ending: ending, request: request, unfinishedUnits: unfinished)
    }

    /// The expiration: every held assertion expires (and the background time of the
    /// queues that use another provider), then the cancelled bodies get the
    /// cancellation period to return.
    private func expire(_ queues: [BackgroundQueue], request: Request) async -> ShutdownReport {
        let hurriedBy = state.withLock { $0.hurriedBy }
        let unfinished = await QueueShutdown.expire(queues, cancellationPeriod: cancellationPeriod) {
            let assertions = state.withLock { state in
                state.active.sorted { $0.key.rawValue < $1.key.rawValue }.map(\.value)
            }
            for assertion in assertions { assertion.expirationHandler() }
            for queue in queues where queue.backgroundTaskProvider as? GracefulShutdown !== self {
                queue.core.expireBackgroundTime()
            }
        }
        return ShutdownReport(
            ending: .expired(hurriedBy.map(ShutdownReport.Expiration.secondRequest) ?? .gracePeriodEnded),
            request: request, unfinishedUnits: unfinished)
    }

    // MARK: BackgroundTaskProvider

    /// Grants an assertion, kept until it ends; its `expirationHandler` is called if a
    /// drain expires before then. Thread-safe.
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

    /// Releases the assertion. Thread-safe.
    public func endBackgroundTask(_ identifier: BackgroundTaskIdentifier) {
        _ = state.withLock { $0.active.removeValue(forKey: identifier) }
    }

    /// Assertions held now.
    public var activeCount: Int { state.withLock { $0.active.count } }
}

@available(
    *, unavailable, renamed: "GracefulShutdown",
    message: "shutdown no longer ends the process: drain, then let main choose the exit status"
)
public typealias GracefulShutdownBackgroundTaskProvider = GracefulShutdown
