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

    /// A slot's place in its name's group; ``Groups/none`` and -1 for none.
    private struct Link {
        var group = Groups.none
        var previous: Int32 = -1
        var next: Int32 = -1
    }

    private var groups = Groups()
    /// By slot, as far as the highest slot that had a name.
    private var links: [Link] = []

    /// The live names.
    var count: Int { groups.count }

    func contains(_ name: String) -> Bool {
        groups.key(of: name) != nil
    }

    /// The first live member of `name`, in admission order; the others follow through
    /// ``next(after:)``.
    func first(named name: String) -> Int32? {
        groups.key(of: name).map { groups[$0].first }
    }

    /// The next live member of the same name as `slot`, or -1.
    func next(after slot: Int32) -> Int32 {
        links[Int(slot)].next
    }

    func decide(_ name: String, _ policy: UniquenessPolicy) -> Decision {
        guard let key = groups.key(of: name) else { return .admit }
        switch policy.kind {
        case .ignore: return .admit
        case .drop: return .drop
        case .join: return .join(primary: groups[key].last)
        case .replace: return .replace(first: groups[key].first)
        }
    }

    /// `slot` is the newest live member of `name`.
    mutating func insert(_ slot: Int32, named name: String) {
        while links.count <= Int(slot) { links.append(Link()) }
        if let key = groups.key(of: name) {
            var group = groups[key]
            links[Int(group.last)].next = slot
            links[Int(slot)] = Link(group: key, previous: group.last)
            group.last = slot
            group.count += 1
            groups[key] = group
            return
        }
        links[Int(slot)] = Link(group: groups.add(Group(first: slot, last: slot, count: 1), named: name))
    }

    /// `slot` no longer counts for its name (if it had one).
    mutating func remove(_ slot: Int32) {
        guard Int(slot) < links.count else { return }
        let link = links[Int(slot)]
        guard link.group != Groups.none else { return }
        links[Int(slot)] = Link()
        if link.previous >= 0 { links[Int(link.previous)].next = link.next }
        if link.next >= 0 { links[Int(link.next)].previous = link.previous }
        var group = groups[link.group]
        group.count -= 1
        if group.count == 0 {
            groups.remove(link.group)
            return
        }
        if group.first == slot { group.first = link.next }
        if group.last == slot { group.last = link.previous }
        groups[link.group] = group
    }

    /// Forgets every name (the queue is idle: every member left, so every link is
    /// clear already); keeps a small link buffer for the next ones.
    mutating func removeAll() {
        groups = Groups()
        if links.count > 64 { links = [] }
    }

    /// The groups, and how a link names its group: by a 4-byte number into a table, so
    /// that a link takes 12 bytes; in a build with `-DBACKGROUNDABLE_PLAIN_LAYOUT`, by
    /// its name (a link takes 24 bytes), the groups in a dictionary by name.
    private struct Groups {
        #if BACKGROUNDABLE_PLAIN_LAYOUT
            typealias Key = String?
            static let none: Key = nil

            private var byName: [String: Group] = [:]

            var count: Int { byName.count }

            /// (`Key?` is `String??`: `.none` is no group, never a group keyed `nil`.)
            func key(of name: String) -> Key? {
                guard byName[name] != nil else { return .none }
                return name
            }

            subscript(key: Key) -> Group {
                get { byName[key!]! }
                set { byName[key!] = newValue }
            }

            mutating func add(_ group: Group, named name: String) -> Key {
                byName[name] = group
                return name
            }

            mutating func remove(_ key: Key) {
                byName[key!] = nil
            }
        #else
            typealias Key = Int32
            static let none: Key = -1

            /// The number of each live name's group.
            private var numbers: [String: Int32] = [:]
            /// By number; a free number is reused.
            private var table: [(name: String, group: Group)] = []
            private var freeNumbers: [Int32] = []

            var count: Int { numbers.count }

            func key(of name: String) -> Key? {
                numbers[name]
            }

            subscript(key: Key) -> Group {
                get { table[Int(key)].group }
                set { table[Int(key)].group = newValue }
            }

            mutating func add(_ group: Group, named name: String) -> Key {
                let number: Int32
                if let free = freeNumbers.popLast() {
                    number = free
                    table[Int(number)] = (name, group)
                } else {
                    number = Int32(table.count)
                    table.append((name, group))
                }
                numbers[name] = number
                return number
            }

            mutating func remove(_ key: Key) {
                numbers[table[Int(key)].name] = nil
                table[Int(key)].name = ""
                freeNumbers.append(key)
            }
        #endif
    }
}
