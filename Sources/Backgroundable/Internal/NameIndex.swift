/// Live units by name, for O(1) deduplication: one hash lookup to check and add, one
/// to remove. Guarded by the queue's lock.
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
    }

    private var entries: [String: Entry] = [:]

    /// Runs `body` on the entry for `name`, created empty if needed, in place: one
    /// hash lookup. The body must leave a unit in the entry unless it was there before.
    mutating func withEntry<Result>(_ name: String, _ body: (inout Entry) -> Result) -> Result {
        body(&entries[name, default: .none])
    }

    mutating func remove(_ unit: AsyncTask, name: String) {
        guard let index = entries.index(forKey: name) else { return }
        switch entries.values[index] {
        case .one(let other) where other === unit:
            entries.remove(at: index)
        case .many(var units):
            entries.values[index] = .none
            units.removeAll { $0 === unit }
            entries.values[index] = units.count == 1 ? .one(units[0]) : .many(units)
        default:
            break
        }
    }
}
