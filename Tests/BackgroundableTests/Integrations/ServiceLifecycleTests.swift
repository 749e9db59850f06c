#if ServiceLifecycle
    import Foundation
    import Logging
    import ServiceLifecycle
    import Synchronization
    import Testing

    @testable import Backgroundable

    /// `BackgroundQueueService` (the `ServiceLifecycle` trait) under a real
    /// `ServiceGroup`: in-process, and in a child process sent real signals.
    @Suite("ServiceLifecycle")
    struct ServiceLifecycleTests {
        private func group(_ service: BackgroundQueueService, grace: Duration? = nil) -> ServiceGroup {
            var configuration = ServiceGroupConfiguration(
                services: [service], logger: Logger(label: "backgroundable-tests"))
            configuration.maximumGracefulShutdownDuration = grace
            return ServiceGroup(configuration: configuration)
        }

        @Test func aDurableQueueUnderAServiceGroupLetsItsJobsEndAndLeavesTheRestStored() async throws {
            let directory = ScratchDirectory()
            defer { directory.remove() }
            let store = try await FileJobStore(directory: directory.url)
            let queue = BackgroundQueue(name: "durable", backgroundTaskProvider: NoopBackgroundTaskProvider())
            let jobs = DurableQueue(store: store, queue: queue, maxRunningJobs: 1)
            let started = Signal()
            let release = Signal()
            let ran = Recorder<String>()
            jobs.register(.note) { note, _ in
                ran.append(note.text)
                started.signal()
                await release.wait()
            }
            try await jobs.add(.note, Note(text: "running"))
            // Listed after the queue's service: the group stops it first.
            let group = ServiceGroup(
                configuration: ServiceGroupConfiguration(
                    services: [BackgroundQueueService(queue), jobs], logger: Logger(label: "backgroundable-tests")))
            let running = Task { try await group.run() }
            await started.wait()
            let waiting = try await jobs.add(.note, Note(text: "waiting"))
            await group.triggerGracefulShutdown()
            while !jobs.isDraining { await Task.yield() }  // the group told the durable queue
            release.signal()
            try await running.value
            #expect(ran.all == ["running"])
            #expect(try await store.jobs().map(\.id) == [waiting.id])
        }

        @Test func gracefulShutdownDrainsTheQueuesAndTurnsLateWorkAway() async throws {
            let queue = BackgroundQueue(name: "jobs", backgroundTaskProvider: NoopBackgroundTaskProvider())
            let reports = Recorder<ShutdownReport>()
            let group = group(BackgroundQueueService(queue) { reports.append($0) })
            let release = Signal()
            let started = Signal()
            let job = queue.add(.init(name: "job")) {
                started.signal()
                await release.wait()
                return 1
            }
            let running = Task { try await group.run() }
            await started.wait()
            await group.triggerGracefulShutdown()
            await waitUntil { !queue.isAcceptingWork }
            let late = queue.add(.init(name: "late")) { 2 }
            #expect(await late.task.outcome.kind == .cancelled)
            release.signal()
            try await running.value
            #expect(try await job.value == 1)
            #expect(reports.all.map(\.ending) == [.drained])
            #expect(reports.all.first?.request == .serviceGroup)
        }

        @Test func whenTheGroupCancelsTheServiceWorkExpiresAndSavesItsState() async throws {
            let queue = BackgroundQueue(name: "jobs", backgroundTaskProvider: NoopBackgroundTaskProvider())
            let events = queue.events
            let reports = Recorder<ShutdownReport>()
            let service = BackgroundQueueService(queue, cancellationPeriod: .seconds(600)) { reports.append($0) }
            let group = group(service, grace: .zero)
            let saved = Recorder<String>()
            let started = Signal()
            _ = queue.add(.init(name: "stuck")) {
                started.signal()
                await suspendUntilCancelled()
                await Task.yield()
                saved.append("stuck")
            }
            let running = Task { try await group.run() }
            await started.wait()
            await group.triggerGracefulShutdown()
            try await running.value
            #expect(reports.all.map(\.ending) == [.expired(.gracePeriodEnded)])
            #expect(reports.all.first?.unfinishedUnits == [.init(queue: "jobs", name: "stuck", state: .executing)])
            #expect(saved.all == ["stuck"], "saved within the cancellation period")
            var sawExpiring = false
            for await event in events {
                if event.kind == .backgroundTimeExpiring { sawExpiring = true }
                if event.kind == .idle { break }
            }
            #expect(sawExpiring)
        }

        // MARK: A producer feeding a queue (the pattern of RunningInAServer.md)

        /// Another system's jobs, leased out one claim at a time: `claim()` waits for a job
        /// and throws `CancellationError` when cancelled first.
        private final class JobSource: Sendable {
            private struct State {
                var pending: [Int] = []
                var waiter: (id: Int, continuation: CheckedContinuation<Int, any Error>)?
                var nextWaiter = 0
            }

            private let state = Lock(State())
            let claimed = Recorder<Int>()
            let acknowledged = Recorder<Int>()
            let released = Recorder<Int>()

            func push(_ job: Int) {
                let waiter = state.withLock { state in
                    guard let waiter = state.waiter else {
                        state.pending.append(job)
                        return nil as CheckedContinuation<Int, any Error>?
                    }
                    state.waiter = nil
                    return waiter.continuation
                }
                if let waiter {
                    claimed.append(job)
                    waiter.resume(returning: job)
                }
            }

            func claim() async throws -> Int {
                let id = state.withLock { state in
                    state.nextWaiter += 1
                    return state.nextWaiter
                }
                return try await withTaskCancellationHandler {
                    try await withCheckedThrowingContinuation { continuation in
                        // A pending job is claimed even by a cancelled claim (its caller keeps it).
                        let job = state.withLock { state -> Int?? in
                            if !state.pending.isEmpty { return state.pending.removeFirst() }
                            if Task.isCancelled { return .some(nil) }
                            state.waiter = (id, continuation)
                            return nil
                        }
                        switch job {
                        case nil: break  // Waits for a push or its cancellation.
                        case nil?: continuation.resume(throwing: CancellationError())
                        case let job??:
                            claimed.append(job)
                            continuation.resume(returning: job)
                        }
                    }
                } onCancel: {
                    let waiter = state.withLock { state in
                        guard state.waiter?.id == id else { return nil as CheckedContinuation<Int, any Error>? }
                        defer { state.waiter = nil }
                        return state.waiter?.continuation
                    }
                    waiter?.resume(throwing: CancellationError())
                }
            }

            /// Whether the producer is waiting in `claim()`.
            var isWaiting: Bool { state.withLock { $0.waiter != nil } }
        }

        /// The article's producer: claims jobs until the group's graceful shutdown and adds
        /// a unit for each; the unit's end hook acknowledges a completed job and gives any
        /// other back.
        private struct JobProducer: Service {
            let source: JobSource
            let jobs: BackgroundQueue
            let perform: @Sendable (Int) async throws -> Void

            func run() async throws {
                while !Task.isShuttingDownGracefully {
                    let job: Int
                    do {
                        job = try await cancelWhenGracefulShutdown { try await source.claim() }
                    } catch is CancellationError {
                        return
                    }
                    let options = AsyncTask.Options(
                        name: "job-\(job)",
                        onEnd: { [source] outcome in
                            if outcome.kind == .finished {
                                source.acknowledged.append(job)
                            } else {
                                source.released.append(job)
                            }
                        })
                    jobs.add(options) { [perform] in try await perform(job) }
                }
            }
        }

        private func producerGroup(
            _ queue: BackgroundQueue, _ producer: JobProducer, reports: Recorder<ShutdownReport>, grace: Duration? = nil
        ) -> ServiceGroup {
            var configuration = ServiceGroupConfiguration(
                services: [
                    .init(service: BackgroundQueueService(queue) { reports.append($0) }),
                    .init(service: producer, successTerminationBehavior: .gracefullyShutdownGroup),
                ],
                logger: Logger(label: "backgroundable-tests"))
            configuration.maximumGracefulShutdownDuration = grace
            return ServiceGroup(configuration: configuration)
        }

        @Test func atGracefulShutdownTheProducerStopsClaimingAndTheQueueDrainsWhatItAdded() async throws {
            let queue = BackgroundQueue(
                name: "jobs", maxConcurrentTasks: 1, backgroundTaskProvider: NoopBackgroundTaskProvider())
            let source = JobSource()
            let release = Signal()
            let producer = JobProducer(source: source, jobs: queue) { job in
                if job == 1 { await release.wait() }
            }
            let reports = Recorder<ShutdownReport>()
            let group = producerGroup(queue, producer, reports: reports)
            for job in 1...3 { source.push(job) }
            let running = Task { try await group.run() }
            await waitUntil { source.claimed.count == 3 && source.isWaiting }
            await group.triggerGracefulShutdown()
            await waitUntil { !queue.isAcceptingWork }
            source.push(4)
            release.signal()
            try await running.value
            #expect(source.claimed.all == [1, 2, 3], "nothing claimed once the producer stopped")
            #expect(source.acknowledged.all == [1, 2, 3] && source.released.all.isEmpty)
            #expect(reports.all.map(\.ending) == [.drained])
        }

        @Test func whenTheGroupCancelsClaimedWorkThatDidNotCompleteGoesBack() async throws {
            let queue = BackgroundQueue(
                name: "jobs", maxConcurrentTasks: 1, backgroundTaskProvider: NoopBackgroundTaskProvider())
            let source = JobSource()
            let started = Signal()
            let producer = JobProducer(source: source, jobs: queue) { job in
                started.signal()
                await suspendUntilCancelled()
            }
            let reports = Recorder<ShutdownReport>()
            let group = producerGroup(queue, producer, reports: reports, grace: .zero)
            for job in 1...3 { source.push(job) }
            let running = Task { try await group.run() }
            await started.wait()
            await waitUntil { source.claimed.count == 3 && source.isWaiting }
            await group.triggerGracefulShutdown()
            try await running.value
            // Every hook ran before the service returned: the claims are back, the one that
            // ran and the two that never started.
            #expect(source.released.all.sorted() == [1, 2, 3] && source.acknowledged.all.isEmpty)
            #expect(
                reports.all.first?.unfinishedUnits == [
                    .init(queue: "jobs", name: "job-1", state: .executing),
                    .init(queue: "jobs", name: "job-2", state: .waiting),
                    .init(queue: "jobs", name: "job-3", state: .waiting),
                ])
        }

        // MARK: A real child process

        @Test(.timeLimit(.minutes(1)))
        func sigtermWhileBusyDrainsUnderTheGroup() async throws {
            let result = try await runShutdownFixture(
                "service-lifecycle-fixture", units: 4, unitMilliseconds: 500, graceMilliseconds: 30_000)
            #expect(result.status == 0, "stderr: \(result.standardError)")
            #expect(result.files == Array(repeating: "complete", count: 4))
            #expect(result.manifest == "drained")
            #expect(result.events.hasSuffix("idle"), "events: \(result.events)")
        }

        @Test(.timeLimit(.minutes(1)))
        func theGroupsGracePeriodRunningOutExpiresTheWork() async throws {
            let result = try await runShutdownFixture(
                "service-lifecycle-fixture", units: 3, unitMilliseconds: 60_000, graceMilliseconds: 100)
            #expect(result.status == 75, "stderr: \(result.standardError)")
            for index in 0..<3 {
                #expect(result.standardError.contains("\"unit-\(index)\""), "stderr: \(result.standardError)")
            }
            #expect(result.files == Array(repeating: "saved", count: 3))
            #expect(result.events.contains("backgroundTimeExpiring"), "events: \(result.events)")
        }

        @Test(.timeLimit(.minutes(1)))
        func sigtermWhileIdleEndsTheGroup() async throws {
            let result = try await runShutdownFixture(
                "service-lifecycle-fixture", units: 0, unitMilliseconds: 0, graceMilliseconds: 30_000)
            #expect(result.status == 0, "stderr: \(result.standardError)")
            #expect(result.manifest == "drained")
        }

        @Test(.timeLimit(.minutes(1)))
        func sigintCancelsTheGroupAndTheWorkExpires() async throws {
            let result = try await runShutdownFixture(
                "service-lifecycle-fixture", units: 2, unitMilliseconds: 60_000, graceMilliseconds: 30_000,
                signals: [SIGINT])
            #expect(result.status == 75, "stderr: \(result.standardError)")
            #expect(result.files == Array(repeating: "saved", count: 2))
        }

        @Test(.timeLimit(.minutes(1)))
        func twoSigtermsInARowDrainOnce() async throws {
            let result = try await runShutdownFixture(
                "service-lifecycle-fixture", units: 2, unitMilliseconds: 300, graceMilliseconds: 30_000,
                signals: [SIGTERM, SIGTERM])
            #expect(result.status == 0, "stderr: \(result.standardError)")
            #expect(result.files == Array(repeating: "complete", count: 2))
        }
    }
#endif
