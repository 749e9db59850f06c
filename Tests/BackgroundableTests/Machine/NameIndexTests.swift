import Testing

@testable import Backgroundable

@Suite("Machine: names")
struct NameIndexTests {
    /// The live members of `name`, in admission order.
    private func members(_ index: NameIndex, _ name: String) -> [Int32] {
        var slots: [Int32] = []
        var cursor = index.first(named: name) ?? -1
        while cursor >= 0 {
            slots.append(cursor)
            cursor = index.next(after: cursor)
        }
        return slots
    }

    @Test func eachPolicyMeetsTheLiveMembersOfItsName() {
        var index = NameIndex()
        #expect(index.decide("a", .drop) == .admit)
        index.insert(3, named: "a")
        index.insert(0, named: "a")
        index.insert(7, named: "b")
        #expect(index.decide("a", .ignore) == .admit)
        #expect(index.decide("a", .drop) == .drop)
        // A newcomer joins the newest member, and replaces them all from the first.
        #expect(index.decide("a", .join) == .join(primary: 0))
        #expect(index.last(named: "a") == 0 && index.last(named: "c") == nil)
        #expect(index.decide("a", .replace) == .replace(first: 3))
        #expect(members(index, "a") == [3, 0])
        #expect(index.decide("c", .replace) == .admit)
    }

    @Test func removingMembersKeepsTheOthersInOrderAndFreesTheName() {
        var index = NameIndex()
        for slot: Int32 in [2, 5, 1] { index.insert(slot, named: "a") }
        index.remove(5)
        #expect(members(index, "a") == [2, 1])
        index.remove(2)
        #expect(index.decide("a", .replace) == .replace(first: 1))
        #expect(index.decide("a", .join) == .join(primary: 1))
        // A slot without a name, and one removed twice, are no-ops.
        index.remove(4)
        index.remove(2)
        index.remove(1)
        #expect(!index.contains("a") && index.count == 0)
        // The freed group is reused for the next name.
        index.insert(9, named: "b")
        #expect(members(index, "b") == [9] && index.count == 1)
        index.removeAll()
        #expect(index.count == 0 && index.first(named: "b") == nil)
    }
}
