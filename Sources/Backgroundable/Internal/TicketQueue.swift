/// A FIFO of record handles whose entries may go stale: an entry names a slot and the
/// ticket of the record that held it when it was queued, so an entry whose record ended
/// (or whose slot was reused) is recognised and skipped instead of searched for and
/// removed. Removal is O(1) (nothing to do), popping is amortised O(1), and the stale
/// entries are compacted away as soon as they outnumber the live ones.
struct TicketQueue {
    /// The slot and the ticket of the admission it was queued for.
    struct Entry: Equatable {
        var slot: Int32
        var ticket: UInt64
    }

    private var entries: [Entry] = []
    private var head = 0

    var isEmpty: Bool { head == entries.count }
    /// Entries, stale ones included.
    var count: Int { entries.count - head }

    mutating func append(_ entry: Entry) {
        entries.append(entry)
    }

    /// The oldest entry, stale or not.
    var first: Entry? { head < entries.count ? entries[head] : nil }

    /// The entries, first to last.
    var elements: ArraySlice<Entry> { entries[head...] }

    mutating func removeFirst() {
        head += 1
        if head == entries.count {
            entries.removeAll(keepingCapacity: entries.count < 4096)
            head = 0
        } else if head >= 1024, head * 2 >= entries.count {
            entries.removeFirst(head)
            head = 0
        }
    }

    /// Drops every entry; keeps a small buffer for the next ones.
    mutating func removeAll() {
        entries.removeAll(keepingCapacity: entries.capacity <= 4096)
        head = 0
    }

    /// Keeps only the entries `isLive` accepts, in order.
    mutating func compact(_ isLive: (Entry) -> Bool) {
        entries.compact(from: head, isLive)
        head = 0
    }
}

/// A binary min-heap of deadlines, with entries that may go stale like
/// ``TicketQueue``'s: O(log n) to add and to pop, whatever the timeouts are. Equal
/// deadlines come out in ticket order (admission order).
struct DeadlineHeap {
    /// Ordered so that it takes 24 bytes (slot and attempt share the last word): the
    /// heap holds one entry per timed or delayed member.
    struct Entry {
        var deadline: Int64
        var ticket: UInt64
        var slot: Int32
        /// The member's attempt the deadline belongs to (start times: unused).
        var attempt: UInt8

        init(deadline: Int64, slot: Int32, ticket: UInt64, attempt: UInt8 = 0) {
            self.deadline = deadline
            self.ticket = ticket
            self.slot = slot
            self.attempt = attempt
        }

        func precedes(_ other: Entry) -> Bool {
            (deadline, ticket) < (other.deadline, other.ticket)
        }
    }

    private(set) var entries: [Entry] = []

    var count: Int { entries.count }
    var first: Entry? { entries.first }

    mutating func insert(_ entry: Entry) {
        entries.append(entry)
        var child = entries.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard entries[child].precedes(entries[parent]) else { break }
            entries.swapAt(child, parent)
            child = parent
        }
    }

    mutating func removeFirst() {
        let last = entries.removeLast()
        guard !entries.isEmpty else { return }
        entries[0] = last
        siftDown(0)
    }

    /// Keeps only the entries `isLive` accepts, and restores the heap order: O(n).
    mutating func compact(_ isLive: (Entry) -> Bool) {
        entries.compact(from: 0, isLive)
        for index in stride(from: entries.count / 2 - 1, through: 0, by: -1) {
            siftDown(index)
        }
    }

    mutating func removeAll() {
        entries = []
    }

    private mutating func siftDown(_ start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            guard left < entries.count else { return }
            var smallest = left
            if left + 1 < entries.count, entries[left + 1].precedes(entries[left]) {
                smallest = left + 1
            }
            guard entries[smallest].precedes(entries[parent]) else { return }
            entries.swapAt(parent, smallest)
            parent = smallest
        }
    }
}

extension Array {
    /// Keeps the elements from `start` on that `isIncluded` accepts, in order, moved to
    /// the front, in place: the buffer stays for the appends to come (a queue that
    /// compacts every few dozen starts would otherwise grow a new one each time), unless
    /// it is large and now mostly empty.
    fileprivate mutating func compact(from start: Int, _ isIncluded: (Element) -> Bool) {
        var kept = 0
        for index in start..<count where isIncluded(self[index]) {
            self[kept] = self[index]
            kept += 1
        }
        if capacity > 4096, kept * 4 < capacity {
            self = Array(self[..<kept])
        } else {
            removeSubrange(kept...)
        }
    }
}
