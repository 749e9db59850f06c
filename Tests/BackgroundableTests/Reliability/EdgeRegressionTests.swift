import BackgroundableTesting
import Foundation
import Synchronization
import Testing

@testable import Backgroundable

/// The glue between the state machine and the world, driven through the public API:
/// replacement as one step, idle after every notification, escalation of `run` and of
/// units waiting in the inbox, cancelled callers and the events of units that never
/// reached the queue's decision. Each test failed before its fix.
@Suite("Sound at the edges", .timeLimit(.minutes(1)))
struct EdgeRegressionTests {
    /// A unit executing on `queue` until the returned signal releases it.
    private func liveUnit(
        _ options: AsyncTask.Options, on queue: BackgroundQueue
    ) async -> (AsyncTaskHandle<Void>, Signal) {
        let (entered, release) = (Signal(), Signal())
        let live = queue.add(options) {
            entered.signal()
            await release.wait()
        }
        await entered.wait()
        return (live, release)
    }

    // MARK: Replacement is one step

    @Test func aReplacementRunsOnlyOnceTheReplacedBodyReturned() async throws {
        let (queue, _) = makeQueue()
        let order = Recorder<String>()
        let (entered, release) = (Signal(), Signal())
        let replaced = queue.add(.init(name: "hot", uniquenessPolicy: .replace)) {
            order.append("replaced in")
            entered.signal()
            await release.wait()  // Ignores its cancellation, as blocking-style code does.
            order.append("replaced out")
        }
        await entered.wait()
        let replacement = queue.add(.init(name: "hot", uniquenessPolicy: .replace)) {
            order.append("replacement in")
            release.signal()
        }
        // Decided with the add, before it returned.
        #expect(replaced.task.currentOutcome?.kind == .replaced)
        // Hold the replaced body until the replacement is seen waiting for it (or, were
        // it not held back, until its body released it).
        while !release.isSignalled, !replacement.task.waitsForReplacedBodies { await Task.yield() }
        release.signal()
        try await replacement.value
        #expect(order.all == ["replaced in", "replaced out", "replacement in"])
        await #expect(throws: AsyncTaskError.replaced) { try await replaced.value }
    }

    /// The replacement of a running body is cancelled before it ran; a later unit of the
    /// name replaces nothing live, yet still waits for that body (before, it ran beside it).
    @Test(arguments: [UniquenessPolicy.replace, .drop, .join])
    func aLaterUnitOfTheNameWaitsForAReplacedBodyWhoseReplacementNeverRan(policy: UniquenessPolicy) async throws {
        let (queue, _) = makeQueue()
        let order = Recorder<String>()
        let (entered, release) = (Signal(), Signal())
        _ = queue.add(.init(name: "hot", uniquenessPolicy: .replace)) {
            order.append("replaced in")
            entered.signal()
            await release.wait()  // Ignores its cancellation.
            order.append("replaced out")
        }
        await entered.wait()
        let replacement = queue.add(.init(name: "hot", uniquenessPolicy: .replace)) { order.append("never") }
        replacement.cancel()
        let later = queue.add(.init(name: "hot", uniquenessPolicy: policy)) {
            order.append("later in")
            release.signal()
        }
        while !release.isSignalled, !later.task.waitsForReplacedBodies { await Task.yield() }
        release.signal()
        try await later.value
        #expect(order.all == ["replaced in", "replaced out", "later in"])
    }

    /// A name with the ``UniquenessPolicy/ignore`` policy is a label only: such a unit
    /// does not wait for replaced bodies of its name.
    @Test func anIgnoringUnitOfTheNameDoesNotWaitForReplacedBodies() async throws {
        let (queue, _) = makeQueue()
        let (entered, release) = (Signal(), Signal())
        let replaced = queue.add(.init(name: "hot", uniquenessPolicy: .replace)) {
            entered.signal()
            await release.wait()
        }
        await entered.wait()
        queue.add(.init(name: "hot", uniquenessPolicy: .replace)) {}.cancel()
        try await queue.add(.init(name: "hot")) { release.signal() }.value
        _ = await replaced.result
    }

    @Test func aReplaceStormFromManyThreadsNeverRunsTwoBodiesOfOneName() async {
        let seed = UInt64.random(in: 0...UInt64.max)
        print("EdgeRegressionTests replace storm seed \(seed)")
        let (queue, _) = makeQueue()
        var events = queue.events.makeAsyncIterator()
        let running = Gauge()
        let units = Recorder<AsyncTask>()
        let threads = 4
        let done = DispatchGroup()
        for thread in 0..<threads {
            done.enter()
            Thread {
                var rng = SplitMix64(seed: seed &+ UInt64(thread))
                for _ in 0..<300 {
                    let unit: AsyncTask
                    if rng.chance(2) {
                        unit = queue.add(.init(name: "hot", timeout: nil, uniquenessPolicy: .replace)) { unit in
                            running.enter()
                            for _ in 0..<50 { _ = unit.isCancelled }
                            running.leave()
                            unit.finish()
                        }
                    } else {
                        unit =
                            queue.add(.init(name: "hot", uniquenessPolicy: .replace)) {
                                running.enter()
                                await Task.yield()
                                running.leave()
                            }.task
                    }
                    units.append(unit)
                }
                done.leave()
            }.start()
        }
        await withCheckedContinuation { continuation in
            done.notify(queue: .global()) { continuation.resume() }
        }
        await queue.waitUntilIdle()
        #expect(running.maximum <= 1, "seed \(seed)")
        var ended: [ObjectIdentifier: AsyncTask.Outcome] = [:]
        _ = await events.collect(through: { event in
            if event.kind == .ended, let unit = event.unit { ended[ObjectIdentifier(unit)] = event.outcome }
            return ended.count >= units.count
        })
        for unit in units.all {
            #expect(ended[ObjectIdentifier(unit)]?.kind == unit.currentOutcome?.kind, "seed \(seed): \(unit)")
        }
    }

    // MARK: Idle means every idle notification delivered

    @Test func waitingForIdleReturnsAfterTheDelegateHeardIt() async {
        let (queue, provider) = makeQueue()
        let delegate = RecordingDelegate()
        queue.setDelegate(delegate)
        for period in 1...50 {
            await Task.detached { _ = queue.add(.init(timeout: nil)) { $0.finish() } }.value
            await queue.waitUntilIdle()
            #expect(delegate.calls.count == 2 * period, "period \(period): \(delegate.calls.all.suffix(2))")
            #expect(provider.log.count == 2 * period)
        }
        withExtendedLifetime(delegate) {}
    }

    @Test func waitingForAnOperationQueueToBeIdleReturnsAfterTheDelegateHeardIt() async {
        let queue = BackgroundOperationQueue(backgroundTaskProvider: RecordingBackgroundTaskProvider())
        let delegate = RecordingOperationQueueDelegate()
        queue.delegate = delegate
        for period in 1...50 {
            queue.addOperation(AsyncOperation(timeout: .infinity) { $0.finish() })
            await queue.waitUntilIdle()
            #expect(delegate.calls.count == 2 * period, "period \(period): \(delegate.calls.all.suffix(2))")
        }
        withExtendedLifetime(delegate) {}
    }

    // MARK: Escalation reaches `run` and the inbox

    @Test func runFromAHigherPriorityStartsFirstAndRunsAtThatPriority() async throws {
        let (queue, _) = makeQueue(maxConcurrentTasks: 1)
        var events = queue.events.makeAsyncIterator()
        queue.suspend()
        let order = Recorder<String>()
        let medium = queue.add(.init(timeout: nil, priority: .medium)) { unit in
            order.append("medium")
            unit.finish()
        }
        let caller = Task(priority: .high) {
            try await queue.run(.init(priority: .low)) { () async -> TaskPriority in
                order.append("run")
                return Task.currentPriority
            }
        }
        let escalation = await events.next(where: { $0.kind == .escalated })
        guard let priority = escalation?.priority else {
            Issue.record("no escalation")
            return
        }
        #expect(priority == .high)
        queue.resume()
        #expect(try await caller.value >= .high)
        _ = await medium.outcome
        #expect(order.all == ["run", "medium"])
    }

    @Test func runJoiningSharedWorkEscalatesIt() async throws {
        let (queue, _) = makeQueue(maxConcurrentTasks: 1)
        var events = queue.events.makeAsyncIterator()
        queue.suspend()
        let shared = queue.add(.init(name: "token", priority: .low, uniquenessPolicy: .join)) {
            Task.currentPriority
        }
        let caller = Task(priority: .high) {
            try await queue.run(.init(name: "token", priority: .low, uniquenessPolicy: .join)) {
                TaskPriority.background
            }
        }
        let escalation = await events.next(where: { $0.kind == .escalated })
        #expect(escalation?.unit === shared.task)
        queue.resume()
        #expect(try await caller.value >= .high)
    }

    /// A body that joins its own name (a recursive token refresh) would wait for itself
    /// until its timeout, if any: as for a body awaiting its own unit, the work is
    /// cancelled and both calls end cancelled, at once.
    @Test(.timeLimit(.minutes(1))) func aBodyJoiningItsOwnWorkEndsItCancelledInsteadOfWaitingForIt() async {
        let (queue, _) = makeQueue()
        let inner = Mutex<AsyncTask.Outcome?>(nil)
        let outer = queue.add(.init(name: "token", uniquenessPolicy: .join)) { () async throws -> Int in
            do {
                return try await queue.run(.init(name: "token", uniquenessPolicy: .join)) { 2 }
            } catch {
                inner.withLock { $0 = error is CancellationError ? .cancelled : .failed(error) }
                throw error
            }
        }
        #expect(await outer.task.outcome.kind == .cancelled)
        #expect(inner.withLock { $0?.kind } == .cancelled)
    }

    @Test func aUnitAwaitedWhileInTheInboxIsAdmittedAtTheAwaitingPriority() async {
        let queue = BackgroundQueue(maxConcurrentTasks: 1, backgroundTaskProvider: NoopBackgroundTaskProvider())
        queue.suspend()
        let order = Recorder<String>()
        let medium = queue.add(.init(timeout: nil, priority: .medium)) { unit in
            order.append("medium")
            unit.finish()
        }
        // As behind a scheduled drainer: the next add waits in the inbox.
        #expect(queue.core.inbox.mirror(drainerScheduled: true))
        let low = AsyncTask(.init(timeout: nil, priority: .low)) { unit in
            order.append("low at \(Task.currentPriority >= .high ? "high" : "own")")
            unit.finish()
        }
        queue.add(low)
        let awaiter = Task(priority: .high) { await low.outcome }
        while low.state.withLock({ $0.waiters.isEmpty }) { await Task.yield() }
        queue.resume()  // The next transition admits what the inbox holds.
        _ = await awaiter.value
        _ = await medium.outcome
        #expect(order.all == ["low at high", "medium"])
    }

    // MARK: A cancelled caller changes nothing

    @Test func aRunCancelledBeforeItsAddNeitherReplacesNorMakesTheQueueBusy() async throws {
        let (queue, provider) = makeQueue()
        let (live, release) = await liveUnit(.init(name: "x", uniquenessPolicy: .replace), on: queue)
        let caller = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await queue.run(.init(name: "x", uniquenessPolicy: .replace)) { 1 }
        }
        await #expect(throws: CancellationError.self) { try await caller.value }
        #expect(live.task.currentOutcome == nil, "the live unit was not replaced")
        release.signal()
        try await live.value
        await queue.waitUntilIdle()
        #expect(provider.log.count == 2)

        let idle = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await queue.run(.init(name: "x", uniquenessPolicy: .replace)) { 1 }
        }
        await #expect(throws: CancellationError.self) { try await idle.value }
        await queue.waitUntilIdle()
        #expect(provider.log.count == 2, "an idle queue stayed idle")
    }

    // MARK: Events tell the outcome a unit has

    @Test func aPreCancelledRunIsNeverReportedDroppedJoinedOrTimedOut() async {
        let (queue, _) = makeQueue()
        var log = queue.events.makeAsyncIterator()
        let (live, release) = await liveUnit(.init(name: "x"), on: queue)
        for options: AsyncTask.Options in [
            .init(name: "x", uniquenessPolicy: .drop), .init(name: "x", uniquenessPolicy: .join),
            .init(timeout: .zero),
        ] {
            let caller = Task {
                withUnsafeCurrentTask { $0?.cancel() }
                return try await queue.run(options) { 1 }
            }
            await #expect(throws: CancellationError.self) { try await caller.value }
        }
        release.signal()
        _ = await live.outcome
        await queue.waitUntilIdle()
        let marker = queue.add(.init(timeout: nil)) { $0.finish() }
        let events = await log.collect(through: { event in
            event.kind == .ended && event.unit === marker
        })
        let others = events.filter { event in
            guard let unit = event.unit else { return false }
            return unit !== live.task && unit !== marker
        }
        #expect(others.isEmpty, "\(others)")
    }

    @Test func aUnitCancelledBetweenItsClaimAndItsAdmissionIsReportedWithItsOwnOutcome() async {
        let (queue, _) = makeQueue()
        var log = queue.events.makeAsyncIterator()
        let (live, release) = await liveUnit(.init(name: "x"), on: queue)
        // Claimed by the queue, then cancelled by another thread, then admitted.
        func cancelledWhileBeingAdded(_ options: AsyncTask.Options) -> AsyncTask {
            let unit = AsyncTask(options) { $0.finish() }
            #expect(unit.state.withLock { $0.claim(by: queue.core) })
            unit.cancel()
            queue.core.add(claimed: unit)
            return unit
        }
        let dropped = cancelledWhileBeingAdded(.init(name: "x", uniquenessPolicy: .drop))
        let joined = cancelledWhileBeingAdded(.init(name: "x", uniquenessPolicy: .join))
        let replacing = cancelledWhileBeingAdded(.init(name: "x", uniquenessPolicy: .replace))
        let expired = cancelledWhileBeingAdded(.init(timeout: .zero))
        #expect(live.task.currentOutcome == nil, "a cancelled unit replaced nothing")
        release.signal()
        _ = await live.outcome
        let marker = queue.add(.init(timeout: nil)) { $0.finish() }
        let events = await log.collect(through: { event in
            event.kind == .ended && event.unit === marker
        })
        for unit in [dropped, joined, replacing, expired] {
            #expect(unit.currentOutcome?.kind == .cancelled)
            for event in events where event.unit === unit {
                switch event.kind {
                case .ended where event.outcome?.kind != .cancelled:
                    Issue.record("\(unit): \(event)")
                case .joined:
                    Issue.record("\(unit): \(event)")
                default:
                    break  // Only the expiring one was admitted: enqueued, then ended cancelled.
                }
            }
        }
    }
}

extension AsyncTask {
    /// Added with ``UniquenessPolicy/replace``, it waits for the bodies it replaced.
    fileprivate var waitsForReplacedBodies: Bool {
        state.withLock { state in
            switch state.phase {
            case .enqueued(.afterReplaced), .launching(.afterReplaced, _): true
            default: false
            }
        }
    }
}
