/// Live units by name, for O(1) deduplication: one probe sequence to check and
/// register, one to remove. Guarded by the queue's lock.
///
/// An open-addressing hash table (linear probing, backward-shift deletion, at most
/// half full) of slots holding a name's hash and its units. The units carry
/// their own name, so the table stores no strings: a probe compares integers and
/// reads a unit only when the hashes match, and growing the table moves slots without
/// hashing a name again or touching a unit. The cost of a lookup stays flat however
/// many names are live.
struct NameIndex {
    /// The units registered under one name. Nearly every name is held by one unit;
    /// only ``UniquenessPolicy/ignore`` units can share one, so the common case needs
    /// no array.
    enum Entry {
        case none
        case one(AsyncTask)
        case many([AsyncTask])

        var units: [AsyncTask] {
            switch self {
            case .none: []
            case .one(let unit): [unit]
            case .many(let units): units
            }
        }

        func contains(where predicate: (AsyncTask) -> Bool) -> Bool {
            switch self {
            case .none: false
            case .one(let unit): predicate(unit)
            case .many(let units): units.contains(where: predicate)
            }
        }

        mutating func append(_ unit: AsyncTask) {
            switch self {
            case .none: self = .one(unit)
            case .one(let other): self = .many([other, unit])
            case .many(var units):
                self = .none
                units.append(unit)
                self = .many(units)
            }
        }

        /// `self` without `unit`: `.none` once the last one is gone.
        mutating func remove(_ unit: AsyncTask) {
            switch self {
            case .none:
                break
            case .one(let other):
                if other === unit { self = .none }
            case .many(var units):
                self = .none
                units.removeAll { $0 === unit }
                self = units.count == 1 ? .one(units[0]) : .many(units)
            }
        }

        /// The name the units of a non-empty entry share.
        var name: String? {
            switch self {
            case .none: nil
            case .one(let unit): unit.name
            case .many(let units): units.first?.name
            }
        }
    }

    private struct Slot {
        var hash = 0
        var entry = Entry.none
    }

    /// A power of two long, or empty until the first name arrives.
    private var slots: [Slot] = []
    private var occupied = 0

    /// Runs `body` on the entry for `name`, created empty if needed, in place: one
    /// probe sequence. An entry the body leaves empty is removed.
    mutating func withEntry<Result>(_ name: String, _ body: (inout Entry) -> Result) -> Result {
        if (occupied + 1) * 2 > slots.count {
            grow()
        }
        let hash = name.hashValue
        let index = probe(name, hash: hash)
        let wasEmpty = isEmpty(index)
        let result = body(&slots[index].entry)
        switch (wasEmpty, isEmpty(index)) {
        case (true, false):
            slots[index].hash = hash
            occupied += 1
        case (false, true):
            vacate(index)
        default:
            break
        }
        return result
    }

    /// Unregisters `unit` from `name`; nothing happens when it is not registered.
    mutating func remove(_ unit: AsyncTask, name: String) {
        guard !slots.isEmpty else { return }
        let index = probe(name, hash: name.hashValue)
        guard !isEmpty(index) else { return }
        slots[index].entry.remove(unit)
        if isEmpty(index) {
            vacate(index)
        }
    }

    // MARK: Table mechanics

    private var mask: Int { slots.count - 1 }

    private func isEmpty(_ index: Int) -> Bool {
        if case .none = slots[index].entry { return true }
        return false
    }

    /// The slot of `name`, or the empty slot that ends its probe sequence.
    private func probe(_ name: String, hash: Int) -> Int {
        var index = hash & mask
        while !isEmpty(index) {
            if slots[index].hash == hash, slots[index].entry.name == name {
                return index
            }
            index = (index + 1) & mask
        }
        return index
    }

    /// Empties the slot at `hole` and shifts later members of its cluster back, so
    /// that every probe sequence still reaches its slot without tombstones.
    private mutating func vacate(_ hole: Int) {
        var hole = hole
        var next = (hole + 1) & mask
        while !isEmpty(next) {
            let home = slots[next].hash & mask
            // The slot at `next` may fill the hole when its home is not after the hole
            // (cyclically): its probe sequence passes through the hole.
            if (next - home) & mask >= (next - hole) & mask {
                slots.swapAt(hole, next)
                hole = next
            }
            next = (next + 1) & mask
        }
        occupied -= 1
    }

    /// Doubles the table (16 slots at first), moving every entry to its new slot.
    private mutating func grow() {
        var old: [Slot] = Array(repeating: Slot(), count: max(16, slots.count * 2))
        swap(&old, &slots)
        for index in old.indices {
            var slot = Slot()
            swap(&slot, &old[index])
            if case .none = slot.entry { continue }
            var target = slot.hash & mask
            while !isEmpty(target) {
                target = (target + 1) & mask
            }
            slots[target] = slot
        }
    }
}
