#if canImport(BackgroundTasks) && os(iOS)
    public import BackgroundTasks
    public import Foundation

    // Apple-only: not compiled on Linux. Its rules live in `DurableLaunches`, which the
    // Linux tests drive with a fake task; this file only talks to `BGTaskScheduler`.

    /// Finishes durable jobs while the app is in the background: asks iOS for a
    /// `BGProcessingTask` (or a `BGAppRefreshTask`) when jobs are waiting, and runs them
    /// when the system launches it.
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
    /// `processing` (for ``BackgroundLaunchRequest/processing(requiresNetworkConnectivity:requiresExternalPower:)``)
    /// or `fetch` (for ``BackgroundLaunchRequest/appRefresh``) to `UIBackgroundModes`.
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
        ///   - request: The launch to ask for.
        ///   - onError: Called when the system refuses a request or the store fails.
        public init(
            identifier: String, jobs: DurableQueue, request: BackgroundLaunchRequest = .processing(),
            onError: (@Sendable (any Error) -> Void)? = nil
        ) {
            let launches = DurableLaunches(jobs: jobs, onError: onError) { earliestBeginDate in
                let taskRequest = request.make(identifier: identifier, earliestBeginDate: earliestBeginDate)
                try BGTaskScheduler.shared.submit(taskRequest)
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

    /// The launch a ``BackgroundProcessingScheduler`` asks iOS for.
    @available(iOS 18.0, *)
    public struct BackgroundLaunchRequest: Sendable {
        private enum Kind: Sendable {
            case processing(requiresNetworkConnectivity: Bool, requiresExternalPower: Bool)
            case appRefresh
        }
        private let kind: Kind

        /// A `BGProcessingTask`: minutes of time, when the system sees fit (often at night,
        /// on power). Info.plist: `processing` in `UIBackgroundModes`.
        ///
        /// - Parameters:
        ///   - requiresNetworkConnectivity: Launch only with a network (uploads).
        ///   - requiresExternalPower: Launch only on power.
        public static func processing(
            requiresNetworkConnectivity: Bool = true, requiresExternalPower: Bool = false
        ) -> BackgroundLaunchRequest {
            BackgroundLaunchRequest(
                kind: .processing(
                    requiresNetworkConnectivity: requiresNetworkConnectivity,
                    requiresExternalPower: requiresExternalPower))
        }

        /// A `BGAppRefreshTask`: about 30 seconds, granted more often, for short jobs; a
        /// job still running when it ends goes back to the store. Info.plist: `fetch` in
        /// `UIBackgroundModes`.
        public static var appRefresh: BackgroundLaunchRequest { BackgroundLaunchRequest(kind: .appRefresh) }

        fileprivate func make(identifier: String, earliestBeginDate: Date) -> BGTaskRequest {
            let request: BGTaskRequest
            switch kind {
            case .processing(let requiresNetworkConnectivity, let requiresExternalPower):
                let processing = BGProcessingTaskRequest(identifier: identifier)
                processing.requiresNetworkConnectivity = requiresNetworkConnectivity
                processing.requiresExternalPower = requiresExternalPower
                request = processing
            case .appRefresh:
                request = BGAppRefreshTaskRequest(identifier: identifier)
            }
            request.earliestBeginDate = earliestBeginDate
            return request
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
