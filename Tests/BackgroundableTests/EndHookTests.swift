import BackgroundableTesting
import Foundation
import Synchronization
import Testing

@testable import Backgroundable

/// `AsyncTask.Options.onEnd`: runs exactly once per unit, with its final outcome,
/// whether or not the unit ever started, before its queue forgets it.
@Suite("End hook")
struct EndHookTests {
    /// The outcomes one or more units' hooks received, in the order they ran.
    private final class Ends: Sendable {
        let outcomes = Recorder<AsyncTask.Outcome.Kind>()

        /// Options whose hook records here; no timeout unless `timeout` is given (a loaded
        /// machine must not time out a unit the test expects to finish).
        func options(
            name: String? = nil, timeout: Duration? = nil, uniquenessPolicy: UniquenessPolicy = .ignore
        ) -> AsyncTask.Options {
            var options = AsyncTask.Options(
                name: name, uniquenessPolicy: uniquenessPolicy, onEnd: { [outcomes] in outcomes.append($0.kind) })
            options.timeout = timeout
            return options
        }

        var all: [AsyncTask.Outcome.Kind] { outcomes.all }
    }

    @Test func aFinishedUnitRunsItOnceBeforeItsAwaitingCallersResume() async {
        let (queue, _) = makeQueue()
        let ends = Ends()
        let unit = queue.add(ends.options()) { $0.finish() }
        #expect(await unit.outcome.kind == .finished)
        #expect(ends.all == [.finished])
        unit.finish()
        unit.cancel()
        await queue.waitUntilIdle()
        #expect(ends.all == [.finished])
    }

    @Test func aFailedBodyRunsItWithTheError() async {
        let (queue, _) = makeQueue()
        let seen = Recorder<String>()
        let handle = queue.add(.init(onEnd: { seen.append("\($0)") })) { () async throws -> Int in
            throw TestError(code: 7)
        }
        await #expect(throws: TestError(code: 7)) { try await handle.value }
        #expect(seen.all == ["failed(TestError(code: 7))"])
    }

    @Test func itSeesTheOutcomeSetAndTheQueueStillHoldingTheUnit() async {
        let (queue, _) = makeQueue()
        let seen = Recorder<String>()
        let unit = Lock<AsyncTask?>(nil)
        var options = AsyncTask.Options(onEnd: { outcome in
            let current = unit.withLock { $0 }?.currentOutcome
            seen.append("\(outcome) \(current.map { "\($0)" } ?? "nil") busy: \(queue.isBusy)")
        })
        options.timeout = nil
        queue.suspend()
        unit.withLock { $0 = queue.add(options) { $0.finish() } }
        queue.resume()
        await queue.waitUntilIdle()
        #expect(seen.all == ["finished finished busy: true"])
        unit.withLock { $0 = nil }
    }

    @Test func aUnitCancelledBeforeItStartedRunsIt() async {
        let (queue, _) = makeQueue()
        let ends = Ends()
        let ran = Recorder<Int>()
        queue.suspend()
        let unit = queue.add(ends.options()) { task in
            ran.append(1)
            task.finish()
        }
        unit.cancel()
        #expect(ends.all == [.cancelled])
        queue.resume()
        await queue.waitUntilIdle()
        #expect(ends.all == [.cancelled] && ran.all.isEmpty)
    }

    @Test func aRunWhoseCallerWasCancelledBeforeItsAddRunsIt() async {
        let (queue, _) = makeQueue()
        let ends = Ends()
        let ran = Recorder<Int>()
        let caller = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await queue.run(ends.options()) {
                ran.append(1)
                return 1
            }
        }
        await #expect(throws: CancellationError.self) { try await caller.value }
        await queue.waitUntilIdle()
        #expect(ends.all == [.cancelled] && ran.all.isEmpty)
    }

    @Test func aUnitThatExpiresAsItWouldStartRunsIt() async {
        let (queue, _) = makeQueue()
        let ends = Ends()
        let ran = Recorder<Int>()
        let unit = queue.add(ends.options(timeout: .zero)) { task in
            ran.append(1)
            task.finish()
        }
        #expect(await unit.outcome.kind == .timedOut)
        #expect(ends.all == [.timedOut] && ran.all.isEmpty)
    }

    @Test func aUnitTimedOutWhileItRunsRunsIt() async {
        let clock = TestClock()
        let (queue, _) = makeQueue(clock: clock)
        let ends = Ends()
        let started = Signal()
        let unit = queue.add(ends.options(timeout: .seconds(5))) { _ in started.signal() }
        await started.wait()
        clock.advance(by: .seconds(5))
        #expect(await unit.outcome.kind == .timedOut)
        #expect(ends.all == [.timedOut])
    }

    @Test func aDroppedNewcomerRunsIt() async {
        let (queue, _) = makeQueue()
        let ends = Ends()
        queue.suspend()
        let live = queue.add(.init(name: "sync", timeout: nil)) { $0.finish() }
        let newcomer = queue.add(ends.options(name: "sync", uniquenessPolicy: .drop)) { $0.finish() }
        #expect(await newcomer.outcome.kind == .dropped)
        #expect(ends.all == [.dropped])
        queue.resume()
        #expect(await live.outcome.kind == .finished)
        #expect(ends.all == [.dropped])
    }

    @Test func aReplacedUnitRunsItBeforeItStarted() async {
        let (queue, _) = makeQueue()
        let ends = Ends()
        queue.suspend()
        let replaced = queue.add(ends.options(name: "sync")) { $0.finish() }
        let newcomer = queue.add(.init(name: "sync", timeout: nil, uniquenessPolicy: .replace)) { $0.finish() }
        #expect(await replaced.outcome.kind == .replaced)
        #expect(ends.all == [.replaced])
        queue.resume()
        #expect(await newcomer.outcome.kind == .finished)
        #expect(ends.all == [.replaced])
    }

    @Test func aJoiningUnitRunsItWithTheSharedOutcome() async throws {
        let (queue, _) = makeQueue()
        let ends = Ends()
        let release = Signal()
        let primary = queue.add(.init(name: "refresh", uniquenessPolicy: .join)) { () async -> Int in
            await release.wait()
            return 1
        }
        let joining = queue.add(ends.options(name: "refresh", uniquenessPolicy: .join)) { 2 }
        release.signal()
        #expect(try await joining.value == 1)
        #expect(try await primary.value == 1)
        #expect(ends.all == [.finished])
    }

    @Test func aUnitCancelledBetweenAttemptsRunsItOnce() async {
        let (queue, _) = makeQueue()
        let ends = Ends()
        var options = ends.options()
        options.retry = .fixed(maxAttempts: 3, delay: .seconds(3600))
        let failed = Signal()
        let handle = queue.add(options) { () async throws -> Int in
            failed.signal()
            throw TestError(code: 1)
        }
        await failed.wait()
        await waitUntil { handle.task.attempts == 1 && !handle.task.isExecuting }
        handle.task.cancel()
        #expect(await handle.task.outcome.kind == .cancelled)
        #expect(ends.all == [.cancelled])
    }

    @Test func theQueuesDeinitCancellingItsWaitingUnitsRunsTheirHooks() async {
        let ends = Ends()
        var pending: [AsyncTask] = []
        do {
            let (queue, _) = makeQueue()
            queue.suspend()
            pending = (0..<3).map { _ in queue.add(ends.options()) { $0.finish() } }
        }
        for unit in pending { #expect(await unit.outcome.kind == .cancelled) }
        #expect(ends.all == [.cancelled, .cancelled, .cancelled])
    }

    @Test func aUnitItsCreatorDropsBeforeAddingItRunsItAsCancelled() {
        let ends = Ends()
        do {
            _ = AsyncTask(ends.options()) { $0.finish() }
            _ = AsyncTaskHandle(ends.options()) { 1 }
        }
        #expect(ends.all == [.cancelled, .cancelled])
        do {
            let unit = AsyncTask(ends.options()) { $0.finish() }
            unit.cancel()
            #expect(ends.all == [.cancelled, .cancelled, .cancelled])
        }
        #expect(ends.all == [.cancelled, .cancelled, .cancelled], "once, at the cancel, not again at its deinit")
    }

    @Test func everyUnitRunsItExactlyOnceWhenEndsRace() async {
        let (queue, _) = makeQueue(maxConcurrentTasks: 4)
        let ends = Ends()
        let units = (0..<200).map { index in
            queue.add(ends.options(name: "unit-\(index % 7)")) { task in
                if index.isMultiple(of: 3) { task.finish() }
            }
        }
        await withTaskGroup(of: Void.self) { group in
            for unit in units {
                group.addTask { unit.cancel() }
                group.addTask { unit.finish() }
            }
        }
        await queue.waitUntilIdle()
        #expect(ends.all.count == units.count)
        for unit in units { _ = await unit.outcome }
        #expect(ends.all.count == units.count)
    }

    @Test func theBridgeRunsItForAnOperationsUnit() async {
        let (queue, _) = makeQueue()
        let ends = Ends()
        let done = queue.add(BlockOperation {}, options: ends.options())
        #expect(await done.outcome.kind == .finished)
        queue.suspend()
        let cancelled = queue.add(BlockOperation {}, options: ends.options())
        cancelled.cancel()
        queue.resume()
        await queue.waitUntilIdle()
        #expect(ends.all == [.finished, .cancelled])
    }

    /// A caller that reads the outcome once it is set, while the hook still runs on the
    /// thread that ended the unit, hears it only after the hook returned: what
    /// "before the callers awaiting its outcome resume" promises every caller, not only
    /// those that were waiting already.
    @Test func aCallerArrivingWhileTheHookRunsResumesAfterIt() async {
        let log = Recorder<String>()
        let entered = Signal()
        let release = DispatchSemaphore(value: 0)
        let unit = AsyncTask(
            .init(
                timeout: nil,
                onEnd: { _ in
                    entered.signal()
                    // Bounded: without the rule, nobody releases it (the test then fails).
                    _ = release.wait(timeout: .now() + 5)
                    log.append("hook")
                })
        ) { _ in }
        DispatchQueue.global().async { unit.cancel() }
        await entered.wait()
        #expect(unit.currentOutcome?.kind == .cancelled, "the outcome is set before the hook runs")
        unit.whenEnded { _ in log.append("callback") }
        // Registered, this caller lets the hook go on.
        let outcome = await unit.outcome(awaitingBefore: { release.signal() })
        log.append("awaiter")
        #expect(outcome.kind == .cancelled)
        #expect(log.all == ["hook", "callback", "awaiter"])
    }

    /// The same through a queue: a caller whose await returns finds the queue no longer
    /// holding the unit, so a newcomer of its name is not dropped.
    @Test func aCallerArrivingWhileTheHookRunsFindsTheQueueForgotTheUnit() async {
        let (queue, _) = makeQueue()
        let entered = Signal()
        let release = DispatchSemaphore(value: 0)
        var options = AsyncTask.Options(
            name: "sync", uniquenessPolicy: .drop,
            onEnd: { _ in
                entered.signal()
                _ = release.wait(timeout: .now() + 5)
            })
        options.timeout = nil
        let unit = queue.add(options) { _ in }
        DispatchQueue.global().async { unit.cancel() }
        await entered.wait()
        _ = await unit.outcome(awaitingBefore: { release.signal() })
        let newcomer = queue.add(.init(name: "sync", timeout: nil, uniquenessPolicy: .drop)) { $0.finish() }
        #expect(await newcomer.outcome.kind == .finished)
    }

    @Test func unusedItCostsNoBox() {
        #expect(AsyncTask(.init(name: "plain", timeout: nil)) { $0.finish() }.extras == nil)
        #expect(AsyncTask(.init(onEnd: { _ in })) { $0.finish() }.extras?.onEnd != nil)
    }
}
