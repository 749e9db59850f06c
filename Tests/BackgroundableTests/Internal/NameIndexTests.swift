@testable import Backgroundable
import Testing

/// The name index is an open-addressing table with backward-shift deletion whose
/// slots keep half of each name's hash: these tests compare it with a plain dictionary
/// through long random sequences of registrations and removals, so that clusters,
/// wrap-around at the end of the table, growth, shifted deletions and reused entry
/// positions are all exercised, and check that names sharing a slot's hash half stay
/// apart.
@Suite("Name index")
struct NameIndexTests {
    private func unit(_ name: String) -> AsyncTask {
        AsyncTask(name: name) { $0.finish() }
    }

    private func units(_ name: String, in index: inout NameIndex) -> [ObjectIdentifier] {
        index.withEntry(name) { $0.units }.map(ObjectIdentifier.init)
    }

    @Test func matchesADictionaryThroughRandomRegistrationsAndRemovals() {
        var random = SplitMix64(seed: 0x6E61_6D65)
        let names = (0..<48).map { "name-\($0)" }
        var index = NameIndex()
        var model: [String: [AsyncTask]] = [:]

        for step in 0..<20_000 {
            let name = random.pick(names)
            // Grow towards every name being live, then drain, then grow again.
            let registering = (step / 2_000).isMultiple(of: 2) ? random.chance(70) : random.chance(30)
            if registering {
                let added = unit(name)
                index.withEntry(name) { $0.append(added) }
                model[name, default: []].append(added)
            } else if let live = model[name], !live.isEmpty {
                let removed = random.pick(live)
                index.remove(removed, name: name)
                model[name]!.removeAll { $0 === removed }
            }
            if step.isMultiple(of: 97) {
                for name in names {
                    #expect(
                        units(name, in: &index) == (model[name] ?? []).map(ObjectIdentifier.init),
                        "step \(step), \(name)")
                }
            }
        }
    }

    @Test func removingAnUnregisteredUnitChangesNothing() {
        var index = NameIndex()
        let registered = unit("a")
        index.withEntry("a") { $0.append(registered) }
        index.remove(unit("a"), name: "a")
        index.remove(unit("b"), name: "b")
        #expect(units("a", in: &index) == [ObjectIdentifier(registered)])
        #expect(units("b", in: &index).isEmpty)
    }

    @Test func anEntryLeftEmptyIsNotKept() {
        var index = NameIndex()
        let registered = unit("a")
        index.withEntry("a") { $0.append(registered) }
        index.withEntry("a") { $0 = .none }
        #expect(units("a", in: &index).isEmpty)
        // The slot is free again: the name can be registered anew.
        index.withEntry("a") { $0.append(registered) }
        #expect(units("a", in: &index) == [ObjectIdentifier(registered)])
    }

    @Test func namesWhoseSlotsKeepTheSameHashHalfStayApart() throws {
        // Hashes are seeded per process, so find two such names here: among 2¹⁸ names
        // about eight pairs share the low 32 bits of their hash.
        let (first, second) = try #require(namesSharingTheirHashHalf())
        var index = NameIndex()
        let firstUnit = unit(first)
        let secondUnit = unit(second)
        index.withEntry(first) { $0.append(firstUnit) }
        index.withEntry(second) { $0.append(secondUnit) }
        #expect(units(first, in: &index) == [ObjectIdentifier(firstUnit)])
        #expect(units(second, in: &index) == [ObjectIdentifier(secondUnit)])

        index.remove(firstUnit, name: first)
        #expect(units(first, in: &index).isEmpty)
        #expect(units(second, in: &index) == [ObjectIdentifier(secondUnit)])
    }

    private func namesSharingTheirHashHalf() -> (String, String)? {
        var seen: [UInt32: String] = [:]
        for number in 0..<(1 << 18) {
            let name = "name-\(number)"
            if let other = seen.updateValue(name, forKey: UInt32(truncatingIfNeeded: name.hashValue)) {
                return (other, name)
            }
        }
        return nil
    }
}
