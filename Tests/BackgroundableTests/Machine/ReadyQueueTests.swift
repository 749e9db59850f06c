import Foundation
import Testing

@testable import Backgroundable

@Suite("Machine: ready order and lanes")
struct ReadyQueueTests {
    private func entry(_ slot: Int32) -> TicketQueue.Entry {
        TicketQueue.Entry(slot: slot, ticket: UInt64(slot) + 1)
    }

    private func drain(_ queue: inout ReadyQueue) -> [Int32] {
        var slots: [Int32] = []
        while let (entry, _) = queue.popFirst() { slots.append(entry.slot) }
        return slots
    }

    @Test func higherRanksFirstThenFirstComeFirstServed() {
        var queue = ReadyQueue()
        queue.insert(entry(0), rank: 2)
        queue.insert(entry(1), rank: 5)
        queue.insert(entry(2), rank: 2)
        queue.insert(entry(3), rank: 5)
        queue.insert(entry(4), rank: 9)
        #expect(queue.count == 5 && queue.entryCount == 5)
        #expect(queue.first?.entry.slot == 4 && queue.first?.rank == 9)
        #expect(drain(&queue) == [4, 1, 3, 0, 2])
        // Popping leaves the count to the caller: the members are ready until they start.
        #expect(queue.count == 5 && queue.entryCount == 0)
    }

    @Test func staleEntriesAreCompactedAndEmptyLevelsDropped() {
        var queue = ReadyQueue()
        for slot: Int32 in 0..<6 { queue.insert(entry(slot), rank: slot < 3 ? 1 : 4) }
        // Slots 3, 4 and 5 left (say, escalated elsewhere or ended): their entries are stale.
        for _ in 0..<3 { queue.memberLeft() }
        queue.compact { entry, _ in entry.slot < 3 }
        #expect(queue.count == 3 && queue.entryCount == 3)
        #expect(drain(&queue) == [0, 1, 2])
        queue.removeAll()
        #expect(queue.count == 0 && queue.first == nil)
    }

    @Test func aFIFOCompactedAfterPopsKeepsItsLiveEntriesInOrderAndGoesOn() {
        var fifo = TicketQueue()
        for slot: Int32 in 0..<10 { fifo.append(entry(slot)) }
        for _ in 0..<3 { fifo.removeFirst() }
        // In place, from the head on: odd slots are stale.
        fifo.compact { $0.slot.isMultiple(of: 2) }
        #expect(fifo.elements.map(\.slot) == [4, 6, 8])
        fifo.append(entry(10))
        fifo.removeFirst()
        #expect(fifo.elements.map(\.slot) == [6, 8, 10])
        fifo.compact { _ in false }
        #expect(fifo.isEmpty && fifo.first == nil)
    }

    @Test func aLaneIsKnownByItsTail() {
        let (a, b) = (LaneKey("a"), LaneKey("b"))
        var lanes = Lanes()
        #expect(lanes.join(a, 0) == nil)
        #expect(lanes.join(a, 1) == 0)
        #expect(lanes.join(b, 2) == nil)
        #expect(lanes.tail(of: a) == 1 && lanes.count == 4)
        // The tail leaves while blocked behind 0: 0 is the tail again.
        lanes.leave(1, predecessor: 0)
        #expect(lanes.tail(of: a) == 0)
        // A member that is not a tail leaves nothing to update.
        lanes.leave(7, predecessor: -1)
        lanes.leave(0, predecessor: -1)
        lanes.leave(2, predecessor: -1)
        #expect(lanes.tail(of: a) == nil && lanes.count == 0)
    }

    @Test func equalKeysOfOneTypeShareALaneAndOtherTypesNever() {
        let id = UUID()
        #expect(LaneKey(id) == LaneKey(UUID(uuidString: id.uuidString)!))
        #expect(LaneKey("1") != LaneKey(1))
        #expect(LaneKey(1) != LaneKey(UInt8(1)))
        #expect(LaneKey(1) == LaneKey(1) && LaneKey(1).hashValue == LaneKey(1).hashValue)
        var lanes = Lanes()
        _ = lanes.join(LaneKey(7), 0)
        #expect(lanes.join(LaneKey(Int64(7)), 1) == nil)
        #expect(lanes.join(LaneKey(7), 2) == 0)
    }
}
