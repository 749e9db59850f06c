extension QueueStateMachine {
    /// Where a live member is. A delayed member waits for its start time (`delayed`),
    /// or for both its start time and its predecessor (`blockedDelayed`); once the
    /// time has come it is `ready`, or `blocked` while its predecessor is live.
    enum Place: UInt8 {
        case ready, blocked, external, executing, delayed, blockedDelayed

        /// Waiting behind a predecessor in a sequential group or a lane.
        var isBlocked: Bool { self == .blocked || self == .blockedDelayed }
        /// Waiting for its start time.
        var isDelayed: Bool { self == .delayed || self == .blockedDelayed }
    }

    struct Record {
        /// `nil` while the slot is free.
        var member: Member?
        /// Unique per admission: tells a queue or heap entry of this record from a stale one.
        var ticket: UInt64 = 0
        var timeout: Int64 = .min
        /// The member it waits behind in a sequential group or a lane, while it is blocked.
        /// While it executes (it has none then: it became ready only once its predecessor
        /// had left), the member that started before it in the start order (-1 for none;
        /// see ``noteStarted(_:actions:)``). One field for both keeps a record at 40
        /// bytes, and a pending unit within its memory target (`memory.*` in the
        /// benchmark: 248 bytes of 256 with it, 8 more with a field of its own).
        var predecessor: Int32 = -1
        var successor: Int32 = -1
        var priority: UInt8 = 0
        /// Its attempts so far, wrapping (see ``memberRetrying(_:after:_:actions:)``):
        /// tells the deadline of its current attempt from an earlier one's.
        var attempt: UInt8 = 0
        var place = Place.ready
        /// The queue asked for it to end; its real end is on its way.
        var isEnding = false
        /// While it executes: the member that started after it (-1 for none).
        var startedAfter: Int32 = -1
    }

    // MARK: Reading records

    // The entries of the small machines may go stale; these tell a live one from the
    // records. They read records field by field: copying one would retain and release
    // its member, on the path of every start and end.

    /// The key a priority is ranked by (see ``AsyncTask/rank(_:)``).
    static func rank(_ priority: UInt8) -> UInt8 {
        AsyncTask.rank(priority)
    }

    /// Whether `entry`, queued at `rank`, names a ready member of that rank (an escalated
    /// member leaves a stale entry at its former rank).
    static func isReady(_ entry: TicketQueue.Entry, rank: UInt8, in records: [Record]) -> Bool {
        let index = Int(entry.slot)
        return records[index].ticket == entry.ticket && records[index].place == .ready && !records[index].isEnding
            && Self.rank(records[index].priority) == rank
    }

    /// Whether a deadline `entry` belongs to the current attempt of an executing member.
    static func isExecuting(_ entry: DeadlineHeap.Entry, in records: [Record]) -> Bool {
        let index = Int(entry.slot)
        return records[index].ticket == entry.ticket && records[index].place == .executing
            && records[index].attempt == entry.attempt && !records[index].isEnding
    }

    /// Whether a start-time `entry` belongs to a member still waiting for it.
    static func isDelayed(_ entry: DeadlineHeap.Entry, in records: [Record]) -> Bool {
        let index = Int(entry.slot)
        return records[index].ticket == entry.ticket && records[index].place.isDelayed && !records[index].isEnding
    }
}

extension QueueStateMachine.Record: Sendable where Member: Sendable {}
