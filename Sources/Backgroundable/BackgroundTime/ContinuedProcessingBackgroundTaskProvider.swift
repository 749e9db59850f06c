#if canImport(BackgroundTasks) && os(iOS)
    public import BackgroundTasks

    // Apple-only (iOS 26): not compiled on Linux. Its rules — binding a launched task to
    // the queue's assertion, showing the queue's progress, mapping the system's
    // expiration to the queue's — live in `ContinuedProcessing`, which the Linux tests
    // drive with a fake task. This file only talks to `BGTaskScheduler`.

    /// A background-time provider for iOS 26's continued processing: each busy period of
    /// its queue submits a `BGContinuedProcessingTaskRequest`, and the system task it
    /// launches shows the queue's ``QueueProgress`` (100 progress units per unit, so the
    /// units' own reports show), keeps the app running in the background until the queue
    /// is idle, then completes.
    ///
    /// Submit from a person's action, as the system requires: add the work in the action
    /// (a button's), on an idle queue, and the queue's busy transition submits the
    /// request right away. When the system ends the task early (its time is up, or the
    /// person cancelled it from the system's progress UI) the queue's background time
    /// expires: its ``BackgroundQueue/ExpirationPolicy`` applies.
    ///
    /// Create the provider once, early (at launch), and give it to one queue: it
    /// registers the launch handler for `identifier.*` (declare `identifier.*` under
    /// `BGTaskSchedulerPermittedIdentifiers`); each request's identifier is
    /// `identifier` plus a dot and a number. A request the system refuses grants no
    /// background time (with `.fail`, when it cannot run the task right away).
    @available(iOS 26.0, *)
    public final class ContinuedProcessingBackgroundTaskProvider: BackgroundTaskProvider, QueueProgressFollower {
        private let core: ContinuedProcessing

        /// - Parameters:
        ///   - identifier: The prefix of the task identifiers (your bundle identifier,
        ///     then a name).
        ///   - title: What the system shows for the task.
        ///   - subtitle: The first subtitle the system shows.
        ///   - strategy: What the system does when it cannot run the task at once.
        ///   - progressSubtitle: If given, the subtitle for each new progress value
        ///     ("3 of 10 photos"), called on the queue's delivering thread.
        public init(
            identifier: String, title: String, subtitle: String,
            strategy: BGContinuedProcessingTaskRequest.SubmissionStrategy = .queue,
            progressSubtitle: (@Sendable (QueueProgress) -> String)? = nil
        ) {
            core = ContinuedProcessing(identifierPrefix: identifier, title: title, subtitle: progressSubtitle) {
                taskIdentifier in
                let request = BGContinuedProcessingTaskRequest(
                    identifier: taskIdentifier, title: title, subtitle: subtitle)
                request.strategy = strategy
                try BGTaskScheduler.shared.submit(request)
            }
            _ = BGTaskScheduler.shared.register(forTaskWithIdentifier: "\(identifier).*", using: nil) {
                [core] task in
                guard let task = task as? BGContinuedProcessingTask else {
                    task.setTaskCompleted(success: false)
                    return
                }
                core.launched(taskIdentifier: task.identifier, SystemTask(task))
            }
        }

        /// Submits a request for the queue's new busy period (any thread); `nil` when the
        /// system refuses it. The task it launches calls `expirationHandler` once if the
        /// system ends it early.
        public func beginBackgroundTask(
            named name: String, expirationHandler: @escaping @Sendable () -> Void
        ) -> BackgroundTaskIdentifier? {
            core.beginBackgroundTask(named: name, expirationHandler: expirationHandler)
        }

        /// The queue is idle: its task completes successfully (at once, or as soon as it
        /// launches). Any thread; ending twice does nothing.
        public func endBackgroundTask(_ identifier: BackgroundTaskIdentifier) {
            core.endBackgroundTask(identifier)
        }

        func queueProgressChanged(_ progress: QueueProgress) {
            core.queueProgressChanged(progress)
        }
    }

    /// The system task, as `ContinuedProcessing` drives it. `BGTask` is thread-safe but
    /// not marked `Sendable`.
    @available(iOS 26.0, *)
    private final class SystemTask: ContinuedProcessingTask, @unchecked Sendable {
        let task: BGContinuedProcessingTask

        init(_ task: BGContinuedProcessingTask) {
            self.task = task
        }

        var progress: Progress { task.progress }

        func updateTitle(_ title: String, subtitle: String) {
            task.updateTitle(title, subtitle: subtitle)
        }

        func setExpirationHandler(_ handler: @escaping @Sendable () -> Void) {
            task.expirationHandler = handler
        }

        func setTaskCompleted(success: Bool) {
            task.setTaskCompleted(success: success)
        }
    }
#endif
