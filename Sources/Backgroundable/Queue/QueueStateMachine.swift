/// The scheduling rules of a queue, as a value with pure transitions.
///
/// Every rule about *when* members start, which ones end and why, deduplication by
/// name, sequential groups, suspension, the concurrency limit, deadlines, busy periods
/// and background time lives here, once, for both front ends (``BackgroundQueue`` and the
/// Operation bridge). A transition takes an event, updates the value and appends
/// ``Action``s; it never touches a member, takes no other lock, creates no `Task` and
/// calls no caller code. ``QueueStorage`` holds the machine under its lock and performs
/// the actions after unlocking, in order.
///
/// `Member` is what the queue schedules (``AsyncTask``, or `Operation` in the bridge);
/// the machine only stores references to members and hands them back in actions.
///
/// ## Lifecycle of a member
/// admitted (`ready`; `blocked` behind its predecessor in a sequential group or a lane;
/// `delayed` until its start time; or `external`: started by its front end) →
/// `executing` (→ `delayed` or `ready` again between two attempts of a retry) → ended.
/// A member the queue ends
/// (replacement, timeout, `cancelAll`, expiry, closing) is first marked *ending*: it is
/// no longer live for deduplication and never starts, and an ``Action/end(_:_:)`` asks
/// the storage to end it. Every admitted member leaves the machine through exactly one
/// ``memberEnded(_:_:actions:)`` event, carrying the outcome it really reached (the
/// member may have ended itself in a race with the queue); only then are its slot, its
/// successor in its group or lane and the busy period released.
///
/// ## Cost
/// Every transition is O(1) or O(log n) in the number of live members (amortised where
/// stale entries are compacted), whatever the names, timeouts and priorities.
struct QueueStateMachine<Member: AnyObject> {
    /// A member arriving, with the attributes the rules need.
    struct Admission {
        let member: Member
        let name: String?
        let policy: UniquenessPolicy
        /// The raw `TaskPriority`, 0 for none (ranks as `medium`).
        let priority: UInt8
        /// Nanoseconds from the start until the member times out; `nil` for never.
        let timeout: Int64?
        /// Nanoseconds from the admission before which the member may not start; 0 or
        /// less for none.
        var delay: Int64 = 0
        /// The member's lane: members of one lane run one at a time, in admission
        /// order. Ignored in a sequential batch (the batch is a lane of its own).
        var lane: String? = nil
        /// `priority` is higher than the member's own: a caller awaiting it escalated it
        /// before it was admitted (listeners hear `escalated` after `enqueued`).
        var escalated = false
    }

    /// What the storage must do once the lock is released, in order.
    enum Action {
        /// Start the member's work (it is counted as executing), at `priority` (its own,
        /// or higher when it was escalated while it waited).
        case start(Member, priority: UInt8)
        /// End the member with this outcome; its ``memberEnded(_:_:actions:)`` follows
        /// (with this outcome, or the one it reached first).
        case end(Member, AsyncTask.Outcome)
        /// The newcomer `by` replaced the member (``UniquenessPolicy/replace``): end it
        /// ``AsyncTask/Outcome/replaced``, atomically with the newcomer's add (the storage
        /// settles it under the lock), and start the newcomer's work only once the
        /// member's body returned. Its ``memberEnded(_:_:actions:)`` follows.
        case replace(Member, by: Member)
        /// The member was not admitted (dropped, or the queue is closed or stopped
        /// accepting work) or, with ``AsyncTask/Outcome/timedOut``, it expired as it would
        /// start and left: end it with this outcome. Nothing follows. When an event
        /// `reported` it, the storage settles it under the lock, so that the event tells
        /// the outcome the member has (see ``correctEvent(of:admitted:outcome:)``).
        case reject(Member, AsyncTask.Outcome, reported: Bool)
        /// The member was not admitted: it joins the live member `primary` of its name
        /// and ends with its outcome (``UniquenessPolicy/join``). Nothing follows. Settled
        /// under the lock when an event `reported` it.
        case join(Member, primary: Member, reported: Bool)
        /// Read the progress of these executing members (outside the lock), then send
        /// ``progressSampled(_:actions:)``.
        case sampleProgress([(Handle, Member)])
        /// Make sure a sleeper wakes the queue at `deadline` (the queue's clock, in
        /// nanoseconds) and sends ``deadlineReached(generation:actions:)`` with
        /// `generation`; a sleeper of an older generation may stop.
        case armSleeper(deadline: Int64, generation: UInt64)
        /// Run ``drain(actions:)`` from a new task until it returns `false`.
        case spawnDrainer
        /// The caller became the deliverer: take ``takeDeliveries()`` until it
        /// returns `nil`.
        case deliver
    }

    /// The actions of one transition, in order. Most transitions have one or two: those
    /// are kept inline, so a transition allocates nothing for them (this pays on the
    /// idle queue's path, where each add and end is a few transitions).
    struct Actions: Sequence, ExpressibleByArrayLiteral {
        private var inline: (Action?, Action?) = (nil, nil)
        private var more: [Action] = []
        /// Whether the transition made its caller the deliverer (``Action/deliver``).
        private(set) var delivers = false
        /// Whether an action must be settled under the lock (``Action/replace(_:by:)``,
        /// ``Action/reject(_:_:)``, ``Action/join(_:primary:)``).
        private(set) var needsSettling = false

        init() {}

        init(arrayLiteral actions: Action...) {
            for action in actions { append(action) }
        }

        var isEmpty: Bool { inline.0 == nil }

        mutating func append(_ action: Action) {
            switch action {
            case .deliver: delivers = true
            case .replace, .reject(_, _, reported: true), .join(_, _, reported: true): needsSettling = true
            default: break
            }
            if inline.0 == nil {
                inline.0 = action
            } else if inline.1 == nil {
                inline.1 = action
            } else {
                more.append(action)
            }
        }

        struct Iterator: IteratorProtocol {
            fileprivate let actions: Actions
            fileprivate var index = 0

            mutating func next() -> Action? {
                defer { index += 1 }
                switch index {
                case 0: return actions.inline.0
                case 1: return actions.inline.1
                default: return index - 2 < actions.more.count ? actions.more[index - 2] : nil
                }
            }
        }

        func makeIterator() -> Iterator { Iterator(actions: self) }
    }

    /// What the deliverer hands to observers, in order, one delivery at a time.
    enum Delivery {
        /// idle → busy: begin background time, then send
        /// ``backgroundTimeBegun(period:actions:)``, then tell the delegate.
        case busy(period: UInt64)
        /// busy → idle: end background time, tell the delegate, then send
        /// ``idleDelivered(period:)`` and resume the waiters it returns.
        case idle(period: UInt64)
        case event(QueueEvent<Member>)
        /// The queue's progress changed (or is due for a sample): the deliverer reads it
        /// (``readProgress(names:)``) and hands it to the progress watchers. Posted only
        /// while someone watches, at most once until it is taken.
        case progress
        /// The queue was closed and is idle: nothing more will be delivered.
        case closed
    }

    /// How a front end names a member it admitted, in later events: its slot and the
    /// ticket of its admission. A handle whose member has left (its slot free, or
    /// reused by a later admission with another ticket) names nothing, so an event that
    /// arrives late is ignored instead of touching another member. Members carry their
    /// handle; the machine keeps no map from members to slots.
    struct Handle: Sendable, Hashable {
        let slot: Int32
        let ticket: UInt64
    }

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
        var predecessor: Int32 = -1
        var successor: Int32 = -1
        var namePrevious: Int32 = -1
        var nameNext: Int32 = -1
        /// Its name's group in ``groups``; -1 for none. (4 bytes rather than the name
        /// itself: the record of every pending unit is 16 bytes smaller, which keeps
        /// `memory.BackgroundQueue.pendingUnit` under its 256-byte target.)
        var nameGroup: Int32 = -1
        var priority: UInt8 = 0
        /// Its attempts so far, wrapping (see ``memberRetrying(_:after:_:actions:)``):
        /// tells the deadline of its current attempt from an earlier one's.
        var attempt: UInt8 = 0
        var place = Place.ready
        /// The queue asked for it to end; its real end is on its way.
        var isEnding = false
    }

    /// The live members of one name, linked through their records in admission order.
    struct NameGroup {
        var name: String
        var first: Int32
        var last: Int32
        var count: Int
    }

    // MARK: State

    private(set) var limit: Int
    private(set) var suspensions = 0
    private(set) var isClosed = false
    /// `false` once the queue stopped accepting work (a shutdown): new members are
    /// rejected (cancelled), the admitted ones run on.
    private(set) var acceptsWork = true
    /// Whether anyone listens to per-member events (set by the storage).
    var observedEvents: ObservedEvents = []
    /// `false` for a queue with no busy periods (the bridge's shared deadline keeper).
    let reportsBusyPeriods: Bool
    /// The clock, in nanoseconds; injected by tests.
    let now: @Sendable () -> Int64

    private var records: [Record] = []
    private var freeSlots: [Int32] = []
    /// Live members: admitted and not ended (ending ones included).
    private(set) var liveCount = 0
    /// The group of each live name, by name.
    private var names: [String: Int32] = [:]
    /// The groups, by number; a free number is reused.
    private var groups: [NameGroup] = []
    private var freeGroups: [Int32] = []
    private var tickets: UInt64 = 0

    /// Ready members by priority, highest first; FIFO within a priority.
    private var ready: [(priority: UInt8, queue: TicketQueue)] = []
    private var readyCount = 0
    private var deadlines = DeadlineHeap()
    private var timedCount = 0
    /// The start times of delayed members, earliest first (ties in admission order);
    /// the one sleeper serves them and the deadlines together.
    private var startTimes = DeadlineHeap()
    private var delayedCount = 0
    /// The last member of each lane, by lane; and the lane of each such member.
    private var laneTails: [String: Int32] = [:]
    private var lanesByTail: [Int32: String] = [:]

    private(set) var enqueuedCount = 0
    private(set) var executingCount = 0
    /// A drainer task was asked for and has not stopped yet.
    private(set) var isDrainerScheduled = false
    private var sleeper: (deadline: Int64, generation: UInt64)?
    private var sleeperGenerations: UInt64 = 0

    private(set) var isBusy = false
    /// Idle → busy transitions so far: the current or last busy period.
    private(set) var period: UInt64 = 0
    /// Members start only once the busy period's background time is held.
    private var backgroundTimeHeld: Bool
    private var idleDeliveredThrough: UInt64 = 0
    /// Who waits for idle, by registration number: the busy period they wait out.
    private var idleWaiters: [UInt64: (period: UInt64, waiter: Continuation<Void>)] = [:]
    private var idleWaiterIDs: UInt64 = 0
    private var outbox: [Delivery] = []
    /// The deliverer's batch buffer between two deliveries, kept so that posting and
    /// delivering allocate nothing once the queue has run.
    private var spareOutbox: [Delivery] = []
    private var isDelivering = false

    /// Members admitted in the current busy period (the last one while idle), and how
    /// many of them reached their outcome: the queue's progress in whole members.
    private(set) var periodAdmitted = 0
    private(set) var periodEnded = 0
    /// The executing members in the order they started. An entry whose member stopped
    /// executing is stale: skipped, and dropped once stale entries outnumber live ones.
    private var startOrder = TicketQueue()
    /// The partial progress of executing members as last sampled (non-zero values only),
    /// by slot (a member leaving its slot leaves this too), and their sum: what watchers
    /// hear between two samples.
    private var sampled: [Int32: Double] = [:]
    private var sampledSum = 0.0
    /// Who watches the queue's progress (streams, models, providers); how many of them
    /// want the executing members' names too.
    private var progressWatchers = 0
    private var namesWatchers = 0
    /// A ``Delivery/progress`` is in the outbox.
    private var progressPosted = false
    /// When the sleeper next samples the executing members' progress: set while someone
    /// watches and a member executes, `nil` otherwise.
    private var progressSample: Int64?
    /// How often watchers hear the partial progress of executing members, in
    /// nanoseconds: reporting is a plain store in the member, so it is sampled rather
    /// than pushed (10 Hz by default; the model-based test samples faster).
    let progressSampleInterval: Int64
    static var defaultProgressSampleInterval: Int64 { 100_000_000 }

    init(
        limit: Int, reportsBusyPeriods: Bool = true, progressSampleInterval: Int64 = defaultProgressSampleInterval,
        now: @escaping @Sendable () -> Int64
    ) {
        self.progressSampleInterval = progressSampleInterval
        self.limit = Swift.max(1, limit)
        self.reportsBusyPeriods = reportsBusyPeriods
        self.backgroundTimeHeld = !reportsBusyPeriods
        self.now = now
    }

    // MARK: Adding

    /// Adds one member; it may start on the caller's thread when the queue has nothing
    /// else running. Returns its handle, or `nil` when it was rejected (see
    /// ``Action/reject(_:_:)``).
    mutating func add(_ admission: Admission, actions: inout Actions) -> Handle? {
        guard let slot = admit(admission, place: .ready, actions: &actions) else { return nil }
        let handle = handle(of: slot)
        link(slot, behind: joinLane(admission.lane, slot), admission, actions: &actions)
        startReady(inline: executingCount == 0 && !isDrainerScheduled ? 1 : 0, actions: &actions)
        return handle
    }

    /// Adds members in order (their policies apply in that order); with `sequential`,
    /// each starts only after the previous admitted one ended (their lanes are ignored:
    /// the group is a lane of its own). Returns the handles of the admitted ones, in
    /// order.
    mutating func add(
        contentsOf admissions: [Admission],
        sequential: Bool,
        actions: inout Actions
    ) -> [(member: Member, handle: Handle)] {
        var admitted: [(member: Member, handle: Handle)] = []
        var previous: Int32 = -1
        for admission in admissions {
            guard let slot = admit(admission, place: .ready, actions: &actions) else { continue }
            admitted.append((admission.member, handle(of: slot)))
            let predecessor = sequential ? previous : joinLane(admission.lane, slot)
            link(slot, behind: predecessor, admission, actions: &actions)
            previous = slot
        }
        startReady(inline: 0, actions: &actions)
        return admitted
    }

    /// Adds a member whose front end starts it (the Operation bridge): live for
    /// deduplication and busy periods, never started by the queue. See
    /// ``externalStarted(_:member:timeout:actions:)``. `nil` when it was rejected.
    mutating func addExternal(_ admission: Admission, actions: inout Actions) -> Handle? {
        guard let slot = admit(admission, place: .external, actions: &actions) else { return nil }
        emit(.enqueued(admission.member), actions: &actions)
        return handle(of: slot)
    }

    private func handle(of slot: Int32) -> Handle {
        Handle(slot: slot, ticket: records[Int(slot)].ticket)
    }

    /// The slot a handle names, if its member is still there. Tickets start at 1 and a
    /// free slot's is 0, so a matching ticket means the slot holds that very member.
    /// (Records are read field by field here and below: copying one would retain and
    /// release its member and name, on the path of every start and end.)
    private func slot(of handle: Handle) -> Int32? {
        guard handle.slot >= 0, Int(handle.slot) < records.count,
            records[Int(handle.slot)].ticket == handle.ticket
        else { return nil }
        return handle.slot
    }

    /// Applies the uniqueness policy and records the member. `nil` when rejected.
    private mutating func admit(_ admission: Admission, place: Place, actions: inout Actions) -> Int32? {
        if isClosed {
            actions.append(.reject(admission.member, .cancelled, reported: false))
            return nil
        }
        if !acceptsWork {
            actions.append(.reject(admission.member, .cancelled, reported: observedEvents.contains(.ended)))
            emit(.ended(admission.member, .cancelled), actions: &actions)
            return nil
        }
        if let name = admission.name, let number = names[name] {
            switch admission.policy.kind {
            case .ignore:
                break
            case .drop:
                actions.append(.reject(admission.member, .dropped, reported: observedEvents.contains(.ended)))
                emit(.ended(admission.member, .dropped), actions: &actions)
                return nil
            case .join:
                let primary = records[Int(groups[Int(number)].last)].member!
                actions.append(.join(admission.member, primary: primary, reported: observedEvents.contains(.joined)))
                emit(.joined(admission.member, primary: primary), actions: &actions)
                return nil
            case .replace:
                var cursor = groups[Int(number)].first
                while cursor >= 0 {
                    let next = records[Int(cursor)].nameNext
                    markEnding(cursor, .replaced, by: admission.member, actions: &actions)
                    cursor = next
                }
            }
        }
        let slot = allocate()
        tickets += 1
        records[Int(slot)] = Record(
            member: admission.member, ticket: tickets,
            timeout: admission.timeout ?? .min, priority: admission.priority, place: place)
        liveCount += 1
        if let name = admission.name { addToName(slot, name) }
        enqueuedCount += 1
        becomeBusyIfIdle(actions: &actions)
        periodAdmitted += 1
        noteProgress(actions: &actions)
        return slot
    }

    /// Places an admitted member: ready, blocked behind `predecessor`, or waiting for
    /// its start time (the admission's delay from now), or both.
    private mutating func link(
        _ slot: Int32, behind predecessor: Int32, _ admission: Admission, actions: inout Actions
    ) {
        let delay = admission.delay
        if delay > 0 {
            waitForStartTime(slot, ContinuousNanoseconds.deadline(after: now(), delay), actions: &actions)
        }
        if predecessor >= 0 {
            records[Int(predecessor)].successor = slot
            records[Int(slot)].predecessor = predecessor
            records[Int(slot)].place = delay > 0 ? .blockedDelayed : .blocked
        } else if delay > 0 {
            records[Int(slot)].place = .delayed
        } else {
            makeReady(slot)
        }
        let member = records[Int(slot)].member!
        emit(.enqueued(member), actions: &actions)
        if admission.escalated { emit(.escalated(member, priority: admission.priority), actions: &actions) }
    }

    /// Makes `slot` the last member of `lane`: returns the member it waits behind (the
    /// lane's previous last one), or -1 when the lane was empty (or `lane` is `nil`).
    private mutating func joinLane(_ lane: String?, _ slot: Int32) -> Int32 {
        guard let lane else { return -1 }
        lanesByTail[slot] = lane
        guard let tail = laneTails.updateValue(slot, forKey: lane) else { return -1 }
        lanesByTail[tail] = nil
        return tail
    }

    /// A member leaves: if it was the last of its lane, the member before it (if it is
    /// blocked behind one) is the last now, or the lane is empty.
    private mutating func leaveLane(_ slot: Int32, predecessor: Int32) {
        guard !lanesByTail.isEmpty, let lane = lanesByTail.removeValue(forKey: slot) else { return }
        if predecessor >= 0 {
            laneTails[lane] = predecessor
            lanesByTail[predecessor] = lane
        } else {
            laneTails[lane] = nil
        }
    }

    private mutating func allocate() -> Int32 {
        if let slot = freeSlots.popLast() { return slot }
        records.append(Record())
        return Int32(records.count - 1)
    }

    // MARK: Names

    private mutating func addToName(_ slot: Int32, _ name: String) {
        if let number = names[name] {
            let last = groups[Int(number)].last
            records[Int(last)].nameNext = slot
            records[Int(slot)].namePrevious = last
            records[Int(slot)].nameGroup = number
            groups[Int(number)].last = slot
            groups[Int(number)].count += 1
        } else {
            let group = NameGroup(name: name, first: slot, last: slot, count: 1)
            let number: Int32
            if let free = freeGroups.popLast() {
                number = free
                groups[Int(number)] = group
            } else {
                number = Int32(groups.count)
                groups.append(group)
            }
            names[name] = number
            records[Int(slot)].nameGroup = number
        }
    }

    /// Takes a member out of its name's group: it no longer counts for deduplication.
    private mutating func removeFromName(_ slot: Int32) {
        let number = records[Int(slot)].nameGroup
        guard number >= 0 else { return }
        let previous = records[Int(slot)].namePrevious
        let next = records[Int(slot)].nameNext
        records[Int(slot)].nameGroup = -1
        records[Int(slot)].namePrevious = -1
        records[Int(slot)].nameNext = -1
        if previous >= 0 { records[Int(previous)].nameNext = next }
        if next >= 0 { records[Int(next)].namePrevious = previous }
        groups[Int(number)].count -= 1
        if groups[Int(number)].count == 0 {
            names[groups[Int(number)].name] = nil
            groups[Int(number)].name = ""
            freeGroups.append(number)
            return
        }
        if groups[Int(number)].first == slot { groups[Int(number)].first = next }
        if groups[Int(number)].last == slot { groups[Int(number)].last = previous }
    }

    /// `true` when a live member (not ending) has this name.
    func hasLiveMember(named name: String) -> Bool {
        names[name] != nil
    }

    // MARK: Starting

    /// The key a priority is ranked by (see ``AsyncTask/rank(_:)``).
    private static func rank(_ priority: UInt8) -> UInt8 {
        AsyncTask.rank(priority)
    }

    private mutating func makeReady(_ slot: Int32) {
        records[Int(slot)].place = .ready
        let rank = Self.rank(records[Int(slot)].priority)
        let entry = TicketQueue.Entry(slot: slot, ticket: records[Int(slot)].ticket)
        var index = 0
        while index < ready.count, ready[index].priority > rank { index += 1 }
        if index == ready.count || ready[index].priority != rank {
            ready.insert((rank, TicketQueue()), at: index)
        }
        ready[index].queue.append(entry)
        readyCount += 1
    }

    /// Whether `entry`, queued at `rank`, names a ready member of that rank (an escalated
    /// member leaves a stale entry at its former rank).
    private func isReady(_ entry: TicketQueue.Entry, rank: UInt8) -> Bool {
        Self.isReady(entry, rank: rank, in: records)
    }

    private static func isReady(_ entry: TicketQueue.Entry, rank: UInt8, in records: [Record]) -> Bool {
        let index = Int(entry.slot)
        return entry.names(records[index].ticket) && records[index].place == .ready && !records[index].isEnding
            && Self.rank(records[index].priority) == rank
    }

    /// Whether anything may start now.
    private var mayStart: Bool {
        backgroundTimeHeld && suspensions == 0 && executingCount < limit
    }

    /// The next member to start, taken out of its ready queue (it still counts as ready
    /// until ``start(_:actions:)`` moves it on). Empty levels stay (with
    /// their buffers) for the next members of their priority: there are at most as many
    /// as distinct priorities in use, and an idle queue drops them if there are many.
    private mutating func popReady() -> Int32? {
        guard readyCount > 0 else { return nil }
        for index in ready.indices {
            // Read before the loop: an argument read from `self` next to the call that
            // borrows it would copy the whole machine (≈ 20 % on `e2e.BackgroundQueue.limit1`).
            let rank = ready[index].priority
            while let entry = ready[index].queue.first {
                ready[index].queue.removeFirst()
                if isReady(entry, rank: rank) { return entry.slot }
            }
        }
        return nil
    }

    /// Whether a ready member is waiting (drops the stale entries in front of it).
    private mutating func hasReady() -> Bool {
        guard readyCount > 0 else { return false }
        for index in ready.indices {
            let rank = ready[index].priority
            while let entry = ready[index].queue.first {
                if isReady(entry, rank: rank) { return true }
                ready[index].queue.removeFirst()
            }
        }
        return false
    }

    /// Starts up to `inline` members now (their start actions run on the caller's
    /// thread) and leaves the rest to a drainer.
    private mutating func startReady(inline: Int, actions: inout Actions) {
        var started = 0
        while started < inline, mayStart, let slot = popReady() {
            start(slot, actions: &actions)
            started += 1
        }
        if !isDrainerScheduled, mayStart, hasReady() {
            isDrainerScheduled = true
            actions.append(.spawnDrainer)
        }
        // Members that expired as they would start may have been the last ones.
        _ = becomeIdleIfDone(actions: &actions)
    }

    /// One round of the drainer: starts up to 64 members. `false` when there was
    /// nothing to start: the drainer stops (and the role is free again).
    mutating func drain(actions: inout Actions) -> Bool {
        var started = 0
        while started < 64, mayStart, let slot = popReady() {
            start(slot, actions: &actions)
            started += 1
        }
        if started == 0 { isDrainerScheduled = false }
        _ = becomeIdleIfDone(actions: &actions)
        return started > 0
    }

    private mutating func start(_ slot: Int32, actions: inout Actions) {
        let member = records[Int(slot)].member!
        let timeout = records[Int(slot)].timeout
        if timeout != .min, timeout <= 0 {
            // It expires as it would start: its work never runs and it never holds a
            // slot (its sequential successor is ready at once).
            release(slot)
            actions.append(.reject(member, .timedOut, reported: observedEvents.contains(.ended)))
            emit(.ended(member, .timedOut), actions: &actions)
            noteProgress(actions: &actions)
            return
        }
        enqueuedCount -= 1
        readyCount -= 1
        executingCount += 1
        records[Int(slot)].place = .executing
        records[Int(slot)].attempt &+= 1
        armDeadline(slot, actions: &actions)
        emit(.started(member), actions: &actions)
        noteStarted(slot, actions: &actions)
        actions.append(.start(member, priority: records[Int(slot)].priority))
    }

    /// Arms the deadline of a member that just started executing (timeout > 0).
    private mutating func armDeadline(_ slot: Int32, actions: inout Actions) {
        let timeout = records[Int(slot)].timeout
        guard timeout > 0 else { return }
        let (deadline, overflow) = now().addingReportingOverflow(timeout)
        let entry = DeadlineHeap.Entry(
            deadline: overflow ? .max : deadline, slot: slot, ticket: records[Int(slot)].ticket,
            attempt: records[Int(slot)].attempt)
        deadlines.insert(entry)
        timedCount += 1
        wakeSleeper(at: entry.deadline, actions: &actions)
    }

    /// A delayed member waits until `startTime`.
    private mutating func waitForStartTime(_ slot: Int32, _ startTime: Int64, actions: inout Actions) {
        startTimes.insert(.init(deadline: startTime, slot: slot, ticket: records[Int(slot)].ticket))
        delayedCount += 1
        wakeSleeper(at: startTime, actions: &actions)
    }

    /// Makes sure the sleeper wakes up at `time`: a new sleeper is armed when it is
    /// earlier than the current one's.
    private mutating func wakeSleeper(at time: Int64, actions: inout Actions) {
        guard sleeper.map({ time < $0.deadline }) ?? true else { return }
        sleeperGenerations += 1
        sleeper = (time, sleeperGenerations)
        actions.append(.armSleeper(deadline: time, generation: sleeperGenerations))
    }

    /// The front end started an external member (`handle`, from ``addExternal(_:actions:)``)
    /// or, with no handle on a queue that keeps deadlines only, a member it never added:
    /// it counts as executing and its deadline is armed. Returns the member's handle;
    /// `nil` when the handle names nothing any more (the member's end overtook its
    /// start: nothing happens).
    @discardableResult
    mutating func externalStarted(
        _ handle: Handle?, member: Member, timeout: Int64?, actions: inout Actions
    ) -> Handle? {
        let slot: Int32
        if let handle {
            guard let known = self.slot(of: handle), records[Int(known)].place == .external,
                !records[Int(known)].isEnding
            else { return nil }
            slot = known
            enqueuedCount -= 1
            records[Int(slot)].timeout = timeout ?? .min
        } else {
            slot = allocate()
            tickets += 1
            records[Int(slot)] = Record(member: member, ticket: tickets, timeout: timeout ?? .min)
            liveCount += 1
            becomeBusyIfIdle(actions: &actions)
        }
        executingCount += 1
        records[Int(slot)].place = .executing
        if records[Int(slot)].timeout != .min, records[Int(slot)].timeout <= 0 {
            markEnding(slot, .timedOut, actions: &actions)
        } else {
            armDeadline(slot, actions: &actions)
            emit(.started(member), actions: &actions)
        }
        noteStarted(slot, actions: &actions)
        return self.handle(of: slot)
    }

    // MARK: Ending

    /// Asks for a live member to end with `outcome`: it stops counting for
    /// deduplication and can no longer start; the storage ends it.
    private mutating func markEnding(
        _ slot: Int32, _ outcome: AsyncTask.Outcome, by newcomer: Member? = nil, actions: inout Actions
    ) {
        guard !records[Int(slot)].isEnding else { return }
        records[Int(slot)].isEnding = true
        removeFromName(slot)
        let member = records[Int(slot)].member!
        if let newcomer {
            actions.append(.replace(member, by: newcomer))
        } else {
            actions.append(.end(member, outcome))
        }
    }

    /// A member reached its outcome (by itself, or through an ``Action/end(_:_:)``):
    /// it leaves the queue, its successor in a sequential group becomes ready, and
    /// what can start now starts. Exactly once per admitted member; a member the
    /// queue does not hold is ignored.
    mutating func memberEnded(_ handle: Handle, _ outcome: AsyncTask.Outcome, actions: inout Actions) {
        guard let slot = slot(of: handle) else { return }
        if observedEvents.contains(.ended) {
            let member = records[Int(slot)].member!
            emit(.ended(member, outcome), actions: &actions)
        }
        release(slot)
        compactIfMostlyStale()
        // Before the idle notification: whoever waits for idle finds the watchers told.
        noteProgress(actions: &actions)
        if !becomeIdleIfDone(actions: &actions) {
            startReady(inline: 2, actions: &actions)
        }
    }

    /// Takes a member out of the queue: its slot and name are free, its counts drop,
    /// and its successor in a sequential group becomes ready, whatever the outcome.
    private mutating func release(_ slot: Int32) {
        let (place, predecessor, successor) = (
            records[Int(slot)].place, records[Int(slot)].predecessor, records[Int(slot)].successor
        )
        liveCount -= 1
        periodEnded += 1
        forgetSample(slot)
        removeFromName(slot)
        leaveLane(slot, predecessor: place.isBlocked ? predecessor : -1)
        switch place {
        case .ready:
            enqueuedCount -= 1
            readyCount -= 1
        case .blocked, .blockedDelayed:
            enqueuedCount -= 1
            // Splice it out of its group: the predecessor now leads to the successor.
            records[Int(predecessor)].successor = successor
            if successor >= 0 {
                records[Int(successor)].predecessor = predecessor
            }
        case .external, .delayed:
            enqueuedCount -= 1
        case .executing:
            executingCount -= 1
            if records[Int(slot)].timeout > 0 { timedCount -= 1 }
        }
        if place.isDelayed { delayedCount -= 1 }
        if !place.isBlocked, successor >= 0 {
            records[Int(successor)].predecessor = -1
            if records[Int(successor)].place == .blockedDelayed {
                records[Int(successor)].place = .delayed
            } else {
                makeReady(successor)
            }
        }
        records[Int(slot)] = Record()
        freeSlots.append(slot)
    }

    /// A member reached its outcome while its front end still holds it (an
    /// ``AsyncOperation`` that has not reported `isFinished` yet): it no longer counts
    /// for deduplication; its ``memberEnded(_:_:actions:)`` follows.
    mutating func memberStopped(_ handle: Handle) {
        guard let slot = slot(of: handle) else { return }
        records[Int(slot)].isEnding = true
        removeFromName(slot)
    }

    /// An executing member failed an attempt and will make another one after `delay`
    /// nanoseconds: it frees its slot and waits, live, like a delayed member (then ready,
    /// by priority and first come, first served). Listeners hear `retry`. `false` when
    /// the queue does not hold it as executing (its end is on its way): nothing happens.
    ///
    /// Its next start arms a new deadline; the current attempt's stays in the heap until
    /// due, told apart by the attempt number. That number wraps at 256, which policies
    /// cannot reach (``RetryPolicy/attemptLimit``), so an earlier attempt's deadline
    /// never ends a later attempt.
    mutating func memberRetrying(
        _ handle: Handle, after delay: Int64, _ retry: RetryNote, actions: inout Actions
    ) -> Bool {
        guard let slot = slot(of: handle), records[Int(slot)].place == .executing, !records[Int(slot)].isEnding
        else { return false }
        executingCount -= 1
        if records[Int(slot)].timeout > 0 { timedCount -= 1 }
        forgetSample(slot)
        enqueuedCount += 1
        if delay > 0 {
            records[Int(slot)].place = .delayed
            waitForStartTime(slot, ContinuousNanoseconds.deadline(after: now(), delay), actions: &actions)
        } else {
            makeReady(slot)
        }
        let member = records[Int(slot)].member!
        emit(.retrying(member, retry), actions: &actions)
        startReady(inline: 1, actions: &actions)
        noteProgress(actions: &actions)
        return true
    }

    /// A caller of higher priority waits for the member: from now on it ranks at
    /// `priority` (it never goes down). A ready member moves to that rank's queue, behind
    /// the members already there; listeners hear `escalated`. `false` when the member is
    /// not held (its end is on its way) or already ranks as high.
    @discardableResult
    mutating func memberEscalated(_ handle: Handle, to priority: UInt8, actions: inout Actions) -> Bool {
        guard let slot = slot(of: handle), !records[Int(slot)].isEnding,
            Self.rank(priority) > Self.rank(records[Int(slot)].priority)
        else { return false }
        records[Int(slot)].priority = priority
        if records[Int(slot)].place == .ready {
            // Its entry at the former rank goes stale; makeReady counts it again.
            readyCount -= 1
            makeReady(slot)
        }
        let member = records[Int(slot)].member!
        emit(.escalated(member, priority: priority), actions: &actions)
        return true
    }

    /// Ends every live member (waiting and executing) with ``AsyncTask/Outcome/cancelled``.
    mutating func cancelAll(actions: inout Actions) {
        cancel(actions: &actions) { _ in true }
    }

    /// Ends the members that are not executing: waiting, delayed, or between two
    /// attempts.
    mutating func cancelPending(actions: inout Actions) {
        cancel(actions: &actions) { $0 != .executing }
    }

    /// Ends the live members whose place `matches`. O(n) in the records held, with no
    /// sort: they are marked in slot order, and all of them before any has ended, so no
    /// successor in a sequential group can start in between.
    private mutating func cancel(actions: inout Actions, where matches: (Place) -> Bool) {
        for slot in records.indices {
            guard records[slot].ticket != 0, !records[slot].isEnding, matches(records[slot].place) else { continue }
            markEnding(Int32(slot), .cancelled, actions: &actions)
        }
    }

    // MARK: Deadlines

    /// The sleeper of `generation` woke up: times out every executing member whose
    /// deadline passed, then lets every delayed member whose start time came go on
    /// (ready, or blocked while its predecessor is live), earliest first. Returns the
    /// next time to sleep until, or `nil` when this sleeper should stop (nothing is
    /// left, or a newer sleeper took over).
    mutating func deadlineReached(generation: UInt64, actions: inout Actions) -> Int64? {
        guard let current = sleeper, current.generation == generation else { return nil }
        let now = now()
        while let entry = deadlines.first, entry.deadline <= now {
            deadlines.removeFirst()
            if isExecuting(entry) {
                markEnding(entry.slot, .timedOut, actions: &actions)
            }
        }
        var becameReady = false
        while let entry = startTimes.first, entry.deadline <= now {
            startTimes.removeFirst()
            guard isDelayed(entry) else { continue }
            delayedCount -= 1
            if records[Int(entry.slot)].place == .blockedDelayed {
                records[Int(entry.slot)].place = .blocked
            } else {
                makeReady(entry.slot)
                becameReady = true
            }
        }
        while let entry = deadlines.first, !isExecuting(entry) {
            deadlines.removeFirst()
        }
        while let entry = startTimes.first, !isDelayed(entry) {
            startTimes.removeFirst()
        }
        if becameReady { startReady(inline: 64, actions: &actions) }
        if let sample = progressSample, sample <= now {
            progressSample = nil
            actions.append(.sampleProgress(executingMembers(limit: .max)))
            scheduleProgressSample(actions: &actions)
        }
        let next = [deadlines.first?.deadline, startTimes.first?.deadline, progressSample].lazy.compactMap { $0 }
            .min()
        guard let next else {
            sleeper = nil
            return nil
        }
        sleeper = (next, generation)
        return next
    }

    private func isExecuting(_ entry: DeadlineHeap.Entry) -> Bool {
        Self.isExecuting(entry, in: records)
    }

    private static func isExecuting(_ entry: DeadlineHeap.Entry, in records: [Record]) -> Bool {
        let index = Int(entry.slot)
        return records[index].ticket == entry.ticket && records[index].place == .executing
            && records[index].attempt == entry.attempt && !records[index].isEnding
    }

    private func isDelayed(_ entry: DeadlineHeap.Entry) -> Bool {
        Self.isDelayed(entry, in: records)
    }

    private static func isDelayed(_ entry: DeadlineHeap.Entry, in records: [Record]) -> Bool {
        let index = Int(entry.slot)
        return records[index].ticket == entry.ticket && records[index].place.isDelayed && !records[index].isEnding
    }

    /// Drops stale queue and heap entries once they outnumber the live ones, so memory
    /// follows the live members, not the members ever added.
    private mutating func compactIfMostlyStale() {
        if deadlines.count > 64 + 2 * timedCount {
            let records = self.records
            deadlines.compact { Self.isExecuting($0, in: records) }
        }
        if startTimes.count > 64 + 2 * delayedCount {
            let records = self.records
            startTimes.compact { Self.isDelayed($0, in: records) }
        }
        if startOrder.count > 64 + 2 * executingCount {
            let records = self.records
            startOrder.compact { Self.isStarted($0, in: records) }
        }
        if ready.count > 0 {
            var total = 0
            for level in ready { total += level.queue.count }
            if total > 64 + 2 * readyCount {
                let records = self.records
                for index in ready.indices {
                    let rank = ready[index].priority
                    ready[index].queue.compact { Self.isReady($0, rank: rank, in: records) }
                }
                ready.removeAll { $0.queue.isEmpty }
            }
        }
    }

    // MARK: Control

    mutating func setLimit(_ newLimit: Int, actions: inout Actions) {
        limit = Swift.max(1, newLimit)
        startReady(inline: 0, actions: &actions)
    }

    mutating func suspend() {
        suspensions += 1
    }

    /// Balances one ``suspend()``; extra calls are ignored.
    mutating func resume(actions: inout Actions) {
        guard suspensions > 0 else { return }
        suspensions -= 1
        startReady(inline: 0, actions: &actions)
    }

    /// A shutdown began: from now on new members are rejected (cancelled) at once, while
    /// the admitted ones, pending or executing, run as usual. For good.
    mutating func stopAcceptingWork() {
        acceptsWork = false
    }

    /// The queue's owner is gone: members not executing are cancelled, new ones rejected
    /// (cancelled); executing ones run to their outcome.
    mutating func close(actions: inout Actions) {
        isClosed = true
        cancelPending(actions: &actions)
        if !isBusy { post(.closed, actions: &actions) }
    }

    // MARK: Busy periods and background time

    private mutating func becomeBusyIfIdle(actions: inout Actions) {
        guard !isBusy else { return }
        isBusy = true
        period += 1
        periodAdmitted = 0
        periodEnded = 0
        guard reportsBusyPeriods else { return }
        backgroundTimeHeld = false
        post(.busy(period: period), actions: &actions)
    }

    /// `true` when the queue went idle.
    private mutating func becomeIdleIfDone(actions: inout Actions) -> Bool {
        guard isBusy, liveCount == 0 else { return false }
        isBusy = false
        releaseStorage()
        guard reportsBusyPeriods else { return true }
        post(.idle(period: period), actions: &actions)
        if isClosed { post(.closed, actions: &actions) }
        return true
    }

    /// An idle queue keeps nothing of the members it held.
    private mutating func releaseStorage() {
        if records.count > 64 {
            records = []
            freeSlots = []
        }
        if ready.count > 8 {
            ready = []
        } else {
            for index in ready.indices { ready[index].queue.removeAll() }
        }
        readyCount = 0
        deadlines.removeAll()
        startTimes.removeAll()
        laneTails = [:]
        lanesByTail = [:]
        startOrder.removeAll()
        sampled = [:]
        sampledSum = 0
        names = [:]
        groups = []
        freeGroups = []
    }

    /// The deliverer began the background time of `period`: its members may start.
    mutating func backgroundTimeBegun(period begun: UInt64, actions: inout Actions) {
        guard isBusy, begun == period, !backgroundTimeHeld else { return }
        backgroundTimeHeld = true
        startReady(inline: 1, actions: &actions)
    }

    /// The provider took the background time back: listeners hear it, then `policy`
    /// decides what is cancelled.
    mutating func backgroundTimeExpired(
        policy: BackgroundQueue.ExpirationPolicy,
        actions: inout Actions
    ) {
        emit(.backgroundTimeExpiring, actions: &actions)
        switch policy.kind {
        case .cancelAll: cancelAll(actions: &actions)
        case .cancelPending: cancelPending(actions: &actions)
        case .keepRunning: break
        }
    }

    // MARK: Deliveries

    private mutating func post(_ delivery: Delivery, actions: inout Actions) {
        outbox.append(delivery)
        if !isDelivering {
            isDelivering = true
            actions.append(.deliver)
        }
    }

    /// The storage settled a rejection or a join of this transition that did not take
    /// effect: the member had reached `outcome` before. The event posted about it is
    /// corrected: it tells that outcome (a member that expired as it would start had been
    /// admitted), or goes (one turned away at its add was never in the queue). O(events
    /// not yet delivered), on this rare path only.
    mutating func correctEvent(of member: Member, admitted: Bool, outcome: AsyncTask.Outcome?) {
        guard
            let index = outbox.lastIndex(where: {
                if case .event(let event) = $0 { event.member === member } else { false }
            })
        else { return }
        if admitted, let outcome {
            outbox[index] = .event(.ended(member, outcome))
        } else {
            outbox.remove(at: index)
        }
    }

    /// Per-member events cost nothing while nobody listens.
    private mutating func emit(_ event: @autoclosure () -> QueueEvent<Member>, actions: inout Actions) {
        guard !observedEvents.isEmpty else { return }
        let event = event()
        if observedEvents.contains(event.kind) { post(.event(event), actions: &actions) }
    }

    /// Swaps the deliveries posted so far into `batch` (whose previous, delivered
    /// contents are dropped), for the deliverer; `false` when there are none left (the
    /// caller stops delivering). The two buffers are reused, not reallocated.
    mutating func takeDeliveries(into batch: inout [Delivery]) -> Bool {
        batch.removeAll(keepingCapacity: true)
        progressPosted = false
        guard !outbox.isEmpty else {
            isDelivering = false
            if batch.capacity <= 64 { swap(&batch, &spareOutbox) }
            return false
        }
        if batch.capacity == 0 { swap(&batch, &spareOutbox) }
        swap(&outbox, &batch)
        return true
    }

    /// Registers someone waiting for the queue to be idle: returns the registration
    /// (for ``stopWaitingUntilIdle(_:)``), or `nil` when the queue already is idle (and
    /// everybody was told): the caller returns at once.
    mutating func waitUntilIdle(_ waiter: Continuation<Void>) -> UInt64? {
        if !isBusy && idleDeliveredThrough == period { return nil }
        idleWaiterIDs += 1
        idleWaiters[idleWaiterIDs] = (period, waiter)
        return idleWaiterIDs
    }

    /// The waiter of `registration` stopped waiting (its task was cancelled): returns its
    /// continuation to resume, or `nil` when ``idleDelivered(period:)`` handed it out
    /// already. Either way it is handed out exactly once.
    mutating func stopWaitingUntilIdle(_ registration: UInt64) -> Continuation<Void>? {
        idleWaiters.removeValue(forKey: registration)?.waiter
    }

    /// The idle notification of `period` was delivered: returns the waiters it covers.
    mutating func idleDelivered(period delivered: UInt64) -> [Continuation<Void>] {
        idleDeliveredThrough = Swift.max(idleDeliveredThrough, delivered)
        guard !idleWaiters.isEmpty else { return [] }
        let covered = idleWaiters.filter { $0.value.period <= delivered }
        for registration in covered.keys { idleWaiters[registration] = nil }
        return covered.values.map(\.waiter)
    }

    // MARK: Progress

    /// Someone watches the queue's progress (with the executing members' names when
    /// `names`): they hear it now, then after every change. Balanced by
    /// ``unwatchProgress(names:)``.
    mutating func watchProgress(names: Bool, actions: inout Actions) {
        progressWatchers += 1
        if names { namesWatchers += 1 }
        // The newcomer hears the current progress through the deliverer, in order with
        // what is delivered after it (a delivery already posted covers it too).
        noteProgress(actions: &actions)
        scheduleProgressSample(actions: &actions)
    }

    mutating func unwatchProgress(names: Bool) {
        progressWatchers -= 1
        if names { namesWatchers -= 1 }
        if progressWatchers == 0 { progressSample = nil }
    }

    /// The storage read the progress of the members of a ``Action/sampleProgress(_:)``:
    /// the sampled values of those still executing replace their earlier ones, and
    /// watchers hear the new sum if it changed.
    mutating func progressSampled(_ samples: [(Handle, Double)], actions: inout Actions) {
        let before = sampledSum
        for (handle, value) in samples {
            guard let slot = slot(of: handle), records[Int(slot)].place == .executing else { continue }
            forgetSample(slot)
            guard value > 0 else { continue }
            sampled[slot] = value
            sampledSum += value
        }
        if sampledSum != before { noteProgress(actions: &actions) }
    }

    /// A member stopped executing: its sampled progress no longer counts.
    private mutating func forgetSample(_ slot: Int32) {
        guard !sampled.isEmpty, let old = sampled.removeValue(forKey: slot) else { return }
        sampledSum = sampled.isEmpty ? 0 : Swift.max(0, sampledSum - old)
    }

    /// What the deliverer reads of the queue's progress, under the lock: its counts, the
    /// executing members' progress as last sampled, and, when names are watched, up to
    /// `names` executing members in the order they started.
    struct ProgressReading {
        var isBusy: Bool
        var admitted: Int
        var ended: Int
        var enqueued: Int
        var executing: Int
        var executingProgress: Double
        var executingMembers: [Member] = []
    }

    /// The progress as watchers hear it. O(1), plus O(`names`) and the stale start-order
    /// entries it passes when names are watched.
    func readProgress(names limit: Int) -> ProgressReading {
        ProgressReading(
            isBusy: isBusy, admitted: periodAdmitted, ended: periodEnded, enqueued: enqueuedCount,
            executing: executingCount, executingProgress: sampledSum,
            executingMembers: limit > 0 && namesWatchers > 0 ? executingMembers(limit: limit).map(\.1) : [])
    }

    /// Up to `limit` executing members, in the order they started. O(executing members)
    /// at most: stale entries are at most as many as live ones, plus 64.
    func executingMembers(limit: Int) -> [(Handle, Member)] {
        var members: [(Handle, Member)] = []
        for entry in startOrder.elements where Self.isStarted(entry, in: records) {
            members.append((handle(of: entry.slot), records[Int(entry.slot)].member!))
            if members.count == limit { break }
        }
        return members
    }

    /// The start-order entry of `slot`'s current attempt: its ticket mixed with the
    /// attempt, so that a retried member's entry from an earlier attempt is stale (a
    /// member has at most one live entry, and stale ones never outlive a compaction).
    private static func startEntry(_ slot: Int32, in records: [Record]) -> TicketQueue.Entry {
        // Field by field: copying the record would retain and release its member.
        TicketQueue.Entry(slot: slot, ticket: records[Int(slot)].ticket ^ UInt64(records[Int(slot)].attempt) << 24)
    }

    /// Whether `entry` is the start of an executing member's current attempt.
    private static func isStarted(_ entry: TicketQueue.Entry, in records: [Record]) -> Bool {
        records[Int(entry.slot)].place == .executing && entry == startEntry(entry.slot, in: records)
    }

    /// Watchers hear that the progress changed: one delivery until the deliverer takes
    /// it, however many changes come before. Nothing while nobody watches.
    private mutating func noteProgress(actions: inout Actions) {
        guard progressWatchers > 0, !progressPosted else { return }
        progressPosted = true
        post(.progress, actions: &actions)
    }

    /// A member started executing: it joins the start order, and watchers hear it.
    private mutating func noteStarted(_ slot: Int32, actions: inout Actions) {
        let entry = Self.startEntry(slot, in: records)
        startOrder.append(entry)
        guard progressWatchers > 0 else { return }
        noteProgress(actions: &actions)
        scheduleProgressSample(actions: &actions)
    }

    /// Arms the next sample of the executing members' progress while someone watches
    /// and a member executes.
    private mutating func scheduleProgressSample(actions: inout Actions) {
        guard progressWatchers > 0, executingCount > 0, progressSample == nil else { return }
        let (sample, overflow) = now().addingReportingOverflow(progressSampleInterval)
        progressSample = overflow ? .max : sample
        wakeSleeper(at: progressSample!, actions: &actions)
    }

    // MARK: Reading

    /// The live members (ending ones excluded), in admission order.
    func liveMembers() -> [Member] {
        records.filter { $0.member != nil && !$0.isEnding }.sorted { $0.ticket < $1.ticket }.map { $0.member! }
    }

    /// The internal counts that differ from what the records say (they steer starts and
    /// compaction), or `nil`: for the model-based test.
    var countDrift: String? {
        let live = records.filter { $0.member != nil }
        let counts = (
            live: live.count, ready: live.filter { $0.place == .ready }.count,
            timed: live.filter { $0.place == .executing && $0.timeout > 0 }.count,
            delayed: live.filter { $0.place.isDelayed }.count
        )
        guard (liveCount, readyCount, timedCount, delayedCount) != counts else { return nil }
        return
            "counts (live, ready, timed, delayed) are \((liveCount, readyCount, timedCount, delayedCount)), records say \(counts)"
    }

    /// Memory the machine holds, in entries: for tests that check nothing leaks.
    var footprint: (records: Int, readyEntries: Int, deadlineEntries: Int, names: Int, lanes: Int) {
        (
            records.count, ready.reduce(0) { $0 + $1.queue.count }, deadlines.count + startTimes.count, names.count,
            laneTails.count + lanesByTail.count
        )
    }
}

extension QueueStateMachine: Sendable where Member: Sendable {}
extension QueueStateMachine.Record: Sendable where Member: Sendable {}
extension QueueStateMachine.Admission: Sendable where Member: Sendable {}
extension QueueStateMachine.Action: Sendable where Member: Sendable {}
extension QueueStateMachine.Actions: Sendable where Member: Sendable {}
extension QueueStateMachine.Delivery: Sendable where Member: Sendable {}

/// What a queue reports to its listeners.
enum QueueEvent<Member> {
    case enqueued(Member)
    case started(Member)
    case ended(Member, AsyncTask.Outcome)
    /// An attempt failed; another one follows.
    case retrying(Member, RetryNote)
    /// A member joined the live member `primary` instead of being added.
    case joined(Member, primary: Member)
    /// A member was escalated to `priority` (a raw `TaskPriority`).
    case escalated(Member, priority: UInt8)
    case backgroundTimeExpiring
}

/// What listeners hear of a failed attempt: its number, its error, and the wait before
/// the next one.
struct RetryNote: Sendable {
    let attempt: Int
    let error: any Error
    let delay: Duration
}

extension QueueEvent: Sendable where Member: Sendable {}

extension QueueEvent {
    /// The member the event is about.
    var member: Member? {
        switch self {
        case .enqueued(let member), .started(let member), .ended(let member, _), .retrying(let member, _),
            .joined(let member, _), .escalated(let member, _):
            member
        case .backgroundTimeExpiring: nil
        }
    }

    var kind: ObservedEvents {
        switch self {
        case .enqueued: .enqueued
        case .started: .started
        case .ended: .ended
        case .retrying: .retrying
        case .joined: .joined
        case .escalated: .escalated
        case .backgroundTimeExpiring: .backgroundTimeExpiring
        }
    }
}

/// Which kinds of ``QueueEvent`` a queue emits: every kind while someone listens to its
/// events, the kinds its observers need otherwise (see ``QueueObserver``), none at all
/// by default — an unobserved queue posts nothing.
struct ObservedEvents: OptionSet, Sendable {
    let rawValue: UInt8

    static let enqueued = Self(rawValue: 1 << 0)
    static let started = Self(rawValue: 1 << 1)
    static let ended = Self(rawValue: 1 << 2)
    static let backgroundTimeExpiring = Self(rawValue: 1 << 3)
    static let retrying = Self(rawValue: 1 << 4)
    static let joined = Self(rawValue: 1 << 5)
    static let escalated = Self(rawValue: 1 << 6)
    static let all: Self = [.enqueued, .started, .ended, .backgroundTimeExpiring, .retrying, .joined, .escalated]
}

/// What happened to one member, for ``QueueMember/publicEvent(_:)``.
enum MemberEvent: Sendable {
    case enqueued
    case started
    case ended(AsyncTask.Outcome)
    case retrying(RetryNote)
    case joined(primary: any QueueMember)
    case escalated(priority: UInt8)
}
