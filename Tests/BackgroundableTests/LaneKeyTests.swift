import Foundation
import Testing

@testable import Backgroundable

/// Lane keys of any `Hashable & Sendable` type: equal values of one type share a lane,
/// values of different types never do.
@Suite("Lane keys")
struct LaneKeyTests {
    /// A unit of `lane` that runs until `gate` opens; it signals `started` when it starts.
    private func gated(
        _ queue: BackgroundQueue, lane: any Hashable & Sendable, gate: Signal, started: Signal = Signal()
    ) -> AsyncTask {
        queue.add(.init(timeout: nil, lane: lane)) { unit in
            started.signal()
            Task {
                await gate.wait()
                unit.finish()
            }
        }
    }

    @Test func aUUIDLaneRunsItsUnitsOneAtATime() async {
        let (queue, _) = makeQueue()
        let account = UUID()
        let gate = Signal()
        let firstStarted = Signal()
        let first = gated(queue, lane: account, gate: gate, started: firstStarted)
        await firstStarted.wait()
        // The same value, made again: the same lane.
        let second = gated(queue, lane: UUID(uuidString: account.uuidString)!, gate: gate)
        #expect(!second.isExecuting)
        #expect(first.laneKey as? UUID == account && first.lane == nil)
        gate.signal()
        #expect(await first.outcome.kind == .finished)
        #expect(await second.outcome.kind == .finished)
    }

    @Test func valuesOfDifferentTypesAreDifferentLanes() async {
        let (queue, _) = makeQueue()
        let gate = Signal()
        let keys: [any Hashable & Sendable] = [1, UInt8(1), "1", Substring("1")]
        let started = keys.map { _ in Signal() }
        let units = zip(keys, started).map { gated(queue, lane: $0, gate: gate, started: $1) }
        // None waits behind another (or this would never return): each key is a lane.
        for signal in started { await signal.wait() }
        let sameInt = gated(queue, lane: 1, gate: gate)
        #expect(!sameInt.isExecuting)
        gate.signal()
        for unit in units + [sameInt] { #expect(await unit.outcome.kind == .finished) }
    }

    @Test func stringLanesReadBackAsBefore() {
        var options = AsyncTask.Options(lane: "uploads")
        #expect(options.lane as? String == "uploads")
        let unit = AsyncTask(options) { $0.finish() }
        #expect(unit.lane == "uploads" && unit.laneKey as? String == "uploads")
        options.lane = nil
        #expect(options.lane == nil)
        // Another setting keeps the lane.
        options.lane = 42
        options.retry = .fixed(maxAttempts: 2, delay: .zero)
        #expect(options.lane as? Int == 42)
    }
}
