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

    @Test func aReplaceStormFromManyThreadsNeverRunsTwoBodiesOfOneName() async {
        let seed = UInt64.random(in: 0...UInt64.max)
        print("EdgeRegressionTests replace storm seed \(seed)")
        let (queue, _) = makeQueue()
        let events = EventLog(queue)
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
                        unit = queue.add(.init(name: "hot", uniquenessPolicy: .replace)) { unit in
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
        let ended = await events.endedOutcomes(count: units.count)
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
        let medium = queue.add(.init(priority: .medium)) { unit in
            order.append("medium")
            unit.finish()
        }
        let caller = Task(priority: .high) {
            try await queue.run(.init(priority: .low)) { () async -> TaskPriority in
                order.append("run")
                return Task.currentPriority
            }
        }
        while let event = await events.next() {
            if event.kind == .escalated {
                #expect(event.priority == .high)
                break
            }
        }
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
        var escalated: AsyncTask?
        while let event = await events.next() {
            if event.kind == .escalated {
                escalated = event.unit
                break
            }
        }
        #expect(escalated === shared.task)
        queue.resume()
        #expect(try await caller.value >= .high)
    }

    @Test func aUnitAwaitedWhileInTheInboxIsAdmittedAtTheAwaitingPriority() async {
        let queue = BackgroundQueue(maxConcurrentTasks: 1, backgroundTaskProvider: NoopBackgroundTaskProvider())
        queue.suspend()
        let order = Recorder<String>()
        let medium = queue.add(.init(priority: .medium)) { unit in
            order.append("medium")
            unit.finish()
        }
        // As behind a scheduled drainer: the next add waits in the inbox.
        #expect(queue.core.inbox.mirror(drainerScheduled: true))
        let low = AsyncTask(.init(priority: .low)) { unit in
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
        let log = EventLog(queue)
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
        let marker = queue.add { $0.finish() }
        let events = await log.events(through: marker)
        let others = events.filter { event in
            guard let unit = event.unit else { return false }
            return unit !== live.task && unit !== marker
        }
        #expect(others.isEmpty, "\(others)")
    }

    @Test func aUnitCancelledBetweenItsClaimAndItsAdmissionIsReportedWithItsOwnOutcome() async {
        let (queue, _) = makeQueue()
        let log = EventLog(queue)
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
        let marker = queue.add { $0.finish() }
        let events = await log.events(through: marker)
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

/// Everything a queue's event stream delivers, from its creation on.
final class EventLog: Sendable {
    private final class Storage: Sendable {
        typealias Waiter = (until: @Sendable ([BackgroundQueue.Event]) -> Bool, CheckedContinuation<Void, Never>)
        let state = Lock<(events: [BackgroundQueue.Event], waiters: [Waiter])>(([], []))

        func append(_ event: BackgroundQueue.Event) {
            let ready = state.withLock { state in
                state.events.append(event)
                let events = state.events
                var ready: [CheckedContinuation<Void, Never>] = []
                state.waiters.removeAll { waiter in
                    guard waiter.until(events) else { return false }
                    ready.append(waiter.1)
                    return true
                }
                return ready
            }
            for continuation in ready { continuation.resume() }
        }
    }

    private let storage = Storage()
    private let reader: Task<Void, Never>

    init(_ queue: BackgroundQueue) {
        let (stream, storage) = (queue.events, storage)
        reader = Task { for await event in stream { storage.append(event) } }
    }

    deinit { reader.cancel() }

    /// Suspends until the events delivered so far satisfy `until`; returns them.
    private func events(until: @escaping @Sendable ([BackgroundQueue.Event]) -> Bool) async -> [BackgroundQueue.Event] {
        await withCheckedContinuation { continuation in
            let now = storage.state.withLock { state in
                if until(state.events) { return true }
                state.waiters.append((until, continuation))
                return false
            }
            if now { continuation.resume() }
        }
        return storage.state.withLock { $0.events }
    }

    /// The events delivered up to `unit`'s `ended` event.
    func events(through unit: AsyncTask) async -> [BackgroundQueue.Event] {
        @Sendable func end(_ events: [BackgroundQueue.Event]) -> Int? {
            events.firstIndex { event in
                event.kind == .ended && event.unit === unit
            }
        }
        let events = await events(until: { end($0) != nil })
        return Array(events[...end(events)!])
    }

    /// The outcome of each `ended` event, once `count` units have one.
    func endedOutcomes(count: Int) async -> [ObjectIdentifier: AsyncTask.Outcome] {
        @Sendable func outcomes(_ events: [BackgroundQueue.Event]) -> [ObjectIdentifier: AsyncTask.Outcome] {
            var outcomes: [ObjectIdentifier: AsyncTask.Outcome] = [:]
            for event in events where event.kind == .ended {
                outcomes[ObjectIdentifier(event.unit!)] = event.outcome
            }
            return outcomes
        }
        return outcomes(await events(until: { outcomes($0).count >= count }))
    }
}
