import Foundation
import Synchronization
import Testing

@testable import Backgroundable

/// `BackgroundProcessingScheduler`'s rules (the iOS class itself is not compiled here),
/// through a fake system task and a recording submit.
@Suite struct DurableLaunchesTests {
    private final class FakeTask: DurableLaunchTask {
        let expiration = Mutex<(@Sendable () -> Void)?>(nil)
        let completions = Mutex<[Bool]>([])
        func setExpirationHandler(_ handler: @escaping @Sendable () -> Void) { expiration.withLock { $0 = handler } }
        func setTaskCompleted(success: Bool) { completions.withLock { $0.append(success) } }
        func expire() { expiration.withLock { $0 }?() }
    }

    private final class Submissions: Sendable {
        private let dates = Mutex<[Date]>([])
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
}
