public import Backgroundable

extension BackgroundQueue {
    /// Creates a queue whose timeouts, delayed starts, retry delays and progress samples
    /// run on `clock`, for tests; the other parameters are those of
    /// `BackgroundQueue.init(name:maxConcurrentTasks:backgroundTaskProvider:expirationPolicy:retryPolicy:)`.
    /// Pass a ``RecordingBackgroundTaskProvider`` to see the queue's background time.
    public init(
        name: String? = nil,
        maxConcurrentTasks: Int? = nil,
        backgroundTaskProvider: any BackgroundTaskProvider = DefaultBackgroundTaskProvider.make(),
        expirationPolicy: ExpirationPolicy = .cancelAll,
        retryPolicy: RetryPolicy? = nil,
        clock: TestClock
    ) {
        self.init(
            name: name, maxConcurrentTasks: maxConcurrentTasks, backgroundTaskProvider: backgroundTaskProvider,
            expirationPolicy: expirationPolicy, retryPolicy: retryPolicy, clock: clock.queueClock)
    }
}
