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
    ///   `backgroundable_run_duration` (start → outcome), measured as the queue
    ///   delivers its events, microseconds after they happen.
    ///
    /// A queue created while no metrics backend is bootstrapped
    /// (`MetricsSystem.bootstrap`) measures nothing and costs nothing.
    final class QueueMetrics: QueueObserver {
        private let enqueued: Gauge
        private let executing: Gauge
        private let outcomes: [AsyncTask.Outcome.Kind: Counter]
        private let waitTime: Timer
        private let runTime: Timer

        private struct Live {
            var enqueued = 0
            var executing = 0
            /// When each live unit was added, then when it started (nanoseconds).
            var since: [ObjectIdentifier: (instant: Int64, started: Bool)] = [:]
        }

        private let live = Mutex(Live())

        init?(queue: String) {
            guard !(MetricsSystem.factory is NOOPMetricsHandler) else { return nil }
            let dimensions = [("queue", queue)]
            enqueued = Gauge(label: "backgroundable_enqueued_units", dimensions: dimensions)
            executing = Gauge(label: "backgroundable_executing_units", dimensions: dimensions)
            outcomes = Dictionary(
                uniqueKeysWithValues: AsyncTask.Outcome.Kind.allCases.map { kind in
                    (
                        kind,
                        Counter(
                            label: "backgroundable_outcomes_total",
                            dimensions: dimensions + [("outcome", "\(kind)")])
                    )
                })
            waitTime = Timer(label: "backgroundable_wait_duration", dimensions: dimensions)
            runTime = Timer(label: "backgroundable_run_duration", dimensions: dimensions)
        }

        func observe(_ event: QueueEvent<AsyncTask>) {
            let now = ContinuousNanoseconds.now()
            switch event {
            case .enqueued(let unit):
                let count = live.withLock { live in
                    live.since[ObjectIdentifier(unit)] = (now, false)
                    live.enqueued += 1
                    return live.enqueued
                }
                enqueued.record(count)
            case .started(let unit):
                let (waited, counts) = live.withLock { live in
                    let added = live.since.updateValue((now, true), forKey: ObjectIdentifier(unit))
                    live.enqueued -= 1
                    live.executing += 1
                    return (added.map { now &- $0.instant }, (live.enqueued, live.executing))
                }
                if let waited { waitTime.recordNanoseconds(waited) }
                enqueued.record(counts.0)
                executing.record(counts.1)
            case .ended(let unit, let outcome):
                let (ran, counts) = live.withLock { live in
                    let since = live.since.removeValue(forKey: ObjectIdentifier(unit))
                    switch since {
                    case .some((_, true)): live.executing -= 1
                    case .some((_, false)): live.enqueued -= 1
                    case nil: break  // turned away (dropped, or the queue stopped accepting work)
                    }
                    let ran = since.flatMap { $0.started ? now &- $0.instant : nil }
                    return (ran, (live.enqueued, live.executing))
                }
                if let ran { runTime.recordNanoseconds(ran) }
                outcomes[outcome.kind]?.increment()
                enqueued.record(counts.0)
                executing.record(counts.1)
            case .backgroundTimeExpiring:
                break
            }
        }
    }
#endif
