/// Live units by name, for O(1) deduplication. Guarded by the queue's lock.
struct NameIndex {
    /// Nearly every name is held by one live unit; only ``UniquenessPolicy/ignore``
    /// units can share one, so the common case needs no array.
    private enum Entry {
        case one(AsyncTask)
        case many([AsyncTask])
    }

    private var entries: [String: Entry] = [:]

    func contains(_ name: String) -> Bool {
        entries[name] != nil
    }

    func units(named name: String) -> [AsyncTask] {
        switch entries[name] {
        case nil: []
        case .one(let unit): [unit]
        case .many(let units): units
        }
    }

    mutating func insert(_ unit: AsyncTask, name: String) {
        switch entries[name] {
        case nil: entries[name] = .one(unit)
        case .one(let other): entries[name] = .many([other, unit])
        case .many(var units):
            entries[name] = nil
            units.append(unit)
            entries[name] = .many(units)
        }
    }

    mutating func remove(_ unit: AsyncTask, name: String) {
        switch entries[name] {
        case .one(let other) where other === unit:
            entries[name] = nil
        case .many(var units):
            entries[name] = nil
            units.removeAll { $0 === unit }
            entries[name] = units.count == 1 ? .one(units[0]) : .many(units)
        default:
            break
        }
    }
}
