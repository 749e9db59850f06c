import Foundation
import Synchronization
import Testing

@testable import Backgroundable

/// `BackgroundProcessingScheduler`'s rules (the iOS class itself is not compiled here),
/// through a fake system task and a recording submit.
@Suite struct DurableLaunchesTests {
    private final class FakeTask: DurableLaunchTask {
        let expiration = Lock<(@Sendable () -> Void)?>(nil)
        let completions = Lock<[Bool]>([])
        /// Signalled once the launch set its expiration handler.
        let handlerSet = Signal()
        /// Runs as the launch completes, before the completion is recorded.
        let onCompletion: @Sendable () -> Void
        init(onCompletion: @escaping @Sendable () -> Void = {}) { self.onCompletion = onCompletion }
        func setExpirationHandler(_ handler: @escaping @Sendable () -> Void) {
            expiration.withLock { $0 = handler }
            handlerSet.signal()
        }
        func setTaskCompleted(success: Bool) {
            onCompletion()
            completions.withLock { $0.append(success) }
        }
        func expire() { expiration.withLock { $0 }?() }
    }

    private final class Submissions: Sendable {
        private let dates = Lock<[Date]>([])
        func record(_ date: Date) { dates.withLock { $0.append(date) } }
        var all: [Date] { dates.withLock { $0 } }
    }

    private func launches(_ jobs: DurableQueue) -> (DurableLaunches, Submissions) {
        let submitted = Submissions()
        return (DurableLaunches(jobs: jobs, onError: nil) { submitted.record($0) }, submitted)
    }

    @Test func scheduleAsksForALaunchOnlyWhenJobsWaitAndNoEarlierThanTheNextIsDue() async throws {
        let directory = ScratchDirectory()
        defer { directory.remove() }
        let jobs = DurableQueue(store: try await FileJobStore(directory: directory.url), queue: BackgroundQueue())
        jobs.register(.note) { _, _ in }
        let (launches, submitted) = launches(jobs)
        await launches.schedule()
        #expect(submitted.all.isEmpty)
        let later = Date().addingTimeInterval(600)
        try await jobs.add(.note, Note(text: "later"), options: .init(notBefore: later))
        await launches.schedule()
        #expect(submitted.all == [later])
    }

    @Test func aLaunchRunsTheDueJobsCompletesAndAsksForTheNext() async throws {
        let setup = try await DurableSetup()
        defer { setup.remove() }
        let jobs = setup.jobs
        let journal = Journal()
        jobs.register(.note) { note, _ in journal.record(note.text) }
        let later = Date().addingTimeInterval(600)
        try await jobs.add(.note, Note(text: "now"))
        try await jobs.add(.note, Note(text: "later"), options: .init(notBefore: later))
        let (launches, submitted) = launches(jobs)
        let task = FakeTask()
        await launches.launched(task)
        #expect(journal.all == ["now"])
        #expect(task.completions.withLock { $0 } == [true])
        #expect(submitted.all == [later])
    }

    @Test func anExpiredLaunchGivesItsJobsBackAndCompletesUnsuccessfully() async throws {
        let setup = try await DurableSetup()
        defer { setup.remove() }
        let (store, jobs) = (setup.store, setup.jobs)
        let started = jobs.registerUntilCancelled()
        let receipt = try await jobs.add(.note, Note(text: "long upload"))
        let (launches, submitted) = launches(jobs)
        let task = FakeTask()
        let launch = Task { await launches.launched(task) }
        await started.wait()
        task.expire()
        await launch.value
        #expect(task.completions.withLock { $0 } == [false])
        let stored = try await store.jobs()
        #expect(stored.map(\.id) == [receipt.id] && stored.first?.attempt == 0)
        #expect(submitted.all.count == 1)  // the job is due again: ask for the next launch
    }

    /// DurableWork.md's setup runs `jobs.run()` from the app's launch, background launches
    /// included: a job that loop holds goes back to the store too when the system ends the
    /// launch early, before the launch completes, and the loop claims again after it.
    @Test func anExpiredLaunchAlsoGivesBackTheJobsTheAppsRunHolds() async throws {
        let setup = try await DurableSetup()
        defer { setup.remove() }
        let (store, jobs) = (setup.store, setup.jobs)
        let started = Lock(0)
        let firstStart = Signal()
        let restarted = Signal()
        jobs.register(.note) { _, _ in
            let count = started.withLock { count in
                count += 1
                return count
            }
            (count == 1 ? firstStart : restarted).signal()
            await suspendUntilCancelled()
        }
        let receipt = try await jobs.add(.note, Note(text: "long upload"))
        let app = Task { await jobs.run() }  // the app's own loop, started at launch
        await firstStart.wait()
        let heldAtCompletion = Lock<Int?>(nil)
        let (launches, _) = launches(jobs)
        let task = FakeTask { heldAtCompletion.withLock { $0 = jobs.heldCount } }
        let launch = Task { await launches.launched(task) }
        await task.handlerSet.wait()
        task.expire()
        await launch.value
        #expect(task.completions.withLock { $0 } == [false])
        let gaveBack = heldAtCompletion.withLock { $0 } == 0
        #expect(gaveBack)
        // Claims resumed: the app's loop runs the job again (once it was given back).
        if gaveBack { await restarted.wait() }
        app.cancel()
        await app.value
        let stored = try await store.jobs()
        #expect(stored.map(\.id) == [receipt.id] && stored.first?.attempt == 0)
    }
}
