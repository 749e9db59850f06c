@testable import Backgroundable
import Testing

/// The name index is an open-addressing table with backward-shift deletion: these
/// tests compare it with a plain dictionary through long random sequences of
/// registrations and removals, so that clusters, wrap-around at the end of the table,
/// growth and shifted deletions are all exercised.
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
}
