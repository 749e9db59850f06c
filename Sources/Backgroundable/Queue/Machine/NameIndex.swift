/// The live members of each name, for the uniqueness policies: what a newcomer of a name
/// meets (``decide(_:_:)``). A member counts from its admission until the queue asks it
/// to end or it leaves, so ending members are not in it.
///
/// Members are named by slot. The index keeps its own links between the slots of one
/// name, in admission order, so it needs nothing of the machine's records.
struct NameIndex {
    /// What the uniqueness policy makes of a newcomer.
    enum Decision: Equatable {
        /// No live member has its name, or the policy ignores them: admit it.
        case admit
        /// A live member has its name: turn it away (``UniquenessPolicy/drop``).
        case drop
        /// It joins the newest live member of its name (``UniquenessPolicy/join``).
        case join(primary: Int32)
        /// Every live member of its name ends (the first one here, the others through
        /// ``next(after:)``), then it is admitted (``UniquenessPolicy/replace``).
        case replace(first: Int32)
    }

    /// The live members of one name: the first and last, linked through ``links``.
    private struct Group {
        var name: String
        var first: Int32
        var last: Int32
        var count: Int
    }

    /// A slot's place in its name's group; -1 for none.
    private struct Link {
        var group: Int32 = -1
        var previous: Int32 = -1
        var next: Int32 = -1
    }

    /// The group of each live name, by name.
    private var groupsByName: [String: Int32] = [:]
    /// The groups, by number; a free number is reused.
    private var groups: [Group] = []
    private var freeGroups: [Int32] = []
    /// By slot, as far as the highest slot that had a name.
    private var links: [Link] = []

    /// The live names.
    var count: Int { groupsByName.count }

    func contains(_ name: String) -> Bool {
        groupsByName[name] != nil
    }

    /// The first live member of `name`, in admission order; the others follow through
    /// ``next(after:)``.
    func first(named name: String) -> Int32? {
        groupsByName[name].map { groups[Int($0)].first }
    }

    /// The next live member of the same name as `slot`, or -1.
    func next(after slot: Int32) -> Int32 {
        links[Int(slot)].next
    }

    func decide(_ name: String, _ policy: UniquenessPolicy) -> Decision {
        guard let number = groupsByName[name] else { return .admit }
        switch policy.kind {
        case .ignore: return .admit
        case .drop: return .drop
        case .join: return .join(primary: groups[Int(number)].last)
        case .replace: return .replace(first: groups[Int(number)].first)
        }
    }

    /// `slot` is the newest live member of `name`.
    mutating func insert(_ slot: Int32, named name: String) {
        while links.count <= Int(slot) { links.append(Link()) }
        if let number = groupsByName[name] {
            let last = groups[Int(number)].last
            links[Int(last)].next = slot
            links[Int(slot)] = Link(group: number, previous: last)
            groups[Int(number)].last = slot
            groups[Int(number)].count += 1
            return
        }
        let group = Group(name: name, first: slot, last: slot, count: 1)
        let number: Int32
        if let free = freeGroups.popLast() {
            number = free
            groups[Int(number)] = group
        } else {
            number = Int32(groups.count)
            groups.append(group)
        }
        groupsByName[name] = number
        links[Int(slot)] = Link(group: number)
    }

    /// `slot` no longer counts for its name (if it had one).
    mutating func remove(_ slot: Int32) {
        guard Int(slot) < links.count else { return }
        let link = links[Int(slot)]
        guard link.group >= 0 else { return }
        links[Int(slot)] = Link()
        if link.previous >= 0 { links[Int(link.previous)].next = link.next }
        if link.next >= 0 { links[Int(link.next)].previous = link.previous }
        let number = Int(link.group)
        groups[number].count -= 1
        if groups[number].count == 0 {
            groupsByName[groups[number].name] = nil
            groups[number].name = ""
            freeGroups.append(link.group)
            return
        }
        if groups[number].first == slot { groups[number].first = link.next }
        if groups[number].last == slot { groups[number].last = link.previous }
    }

    /// Forgets every name (the queue is idle: every member left, so every link is
    /// clear already); keeps a small link buffer for the next ones.
    mutating func removeAll() {
        groupsByName = [:]
        groups = []
        freeGroups = []
        if links.count > 64 { links = [] }
    }
}
