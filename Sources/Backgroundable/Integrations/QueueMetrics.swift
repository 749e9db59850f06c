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
    ///   `backgroundable_run_duration` (first start → outcome, retries and the waits
    ///   between them included), recorded when the unit ends, on the thread that ended
    ///   it. The gauges follow the transitions that change them and always end on the
    ///   latest levels.
    ///
    /// A queue created while no metrics backend is bootstrapped
    /// (`MetricsSystem.bootstrap`) measures nothing and costs nothing, unless it was
    /// given a factory of its own (``BackgroundQueue/init(name:maxConcurrentTasks:backgroundTaskProvider:expirationPolicy:retryPolicy:metricsFactory:)``).
    final class QueueMetrics: QueueMeasurer {
        private let enqueued: Gauge
        private let executing: Gauge
        private let outcomes: [AsyncTask.Outcome.Kind: Counter]
        private let waitTime: Timer
        private let runTime: Timer

        /// The gauges' side of the levels: the latest reported (by transition), the last
        /// recorded, and whether a thread is recording now (the recorder role).
        private struct Levels {
            var latest = (enqueued: 0, executing: 0, version: UInt64(0))
            var recorded = (enqueued: -1, executing: -1)
            var isRecording = false
        }

        private let levels = Lock(Levels())

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

        /// Keeps the levels of the latest transition and records them, outside the lock
        /// (the backend's handlers are its code): one thread at a time records, and it
        /// records again until nothing newer came meanwhile, so the gauges end on the
        /// latest levels whatever order the threads report in.
        func levelsChanged(enqueued: Int, executing: Int, version: UInt64) {
            var next = levels.withLock { levels -> (enqueued: Int, executing: Int)? in
                if version > levels.latest.version { levels.latest = (enqueued, executing, version) }
                guard !levels.isRecording, let unrecorded = takeUnrecorded(&levels) else { return nil }
                levels.isRecording = true
                return unrecorded
            }
            while let (enqueued, executing) = next {
                self.enqueued.record(enqueued)
                self.executing.record(executing)
                next = levels.withLock { levels in
                    guard let unrecorded = takeUnrecorded(&levels) else {
                        levels.isRecording = false
                        return nil
                    }
                    return unrecorded
                }
            }
        }

        /// The latest levels when they differ from the recorded ones (now marked recorded).
        private func takeUnrecorded(_ levels: inout Levels) -> (enqueued: Int, executing: Int)? {
            let latest = (enqueued: levels.latest.enqueued, executing: levels.latest.executing)
            guard latest != levels.recorded else { return nil }
            levels.recorded = latest
            return latest
        }
    }
#endif
