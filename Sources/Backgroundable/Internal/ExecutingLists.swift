/// Executing units, one FIFO list per distinct timeout.
///
/// Units start in clock order, so within one list — where every unit has the same
/// timeout — deadlines are already sorted: the earliest deadline of the queue is the
/// earliest head. Arming, disarming and finding the next deadline are O(1) with no
/// heap to maintain (a queue rarely uses more than a few distinct timeouts).
/// Guarded by the queue's lock.
struct ExecutingLists {
    /// Keyed by ``AsyncTask/timeoutNanoseconds`` (`Int64.min`: no timeout).
    private var lists: [(timeout: Int64, units: UnitList)] = []

    private mutating func index(for timeout: Int64) -> Int {
        if let index = lists.firstIndex(where: { $0.timeout == timeout }) { return index }
        lists.append((timeout, UnitList()))
        return lists.count - 1
    }

    /// Appends a unit that has just started; its ``QueueLinks/deadline`` must be set
    /// when it has a timeout.
    mutating func append(_ unit: AsyncTask) {
        lists[index(for: unit.timeoutNanoseconds)].units.append(unit)
    }

    mutating func remove(_ unit: AsyncTask) {
        lists[index(for: unit.timeoutNanoseconds)].units.remove(unit)
    }

    /// The earliest deadline of any executing unit, `nil` when none has a timeout.
    var earliestDeadline: Int64? {
        var earliest: Int64?
        for list in lists where list.timeout != .min {
            if let head = list.units.first, earliest.map({ head.links.deadline < $0 }) ?? true {
                earliest = head.links.deadline
            }
        }
        return earliest
    }

    /// The units whose deadline is at or before `now`.
    func expired(at now: Int64) -> [AsyncTask] {
        var expired: [AsyncTask] = []
        for list in lists where list.timeout != .min {
            var cursor = list.units.first
            while let unit = cursor, unit.links.deadline <= now {
                expired.append(unit)
                cursor = unit.links.next
            }
        }
        return expired
    }

    /// Every executing unit.
    var all: [AsyncTask] { lists.flatMap(\.units.all) }
}
