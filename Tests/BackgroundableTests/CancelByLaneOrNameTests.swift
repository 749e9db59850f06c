import Synchronization
import Testing

@testable import Backgroundable

/// `cancelAll(inLane:)` and `cancelAll(named:)`: one step under the queue's lock that
/// cancels every live unit of a lane or a name, whatever it is doing.
@Suite("Cancelling a lane or a name")
struct CancelByLaneOrNameTests {
    /// A unit that runs until `gate` opens (or it is cancelled); signals `started` when it starts.
    private func gated(
        _ queue: BackgroundQueue, _ options: AsyncTask.Options, gate: Signal, started: Signal? = nil
    ) -> AsyncTask {
        queue.add(options) { unit in
            started?.signal()
            Task {
                await gate.wait()
                unit.finish()
            }
        }
    }

    /// A unit of `lane` that fails its first attempt and retries a minute later; returns
    /// once it waits between its attempts.
    private func retrying(_ queue: BackgroundQueue, _ options: AsyncTask.Options) async -> AsyncTask {
        var options = options
        options.retry = .fixed(maxAttempts: 2, delay: .seconds(60))
        var events = queue.events.makeAsyncIterator()
        let handle = queue.add(options) { throw TestError(code: 1) }
        while let event = await events.next() {
            if event.kind == .retrying, event.unit === handle.task { break }
        }
        return handle.task
    }

    @Test func aLaneIsCancelledWhateverItsUnitsAreDoing() async {
        let (queue, _) = makeQueue()
        let gate = Signal()
        // Lane "a": executing, then blocked behind it; one of them with a start time.
        let executingStarted = Signal()
        let executing = gated(queue, .init(timeout: nil, lane: "a"), gate: gate, started: executingStarted)
        await executingStarted.wait()
        let blocked = gated(queue, .init(timeout: nil, lane: "a"), gate: gate)
        let blockedDelayed = gated(queue, .init(timeout: nil, notBefore: .after(.seconds(60)), lane: "a"), gate: gate)
        // Lane 7: its first unit waits between two attempts, the next one behind it.
        let betweenAttempts = await retrying(queue, .init(lane: 7))
        let behindRetry = gated(queue, .init(timeout: nil, lane: 7), gate: gate)
        // Lane "d": its first unit waits for its start time.
        let delayed = gated(queue, .init(timeout: nil, notBefore: .after(.seconds(60)), lane: "d"), gate: gate)
        // Untouched: another lane, no lane, and lane "a" as another type.
        let others = [
            gated(queue, .init(timeout: nil, lane: "b"), gate: gate),
            gated(queue, .init(timeout: nil), gate: gate),
            gated(queue, .init(timeout: nil, lane: Character("a")), gate: gate),
        ]
        #expect(executing.isExecuting && !blocked.isExecuting)

        #expect(queue.cancelAll(inLane: "a") == 3)
        #expect(queue.cancelAll(inLane: 7) == 2)
        #expect(queue.cancelAll(inLane: "d") == 1)
        // Every unit it cancelled has ended when it returns; an empty lane cancels none.
        for unit in [executing, blocked, blockedDelayed, betweenAttempts, behindRetry, delayed] {
            #expect(unit.currentOutcome?.kind == .cancelled)
        }
        #expect(queue.cancelAll(inLane: "a") == 0)
        #expect(queue.cancelAll(inLane: "never used") == 0)
        #expect(others.allSatisfy { $0.currentOutcome == nil })

        // The lane goes on with the units added afterwards.
        let next = gated(queue, .init(timeout: nil, lane: "a"), gate: gate)
        gate.signal()
        #expect(await next.outcome.kind == .finished)
        for unit in others { #expect(await unit.outcome.kind == .finished) }
    }

    @Test func aNameIsCancelledWhateverItsUnitsAreDoing() async {
        let (queue, _) = makeQueue(maxConcurrentTasks: 1)
        let gate = Signal()
        let executingStarted = Signal()
        let executing = gated(queue, .init(name: "sync", timeout: nil), gate: gate, started: executingStarted)
        await executingStarted.wait()
        let waiting = gated(queue, .init(name: "sync", timeout: nil), gate: gate)
        let delayed = gated(queue, .init(name: "sync", timeout: nil, notBefore: .after(.seconds(60))), gate: gate)
        let inLane = gated(queue, .init(name: "sync", timeout: nil, lane: "l"), gate: gate)
        let blockedInLane = gated(queue, .init(name: "sync", timeout: nil, lane: "l"), gate: gate)
        // A unit that joins them ends with the one it joined; it is not counted.
        let joiner = gated(queue, .init(name: "sync", timeout: nil, uniquenessPolicy: .join), gate: gate)
        let other = gated(queue, .init(name: "other", timeout: nil), gate: gate)

        #expect(queue.cancelAll(named: "sync") == 5)
        for unit in [executing, waiting, delayed, inLane, blockedInLane] {
            #expect(unit.currentOutcome?.kind == .cancelled)
        }
        #expect(await joiner.outcome.kind == .cancelled)
        #expect(queue.cancelAll(named: "sync") == 0)
        gate.signal()
        #expect(await other.outcome.kind == .finished)
    }

    @Test func aUnitBetweenTwoAttemptsIsCancelledByName() async {
        let (queue, _) = makeQueue()
        let unit = await retrying(queue, .init(name: "upload"))
        #expect(queue.cancelAll(named: "upload") == 1)
        #expect(await unit.outcome.kind == .cancelled)
    }

    /// Adds race the cancellation: every unit whose add returned before the call is
    /// cancelled, every unit whose add began after it returned runs.
    @Test func unitsAddedAfterTheCallAreUntouched() async {
        let (queue, _) = makeQueue()
        let gate = Signal()
        let head = gated(queue, .init(timeout: nil, lane: "race"), gate: gate)
        let phase = Phase()
        let enoughAdded = Signal()
        let adder = Task.detached {
            var units: [(unit: AsyncTask, returnedBefore: Bool, beganAfter: Bool)] = []
            var addedAfter = 0
            while addedAfter < 50 {
                let beganAfter = phase.cancelReturned.load(ordering: .sequentiallyConsistent)
                let unit = queue.add(.init(timeout: nil, lane: "race")) { $0.finish() }
                let returnedBefore = !phase.cancelStarted.load(ordering: .sequentiallyConsistent)
                units.append((unit, returnedBefore, beganAfter))
                if units.count == 20 { enoughAdded.signal() }
                if beganAfter { addedAfter += 1 }
                await Task.yield()
            }
            return units
        }
        await enoughAdded.wait()
        phase.cancelStarted.store(true, ordering: .sequentiallyConsistent)
        let cancelled = queue.cancelAll(inLane: "race")
        phase.cancelReturned.store(true, ordering: .sequentiallyConsistent)
        let units = await adder.value
        #expect(head.currentOutcome?.kind == .cancelled)
        var cancelledUnits = 1
        for (unit, returnedBefore, beganAfter) in units {
            let outcome = await unit.outcome.kind
            if returnedBefore { #expect(outcome == .cancelled) }
            if beganAfter { #expect(outcome == .finished) }
            if outcome == .cancelled { cancelledUnits += 1 }
        }
        #expect(cancelled == cancelledUnits && cancelled >= 21)
        gate.signal()
    }
}

/// Where the racing test's cancellation is, as the adder sees it.
private final class Phase: Sendable {
    let cancelStarted = Atomic(false)
    let cancelReturned = Atomic(false)
}
