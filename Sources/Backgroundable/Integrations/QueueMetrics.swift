#if Metrics
    import CoreMetrics
    import Metrics
    import Synchronization

    /// A queue's metrics through swift-metrics (the `Metrics` trait), all dimensioned by
    /// `queue` (the queue's name):
    ///
    /// - gauges `backgroundable_enqueued_units` and `backgroundable_executing_units`;
    /// - counter `backgroundable_outcomes_total`, also dimensioned by `outcome`
    ///   (`finished`, `failed`, `cancelled`, `replaced`, `dropped`, `timedOut`);
    /// - timers `backgroundable_wait_duration` (add → start) and
    ///   `backgroundable_run_duration` (start → outcome), recorded when the unit ends, on
    ///   the thread that ended it. The gauges are recorded after each transition that
    ///   changed them, in the order of the transitions.
    ///
    /// A queue created while no metrics backend is bootstrapped
    /// (`MetricsSystem.bootstrap`) measures nothing and costs nothing, unless it was
    /// given a factory of its own (``BackgroundQueue/init(name:maxConcurrentTasks:backgroundTaskProvider:expirationPolicy:metricsFactory:)``).
    final class QueueMetrics: QueueMeasurer {
        private let enqueued: Gauge
        private let executing: Gauge
        private let outcomes: [AsyncTask.Outcome.Kind: Counter]
        private let waitTime: Timer
        private let runTime: Timer

        /// The last levels recorded, and the transition they came from.
        private let recorded = Lock((enqueued: -1, executing: -1, version: UInt64(0)))

        /// `nil` when `factory` is swift-metrics' no-op one (no backend bootstrapped).
        init?(queue: String, factory: any MetricsFactory) {
            guard !(factory is NOOPMetricsHandler) else { return nil }
            let dimensions = [("queue", queue)]
            enqueued = Gauge(label: "backgroundable_enqueued_units", dimensions: dimensions, factory: factory)
            executing = Gauge(label: "backgroundable_executing_units", dimensions: dimensions, factory: factory)
            outcomes = Dictionary(
                uniqueKeysWithValues: AsyncTask.Outcome.Kind.allCases.map { kind in
                    (
                        kind,
                        Counter(
                            label: "backgroundable_outcomes_total",
                            dimensions: dimensions + [("outcome", "\(kind)")], factory: factory)
                    )
                })
            waitTime = Timer(label: "backgroundable_wait_duration", dimensions: dimensions, factory: factory)
            runTime = Timer(label: "backgroundable_run_duration", dimensions: dimensions, factory: factory)
        }

        func unitEnded(_ unit: AsyncTask, _ outcome: AsyncTask.Outcome) {
            if unit.metricsStartedAt != 0 {
                let now = ContinuousNanoseconds.now()
                waitTime.recordNanoseconds(max(0, unit.metricsStartedAt &- unit.metricsAddedAt))
                runTime.recordNanoseconds(max(0, now &- unit.metricsStartedAt))
            }
            outcomes[outcome.kind]?.increment()
        }

        /// Records the levels of a later transition than the last recorded, when they
        /// changed; under a lock, so two threads cannot record out of order.
        func levelsChanged(enqueued: Int, executing: Int, version: UInt64) {
            recorded.withLock { recorded in
                guard version > recorded.version else { return }
                recorded.version = version
                if enqueued != recorded.enqueued {
                    recorded.enqueued = enqueued
                    self.enqueued.record(enqueued)
                }
                if executing != recorded.executing {
                    recorded.executing = executing
                    self.executing.record(executing)
                }
            }
        }
    }
#endif
