/// The ready members in start order: by rank, highest first, and first come, first
/// served within a rank.
///
/// Entries may go stale (their member left, started, or was escalated to another rank):
/// only the machine's records can tell, so the machine skips them as it takes entries
/// (``popFirst()``) and counts the ready members in and out itself (``count``). Empty
/// levels stay, with their buffers, for the next members of their rank: there are at
/// most as many as distinct priorities in use.
struct ReadyQueue {
    private var levels: [(rank: UInt8, queue: TicketQueue)] = []

    /// The ready members, stale entries excluded.
    private(set) var count = 0

    /// Entries held, stale ones included.
    var entryCount: Int {
        var total = 0
        for index in levels.indices { total += levels[index].queue.count }
        return total
    }

    /// A member of `rank` became ready: it starts after every one of its rank before it.
    mutating func insert(_ entry: TicketQueue.Entry, rank: UInt8) {
        var index = 0
        while index < levels.count, levels[index].rank > rank { index += 1 }
        if index == levels.count || levels[index].rank != rank {
            levels.insert((rank, TicketQueue()), at: index)
        }
        levels[index].queue.append(entry)
        count += 1
    }

    /// A ready member stopped being ready (it starts, leaves, or moves to another rank);
    /// its entry, if still here, is stale from now on.
    mutating func memberLeft() {
        count -= 1
    }

    /// The first entry (highest rank, oldest), stale or not, and its rank.
    var first: (entry: TicketQueue.Entry, rank: UInt8)? {
        for index in levels.indices {
            if let entry = levels[index].queue.first { return (entry, levels[index].rank) }
        }
        return nil
    }

    /// Takes out the first entry, stale or not, and returns it with its rank.
    mutating func popFirst() -> (entry: TicketQueue.Entry, rank: UInt8)? {
        for index in levels.indices {
            guard let entry = levels[index].queue.first else { continue }
            levels[index].queue.removeFirst()
            return (entry, levels[index].rank)
        }
        return nil
    }

    /// Keeps only the entries `isLive` accepts (at their rank), and drops empty levels.
    mutating func compact(_ isLive: (TicketQueue.Entry, UInt8) -> Bool) {
        for index in levels.indices {
            let rank = levels[index].rank
            levels[index].queue.compact { isLive($0, rank) }
        }
        levels.removeAll { $0.queue.isEmpty }
    }

    /// Forgets every entry (no member is ready); keeps the levels' buffers unless there
    /// are many.
    mutating func removeAll() {
        if levels.count > 8 {
            levels = []
        } else {
            for index in levels.indices { levels[index].queue.removeAll() }
        }
        count = 0
    }
}
