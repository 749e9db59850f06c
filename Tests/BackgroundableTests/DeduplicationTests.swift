import BackgroundableTesting
import Dispatch
import Foundation
import Synchronization
import Testing

@testable import Backgroundable

@Suite("Name-based deduplication")
struct DeduplicationTests {
    @Test func ignoreIsTheDefaultAndNamesAreOnlyLabels() async {
        let (queue, _) = makeQueue()
        queue.suspend()
        let first = queue.add(.init(name: "same", timeout: nil)) { $0.finish() }
        let second = queue.add(.init(name: "same", timeout: nil)) { $0.finish() }
        #expect(first.uniquenessPolicy == .ignore)
        #expect(queue.enqueuedCount == 2)
        queue.resume()
        #expect(await first.outcome.kind == .finished)
        #expect(await second.outcome.kind == .finished)
    }

    @Test func dropKeepsTheLiveUnitAndDropsTheNewcomerAtOnce() async {
        let (queue, _) = makeQueue()
        queue.suspend()
        let runs = Recorder<Int>()
        let first = queue.add(.init(name: "sync", timeout: nil)) { task in
            runs.append(1)
            task.finish()
        }
        let second = queue.add(.init(name: "sync", timeout: nil, uniquenessPolicy: .drop)) { task in
            runs.append(2)
            task.finish()
        }
        #expect(second.currentOutcome?.kind == .dropped)
        #expect(second.isCancelled)
        #expect(queue.enqueuedCount == 1)
        queue.resume()
        #expect(await first.outcome.kind == .finished)
        await queue.waitUntilIdle()
        #expect(runs.all == [1])
    }

    @Test func dropSeesExecutingUnitsAsLive() async {
        let (queue, _) = makeQueue()
        let started = Signal()
        let first = queue.add(.init(name: "sync", timeout: nil)) { _ in started.signal() }
        await started.wait()
        let second = queue.add(.init(name: "sync", timeout: nil, uniquenessPolicy: .drop)) { $0.finish() }
        #expect(second.currentOutcome?.kind == .dropped)
        first.finish()
        await queue.waitUntilIdle()
    }

    @Test func droppedHandleThrowsDropped() async {
        let (queue, _) = makeQueue()
        queue.suspend()
        queue.add(.init(name: "n", timeout: nil)) { $0.finish() }
        let dropped = queue.add(.init(name: "n", uniquenessPolicy: .drop)) { 1 }
        await #expect(throws: AsyncTaskError.dropped) { try await dropped.value }
        queue.cancelAll()
        queue.resume()
    }

    @Test func replaceCancelsWaitingAndExecutingUnitsWithTheSameName() async {
        let (queue, _) = makeQueue(maxConcurrentTasks: 1)
        let started = Signal()
        let sawCancellation = Signal()
        let executing = queue.add(.init(name: "save")) {
            started.signal()
            await suspendUntilCancelled()
            if Task.isCancelled { sawCancellation.signal() }
        }
        await started.wait()
        let waiting = queue.add(.init(name: "save", timeout: nil)) { $0.finish() }
        let newest = queue.add(.init(name: "save", timeout: nil, uniquenessPolicy: .replace)) { $0.finish() }
        #expect(executing.task.currentOutcome?.kind == .replaced)
        #expect(waiting.currentOutcome?.kind == .replaced)
        await sawCancellation.wait()
        #expect(await newest.outcome.kind == .finished)
        await #expect(throws: AsyncTaskError.replaced) { try await executing.value }
    }

    @Test func unnamedUnitsNeverDeduplicate() async {
        let (queue, _) = makeQueue()
        queue.suspend()
        let units = (0..<3).map { _ in queue.add(.init(timeout: nil, uniquenessPolicy: .drop)) { $0.finish() } }
        let replacer = queue.add(.init(timeout: nil, uniquenessPolicy: .replace)) { $0.finish() }
        #expect(queue.enqueuedCount == 4)
        queue.resume()
        for unit in units + [replacer] {
            #expect(await unit.outcome.kind == .finished)
        }
    }

    @Test func endedUnitsFreeTheirName() async {
        let (queue, _) = makeQueue()
        let finished = queue.add(.init(name: "a", timeout: nil)) { $0.finish() }
        _ = await finished.outcome
        let afterFinished = queue.add(.init(name: "a", timeout: nil, uniquenessPolicy: .drop)) { $0.finish() }
        #expect(await afterFinished.outcome.kind == .finished)

        queue.suspend()
        let cancelled = queue.add(.init(name: "b", timeout: nil)) { $0.finish() }
        cancelled.cancel()
        let afterCancelled = queue.add(.init(name: "b", timeout: nil, uniquenessPolicy: .drop)) { $0.finish() }
        #expect(afterCancelled.currentOutcome == nil)
        queue.resume()
        #expect(await afterCancelled.outcome.kind == .finished)
    }

    @Test func racingDropAddsLeaveExactlyOneSurvivor() async {
        let (queue, _) = makeQueue()
        queue.suspend()
        let added = Recorder<AsyncTask>()
        DispatchQueue.concurrentPerform(iterations: 500) { _ in
            added.append(queue.add(.init(name: "race", timeout: nil, uniquenessPolicy: .drop)) { $0.finish() })
        }
        let survivors = added.all.filter { $0.currentOutcome?.kind != .dropped }
        #expect(survivors.count == 1)
        #expect(queue.enqueuedCount == 1)
        queue.resume()
        #expect(await survivors[0].outcome.kind == .finished)
    }

    @Test func racingReplaceAddsLeaveExactlyOneLiveUnit() async {
        let (queue, _) = makeQueue()
        queue.suspend()
        let added = Recorder<AsyncTask>()
        DispatchQueue.concurrentPerform(iterations: 500) { _ in
            added.append(queue.add(.init(name: "race", timeout: nil, uniquenessPolicy: .replace)) { $0.finish() })
        }
        let live = added.all.filter { $0.currentOutcome == nil }
        #expect(live.count == 1)
        #expect(added.all.filter { $0.currentOutcome?.kind == .replaced }.count == 499)
        queue.resume()
        #expect(await live[0].outcome.kind == .finished)
    }

    @Test func policiesApplyInOrderWithinABatch() async {
        let (queue, _) = makeQueue()
        queue.suspend()
        let a = AsyncTask(.init(name: "x", timeout: nil)) { $0.finish() }
        let b = AsyncTask(.init(name: "x", timeout: nil, uniquenessPolicy: .drop)) { $0.finish() }
        let c = AsyncTask(.init(name: "x", timeout: nil, uniquenessPolicy: .replace)) { $0.finish() }
        let d = AsyncTask(.init(name: "x", timeout: nil, uniquenessPolicy: .drop)) { $0.finish() }
        queue.add(contentsOf: [a, b, c, d])
        #expect(a.currentOutcome?.kind == .replaced)
        #expect(b.currentOutcome?.kind == .dropped)
        #expect(c.currentOutcome == nil)
        #expect(d.currentOutcome?.kind == .dropped)
        #expect(queue.enqueuedCount == 1)
        queue.resume()
        #expect(await c.outcome.kind == .finished)
    }

    /// A batch `[A, B]`, both `.replace`, added while X of their name runs a body that
    /// ignores its cancellation: A replaces X and B replaces A, and B's body still waits
    /// for X's to return (the gate of X is made in the same transition as B's admission).
    @Test func aBatchOfReplacementsWaitsForTheBodyTheFirstOneReplaced() async throws {
        let (queue, _) = makeQueue()
        let xStarted = Signal()
        let releaseX = Signal()
        let xReturned = Signal()
        let bStarted = Signal()
        let overlapped = Signal()
        let x = queue.add(.init(name: "n")) {
            xStarted.signal()
            await releaseX.wait()  // not cancellable: the body ignores its cancellation
            xReturned.signal()
        }
        await xStarted.wait()
        let a = AsyncTaskHandle(.init(name: "n", uniquenessPolicy: .replace)) {}
        let b = AsyncTaskHandle(.init(name: "n", uniquenessPolicy: .replace)) {
            if !xReturned.isSignalled { overlapped.signal() }
            bStarted.signal()
        }
        #expect(queue.add(contentsOf: [a.task, b.task]) == 2)
        // Before its body can run, B is held behind a gate that X's body still keeps closed.
        #expect(waitsBehindAClosedGate(b.task))
        releaseX.signal()
        await bStarted.wait()
        _ = try await b.value
        #expect(await x.outcome.kind == .replaced)
        #expect(await a.task.outcome.kind == .replaced)
        #expect(!overlapped.isSignalled, "B's body ran while X's, which A replaced, still ran")
    }

    @Test(arguments: [false, true])
    func aNamedBodyThatOutlivesItsCancellationOrTimeoutHoldsBackTheNextOfItsName(timesOut: Bool) async throws {
        let clock = TestClock()
        let (queue, _) = makeQueue(clock: clock)
        let xStarted = Signal()
        let releaseX = Signal()
        let xReturned = Signal()
        let x = queue.add(.init(name: "n", timeout: .seconds(1))) {
            xStarted.signal()
            await releaseX.wait()  // not cancellable: the body ignores its cancellation
            xReturned.signal()
        }
        await xStarted.wait()
        if timesOut {
            clock.advance(by: .seconds(2))
        } else {
            x.task.cancel()
        }
        #expect(await x.outcome.kind == (timesOut ? .timedOut : .cancelled))
        let overlapped = Signal()
        let y = queue.add(.init(name: "n", uniquenessPolicy: .drop)) {
            if !xReturned.isSignalled { overlapped.signal() }
        }
        #expect(waitsBehindAClosedGate(y.task))
        // A unit that ignores names does not wait.
        _ = try await queue.add(.init(name: "n")) {}.value
        releaseX.signal()
        _ = try await y.value
        let how = timesOut ? "timed out" : "cancelled"
        #expect(!overlapped.isSignalled, "Y's body ran while X's, which was \(how), still ran")
    }

    /// X's end hook runs before X leaves the queue, and Y is added meanwhile. Cancelled
    /// by itself, X still holds its name there, and Y replaces it; cancelled by its
    /// queue, X gave its name up in that step, and Y (`.drop`) is admitted — also when X
    /// had cancelled itself first ("then"), so that its queue's cancellation ended
    /// nothing. Either way Y waits for X's body, which ignores its cancellation.
    @Test(arguments: [
        "cancel()", "cancelAll()", "cancelAll(named:)", "cancelAll(inLane:)",
        "cancel(), then cancelAll()", "cancel(), then cancelAll(named:)", "cancel(), then cancelAll(inLane:)",
    ])
    func aNewcomerAddedWhileACancelledUnitLeavesWaitsForItsBody(how: String) async throws {
        let (queue, _) = makeQueue()
        let xStarted = Signal()
        let releaseX = Signal()
        let xReturned = Signal()
        let inEndHook = Signal()
        let leave = DispatchSemaphore(value: 0)
        var options = AsyncTask.Options(name: "n", lane: "l")
        options.onEnd = { _ in
            inEndHook.signal()
            leave.wait()  // A thread of the test's own, never a cooperative one.
        }
        let x = queue.add(options) {
            xStarted.signal()
            await releaseX.wait()  // not cancellable: the body ignores its cancellation
            xReturned.signal()
        }
        await xStarted.wait()
        @Sendable func cancel(_ how: Substring) {
            switch how {
            case "cancel()": x.task.cancel()
            case "cancelAll()": queue.cancelAll()
            case "cancelAll(named:)": _ = queue.cancelAll(named: "n")
            default: _ = queue.cancelAll(inLane: "l")
            }
        }
        let steps = how.split(separator: ", then ")
        Thread { cancel(steps[0]) }.start()
        await inEndHook.wait()
        if steps.count > 1 { cancel(steps[1]) }
        let overlapped = Signal()
        let policy: UniquenessPolicy = how == "cancel()" ? .replace : .drop
        let y = queue.add(.init(name: "n", uniquenessPolicy: policy)) {
            if !xReturned.isSignalled { overlapped.signal() }
        }
        #expect(waitsBehindAClosedGate(y.task))
        leave.signal()
        releaseX.signal()
        _ = try await y.value
        #expect(await x.outcome.kind == .cancelled)
        #expect(!overlapped.isSignalled, "Y's body ran while X's, ended by \(how), still ran")
    }

    @Test func deduplicationIsPerQueue() async {
        let (first, _) = makeQueue()
        let (second, _) = makeQueue()
        first.suspend()
        second.suspend()
        first.add(.init(name: "n", timeout: nil)) { $0.finish() }
        let other = second.add(.init(name: "n", timeout: nil, uniquenessPolicy: .drop)) { $0.finish() }
        #expect(other.currentOutcome == nil)
        first.resume()
        second.resume()
        #expect(await other.outcome.kind == .finished)
    }
}
