/// Live units by name, for O(1) deduplication: one probe sequence to check and
/// register, one to remove. Guarded by the queue's lock.
///
/// `entries` holds each registered name's units with the name's hash; positions freed
/// when a name goes away are reused. `slots` is an open-addressing
/// table (linear probing, backward-shift deletion, at most half full) of 8-byte slots,
/// each packing the low half of a name's hash with the position of its entry.
///
/// A lookup reads one random place: the table. It touches the entry only when the
/// hash halves match, and a unit only when the full hashes match too. Keeping the
/// randomly read part to 8 bytes a slot is what keeps it in cache when many names are
/// live, while every other unit written streams through the cache. The units carry
/// their own names, so nothing here stores a string, and growing the table moves slots
/// without reading an entry or hashing a name again. The cost of a lookup stays flat
/// however many names are live.
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

    private struct Registered {
        var hash: Int
        var entry: Entry
    }

    private var entries: [Registered] = []
    /// Positions in `entries` whose name went away, reused before `entries` grows.
    private var freePositions: [Int] = []
    /// A power of two long, or empty until the first name arrives. 0 is an empty slot;
    /// see ``slot(hash:position:)``.
    private var slots: [UInt64] = []
    private var occupied = 0

    /// Runs `body` on the entry for `name`, created empty if needed, in place: one
    /// probe sequence. An entry the body leaves empty is removed.
    mutating func withEntry<Result>(_ name: String, _ body: (inout Entry) -> Result) -> Result {
        if (occupied + 1) * 2 > slots.count {
            grow()
        }
        let hash = name.hashValue
        let (index, found) = probe(name, hash: hash)
        if let position = found {
            let result = body(&entries[position].entry)
            if case .none = entries[position].entry {
                vacate(index, position: position)
            }
            return result
        }
        // Registered in place, so that the body's changes need no copy.
        let position = freePositions.popLast() ?? entries.count
        if position == entries.count {
            entries.append(Registered(hash: hash, entry: .none))
        } else {
            entries[position].hash = hash
        }
        let result = body(&entries[position].entry)
        if case .none = entries[position].entry {
            recycle(position)
        } else {
            slots[index] = Self.slot(hash: hash, position: position)
            occupied += 1
        }
        return result
    }

    /// Unregisters `unit` from `name`; nothing happens when it is not registered.
    mutating func remove(_ unit: AsyncTask, name: String) {
        guard !slots.isEmpty else { return }
        let (index, found) = probe(name, hash: name.hashValue)
        guard let position = found else { return }
        entries[position].entry.remove(unit)
        if case .none = entries[position].entry {
            vacate(index, position: position)
        }
    }

    // MARK: Table mechanics

    private var mask: Int { slots.count - 1 }

    /// A slot: the low 32 bits of the hash above the entry's position plus one, so
    /// that no occupied slot is 0. The hash half is the slot's home too, as long as
    /// the table has at most 2³² slots.
    private static func slot(hash: Int, position: Int) -> UInt64 {
        UInt64(UInt32(truncatingIfNeeded: hash)) << 32 | UInt64(position + 1)
    }

    private func home(of slot: UInt64) -> Int {
        Int(truncatingIfNeeded: slot >> 32) & mask
    }

    /// The slot of `name` and the position of its entry, or the empty slot that ends
    /// its probe sequence and `nil`.
    private func probe(_ name: String, hash: Int) -> (index: Int, position: Int?) {
        let hashHalf = UInt64(UInt32(truncatingIfNeeded: hash))
        var index = hash & mask
        while case let slot = slots[index], slot != 0 {
            if slot >> 32 == hashHalf {
                let position = Int(truncatingIfNeeded: slot & 0xFFFF_FFFF) - 1
                if entries[position].hash == hash, entries[position].entry.name == name {
                    return (index, position)
                }
            }
            index = (index + 1) & mask
        }
        return (index, nil)
    }

    /// Frees the entry at `position` and empties the slot at `hole`, shifting later
    /// members of its cluster back, so that every probe sequence still reaches its
    /// slot without tombstones.
    private mutating func vacate(_ hole: Int, position: Int) {
        occupied -= 1
        recycle(position)
        var hole = hole
        slots[hole] = 0
        var next = (hole + 1) & mask
        while slots[next] != 0 {
            // The slot at `next` may fill the hole when its home is not after the hole
            // (cyclically): its probe sequence passes through the hole.
            if (next - home(of: slots[next])) & mask >= (next - hole) & mask {
                slots.swapAt(hole, next)
                hole = next
            }
            next = (next + 1) & mask
        }
    }

    /// Makes the empty entry at `position` available again.
    private mutating func recycle(_ position: Int) {
        if occupied == 0 {
            // Start again from the front, so that new entries are written in order.
            entries.removeAll(keepingCapacity: true)
            freePositions.removeAll(keepingCapacity: true)
        } else {
            freePositions.append(position)
        }
    }

    /// Doubles the table (16 slots at first), moving every slot to its new place.
    private mutating func grow() {
        let old = slots
        slots = Array(repeating: 0, count: max(16, old.count * 2))
        precondition(slots.count <= 1 << 32, "NameIndex: more than 2³¹ live names")
        for slot in old where slot != 0 {
            var target = home(of: slot)
            while slots[target] != 0 {
                target = (target + 1) & mask
            }
            slots[target] = slot
        }
    }
}
