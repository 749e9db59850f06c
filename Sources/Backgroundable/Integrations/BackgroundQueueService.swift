#if ServiceLifecycle
    public import ServiceLifecycle

    /// One or more queues as a swift-service-lifecycle `Service` (the `ServiceLifecycle`
    /// trait): the `ServiceGroup` owns the signals, and the queues follow its shutdown.
    ///
    /// ```swift
    /// let jobs = BackgroundQueue(name: "jobs")
    /// let group = ServiceGroup(
    ///     services: [BackgroundQueueService(jobs), httpServer],
    ///     gracefulShutdownSignals: [.sigterm, .sigint],
    ///     logger: logger)
    /// try await group.run()
    /// ```
    ///
    /// `run()`:
    /// 1. lasts until the group's graceful shutdown;
    /// 2. then the queues stop accepting work (``BackgroundQueue/stopAcceptingWork()``:
    ///    late adds end cancelled) and run on until they are idle, the bodies of their
    ///    ended units returned (see ``GracefulShutdown/drain(_:)-([BackgroundQueue])``) —
    ///    within the group's `maximumGracefulShutdownDuration`, after which the group
    ///    cancels the service;
    /// 3. once cancelled (that limit, a cancellation signal, or another service ending
    ///    the group) with work still running, the work expires: each queue emits
    ///    ``BackgroundQueue/Event/Kind/backgroundTimeExpiring`` and applies its
    ///    ``BackgroundQueue/ExpirationPolicy``, and cancelled bodies get
    ///    ``cancellationPeriod`` to return and save their state;
    /// 4. returns (it never throws), after handing ``ShutdownReport`` to `onShutdown`.
    ///
    /// It installs no signal handler: with a `ServiceGroup`, do not also install
    /// ``GracefulShutdown`` — one owner of SIGTERM.
    ///
    /// List it before the services that add work to its queues: a group shuts its
    /// services down in reverse order, so a producer stops adding before the queues stop
    /// accepting work (see <doc:RunningInAServer>).
    public struct BackgroundQueueService: Service {
        /// The queues this service drains.
        public let queues: [BackgroundQueue]
        /// How long cancelled work has to return once the group cancelled the service.
        public let cancellationPeriod: Duration
        private let onShutdown: @Sendable (ShutdownReport) -> Void

        /// - Parameters:
        ///   - queues: The queues this service drains.
        ///   - cancellationPeriod: How long cancelled work has to return; default 5
        ///     seconds (the group's `maximumCancellationDuration` may end it sooner). A
        ///     negative period counts as zero, one longer than about 292 years as 292 years.
        ///   - onShutdown: Told how the shutdown ended, once, before `run()` returns.
        public init(
            _ queues: BackgroundQueue...,
            cancellationPeriod: Duration = .seconds(5),
            onShutdown: @escaping @Sendable (ShutdownReport) -> Void = { _ in }
        ) {
            self.init(queues: queues, cancellationPeriod: cancellationPeriod, onShutdown: onShutdown)
        }

        /// ``init(_:cancellationPeriod:onShutdown:)`` for an array of queues.
        public init(
            queues: [BackgroundQueue],
            cancellationPeriod: Duration = .seconds(5),
            onShutdown: @escaping @Sendable (ShutdownReport) -> Void = { _ in }
        ) {
            self.queues = queues
            self.cancellationPeriod = cancellationPeriod
            self.onShutdown = onShutdown
        }

        /// Lasts until the group's graceful shutdown, then drains the queues, expiring
        /// their work if the group cancels it first (see the type's documentation).
        /// Never throws.
        public func run() async {
            // Until the group shuts down gracefully (or cancels the service outright).
            try? await gracefulShutdown()
            for queue in queues { queue.stopAcceptingWork() }
            await QueueShutdown.waitUntilIdle(queues)
            guard queues.contains(where: \.isBusy) || QueueShutdown.haveLingeringBodies(queues) else {
                return onShutdown(ShutdownReport(ending: .drained, request: .serviceGroup, unfinishedUnits: []))
            }
            let unfinished = await QueueShutdown.expire(queues, cancellationPeriod: cancellationPeriod) {
                for queue in queues { queue.core.expireBackgroundTime() }
            }
            onShutdown(
                ShutdownReport(ending: .expired(.gracePeriodEnded), request: .serviceGroup, unfinishedUnits: unfinished)
            )
        }
    }
#endif
