#if Metrics
    import CoreMetrics
    import Metrics

    /// A queue's metrics through swift-metrics (the `Metrics` trait), all dimensioned by
    /// `queue` (the queue's name):
    ///
    /// - gauges `backgroundable_enqueued_units` and `backgroundable_executing_units`;
    /// - counter `backgroundable_outcomes_total`, also dimensioned by `outcome`
    ///   (`finished`, `failed`, `cancelled`, `replaced`, `dropped`, `timedOut`);
    /// - timers `backgroundable_wait_duration` (add → start) and
    ///   `backgroundable_run_duration` (start → outcome): the add and the start are
    ///   stamped when they happen, the outcome when the queue delivers it (microseconds
    ///   later); both are recorded then. The gauges are recorded once per batch of events.
    ///
    /// A queue created while no metrics backend is bootstrapped
    /// (`MetricsSystem.bootstrap`) measures nothing and costs nothing, unless it was
    /// given a factory of its own (``BackgroundQueue/init(name:maxConcurrentTasks:backgroundTaskProvider:expirationPolicy:metricsFactory:)``).
    final class QueueMetrics: QueueObserver {
        private let enqueued: Gauge
        private let executing: Gauge
        private let outcomes: [AsyncTask.Outcome.Kind: Counter]
        private let waitTime: Timer
        private let runTime: Timer

        /// The add and start times come from the unit (stamped by the adder and by the
        /// unit's `Task`), so its end is the one event needed: the fewer events, the
        /// cheaper the queue.
        let events: ObservedEvents = [.ended]

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

        func observe(_ event: QueueEvent<AsyncTask>, at now: Int64) {
            guard case .ended(let unit, let outcome) = event else { return }
            if unit.metricsStartedAt != 0 {
                waitTime.recordNanoseconds(max(0, unit.metricsStartedAt &- unit.metricsAddedAt))
                runTime.recordNanoseconds(max(0, now &- unit.metricsStartedAt))
            }
            outcomes[outcome.kind]?.increment()
        }

        func batchDelivered(enqueued: Int, executing: Int) {
            self.enqueued.record(enqueued)
            self.executing.record(executing)
        }
    }
#endif
