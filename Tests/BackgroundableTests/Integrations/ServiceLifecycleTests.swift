#if ServiceLifecycle
    import Foundation
    import Logging
    import ServiceLifecycle
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
            let group = group(BackgroundQueueService(queue) { reports.append($0) }, grace: .zero)
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
            #expect(reports.all.first?.unfinished == ["queue \"jobs\": [\"stuck\"]"])
            #expect(saved.all == ["stuck"], "saved within the cancellation period")
            var sawExpiring = false
            for await event in events {
                if event.kind == .backgroundTimeExpiring { sawExpiring = true }
                if event.kind == .idle { break }
            }
            #expect(sawExpiring)
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
