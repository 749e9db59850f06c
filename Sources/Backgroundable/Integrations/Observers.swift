extension BackgroundQueue {
    /// The observers a new queue gets: one per trait that is on and whose backend was
    /// bootstrapped (none in the default build).
    static func observers(forQueueNamed label: String) -> [any QueueObserver<AsyncTask>] {
        var observers: [any QueueObserver<AsyncTask>] = []
        #if Metrics
            if let metrics = QueueMetrics(queue: label) { observers.append(metrics) }
        #endif
        #if Tracing
            if let tracing = QueueTracing(queue: label) { observers.append(tracing) }
        #endif
        return observers
    }
}
