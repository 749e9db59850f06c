#if canImport(BackgroundTasks) && os(iOS)
    public import BackgroundTasks
    public import Foundation

    // Apple-only: not compiled on Linux. Its rules live in `DurableLaunches`, which the
    // Linux tests drive with a fake task; this file only talks to `BGTaskScheduler`.

    /// Finishes durable jobs while the app is in the background: asks iOS for a
    /// `BGProcessingTask` when jobs are waiting, and runs them when the system launches it.
    ///
    /// Create it once, before the app finishes launching (the system requires the
    /// handler to be registered by then), and call ``schedule()`` when the app moves to
    /// the background:
    ///
    /// ```swift
    /// let scheduler = BackgroundProcessingScheduler(identifier: "com.example.app.jobs", jobs: jobs)
    /// // In the scene's .background phase:
    /// Task { await scheduler.schedule() }
    /// ```
    ///
    /// **Info.plist**: add `identifier` to `BGTaskSchedulerPermittedIdentifiers`, and
    /// `processing` to `UIBackgroundModes`.
    ///
    /// The system decides when the launch comes (often at night, on power): a job may wait
    /// for it, and runs at the latest when the app is next opened and ``DurableQueue/run()``
    /// starts. When the system ends the launch early, the running jobs are given back to
    /// the store, their attempt not counted.
    @available(iOS 18.0, *)
    public final class BackgroundProcessingScheduler: Sendable {
        private let launches: DurableLaunches

        /// Registers the launch handler for `identifier`.
        ///
        /// - Parameters:
        ///   - requiresNetworkConnectivity: Launch only with a network (uploads).
        ///   - requiresExternalPower: Launch only on power.
        ///   - onError: Called when the system refuses a request or the store fails.
        public init(
            identifier: String, jobs: DurableQueue, requiresNetworkConnectivity: Bool = true,
            requiresExternalPower: Bool = false, onError: (@Sendable (any Error) -> Void)? = nil
        ) {
            let launches = DurableLaunches(jobs: jobs, onError: onError) { earliestBeginDate in
                let request = BGProcessingTaskRequest(identifier: identifier)
                request.requiresNetworkConnectivity = requiresNetworkConnectivity
                request.requiresExternalPower = requiresExternalPower
                request.earliestBeginDate = earliestBeginDate
                try BGTaskScheduler.shared.submit(request)
            }
            self.launches = launches
            _ = BGTaskScheduler.shared.register(forTaskWithIdentifier: identifier, using: nil) { task in
                let launched = SystemTask(task)
                Task { await launches.launched(launched) }
            }
        }

        /// Asks for a launch if durable jobs are stored, no earlier than the next one
        /// falls due. Suspends while the store is read.
        public func schedule() async {
            await launches.schedule()
        }
    }

    /// `BGTask` is thread-safe but not marked `Sendable`.
    private final class SystemTask: DurableLaunchTask, @unchecked Sendable {
        let task: BGTask
        init(_ task: BGTask) { self.task = task }
        func setExpirationHandler(_ handler: @escaping @Sendable () -> Void) { task.expirationHandler = handler }
        func setTaskCompleted(success: Bool) { task.setTaskCompleted(success: success) }
    }
#endif
