import BackgroundableTesting
import Foundation
import Synchronization
import Testing

@testable import Backgroundable

/// Shutdown as cancellation: in-process (requests made by calling
/// `requestShutdown()`), and for real in a child process (`graceful-shutdown-fixture`)
/// sent signals.
@Suite("Graceful shutdown")
struct GracefulShutdownTests {
    /// A unit that waits for `release`, then finishes.
    private func gatedUnit(on queue: BackgroundQueue, named name: String, release: Signal) async -> AsyncTask {
        let started = Signal()
        let unit = queue.add(.init(name: name, timeout: nil)) { task in
            started.signal()
            Task {
                await release.wait()
                task.finish()
            }
        }
        await started.wait()
        return unit
    }

    @Test func withoutARequestDrainReturnsOnceTheQueuesAreIdle() async {
        let shutdown = GracefulShutdown(gracePeriod: .seconds(30))
        let queue = BackgroundQueue(name: "work", backgroundTaskProvider: shutdown)
        let unit = queue.add(.init(timeout: nil)) { 1 }
        let report = await shutdown.drain(queue)
        #expect(report.ending == .idle && report.isComplete && report.exitStatus == 0)
        #expect(unit.task.currentOutcome?.kind == .finished)
        #expect(queue.isAcceptingWork, "no request: the queue still takes work")
        #expect(shutdown.activeCount == 0)
    }

    @Test func aRequestStopsTheQueuesTakingWorkAndTheyDrainWithinTheGracePeriod() async {
        let shutdown = GracefulShutdown(gracePeriod: .seconds(600))
        let queue = BackgroundQueue(name: "uploads", backgroundTaskProvider: shutdown)
        let release = Signal()
        let unit = await gatedUnit(on: queue, named: "upload", release: release)
        let drained = Task { await shutdown.drain(queue) }
        shutdown.requestShutdown()
        #expect(shutdown.isShutdownRequested && shutdown.request == .requested)
        await waitUntil { !queue.isAcceptingWork }
        let late = queue.add(.init(name: "late")) { 1 }
        #expect(await late.task.outcome.kind == .cancelled, "a late add ends cancelled, never silently lost")
        await #expect(throws: CancellationError.self) { try await late.value }
        release.signal()
        let report = await drained.value
        #expect(report.ending == .drained && report.exitStatus == 0, "\(report)")
        #expect(unit.currentOutcome?.kind == .finished)
    }

    @Test func whenTheGracePeriodRunsOutWorkIsCancelledAndSavesItsStateBeforeDrainReturns() async {
        let shutdown = GracefulShutdown(gracePeriod: .zero, cancellationPeriod: .seconds(600))
        let queue = BackgroundQueue(name: "exports", backgroundTaskProvider: shutdown)
        let events = queue.events
        let saved = Recorder<String>()
        let started = Signal()
        let unit = queue.add(.init(name: "export")) {
            started.signal()
            await suspendUntilCancelled()
            await Task.yield()  // saving takes a suspension or two
            saved.append("export")
        }
        await started.wait()
        shutdown.requestShutdown()
        let report = await shutdown.drain(queue)
        #expect(report.ending == .expired(.gracePeriodEnded), "\(report)")
        #expect(report.exitStatus == 75)
        #expect(report.unfinishedUnits == [.init(queue: "exports", name: "export", state: .executing)])
        #expect(report.description.contains("grace period ran out"))
        #expect(saved.all == ["export"], "the cancelled body returned within the cancellation period")
        #expect(unit.task.currentOutcome?.kind == .cancelled)
        var seen: [String] = []
        for await event in events {
            switch event.kind {
            case .backgroundTimeExpiring: seen.append("expiring")
            case .idle: seen.append("idle")
            default: continue
            }
            if seen.last == "idle" { break }
        }
        #expect(seen == ["expiring", "idle"], "every event was delivered before drain returned")
    }

    @Test func aSecondRequestCutsTheGracePeriodShort() async {
        let shutdown = GracefulShutdown(gracePeriod: .seconds(3_600), cancellationPeriod: .seconds(30))
        let queue = BackgroundQueue(name: "sync", backgroundTaskProvider: shutdown)
        let started = Signal()
        _ = queue.add(.init(name: "stuck")) {
            started.signal()
            await suspendUntilCancelled()
        }
        await started.wait()
        let drained = Task { await shutdown.drain(queue) }
        shutdown.requestShutdown()
        shutdown.requestShutdown()
        let report = await drained.value
        #expect(report.ending == .expired(.secondRequest(.requested)), "\(report)")
        #expect(report.description.contains("second request"))
    }

    /// Queues that are idle drained, even when the grace period has already ended or a
    /// second request already came when the drain begins (both waits then return at
    /// once, and which one first is a race): nothing is expired.
    @Test(arguments: [false, true])
    func idleQueuesDrainWhenTheGracePeriodEndedBeforeTheDrain(secondRequest: Bool) async {
        for _ in 0..<50 {
            let shutdown = GracefulShutdown(gracePeriod: secondRequest ? .seconds(3_600) : .zero)
            let queue = BackgroundQueue(name: "idle", backgroundTaskProvider: shutdown)
            shutdown.requestShutdown()
            if secondRequest { shutdown.requestShutdown() }
            let report = await shutdown.drain(queue)
            #expect(report.ending == .drained && report.isComplete, "\(report)")
        }
    }

    @Test func theCancellationPeriodBoundsTheWaitForWorkThatIgnoresCancellation() async {
        let shutdown = GracefulShutdown(gracePeriod: .zero, cancellationPeriod: .milliseconds(50))
        let queue = BackgroundQueue(name: "stubborn", backgroundTaskProvider: shutdown)
        let release = Signal()
        let started = Signal()
        let unit = queue.add(.init(name: "stubborn")) {
            started.signal()
            await release.wait()  // ignores cancellation
        }
        await started.wait()
        shutdown.requestShutdown()
        let report = await shutdown.drain(queue)
        #expect(report.ending == .expired(.gracePeriodEnded))
        #expect(unit.task.currentOutcome?.kind == .cancelled, "the unit ended; its body still runs")
        release.signal()
    }

    /// A unit cancelled (or timed out) while its body runs leaves the queue at once, and
    /// the queue goes idle while that body, which ignores its cancellation, still runs:
    /// `drain` waits for the body before it reports the queue drained.
    @Test(.timeLimit(.minutes(1))) func drainWaitsForTheBodyOfAUnitThatEndedWhileItRan() async {
        let shutdown = GracefulShutdown(gracePeriod: .seconds(600))
        let queue = BackgroundQueue(name: "exports", backgroundTaskProvider: shutdown)
        let started = Signal()
        let release = Signal()
        let returned = Signal()
        let unit = queue.add(.init(timeout: nil)) {
            started.signal()
            await release.wait()  // ignores cancellation
            returned.signal()
        }
        await started.wait()
        unit.cancel()
        await queue.waitUntilIdle()
        shutdown.requestShutdown()
        let drainReturned = Signal()
        let drained = Task {
            let report = await shutdown.drain(queue)
            drainReturned.signal()
            return report
        }
        let bodies = queue.core.lingeringBodies().compactMap { $0 as? ReplacementGate }
        #expect(bodies.count == 1, "the queue knows of the body, although its unit has no name")
        await waitUntil { drainReturned.isSignalled || bodies.contains(where: \.isAwaited) }
        #expect(!drainReturned.isSignalled, "drain returned while the body still ran")
        release.signal()
        let report = await drained.value
        #expect(returned.isSignalled)
        #expect(report.ending == .drained && report.isComplete, "\(report)")
    }

    /// Such a body still running when the grace period ends gets the cancellation
    /// period, as cancelled work does, and no more: the drain expires.
    @Test(.timeLimit(.minutes(1))) func aBodyOfAnEndedUnitRunningPastTheGracePeriodGetsTheCancellationPeriod() async {
        let shutdown = GracefulShutdown(gracePeriod: .zero, cancellationPeriod: .milliseconds(50))
        let queue = BackgroundQueue(name: "exports", backgroundTaskProvider: shutdown)
        let started = Signal()
        let release = Signal()
        let unit = queue.add(.init(timeout: nil)) {
            started.signal()
            await release.wait()  // ignores cancellation
        }
        await started.wait()
        unit.cancel()
        await queue.waitUntilIdle()
        shutdown.requestShutdown()
        let report = await shutdown.drain(queue)
        #expect(report.ending == .expired(.gracePeriodEnded) && report.exitStatus != 0, "\(report)")
        #expect(report.unfinishedUnits.isEmpty, "its unit has ended: nothing to give back")
        release.signal()
    }

    /// With ``BackgroundQueue/ExpirationPolicy/cancelPending`` an executing unit runs on
    /// through the expiry; when it finishes within the cancellation period, the report
    /// does not tell the program to hand it back. The cancelled waiting unit is listed.
    @Test(.timeLimit(.minutes(1))) func aUnitThatFinishesWithinTheCancellationPeriodIsNotReportedUnfinished() async {
        let shutdown = GracefulShutdown(gracePeriod: .zero, cancellationPeriod: .seconds(600))
        let queue = BackgroundQueue(
            name: "exports", maxConcurrentTasks: 1, backgroundTaskProvider: shutdown, expirationPolicy: .cancelPending)
        let release = Signal()
        let running = await gatedUnit(on: queue, named: "running", release: release)
        let waiting = queue.add(.init(name: "waiting", timeout: nil)) { 1 }
        shutdown.requestShutdown()
        let drained = Task { await shutdown.drain(queue) }
        #expect(await waiting.task.outcome.kind == .cancelled, "the expiry cancels the waiting unit")
        release.signal()
        let report = await drained.value
        #expect(running.currentOutcome?.kind == .finished)
        #expect(report.ending == .expired(.gracePeriodEnded), "\(report)")
        #expect(report.unfinishedUnits.map(\.name) == ["waiting"], "\(report)")
    }

    @Test func everyHeldAssertionExpiresNotOnlyTheDrainedQueues() async {
        let shutdown = GracefulShutdown(gracePeriod: .zero, cancellationPeriod: .seconds(30))
        let expired = Signal()
        let assertion = BackgroundTimeAssertion.begin(named: "cli-work", provider: shutdown) { expired.signal() }
        shutdown.requestShutdown()
        let queue = BackgroundQueue(name: "busy", backgroundTaskProvider: shutdown)
        let started = Signal()
        _ = queue.add {
            started.signal()
            await suspendUntilCancelled()
        }
        await started.wait()
        let report = await shutdown.drain(queue)
        await expired.wait()
        #expect(!assertion.isHeld)
        #expect(report.ending == .expired(.gracePeriodEnded))
        #expect(shutdown.activeCount == 0)
    }

    /// Two queues with a unit in each state, listed before the expiration cancels them.
    private func expireUnitsInEveryState() async -> ShutdownReport {
        let shutdown = GracefulShutdown(gracePeriod: .zero, cancellationPeriod: .seconds(30))
        let jobs = BackgroundQueue(name: "jobs", maxConcurrentTasks: 1, backgroundTaskProvider: shutdown)
        let mail = BackgroundQueue(name: "mail", backgroundTaskProvider: shutdown)
        let flaky = jobs.add(.init(name: "flaky", retry: .fixed(maxAttempts: 2, delay: .seconds(3600)))) {
            () async throws -> Int in throw TestError(code: 1)
        }
        await waitUntil { flaky.task.attempts == 1 && !flaky.task.isExecuting }
        let started = Recorder<String>()
        for (queue, name) in [(jobs, "running"), (mail, "send")] {
            _ = queue.add(.init(name: name)) {
                started.append(name)
                await suspendUntilCancelled()
            }
        }
        _ = jobs.add(.init(name: "next")) { 1 }
        _ = jobs.add { 2 }
        _ = jobs.add(.init(name: "later", notBefore: .after(.seconds(3600)))) { 3 }
        await waitUntil { started.count == 2 }
        shutdown.requestShutdown()
        return await shutdown.drain(jobs, mail)
    }

    @Test func theReportListsEachUnfinishedUnitWithItsQueueAndState() async {
        let report = await expireUnitsInEveryState()
        #expect(
            report.unfinishedUnits == [
                .init(queue: "jobs", name: "flaky", state: .retrying),
                .init(queue: "jobs", name: "running", state: .executing),
                .init(queue: "jobs", name: "next", state: .waiting),
                .init(queue: "jobs", name: nil, state: .waiting),
                .init(queue: "jobs", name: "later", state: .delayed),
                .init(queue: "mail", name: "send", state: .executing),
            ])
        #expect(
            report.description
                == "Backgroundable: requestShutdown(): the grace period ran out; unfinished: queue \"jobs\": [\"flaky\" (retrying), "
                + "\"running\" (executing), \"next\" (waiting), <unnamed> (waiting), \"later\" (delayed)], "
                + "queue \"mail\": [\"send\" (executing)]")
        #expect(report.unfinishedUnits.last?.description == "queue \"mail\": \"send\" (executing)")
    }

    @available(*, deprecated, message: "exercises the deprecated text list")
    @Test func theDeprecatedTextListStillNamesTheUnitsByQueue() async {
        let report = await expireUnitsInEveryState()
        #expect(
            report.unfinished == [
                "queue \"jobs\": [\"flaky\", \"running\", \"next\", <unnamed>, \"later\"]",
                "queue \"mail\": [\"send\"]",
            ])
    }

    @Test func aQueueWithAnotherProviderIsExpiredToo() async {
        let shutdown = GracefulShutdown(gracePeriod: .zero, cancellationPeriod: .seconds(30))
        let (queue, provider) = makeQueue()
        let started = Signal()
        let unit = queue.add(.init(name: "elsewhere")) {
            started.signal()
            await suspendUntilCancelled()
        }
        await started.wait()
        shutdown.requestShutdown()
        let report = await shutdown.drain(queue)
        #expect(report.unfinishedUnits == [.init(queue: "test", name: "elsewhere", state: .executing)])
        #expect(unit.task.currentOutcome?.kind == .cancelled)
        #expect(provider.activeIdentifiers.isEmpty)
    }

    @Test func shutdownHandlersAndWaitersHearTheRequestOnce() async {
        let shutdown = GracefulShutdown(gracePeriod: .seconds(30))
        let heard = Recorder<GracefulShutdown.Request>()
        let waiter = Task { await shutdown.waitForShutdownRequest() }
        let result = await shutdown.withShutdownHandler(
            {
                shutdown.requestShutdown()
                shutdown.requestShutdown()
                return 7
            }, onShutdown: { heard.append($0) })
        await waiter.value
        #expect(result == 7 && heard.all == [.requested])
        // After the request, a new handler is called at once.
        await shutdown.withShutdownHandler({}, onShutdown: { heard.append($0) })
        #expect(heard.all == [.requested, .requested])
    }

    @Test(.timeLimit(.minutes(1))) func waitingForARequestEndsWhenTheWaitingTaskIsCancelled() async {
        let shutdown = GracefulShutdown(gracePeriod: .seconds(30))
        let waiter = Task { await shutdown.waitForShutdownRequest() }
        waiter.cancel()
        await waiter.value
        #expect(!shutdown.isShutdownRequested)
    }

    /// A drain whose task is cancelled returns at once with what it knows, request or
    /// not: the units still live are listed, the report is not complete, and nothing
    /// traps (both of the drain's waits return early on cancellation, in either order).
    @Test(.timeLimit(.minutes(1))) func aCancelledDrainListsTheLiveUnitsWithOrWithoutARequest() async {
        let shutdown = GracefulShutdown(gracePeriod: .seconds(600))
        let queue = BackgroundQueue(name: "work", backgroundTaskProvider: shutdown)
        let release = Signal()
        _ = await gatedUnit(on: queue, named: "long", release: release)
        for requested in [false, true] {
            if requested { shutdown.requestShutdown() }
            for _ in 0..<20 {
                let drain = Task {
                    withUnsafeCurrentTask { $0?.cancel() }
                    return await shutdown.drain(queue)
                }
                let report = await drain.value
                #expect(report.ending == (requested ? .drained : .idle))
                #expect(report.unfinishedUnits.map(\.name) == ["long"])
                #expect(!report.isComplete && report.exitStatus == 75)
                #expect(report.description.contains("the drain was cancelled; unfinished: queue \"work\": [\"long\""))
            }
        }
        release.signal()
        let report = await shutdown.drain(queue)
        #expect(report.ending == .drained && report.isComplete && report.unfinishedUnits.isEmpty)
    }

    // `GracefulShutdown.install` making the coordinator the default provider is checked
    // in the child process (the fixture exits with status 65 otherwise): setting the
    // process-wide default here would race with tests that read the platform default.

    // MARK: A real child process

    @Test(.timeLimit(.minutes(1)))
    func sigtermWhileBusyDrainsAndMainChoosesTheExitStatus() async throws {
        let result = try await runShutdownFixture(
            "graceful-shutdown-fixture", units: 4, unitMilliseconds: 500, graceMilliseconds: 30_000)
        #expect(result.status == 0, "stderr: \(result.standardError)")
        #expect(result.files == Array(repeating: "complete", count: 4), "nothing lost")
        #expect(result.manifest == "drained", "main's code after the drain ran")
        #expect(result.events.components(separatedBy: "\n").filter { $0.hasPrefix("ended") }.count == 4)
        #expect(result.events.hasSuffix("idle"), "every event delivered: \(result.events)")
        #expect(result.standardError.isEmpty)
    }

    @Test(.timeLimit(.minutes(1)))
    func whenTheGracePeriodRunsOutCancelledWorkSavesItsStateAndTheUnitsAreNamed() async throws {
        let result = try await runShutdownFixture(
            "graceful-shutdown-fixture", units: 3, unitMilliseconds: 60_000, graceMilliseconds: 100)
        #expect(result.status == 75)
        #expect(result.standardError.contains("grace period ran out"), "stderr: \(result.standardError)")
        for index in 0..<3 {
            #expect(result.standardError.contains("\"unit-\(index)\""), "stderr: \(result.standardError)")
        }
        #expect(result.files == Array(repeating: "saved", count: 3), "saved within the cancellation period")
        #expect(result.events.contains("backgroundTimeExpiring"), "events: \(result.events)")
        #expect(result.events.hasSuffix("idle"), "events: \(result.events)")
        #expect(result.manifest == "expired(gracePeriodEnded)")
    }

    @Test(.timeLimit(.minutes(1)))
    func sigtermWhileIdleReturnsToMainAtOnce() async throws {
        let result = try await runShutdownFixture(
            "graceful-shutdown-fixture", units: 0, unitMilliseconds: 0, graceMilliseconds: 30_000)
        #expect(result.status == 0)
        #expect(result.manifest == "drained")
        #expect(result.standardError.isEmpty)
    }

    @Test(.timeLimit(.minutes(1)))
    func twoSignalsInARowCutTheGracePeriodShort() async throws {
        let result = try await runShutdownFixture(
            "graceful-shutdown-fixture",
            units: 2, unitMilliseconds: 60_000, graceMilliseconds: 30_000, signals: [SIGTERM, SIGTERM])
        #expect(result.status == 75)
        #expect(result.standardError.contains("second request (SIGTERM)"), "stderr: \(result.standardError)")
        #expect(result.files == Array(repeating: "saved", count: 2))
    }

    @Test(.timeLimit(.minutes(1)))
    func sigintDrainsLikeSigterm() async throws {
        let result = try await runShutdownFixture(
            "graceful-shutdown-fixture",
            units: 2, unitMilliseconds: 300, graceMilliseconds: 30_000, signals: [SIGINT])
        #expect(result.status == 0, "stderr: \(result.standardError)")
        #expect(result.files == Array(repeating: "complete", count: 2))
        #expect(result.manifest == "drained")
    }
}
