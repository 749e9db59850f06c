#if Metrics
    import Backgroundable
    import CoreMetrics

    /// A metrics backend that records nothing: what a queue's metrics cost on the
    /// queue's side, with the backend's own cost taken out.
    final class DiscardingMetricsFactory: MetricsFactory {
        func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
            NOOPMetricsHandler.instance
        }
        func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
            NOOPMetricsHandler.instance
        }
        func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
            NOOPMetricsHandler.instance
        }
        func destroyCounter(_ handler: any CounterHandler) {}
        func destroyRecorder(_ handler: any RecorderHandler) {}
        func destroyTimer(_ handler: any TimerHandler) {}
    }

    /// `e2e.BackgroundQueue.unbounded.metrics` (the `Metrics` trait only): the end-to-end
    /// scenario with the queue's metrics going to a no-op backend, against the same
    /// scenario without one.
    func metricsScenarios() -> [Scenario] {
        [
            Scenario(
                id: "e2e.BackgroundQueue.unbounded.metrics", unit: "ns/unit",
                baseline: ("e2e.BackgroundQueue.unbounded", 1.15)
            ) { units in
                backgroundQueueEndToEnd(
                    units: units,
                    queue: BackgroundQueue(name: "bench", metricsFactory: DiscardingMetricsFactory()))
            }
        ]
    }
#else
    func metricsScenarios() -> [Scenario] { [] }
#endif
