import BackgroundableTesting
import Testing

@testable import Backgroundable

/// Keyed lanes: units of one lane run one at a time, in the order they were added;
/// lanes run in parallel up to the queue's limit; any outcome lets the next one go.
@Suite("Lanes")
struct LaneTests {
    /// A unit of `lane` whose body records its start, then waits for `gate`.
    private func gated(
        _ queue: BackgroundQueue, lane: String, _ label: String, order: Recorder<String>, gate: Signal,
        name: String? = nil, policy: UniquenessPolicy = .ignore
    ) -> AsyncTask {
        queue.add(.init(name: name, timeout: nil, uniquenessPolicy: policy, lane: lane)) { unit in
            order.append(label)
            Task {
                await gate.wait()
                unit.finish()
            }
        }
    }

    @Test func unitsOfOneLaneRunOneAtATimeInTheOrderTheyWereAdded() async {
        let (queue, _) = makeQueue()
        let order = Recorder<String>()
        let gauge = Gauge()
        var units: [AsyncTask] = []
        for index in 0..<20 {
            units.append(
                queue.add(.init(lane: "account-1")) {
                    gauge.enter()
                    order.append("\(index)")
                    await Task.yield()
                    gauge.leave()
                }.task)
        }
        for unit in units { #expect(await unit.outcome.kind == .finished) }
        #expect(order.all == (0..<20).map(String.init))
        #expect(gauge.maximum == 1)
    }

    @Test func differentLanesRunInParallel() async {
        let (queue, _) = makeQueue()
        let order = Recorder<String>()
        let gate = Signal()
        let started = Recorder<String>()
        let both = Signal()
        let a = queue.add(.init(timeout: nil, lane: "a")) { unit in
            started.append("started")
            if started.count == 2 { both.signal() }
            Task {
                await gate.wait()
                unit.finish()
            }
        }
        let b = queue.add(.init(timeout: nil, lane: "b")) { unit in
            started.append("started")
            if started.count == 2 { both.signal() }
            Task {
                await gate.wait()
                unit.finish()
            }
        }
        // Would never return if lane "b" waited for lane "a".
        await both.wait()
        let waiting = gated(queue, lane: "a", "a2", order: order, gate: Signal())
        #expect(queue.executingCount == 2 && !waiting.isExecuting)
        gate.signal()
        #expect(await a.outcome.kind == .finished)
        #expect(await b.outcome.kind == .finished)
        waiting.cancel()
    }

    @Test func theQueuesLimitStillApplies() async {
        let (queue, _) = makeQueue(maxConcurrentTasks: 2)
        let gauge = Gauge()
        var units: [AsyncTask] = []
        for index in 0..<40 {
            units.append(
                queue.add(.init(lane: "lane-\(index % 8)")) {
                    gauge.enter()
                    await Task.yield()
                    gauge.leave()
                }.task)
        }
        for unit in units { _ = await unit.outcome }
        #expect(gauge.maximum <= 2)
    }

    @Test func everyOutcomeLetsTheNextUnitOfTheLaneStart() async throws {
        let (queue, _) = makeQueue()
        let clock = TestClock()
        let (timed, _) = makeQueue(clock: clock)
        // Cancelled while executing, failed, finished, and timed out: the next one runs.
        let cancelled = queue.add(.init(timeout: nil, lane: "l")) { _ in }
        let failing = queue.add(.init(lane: "l")) { () async throws -> Int in throw TestError(code: 7) }
        let finishing = queue.add(.init(lane: "l")) { 1 }
        let last = queue.add(.init(lane: "l")) { 2 }
        cancelled.cancel()
        #expect(await failing.outcome.kind == .failed)
        #expect(try await finishing.value == 1)
        #expect(try await last.value == 2)

        let timingOut = timed.add(.init(timeout: .seconds(1), lane: "l")) { _ in }
        let next = timed.add(.init(lane: "l")) { 3 }
        clock.advance(by: .seconds(1))
        #expect(await timingOut.outcome.kind == .timedOut)
        #expect(try await next.value == 3)
    }

    @Test func aUnitReplacedOrCancelledInTheMiddleLeavesTheLaneInOrder() async {
        let (queue, _) = makeQueue()
        let order = Recorder<String>()
        let gate = Signal()
        let first = gated(queue, lane: "l", "first", order: order, gate: gate)
        let middle = gated(queue, lane: "l", "middle", order: order, gate: gate, name: "sync")
        let cancelled = gated(queue, lane: "l", "cancelled", order: order, gate: gate)
        let replacing = gated(queue, lane: "l", "replacing", order: order, gate: gate, name: "sync", policy: .replace)
        let last = gated(queue, lane: "l", "last", order: order, gate: gate)
        #expect(middle.currentOutcome?.kind == .replaced)
        cancelled.cancel()
        gate.signal()
        for unit in [first, replacing, last] { #expect(await unit.outcome.kind == .finished) }
        #expect(order.all == ["first", "replacing", "last"])
    }

    @Test func theLaneIsIndependentOfTheName() async {
        let (queue, _) = makeQueue()
        let gate = Signal()
        let order = Recorder<String>()
        // Same name, other lanes: deduplication still sees the live one.
        let live = gated(queue, lane: "a", "live", order: order, gate: gate, name: "refresh")
        let dropped = gated(queue, lane: "b", "dropped", order: order, gate: gate, name: "refresh", policy: .drop)
        #expect(dropped.currentOutcome?.kind == .dropped)
        // Same lane, other names: ordered, not deduplicated.
        let other = gated(queue, lane: "a", "other", order: order, gate: gate, name: "upload", policy: .drop)
        #expect(other.currentOutcome == nil)
        gate.signal()
        #expect(await live.outcome.kind == .finished)
        #expect(await other.outcome.kind == .finished)
        #expect(order.all == ["live", "other"])
    }

    @Test func aDelayedUnitKeepsItsPlaceInItsLane() async {
        let clock = TestClock()
        let (queue, _) = makeQueue(clock: clock)
        let order = Recorder<String>()
        let delayed = queue.add(.init(notBefore: .after(.seconds(5)), lane: "l")) { unit in
            order.append("delayed")
            unit.finish()
        }
        let behind = queue.add(.init(lane: "l")) { unit in
            order.append("behind")
            unit.finish()
        }
        #expect(!behind.isExecuting && behind.currentOutcome == nil)
        clock.advance(by: .seconds(5))
        _ = await delayed.outcome
        _ = await behind.outcome
        #expect(order.all == ["delayed", "behind"])
    }

    @Test func aDelayedUnitBehindAnotherWaitsForBoth() async {
        let clock = TestClock()
        let (queue, _) = makeQueue(clock: clock)
        let gate = Signal()
        let order = Recorder<String>()
        let first = gated(queue, lane: "l", "first", order: order, gate: gate)
        let delayed = queue.add(.init(notBefore: .after(.seconds(5)), lane: "l")) { unit in
            order.append("delayed")
            unit.finish()
        }
        // Its time comes while the first one still runs: it waits for the first one.
        clock.advance(by: .seconds(5))
        gate.signal()
        _ = await first.outcome
        #expect(await delayed.outcome.kind == .finished)
        #expect(order.all == ["first", "delayed"])

        // The first one ends before its time comes: it waits for its time.
        let second = gated(queue, lane: "m", "second", order: order, gate: gate)
        let later = queue.add(.init(notBefore: .after(.seconds(5)), lane: "m")) { $0.finish() }
        _ = await second.outcome
        #expect(later.currentOutcome == nil && !later.isExecuting)
        clock.advance(by: .seconds(5))
        #expect(await later.outcome.kind == .finished)
    }

    @Test func anIdleQueueHoldsNoLanes() async {
        let (queue, _) = makeQueue()
        var units: [AsyncTask] = []
        for index in 0..<1_000 {
            units.append(queue.add(.init(lane: "key-\(index % 100)")) { $0.finish() })
        }
        for unit in units { _ = await unit.outcome }
        await queue.waitUntilIdle()
        #expect(queue.core.read { $0.footprint.lanes } == 0)
    }
}
