#if Metrics
    public import CoreMetrics
#endif
#if Tracing
    import Instrumentation
#endif

#if Metrics || Tracing
    extension AsyncTask {
        /// What the observers need to know of the add, taken on the adding thread before
        /// the queue publishes the unit: when (the `Metrics` trait's wait timer) and under
        /// which span (the `Tracing` trait's parent).
        func observeAdding() {
            #if Metrics
                metricsAddedAt = ContinuousNanoseconds.now()
            #endif
            #if Tracing
                addedInContext = InstrumentationContext.current
            #endif
        }
    }
#endif

extension BackgroundQueue {
    /// The observers a new queue gets: the `Tracing` trait's, when it is on and a tracer
    /// was bootstrapped (none in the default build).
    static func observers(forQueueNamed label: String) -> [any QueueObserver<AsyncTask>] {
        #if Tracing
            QueueTracing(queue: label).map { [$0] } ?? []
        #else
            []
        #endif
    }

    /// The measurer a new queue gets: the `Metrics` trait's, when it is on and a metrics
    /// backend was bootstrapped (none in the default build).
    static func measurer(forQueueNamed label: String) -> (any QueueMeasurer)? {
        #if Metrics
            QueueMetrics(queue: label, factory: MetricsSystem.factory)
        #else
            nil
        #endif
    }
}

#if Metrics
    extension BackgroundQueue {
        /// Creates a queue whose metrics go to `metricsFactory` instead of the one
        /// `MetricsSystem` was bootstrapped with (the `Metrics` trait): a backend of its
        /// own, or a test's. The other parameters are those of
        /// ``init(name:maxConcurrentTasks:backgroundTaskProvider:expirationPolicy:retryPolicy:)``.
        public init(
            name: String? = nil,
            maxConcurrentTasks: Int? = nil,
            backgroundTaskProvider: any BackgroundTaskProvider = DefaultBackgroundTaskProvider.make(),
            expirationPolicy: ExpirationPolicy = .cancelAll,
            retryPolicy: RetryPolicy? = nil,
            metricsFactory: any MetricsFactory
        ) {
            let label = name ?? "Backgroundable.BackgroundQueue"
            self.init(
                label: label, maxConcurrentTasks: maxConcurrentTasks, backgroundTaskProvider: backgroundTaskProvider,
                expirationPolicy: expirationPolicy, observers: Self.observers(forQueueNamed: label),
                measurer: QueueMetrics(queue: label, factory: metricsFactory), retryPolicy: retryPolicy)
        }
    }
#endif
