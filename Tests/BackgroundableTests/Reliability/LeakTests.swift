import BackgroundableTesting
import Dispatch
import Foundation
import Synchronization
import Testing

@testable import Backgroundable

/// An object captured by a unit's closure, to see the closure released.
private final class Tracked: Sendable {}

/// Waits until `isReleased` holds: objects are released by the thread that drops the
/// last reference (the unit's wrapping `Task` finishing, a timer), shortly after the
/// outcome, and a release has no event to await — so this yields and re-checks.
/// Bounded: gives up after 90 seconds (a hang guard for a loaded machine) and lets the
/// test fail.
private func released(_ isReleased: () -> Bool) async -> Bool {
    let clock = ContinuousClock()
    let deadline = clock.now + .seconds(90)
    while !isReleased() {
        if clock.now > deadline { return false }
        await Task.yield()
    }
    return true
}

/// Units, their closures and the queues themselves are released, whatever the outcome;
/// every continuation is resumed exactly once.
@Suite("Leaks and continuations")
struct LeakTests {
    /// Runs `make` in a scope of its own, awaits the unit's outcome there, and checks
    /// that the unit and the object its closure captured are released afterwards.
    private func expectReleased(
        expected: AsyncTask.Outcome.Kind,
        _ make: (BackgroundQueue, Tracked) -> AsyncTask,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async {
        let (queue, _) = makeQueue()
        weak var weakUnit: AsyncTask?
        weak var weakCaptured: Tracked?
        do {
            let tracked = Tracked()
            weakCaptured = tracked
            let unit = make(queue, tracked)
            weakUnit = unit
            #expect(await unit.outcome.kind == expected, sourceLocation: sourceLocation)
        }
        await queue.waitUntilIdle()
        #expect(
            await released { weakCaptured == nil }, "closure (and what it captured) leaked",
            sourceLocation: sourceLocation)
        #expect(await released { weakUnit == nil }, "unit leaked", sourceLocation: sourceLocation)
    }

    @Test func finishedUnitsAreReleased() async {
        await expectReleased(expected: .finished) { queue, tracked in
            queue.add(.init(timeout: nil)) { task in
                withExtendedLifetime(tracked) { task.finish() }
            }
        }
        await expectReleased(expected: .finished) { queue, tracked in
            queue.add { withExtendedLifetime(tracked) { 1 } }.task
        }
    }

    @Test func failedUnitsAreReleased() async {
        await expectReleased(expected: .failed) { queue, tracked in
            queue.add { () throws -> Int in
                withExtendedLifetime(tracked) {}
                throw TestError(code: 1)
            }.task
        }
    }

    @Test func cancelledUnitsAreReleased() async {
        // Cancelled while executing (the body ignores it) and before starting.
        await expectReleased(expected: .cancelled) { queue, tracked in
            queue.add(.init(timeout: nil)) { task in
                withExtendedLifetime(tracked) { task.cancel() }
            }
        }
        await expectReleased(expected: .cancelled) { queue, tracked in
            queue.suspend()
            let unit = queue.add(.init(timeout: nil)) { task in withExtendedLifetime(tracked) { task.finish() } }
            unit.cancel()
            queue.resume()
            return unit
        }
    }

    @Test func droppedUnitsAreReleased() async {
        let release = Signal()
        let (queue, _) = makeQueue()
        let holder = queue.add(.init(name: "n", timeout: nil)) { await release.wait() }
        weak var weakUnit: AsyncTask?
        weak var weakCaptured: Tracked?
        do {
            let tracked = Tracked()
            weakCaptured = tracked
            let dropped = queue.add(.init(name: "n", timeout: nil, uniquenessPolicy: .drop)) { task in
                withExtendedLifetime(tracked) { task.finish() }
            }
            weakUnit = dropped
            #expect(dropped.currentOutcome?.kind == .dropped)
        }
        #expect(await released { weakCaptured == nil && weakUnit == nil })
        release.signal()
        _ = await holder.task.outcome
    }

    @Test func replacedUnitsAreReleased() async {
        let (queue, _) = makeQueue()
        weak var weakUnit: AsyncTask?
        weak var weakCaptured: Tracked?
        let started = Signal()
        do {
            let tracked = Tracked()
            weakCaptured = tracked
            let old = queue.add(.init(name: "n", timeout: nil)) {
                withExtendedLifetime(tracked) { started.signal() }
                await suspendUntilCancelled()
            }.task
            weakUnit = old
            await started.wait()
            queue.add(.init(name: "n", timeout: nil, uniquenessPolicy: .replace)) { $0.finish() }
            #expect(await old.outcome.kind == .replaced)
        }
        await queue.waitUntilIdle()
        #expect(await released { weakCaptured == nil && weakUnit == nil })
    }

    @Test func timedOutUnitsAndTheirTimeoutCallbacksAreReleased() async {
        await expectReleased(expected: .timedOut) { queue, tracked in
            queue.add(.init(timeout: .milliseconds(5), onTimeout: { _ in withExtendedLifetime(tracked) {} })) { _ in
                withExtendedLifetime(tracked) {}
            }
        }
        await expectReleased(expected: .timedOut) { queue, tracked in
            queue.add(.init(timeout: .zero)) { task in withExtendedLifetime(tracked) { task.finish() } }
        }
    }

    @Test func queuesAreReleasedAndCancelTheirPendingWork() async {
        weak var weakQueue: BackgroundQueue?
        weak var weakCore: QueueCore?
        weak var weakCaptured: Tracked?
        var pending: AsyncTask?
        let provider = RecordingBackgroundTaskProvider()
        do {
            let queue = BackgroundQueue(maxConcurrentTasks: 1, backgroundTaskProvider: provider)
            weakQueue = queue
            weakCore = queue.core
            let tracked = Tracked()
            weakCaptured = tracked
            for _ in 0..<10 {
                try? await queue.run(.init(timeout: nil)) { withExtendedLifetime(tracked) {} }
            }
            queue.suspend()
            pending = queue.add(.init(timeout: nil)) { task in withExtendedLifetime(tracked) { task.finish() } }
        }
        #expect(await released { weakQueue == nil }, "queue leaked")
        #expect(pending?.currentOutcome?.kind == .cancelled)
        pending = nil
        #expect(await released { weakCaptured == nil && weakCore == nil }, "core or closure leaked")
        #expect(isBalanced(provider), "the queue's last assertion was not ended")
    }

    /// A deadline still armed when its unit finished (a one-hour timeout) keeps nothing
    /// alive: once the queue is dropped, its core, its provider and its listeners go at
    /// once, on the test clock (which never moves) and on the real one alike.
    @Test(arguments: [true, false])
    func anArmedTimeoutDoesNotKeepADroppedQueueAlive(onTheTestClock: Bool) async {
        weak var weakCore: QueueCore?
        weak var weakProvider: RecordingBackgroundTaskProvider?
        let streamEnded = Signal()
        do {
            let clock = TestClock()
            let (queue, provider) = onTheTestClock ? makeQueue(clock: clock) : makeQueue()
            weakCore = queue.core
            weakProvider = provider
            let events = queue.events
            Task {
                for await _ in events {}
                streamEnded.signal()
            }
            let unit = queue.add(.init(timeout: .seconds(3600))) { $0.finish() }
            #expect(await unit.outcome.kind == .finished)
            await queue.waitUntilIdle()
        }
        #expect(await released { streamEnded.isSignalled }, "the listener's stream did not finish")
        #expect(await released { weakCore == nil }, "the armed timeout kept the core alive")
        #expect(await released { weakProvider == nil }, "the armed timeout kept the provider alive")
    }

    @Test func operationBridgeUnitsAreReleased() async {
        weak var weakOperation: AsyncOperation?
        weak var weakCaptured: Tracked?
        let (operationQueue, _) = makeOperationQueue()
        do {
            let tracked = Tracked()
            weakCaptured = tracked
            let operation = AsyncOperation(name: "op") { operation in
                withExtendedLifetime(tracked) { operation.finish() }
            }
            weakOperation = operation
            operationQueue.addOperation(operation)
            #expect(await operation.outcome.kind == .finished)
        }
        await operationQueue.waitUntilIdle()
        #expect(await released { weakCaptured == nil && weakOperation == nil })
    }

    /// An operation nobody starts holds no cycle: released with its unit and closure,
    /// whether or not its `task` was read (reading it makes the operation listen to the
    /// unit, weakly).
    @Test(arguments: [false, true])
    func neverStartedOperationsAreReleased(readingTheTask: Bool) async {
        weak var weakOperation: AsyncOperation?
        weak var weakUnit: AsyncTask?
        weak var weakCaptured: Tracked?
        do {
            let tracked = Tracked()
            weakCaptured = tracked
            let operation = AsyncOperation(name: "never") { operation in
                withExtendedLifetime(tracked) { operation.finish() }
            }
            weakOperation = operation
            if readingTheTask { weakUnit = operation.task }
        }
        #expect(await released { weakCaptured == nil && weakOperation == nil && weakUnit == nil })
    }

    /// A `BackgroundOperationQueue` is released once its operations finished: its
    /// operations hold it strongly only until then.
    @Test func operationQueuesAreReleasedAfterTheirOperationsFinished() async {
        weak var weakQueue: BackgroundOperationQueue?
        do {
            let (operationQueue, _) = makeOperationQueue()
            weakQueue = operationQueue
            let operations = (0..<3).map { index in
                AsyncOperation(name: "op\(index)", timeout: 5) { $0.finish() }
            }
            operationQueue.addOperations(operations + [BlockOperation {}], waitUntilFinished: false)
            await operationQueue.waitUntilIdle()
        }
        #expect(await released { weakQueue == nil })
    }

    // MARK: Continuations

    // The core parks callers on `UnsafeContinuation`s (awaiting an outcome, a parked
    // callback body, `waitUntilIdle`). A leaked one would hang its caller, a double
    // resume is undefined behaviour (usually a crash). These tests drive every path
    // that resumes them, from many tasks at once, and count the returns.

    @Test func everyOutcomeAwaiterIsResumedExactlyOnce() async {
        let (queue, _) = makeQueue(maxConcurrentTasks: 2)
        let returns = Counter()
        let rounds = 40
        let awaitersPerUnit = 25
        for round in 0..<rounds {
            let release = Signal()
            let unit = queue.add(.init(timeout: round % 4 == 0 ? .milliseconds(2) : nil)) { task in
                Task {
                    await release.wait()
                    if round % 3 == 0 { task.cancel() } else { task.finish() }
                }
            }
            await withTaskGroup(of: Void.self) { group in
                for awaiter in 0..<awaitersPerUnit {
                    group.addTask {
                        _ = await unit.outcome
                        returns.increment()
                    }
                    if awaiter == awaitersPerUnit / 2 { release.signal() }
                }
            }
        }
        #expect(returns.value == rounds * awaitersPerUnit)
        await queue.waitUntilIdle()
    }

    @Test func cancelledAwaitersRaceTheEndingAndAreResumedExactlyOnce() async {
        let (queue, _) = makeQueue()
        let returns = Counter()
        let count = 300
        var units: [AsyncTask] = []
        for _ in 0..<count {
            units.append(queue.add(.init(timeout: nil)) { task in DispatchQueue.global().async { task.finish() } })
        }
        await withTaskGroup(of: Void.self) { group in
            for unit in units {
                group.addTask {
                    _ = await unit.outcome
                    returns.increment()
                }
            }
            // Cancels the awaiting tasks while units end: each awaiter's onCancel cancels
            // its unit, racing with `finish()` and the ending that resumes the awaiter.
            group.cancelAll()
        }
        #expect(returns.value == count)
        for unit in units { #expect(unit.currentOutcome != nil) }
        await queue.waitUntilIdle()
    }

    @Test func idleWaitersAreResumedExactlyOncePerBusyPeriod() async {
        let (queue, _) = makeQueue()
        let returns = Counter()
        for _ in 0..<30 {
            await withTaskGroup(of: Void.self) { group in
                for index in 0..<10 {
                    if index % 2 == 0 {
                        queue.add(.init(timeout: nil)) { task in DispatchQueue.global().async { task.finish() } }
                    }
                    group.addTask {
                        await queue.waitUntilIdle()
                        returns.increment()
                    }
                }
            }
        }
        #expect(returns.value == 300)
    }

    @Test func parkedBodiesAreResumedWhateverEndsTheUnit() async {
        // A callback body parks its `Task` on a continuation until the unit ends; every
        // way of ending must resume it exactly once, or the `Task` (and the unit) leaks.
        let (queue, _) = makeQueue()
        var weakUnits: [WeakUnit] = []
        do {
            var units: [AsyncTask] = []
            for index in 0..<60 {
                let unit = queue.add(.init(timeout: index % 3 == 2 ? .milliseconds(2) : nil)) { task in
                    switch index % 3 {
                    case 0: task.finish()
                    case 1: DispatchQueue.global().async { task.cancel() }
                    default: break  // times out
                    }
                }
                units.append(unit)
            }
            for unit in units { _ = await unit.outcome }
            weakUnits = units.map(WeakUnit.init)
        }
        await queue.waitUntilIdle()
        #expect(await released { weakUnits.allSatisfy { $0.unit == nil } }, "a parked body was never resumed")
    }
}

private final class Counter: Sendable {
    private let count = Atomic<Int>(0)
    func increment() { count.add(1, ordering: .relaxed) }
    var value: Int { count.load(ordering: .relaxed) }
}
