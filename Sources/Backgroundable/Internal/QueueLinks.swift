/// Where a unit sits inside its queue, stored in the unit itself so that every
/// queue operation is O(1) and costs no allocation. Guarded by the queue's lock.
struct QueueLinks {
    enum Location: UInt8 {
        /// Not in any queue structure.
        case none
        /// Admitted by a batch that is still being linked.
        case arriving
        /// In a ready list, waiting for a slot.
        case ready
        /// A member of a sequential group, waiting for its predecessor.
        case blocked
        /// In the executing list.
        case executing
    }

    /// Neighbours in a ready list or an executing list.
    var next: AsyncTask?
    unowned(unsafe) var previous: AsyncTask?
    /// Neighbours in a sequential group: `successor` starts after this unit ended.
    /// The strong `successor` keeps blocked members alive; `predecessor` is valid for
    /// as long as the predecessor holds this unit.
    var successor: AsyncTask?
    unowned(unsafe) var predecessor: AsyncTask?
    /// One word for two uses that never overlap (the unit stays one 160-byte
    /// allocation): ``deadline`` once the unit executes, ``inboxNext`` before its queue
    /// has absorbed it.
    private var word: Int64 = 0
    /// When an executing unit with a timeout times out (see ``ContinuousNanoseconds``).
    var deadline: Int64 {
        get { word }
        set { word = newValue }
    }
    /// While the unit waits in its queue's ``Inbox``: the address of the next older unit
    /// there, 0 for none. Only an address, never a reference: the pusher must not touch
    /// a unit that the queue may already have taken and released.
    var inboxNext: UInt {
        get { UInt(bitPattern: Int(word)) }
        set { word = Int64(Int(bitPattern: newValue)) }
    }
    /// Last, so that it packs with the unit's small fields after the links.
    var location = Location.none
}

/// An intrusive FIFO list of units threaded through ``QueueLinks/next`` and
/// ``QueueLinks/previous``: O(1) append, remove and pop.
struct UnitList {
    private(set) var first: AsyncTask?
    private unowned(unsafe) var last: AsyncTask?

    var isEmpty: Bool { first == nil }

    mutating func append(_ unit: AsyncTask) {
        unit.links.next = nil
        unit.links.previous = last
        if let last {
            last.links.next = unit
        } else {
            first = unit
        }
        last = unit
    }

    mutating func remove(_ unit: AsyncTask) {
        let next = unit.links.next
        let previous = unit.links.previous
        if let previous {
            previous.links.next = next
        } else {
            first = next
        }
        if let next {
            next.links.previous = previous
        } else {
            last = previous
        }
        unit.links.next = nil
        unit.links.previous = nil
    }

    mutating func popFirst() -> AsyncTask? {
        guard let unit = first else { return nil }
        remove(unit)
        return unit
    }

    /// Every unit in order.
    var all: [AsyncTask] {
        var units: [AsyncTask] = []
        var cursor = first
        while let unit = cursor {
            units.append(unit)
            cursor = unit.links.next
        }
        return units
    }
}

/// Ready units by priority: higher priorities first, FIFO among equals. Usually holds
/// one or two levels, so a linear walk of the levels is the fastest lookup.
struct ReadyLists {
    private var levels: [(priority: UInt8, units: UnitList)] = []

    var isEmpty: Bool { levels.allSatisfy(\.units.isEmpty) }

    /// Units without a priority rank as `medium`, like a `Task` created without one.
    private static let defaultKey = TaskPriority.medium.rawValue

    private static func key(_ unit: AsyncTask) -> UInt8 {
        unit.priorityRawValue == 0 ? defaultKey : unit.priorityRawValue
    }

    mutating func append(_ unit: AsyncTask) {
        let key = Self.key(unit)
        var index = 0
        while index < levels.count, levels[index].priority > key {
            index += 1
        }
        if index == levels.count || levels[index].priority != key {
            levels.insert((key, UnitList()), at: index)
        }
        levels[index].units.append(unit)
    }

    mutating func remove(_ unit: AsyncTask) {
        let key = Self.key(unit)
        for index in levels.indices where levels[index].priority == key {
            levels[index].units.remove(unit)
            return
        }
    }

    /// The unit that starts next, without removing it.
    var first: AsyncTask? {
        for level in levels {
            if let unit = level.units.first { return unit }
        }
        return nil
    }

    /// Every ready unit, in start order.
    var all: [AsyncTask] { levels.flatMap(\.units.all) }
}
