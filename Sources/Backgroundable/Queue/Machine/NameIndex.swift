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
        var first: Int32
        var last: Int32
        var count: Int
    }

    /// A slot's place in its name's group; `nil` and -1 for none.
    private struct Link {
        var name: String?
        var previous: Int32 = -1
        var next: Int32 = -1
    }

    /// The group of each live name.
    private var groups: [String: Group] = [:]
    /// By slot, as far as the highest slot that had a name.
    private var links: [Link] = []

    /// The live names.
    var count: Int { groups.count }

    func contains(_ name: String) -> Bool {
        groups[name] != nil
    }

    /// The first live member of `name`, in admission order; the others follow through
    /// ``next(after:)``.
    func first(named name: String) -> Int32? {
        groups[name]?.first
    }

    /// The newest live member of `name`.
    func last(named name: String) -> Int32? {
        groups[name]?.last
    }

    /// The next live member of the same name as `slot`, or -1.
    func next(after slot: Int32) -> Int32 {
        links[Int(slot)].next
    }

    func decide(_ name: String, _ policy: UniquenessPolicy) -> Decision {
        guard let group = groups[name] else { return .admit }
        switch policy.kind {
        case .ignore: return .admit
        case .drop: return .drop
        case .join: return .join(primary: group.last)
        case .replace: return .replace(first: group.first)
        }
    }

    /// `slot` is the newest live member of `name`.
    mutating func insert(_ slot: Int32, named name: String) {
        while links.count <= Int(slot) { links.append(Link()) }
        guard var group = groups[name] else {
            groups[name] = Group(first: slot, last: slot, count: 1)
            links[Int(slot)] = Link(name: name)
            return
        }
        links[Int(group.last)].next = slot
        links[Int(slot)] = Link(name: name, previous: group.last)
        group.last = slot
        group.count += 1
        groups[name] = group
    }

    /// `slot` no longer counts for its name (if it had one): `true` when it counted.
    @discardableResult
    mutating func remove(_ slot: Int32) -> Bool {
        guard Int(slot) < links.count else { return false }
        let link = links[Int(slot)]
        guard let name = link.name else { return false }
        links[Int(slot)] = Link()
        if link.previous >= 0 { links[Int(link.previous)].next = link.next }
        if link.next >= 0 { links[Int(link.next)].previous = link.previous }
        guard var group = groups[name], group.count > 1 else {
            groups[name] = nil
            return true
        }
        group.count -= 1
        if group.first == slot { group.first = link.next }
        if group.last == slot { group.last = link.previous }
        groups[name] = group
        return true
    }

    /// Forgets every name (the queue is idle: every member left, so every link is
    /// clear already); keeps a small link buffer for the next ones.
    mutating func removeAll() {
        groups = [:]
        if links.count > 64 { links = [] }
    }
}
