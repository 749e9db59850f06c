import BackgroundableTesting
import Foundation
import Synchronization
import Testing

@testable import Backgroundable

@Suite struct DurableQueueTests {
    @Test func anAddIsStoredBeforeItReturnsAndSurvivesTheStore() async throws {
        let directory = ScratchDirectory()
        defer { directory.remove() }
        let receipt = try await {
            let jobs = DurableQueue(store: try await FileJobStore(directory: directory.url), queue: BackgroundQueue())
            return try await jobs.add(.note, Note(text: "hello"), options: .init(name: "greeting"))
        }()
        // The store and its queue are gone, as after a crash: a new store reads the job back.
        let stored = try await storedJobs(in: directory)
        #expect(stored.map(\.id) == [receipt.id])
        #expect(stored.first?.name == "greeting")
        #expect(try JSONDecoder().decode(Note.self, from: stored[0].payload) == Note(text: "hello"))
    }

    @Test func aJobRunsOnceAndLeavesTheStore() async throws {
        let setup = try await DurableSetup()
        defer { setup.remove() }
        let (store, jobs) = (setup.store, setup.jobs)
        let journal = Journal()
        jobs.register(.note) { note, job in journal.record("\(note.text) \(job.attempt)") }
        let receipt = try await jobs.add(.note, Note(text: "a"))
        await jobs.runUntilIdle()
        #expect(journal.all == ["a 1"])
        #expect(try await store.jobs().isEmpty)
        #expect(!receipt.wasDropped)
    }

    @Test func aNameDropsOrReplacesAcrossTheStore() async throws {
        let setup = try await DurableSetup()
        defer { setup.remove() }
        let jobs = setup.jobs
        let first = try await jobs.add(.note, Note(text: "first"), options: .init(name: "sync"))
        let dropped = try await jobs.add(.note, Note(text: "second"), options: .init(name: "sync"))
        #expect(dropped.wasDropped && dropped.id == first.id)
        let replacing = try await jobs.add(
            .note, Note(text: "third"), options: .init(name: "sync", uniquenessPolicy: .replace))
        #expect(replacing.replaced == first.id && !replacing.wasDropped)
        let journal = Journal()
        jobs.register(.note) { note, _ in journal.record(note.text) }
        await jobs.runUntilIdle()
        #expect(journal.all == ["third"])
    }

    @Test func aReplaceCancelsTheJobRunningHereAndTheBodiesNeverOverlap() async throws {
        let queue = BackgroundQueue()
        let setup = try await DurableSetup(queue: queue)
        defer { setup.remove() }
        let (store, jobs) = (setup.store, setup.jobs)
        let journal = Journal()
        let started = Signal()
        let releaseOld = Signal()
        jobs.register(.note) { note, _ in
            journal.record("\(note.text) in")
            if note.text == "old" {
                started.signal()
                await releaseOld.wait()  // not cancellable: the handler ignores its cancellation
            }
            journal.record("\(note.text) out")
        }
        let events = queue.events
        try await jobs.add(.note, Note(text: "old"), options: .init(name: "n"))
        let runner = Task { await jobs.runUntilIdle() }
        await started.wait()
        // "new" is stored before "old" is cancelled: the run cannot find the store idle
        // before "new" has run.
        try await jobs.add(.note, Note(text: "new"), options: .init(name: "n", uniquenessPolicy: .replace))
        // The new job's unit starts, and waits for the cancelled handler to return.
        var startedUnits = 0
        for await event in events where event.kind == .started {
            startedUnits += 1
            guard startedUnits == 2, let unit = event.unit else { continue }
            #expect(waitsBehindAClosedGate(unit))
            break
        }
        releaseOld.signal()
        await runner.value
        #expect(try await store.jobs().isEmpty)
        #expect(journal.all == ["old in", "old out", "new in", "new out"])
    }

    @Test func aFailedAttemptIsRetriedWithItsAttemptNumberAndTheSameID() async throws {
        let setup = try await DurableSetup()
        defer { setup.remove() }
        let (store, jobs) = (setup.store, setup.jobs)
        let journal = Journal()
        struct Flaky: Error {}
        jobs.register(.note) { note, job in
            journal.record("\(job.id) \(job.attempt)/\(job.maxAttempts)")
            if job.attempt <= note.failures { throw Flaky() }
        }
        let receipt = try await jobs.add(
            .note, Note(text: "x", failures: 2), options: .init(retry: .fixed(maxAttempts: 4, delay: .zero)))
        // Each retry falls due at once: the queue is idle only once the job succeeded.
        await jobs.runUntilIdle()
        let stored = try await store.jobs()
        #expect(stored.isEmpty, "stored: \(stored), ran: \(journal.all)")
        #expect(journal.all == ["\(receipt.id) 1/4", "\(receipt.id) 2/4", "\(receipt.id) 3/4"])
    }

    @Test func anAttemptThatTimesOutCountsAsAFailedOne() async throws {
        let directory = ScratchDirectory()
        defer { directory.remove() }
        let store = try await FileJobStore(directory: directory.url)
        let clock = TestClock()
        let jobs = DurableQueue(store: store, queue: BackgroundQueue(clock: clock))
        let journal = Journal()
        let offered = Journal()
        let started = Signal()
        jobs.register(
            .note,
            retryingIf: { error in
                offered.record("\(error)")
                return true
            }
        ) { _, job in
            journal.record("attempt \(job.attempt)")
            if job.attempt == 1 {
                started.signal()
                await suspendUntilCancelled()  // stuck, until the timeout
            }
        }
        try await jobs.add(
            .note, Note(text: "x"), options: .init(timeout: .seconds(20), retry: .fixed(maxAttempts: 2, delay: .zero)))
        let runner = Task { await jobs.runUntilIdle() }
        await started.wait()
        clock.advance(by: .seconds(20))
        // The retry falls due at once: the queue is idle only once attempt 2 ended.
        await runner.value
        let stored = try await store.jobs()
        #expect(stored.isEmpty, "stored: \(stored), ran: \(journal.all)")
        #expect(journal.all == ["attempt 1", "attempt 2"])
        #expect(offered.all == ["\(AsyncTaskError.timedOut)"])
    }

    @Test func theQueuesOwnRetryPolicyDoesNotRetryAJobBehindTheStoresBack() async throws {
        let directory = ScratchDirectory()
        defer { directory.remove() }
        let store = try await FileJobStore(directory: directory.url)
        let queue = BackgroundQueue(retryPolicy: .fixed(maxAttempts: 3, delay: .zero))
        let jobs = DurableQueue(store: store, queue: queue)
        let journal = Journal()
        struct Failure: Error {}
        jobs.register(.note) { _, job in
            journal.record("attempt \(job.attempt)")
            throw Failure()
        }
        try await jobs.add(.note, Note(text: "x"))  // one attempt: the job's own policy
        await jobs.runUntilIdle()
        #expect(journal.all == ["attempt 1"])
        #expect(try await store.jobs().isEmpty)
    }

    @Test func aJobWithNoAttemptsLeftEndsAndLeavesTheStore() async throws {
        let setup = try await DurableSetup()
        defer { setup.remove() }
        let (store, jobs) = (setup.store, setup.jobs)
        let journal = Journal()
        struct Permanent: Error {}
        jobs.register(.note, retryingIf: { !($0 is Permanent) }) { note, job in
            journal.record("\(note.text) \(job.attempt)")
            throw Permanent()
        }
        try await jobs.add(.note, Note(text: "x"), options: .init(retry: .fixed(maxAttempts: 5, delay: .zero)))
        await jobs.runUntilIdle()
        #expect(journal.all == ["x 1"])  // retryingIf turned the error down
        #expect(try await store.jobs().isEmpty)
    }

    @Test func cancellingRunGivesTheRunningJobBackWithoutCountingItsAttempt() async throws {
        let setup = try await DurableSetup()
        defer { setup.remove() }
        let (store, jobs) = (setup.store, setup.jobs)
        let started = jobs.registerUntilCancelled()
        let receipt = try await jobs.add(.note, Note(text: "long"))
        let runner = Task { await jobs.run() }
        await started.wait()
        runner.cancel()
        await runner.value
        let stored = try await store.jobs()
        #expect(stored.map(\.id) == [receipt.id])
        #expect(stored.first?.attempt == 0)
        #expect(try await store.claim(kinds: ["note"], limit: 1, lease: .seconds(1)).map(\.id) == [receipt.id])
    }

    @Test func runLetsItsJobsEndAndReturnsWhenTheQueueStopsAcceptingWork() async throws {
        let directory = ScratchDirectory()
        defer { directory.remove() }
        let store = try await FileJobStore(directory: directory.url)
        let queue = BackgroundQueue()
        // One job held at a time: the second is not claimed while the first runs.
        let jobs = DurableQueue(store: store, queue: queue, maxRunningJobs: 1)
        let journal = Journal()
        let started = Signal()
        let release = AsyncStream<Void>.makeStream()
        jobs.register(.note) { note, _ in
            journal.record(note.text)
            started.signal()
            var waiting = release.stream.makeAsyncIterator()
            await waiting.next()
        }
        try await jobs.add(.note, Note(text: "running"))
        let runner = Task { await jobs.run() }
        await started.wait()
        let waiting = try await jobs.add(.note, Note(text: "waiting"))
        queue.stopAcceptingWork()  // a graceful shutdown
        release.continuation.yield()
        await runner.value  // returns without being cancelled
        #expect(journal.all == ["running"])
        #expect(try await store.jobs().map(\.id) == [waiting.id])  // for the next process
    }

    @Test func cancelRemovesAJobAndStopsItWhereItRuns() async throws {
        let setup = try await DurableSetup()
        defer { setup.remove() }
        let (store, jobs) = (setup.store, setup.jobs)
        let started = jobs.registerUntilCancelled()
        let receipt = try await jobs.add(.note, Note(text: "long"))
        let runner = Task { await jobs.runUntilIdle() }
        await started.wait()
        #expect(try await jobs.cancel(receipt.id))
        await runner.value
        #expect(try await store.jobs().isEmpty)
        #expect(try await !jobs.cancel(receipt.id))
    }

    /// A file store behind a test's own: every call goes to `base`, and lease renewals do
    /// nothing; the stores below change what they test.
    private class ForwardingStore: DurableJobStore, @unchecked Sendable {
        // @unchecked: immutable; subclasses hold only `Sendable` values in `let`s.
        let base: FileJobStore
        init(_ base: FileJobStore) { self.base = base }
        func claim(kinds: Set<String>, limit: Int, lease: Duration) async throws -> [DurableJobRecord] {
            try await base.claim(kinds: kinds, limit: limit, lease: lease)
        }
        func enqueue(_ job: DurableJobRecord, replacing: Bool) async throws -> DurableJobReceipt {
            try await base.enqueue(job, replacing: replacing)
        }
        func nextDueDate(kinds: Set<String>) async throws -> Date? { try await base.nextDueDate(kinds: kinds) }
        func renew(_ ids: [DurableJobID], lease: Duration) async throws {}
        func complete(_ id: DurableJobID) async throws { try await base.complete(id) }
        func retry(_ id: DurableJobID, at date: Date, error: String) async throws {
            try await base.retry(id, at: date, error: error)
        }
        func release(_ id: DurableJobID) async throws { try await base.release(id) }
        func remove(_ id: DurableJobID) async throws -> Bool { try await base.remove(id) }
        func jobs() async throws -> [DurableJobRecord] { try await base.jobs() }
    }

    /// A store whose claims hand out again every job they handed out before that is still
    /// stored, as a shared store does when a lease runs out while its holder still runs
    /// the job. With `holdingCompletes`, a `complete` waits for `resume` (after signalling
    /// `completing`) before it removes the job.
    private final class LapsingStore: ForwardingStore, @unchecked Sendable {
        let holdsCompletes: Bool
        let completing = Signal()
        let resume = Signal()
        private let handedOut = Lock<[DurableJobRecord]>([])
        init(_ base: FileJobStore, holdingCompletes: Bool = false) {
            self.holdsCompletes = holdingCompletes
            super.init(base)
        }
        override func claim(kinds: Set<String>, limit: Int, lease: Duration) async throws -> [DurableJobRecord] {
            let claimed = try await base.claim(kinds: kinds, limit: limit, lease: lease)
            let stored = Set(try await base.jobs().map(\.id))
            return handedOut.withLock { handedOut in
                handedOut = handedOut.filter { stored.contains($0.id) } + claimed
                return handedOut
            }
        }
        override func complete(_ id: DurableJobID) async throws {
            if holdsCompletes {
                completing.signal()
                await resume.wait()
            }
            try await base.complete(id)
        }
    }

    @Test func aJobClaimedAgainWhileItRunsHereIsNotStartedTwice() async throws {
        let directory = ScratchDirectory()
        defer { directory.remove() }
        let store = try await FileJobStore(directory: directory.url)
        let jobs = DurableQueue(store: LapsingStore(store), queue: BackgroundQueue())
        let journal = Journal()
        let started = Signal()
        let release = Signal()
        let nextRan = Signal()
        jobs.register(.note) { note, _ in
            journal.record(note.text)
            if note.text == "next" { return nextRan.signal() }
            started.signal()
            await release.wait()
        }
        try await jobs.add(.note, Note(text: "long"))
        let runner = Task { await jobs.runUntilIdle() }
        await started.wait()
        try await jobs.add(.note, Note(text: "next"))  // another claim, which hands "long" out again
        #expect(await nextRan.wait(upTo: .seconds(60)))
        release.signal()
        await runner.value
        #expect(try await store.jobs().isEmpty)
        #expect(journal.all == ["long", "next"])
    }

    @Test func aJobClaimedAgainWhileItsEndIsStoredDoesNotRunAgain() async throws {
        let directory = ScratchDirectory()
        defer { directory.remove() }
        let base = try await FileJobStore(directory: directory.url)
        let store = LapsingStore(base, holdingCompletes: true)
        let jobs = DurableQueue(store: store, queue: BackgroundQueue())
        let journal = Journal()
        let nextRan = Signal()
        jobs.register(.note) { note, _ in
            journal.record(note.text)
            if note.text == "next" { nextRan.signal() }
        }
        try await jobs.add(.note, Note(text: "once"))
        let runner = Task { await jobs.runUntilIdle() }
        // "once" has ended and its end is being stored; a claim hands it out again.
        await store.completing.wait()
        try await jobs.add(.note, Note(text: "next"))
        #expect(await nextRan.wait(upTo: .seconds(60)))
        store.resume.signal()
        await runner.value
        #expect(try await base.jobs().isEmpty)
        #expect(journal.all == ["once", "next"])
    }

    /// A file store whose `retry` holds, once it has stored the retry, until `resume` is
    /// signalled; `reclaimed` is signalled when a claim hands out the job it retried.
    private final class HeldRetryStore: ForwardingStore, @unchecked Sendable {
        let retried = Signal()
        let resume = Signal()
        let reclaimed = Signal()
        private let retriedID = Lock<DurableJobID?>(nil)
        override func claim(kinds: Set<String>, limit: Int, lease: Duration) async throws -> [DurableJobRecord] {
            let claimed = try await base.claim(kinds: kinds, limit: limit, lease: lease)
            if let id = retriedID.withLock({ $0 }), claimed.contains(where: { $0.id == id }) { reclaimed.signal() }
            return claimed
        }
        override func retry(_ id: DurableJobID, at date: Date, error: String) async throws {
            retriedID.withLock { $0 = id }
            try await base.retry(id, at: date, error: error)
            retried.signal()
            await resume.wait()
        }
    }

    /// A file store whose first claim that hands out jobs holds, after the claim, until
    /// `resume` is signalled (`claimed` is signalled first).
    private final class HeldClaimStore: ForwardingStore, @unchecked Sendable {
        let claimed = Signal()
        let resume = Signal()
        override func claim(kinds: Set<String>, limit: Int, lease: Duration) async throws -> [DurableJobRecord] {
            let jobs = try await base.claim(kinds: kinds, limit: limit, lease: lease)
            if !jobs.isEmpty, !claimed.isSignalled {
                claimed.signal()
                await resume.wait()
            }
            return jobs
        }
    }

    /// `cancel` finds the job held nowhere here while a claim is on its way with it: the
    /// claim must not start what the store no longer has.
    @Test func aJobCancelledWhileItsClaimIsOnItsWayNeverRuns() async throws {
        let directory = ScratchDirectory()
        defer { directory.remove() }
        let base = try await FileJobStore(directory: directory.url)
        let store = HeldClaimStore(base)
        let jobs = DurableQueue(store: store, queue: BackgroundQueue())
        let journal = Journal()
        jobs.register(.note) { note, _ in journal.record(note.text) }
        let receipt = try await jobs.add(.note, Note(text: "cancelled"))
        let runner = Task { await jobs.runUntilIdle() }
        await store.claimed.wait()
        #expect(try await jobs.cancel(receipt.id))
        store.resume.signal()
        await runner.value
        #expect(journal.all.isEmpty, "the cancelled job ran")
        #expect(try await base.jobs().isEmpty)
    }

    @Test func aJobClaimedAgainRightAfterItsRetryWasStoredRuns() async throws {
        let directory = ScratchDirectory()
        defer { directory.remove() }
        let base = try await FileJobStore(directory: directory.url)
        let store = HeldRetryStore(base)
        let jobs = DurableQueue(store: store, queue: BackgroundQueue())
        let journal = Journal()
        struct Flaky: Error {}
        jobs.register(.note) { note, job in
            journal.record("\(note.text) \(job.attempt)")
            if job.attempt <= note.failures { throw Flaky() }
        }
        try await jobs.add(
            .note, Note(text: "flaky", failures: 1),
            options: .init(retry: .fixed(maxAttempts: 2, delay: .milliseconds(1))))
        let runner = Task { await jobs.runUntilIdle() }
        // The retry is stored; before the queue hears back, another add wakes its loop,
        // whose claims hand the retried job out again once it is due.
        await store.retried.wait()
        try await jobs.add(.note, Note(text: "other"))
        #expect(await store.reclaimed.wait(upTo: .seconds(60)))
        store.resume.signal()
        await runner.value
        let stored = try await base.jobs()
        #expect(stored.isEmpty, "the retried job was claimed and never run: \(stored)")
        #expect(Set(journal.all) == ["flaky 1", "other 1", "flaky 2"])
    }

    @Test func aLaneRunsItsJobsOneAtATimeInOrder() async throws {
        let directory = ScratchDirectory()
        defer { directory.remove() }
        let store = try await FileJobStore(directory: directory.url)
        let jobs = DurableQueue(store: store, queue: BackgroundQueue(maxConcurrentTasks: 4))
        let journal = Journal()
        jobs.register(.note) { note, _ in
            journal.record("\(note.text) in")
            try await Task.sleep(for: .milliseconds(2))
            journal.record("\(note.text) out")
        }
        for index in 0..<4 {
            try await jobs.add(.note, Note(text: "\(index)"), options: .init(lane: "account-1"))
        }
        await jobs.runUntilIdle()
        #expect(journal.all == ["0 in", "0 out", "1 in", "1 out", "2 in", "2 out", "3 in", "3 out"])
    }

    @Test func aDelayedJobWaitsForItsTime() async throws {
        let setup = try await DurableSetup()
        defer { setup.remove() }
        let (store, jobs) = (setup.store, setup.jobs)
        let journal = Journal()
        jobs.register(.note) { note, _ in journal.record(note.text) }
        let later = Date().addingTimeInterval(3600)
        try await jobs.add(.note, Note(text: "later"), options: .init(notBefore: later))
        try await jobs.add(.note, Note(text: "now"))
        await jobs.runUntilIdle()
        #expect(journal.all == ["now"])
        #expect(try await store.nextDueDate(kinds: ["note"]) == later)
    }

    @Test func aKindNobodyRegisteredStaysInTheStoreUntouched() async throws {
        let setup = try await DurableSetup()
        defer { setup.remove() }
        let (store, jobs) = (setup.store, setup.jobs)
        let journal = Journal()
        jobs.register(.note) { note, _ in journal.record(note.text) }
        // A newer version of the app stored a kind this one does not know.
        let future = try await jobs.add(.otherNote, Note(text: "from the future"))
        try await jobs.add(.note, Note(text: "known"))
        await jobs.runUntilIdle()
        #expect(journal.all == ["known"])
        let stored = try await store.jobs()
        #expect(stored.map(\.id) == [future.id])
        #expect(stored.first?.attempt == 0)
    }

    @Test func aPayloadThatNoLongerDecodesEndsFailedWithoutTouchingOtherJobs() async throws {
        let directory = ScratchDirectory()
        defer { directory.remove() }
        let store = try await FileJobStore(directory: directory.url)
        let queue = BackgroundQueue()
        var events = queue.events.makeAsyncIterator()
        let jobs = DurableQueue(store: store, queue: queue)
        // An older version stored a different payload under the same kind.
        struct OldNote: Codable, Sendable { var body: Int }
        try await jobs.add(
            DurableJobKind<OldNote>("note"), OldNote(body: 1),
            options: .init(retry: .fixed(maxAttempts: 3, delay: .zero)))
        try await jobs.add(.note, Note(text: "fine"))
        let journal = Journal()
        jobs.register(.note) { note, _ in journal.record(note.text) }
        await jobs.runUntilIdle()
        #expect(journal.all == ["fine"])
        #expect(try await store.jobs().isEmpty)
        let failure = await events.next(where: { $0.kind == .ended && $0.outcome?.kind == .failed })
        let error = try #require(failure?.outcome?.error as? DurableStoreError)
        #expect(error.code == .undecodablePayload)
    }

    @Test func aKindRegisteredTwiceRunsTheLaterHandlerAndNoRunningLimitIsBelowOne() async throws {
        let directory = ScratchDirectory()
        defer { directory.remove() }
        let store = try await FileJobStore(directory: directory.url)
        let jobs = DurableQueue(store: store, queue: BackgroundQueue(), maxRunningJobs: -3)
        let journal = Journal()
        jobs.register(.note) { note, _ in journal.record("first \(note.text)") }
        jobs.register(.note) { note, _ in journal.record("second \(note.text)") }
        try await jobs.add(.note, Note(text: "a"))
        try await jobs.add(.note, Note(text: "b"))
        await jobs.runUntilIdle()
        #expect(journal.all == ["second a", "second b"])  // one at a time, in order
    }

    @Test func aPayloadThatDoesNotEncodeIsAClearErrorAndStoresNothing() async throws {
        let setup = try await DurableSetup()
        defer { setup.remove() }
        let (store, jobs) = (setup.store, setup.jobs)
        let error = await #expect(throws: DurableStoreError.self) {
            try await jobs.add(DurableJobKind<Double>("number"), .nan)
        }
        #expect(error?.code == .encoding)
        #expect(try await store.jobs().isEmpty)
    }
}
