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
    /// The observers a new queue gets: one per trait that is on and whose backend was
    /// bootstrapped (none in the default build).
    static func observers(forQueueNamed label: String) -> [any QueueObserver<AsyncTask>] {
        #if Metrics
            observers(forQueueNamed: label, metricsFactory: MetricsSystem.factory)
        #else
            tracingObservers(forQueueNamed: label)
        #endif
    }

    private static func tracingObservers(forQueueNamed label: String) -> [any QueueObserver<AsyncTask>] {
        #if Tracing
            QueueTracing(queue: label).map { [$0] } ?? []
        #else
            []
        #endif
    }
}

#if Metrics
    extension BackgroundQueue {
        static func observers(
            forQueueNamed label: String, metricsFactory: any MetricsFactory
        ) -> [any QueueObserver<AsyncTask>] {
            let metrics: [any QueueObserver<AsyncTask>] =
                QueueMetrics(queue: label, factory: metricsFactory).map { [$0] } ?? []
            return metrics + tracingObservers(forQueueNamed: label)
        }

        /// Creates a queue whose metrics go to `metricsFactory` instead of the one
        /// `MetricsSystem` was bootstrapped with (the `Metrics` trait): a backend of its
        /// own, or a test's. The other parameters are those of
        /// ``init(name:maxConcurrentTasks:backgroundTaskProvider:expirationPolicy:)``.
        public init(
            name: String? = nil,
            maxConcurrentTasks: Int? = nil,
            backgroundTaskProvider: any BackgroundTaskProvider = DefaultBackgroundTaskProvider.make(),
            expirationPolicy: ExpirationPolicy = .cancelAll,
            metricsFactory: any MetricsFactory
        ) {
            let label = name ?? "Backgroundable.BackgroundQueue"
            self.init(
                label: label, maxConcurrentTasks: maxConcurrentTasks, backgroundTaskProvider: backgroundTaskProvider,
                expirationPolicy: expirationPolicy,
                observers: Self.observers(forQueueNamed: label, metricsFactory: metricsFactory))
        }
    }
#endif
