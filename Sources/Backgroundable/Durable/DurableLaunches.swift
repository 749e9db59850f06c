import Foundation
import Synchronization

/// A launch the system grants an app to run its durable jobs (iOS's `BGProcessingTask`),
/// as ``DurableLaunches`` drives it.
protocol DurableLaunchTask: Sendable {
    /// Called once if the system ends the launch early.
    func setExpirationHandler(_ handler: @escaping @Sendable () -> Void)
    func setTaskCompleted(success: Bool)
}

/// The rules of ``BackgroundProcessingScheduler``, free of any platform API so that they
/// are tested everywhere: ask the system for a launch when durable jobs are waiting, and
/// use a launch to run them.
///
/// - ``schedule()`` asks for a launch no earlier than the next job falls due, and only if
///   one is stored (a request replaces the previous one, as `BGTaskScheduler` does).
/// - ``launched(_:)`` runs the queue until no job is due and none runs, then completes
///   the launch — successfully unless the system ended it — and asks for the next launch
///   if jobs are left (due later, or given back). When the system ends the launch early,
///   the running jobs — those of a ``DurableQueue/run()`` the app started at launch too —
///   are cancelled and given back to the store, their attempt not counted, before the
///   launch completes; claims resume then.
final class DurableLaunches: Sendable {
    private let jobs: DurableQueue
    private let submit: @Sendable (_ earliestBeginDate: Date) throws -> Void
    private let onError: (@Sendable (any Error) -> Void)?

    init(
        jobs: DurableQueue, onError: (@Sendable (any Error) -> Void)?,
        submit: @escaping @Sendable (_ earliestBeginDate: Date) throws -> Void
    ) {
        self.jobs = jobs
        self.submit = submit
        self.onError = onError
    }

    func schedule() async {
        do {
            guard let next = try await jobs.nextDueDate() else { return }
            try submit(next)
        } catch {
            onError?(error)
        }
    }

    /// Where a launch stands, for its expiration handler.
    private enum Launch {
        case running, expired, completing
    }

    func launched(_ task: some DurableLaunchTask) async {
        let work = Task { await jobs.runUntilIdle() }
        let launch = Mutex(Launch.running)
        task.setExpirationHandler { [jobs] in
            let expires = launch.withLock { launch in
                guard launch == .running else { return false }
                // Before anything is given back, so no loop claims it again (`run()`'s
                // included); under this lock, so the completion below sees both or none.
                jobs.pauseClaims()
                launch = .expired
                return true
            }
            if expires { work.cancel() }
        }
        await work.value
        let expired = launch.withLock { launch in
            defer { launch = .completing }
            return launch == .expired
        }
        // The jobs a `run()` of the app's holds go back too, not only this launch's.
        if expired { await jobs.giveBackHeldJobs() }
        await schedule()
        if expired { jobs.resumeClaims() }
        task.setTaskCompleted(success: !expired)
    }
}
