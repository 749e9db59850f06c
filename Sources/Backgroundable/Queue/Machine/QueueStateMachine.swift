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
/// Each event's signature says what it can ask for: its list of actions is
/// `inout Actions<some MayEnd>` for a cancellation, `<some MayStart>` for an end that
/// frees a place, `<some MayAdmit & MayStart>` for an add (see ``ActionKinds``), and
/// the compiler holds the event's code to those kinds. Events that can ask for nothing
/// (``suspend()``, ``memberStopped(_:)``) take no list.
///
/// `Member` is what the queue schedules (``AsyncTask``, or `Operation` in the bridge);
/// the machine only stores references to members and hands them back in actions.
///
/// ## Parts
/// The machine is a coordinator that owns the member records (slots, places, sequential
/// links) and a few small machines, each a value stored inline with its own tests; each
/// of their events returns what it can cause, which the coordinator turns into
/// ``Action``s:
/// - ``NameIndex``: the live members of each name, for the uniqueness policies;
/// - ``ReadyQueue`` and ``Lanes``: the start order by rank, and each lane's last member;
/// - ``Timers``: deadlines, start times and the one sleeper that serves them;
/// - ``BusyPeriods``: busy periods, their background time, and the idle waiters;
/// - ``ProgressTracker``: what progress watchers hear, and when to sample;
/// - ``Outbox``: the deliveries to observers, and who delivers them.
///
/// The coordinator's state is internal, not private, only so that its extensions in
/// this folder (`+Observing`, `+Timing`, `+Record`) reach it; nothing outside the folder
/// touches it.
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
    // MARK: State

    private(set) var limit: Int
    private(set) var suspensions = 0
    private(set) var isClosed = false
    /// `false` once the queue stopped accepting work (a shutdown): new members are
    /// rejected (cancelled), the admitted ones run on.
    private(set) var acceptsWork = true
    /// Whether anyone listens to per-member events (set by the storage).
    var observedEvents: ObservedEvents = []
    /// The clock, in nanoseconds; injected by tests.
    let now: @Sendable () -> Int64

    var records: [Record] = []
    var freeSlots: [Int32] = []
    /// Live members: admitted and not ended (ending ones included).
    private(set) var liveCount = 0
    /// The live members of each name (ending ones excluded).
    var names = NameIndex()
    private var tickets: UInt64 = 0

    /// Ready members by rank, highest first; first come, first served within a rank.
    var ready = ReadyQueue()
    /// The first and last executing members in the order they started (-1 for none); the
    /// records link the rest (``Record/startedAfter``).
    var firstStarted: Int32 = -1
    var lastStarted: Int32 = -1
    /// Deadlines, start times and the sleeper that serves them.
    var timers = Timers()
    var lanes = Lanes()

    private(set) var enqueuedCount = 0
    private(set) var executingCount = 0
    /// A drainer task was asked for and has not stopped yet.
    private(set) var isDrainerScheduled = false

    /// Busy periods, their background time, and who waits for idle.
    var busy: BusyPeriods
    var isBusy: Bool { busy.isBusy }
    /// The current or last busy period.
    var period: UInt64 { busy.period }
    var reportsBusyPeriods: Bool { busy.reportsBusyPeriods }
    var outbox = Outbox<Member>()

    /// The progress watchers hear: counts of the period, samples, start order.
    var progress: ProgressTracker
    var periodAdmitted: Int { progress.admitted }
    var periodEnded: Int { progress.ended }
    /// How often watchers hear the partial progress of executing members, in
    /// nanoseconds: reporting is a plain store in the member, so it is sampled rather
    /// than pushed (10 Hz by default; the model-based test samples faster).
    var progressSampleInterval: Int64 { progress.sampleInterval }
    static var defaultProgressSampleInterval: Int64 { 100_000_000 }

    init(
        limit: Int, reportsBusyPeriods: Bool = true, progressSampleInterval: Int64 = defaultProgressSampleInterval,
        now: @escaping @Sendable () -> Int64
    ) {
        self.progress = ProgressTracker(sampleInterval: progressSampleInterval)
        self.limit = Swift.max(1, limit)
        self.busy = BusyPeriods(reportsBusyPeriods: reportsBusyPeriods)
        self.now = now
    }

    // MARK: Adding

    /// Adds one member; it may start on the caller's thread when the queue has nothing
    /// else running. Returns its handle, or `nil` when it was rejected (see
    /// ``Action/reject(_:_:)``).
    mutating func add(_ admission: Admission, actions: inout Actions<some MayAdmit & MayStart>) -> Handle? {
        guard let handle = enqueue(admission, actions: &actions) else { return nil }
        startEnqueued(actions: &actions)
        return handle
    }

    /// ``add(_:actions:)`` in two steps, for a storage that tells the member its handle
    /// in between, before anything can start it: a member that ended meanwhile
    /// (cancelled on another thread while it was being added) then ends through
    /// ``memberEnded(_:_:actions:)`` and is never started. This step admits it.
    mutating func enqueue(_ admission: Admission, actions: inout Actions<some MayAdmit & MayStart>) -> Handle? {
        guard let slot = admit(admission, place: .ready, actions: &actions) else { return nil }
        link(slot, behind: joinLane(admission.lane, slot), admission, actions: &actions)
        return handle(of: slot)
    }

    /// The second step of ``add(_:actions:)``: starts what the admission made startable.
    mutating func startEnqueued(actions: inout Actions<some MayStart>) {
        startReady(inline: executingCount == 0 && !isDrainerScheduled ? 1 : 0, actions: &actions)
    }

    /// Adds members in order (their policies apply in that order); with `sequential`,
    /// each starts only after the previous admitted one ended (their lanes are ignored:
    /// the group is a lane of its own). Returns the handles of the admitted ones, in
    /// order.
    mutating func add(
        contentsOf admissions: [Admission],
        sequential: Bool,
        actions: inout Actions<some MayAdmit & MayStart>
    ) -> [(member: Member, handle: Handle)] {
        var admitted: [(member: Member, handle: Handle)] = []
        var previous: Int32 = -1
        for admission in admissions {
            guard let slot = admit(admission, place: .ready, inSequence: sequential, actions: &actions) else {
                continue
            }
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
    mutating func addExternal(_ admission: Admission, actions: inout Actions<some MayAdmit>) -> Handle? {
        guard let slot = admit(admission, place: .external, actions: &actions) else { return nil }
        emit(.enqueued(admission.member), actions: &actions)
        return handle(of: slot)
    }

    func handle(of slot: Int32) -> Handle {
        Handle(slot: slot, ticket: records[Int(slot)].ticket)
    }

    /// The slot a handle names, if its member is still there. Tickets start at 1 and a
    /// free slot's is 0, so a matching ticket means the slot holds that very member.
    /// (Records are read field by field here and below: copying one would retain and
    /// release its member and name, on the path of every start and end.)
    func slot(of handle: Handle) -> Int32? {
        guard handle.slot >= 0, Int(handle.slot) < records.count,
            records[Int(handle.slot)].ticket == handle.ticket
        else { return nil }
        return handle.slot
    }

    /// Applies the uniqueness policy and records the member. `nil` when rejected.
    /// `inSequence`: it comes in a sequential group.
    private mutating func admit(
        _ admission: Admission, place: Place, inSequence: Bool = false, actions: inout Actions<some MayAdmit>
    ) -> Int32? {
        if isClosed {
            actions.reject(admission.member, .cancelled, reported: false)
            return nil
        }
        if !acceptsWork {
            actions.reject(admission.member, .cancelled, reported: observedEvents.contains(.ended))
            emit(.ended(admission.member, .cancelled), actions: &actions)
            return nil
        }
        if let name = admission.name {
            switch names.decide(name, admission.policy) {
            case .admit:
                break
            case .drop:
                actions.reject(admission.member, .dropped, reported: observedEvents.contains(.ended))
                emit(.ended(admission.member, .dropped), actions: &actions)
                return nil
            case .join(let slot):
                let primary = records[Int(slot)].member!
                actions.join(
                    admission.member, primary: primary, reported: observedEvents.contains(.joined),
                    inSequence: inSequence)
                emit(.joined(admission.member, primary: primary), actions: &actions)
                return nil
            case .replace(let first):
                var cursor = first
                while cursor >= 0 {
                    let next = names.next(after: cursor)
                    markReplaced(cursor, by: admission.member, actions: &actions)
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
        if let name = admission.name { names.insert(slot, named: name) }
        enqueuedCount += 1
        becomeBusyIfIdle(actions: &actions)
        progress.memberAdmitted()
        noteProgress(actions: &actions)
        return slot
    }

    /// Places an admitted member: ready, blocked behind `predecessor`, or waiting for
    /// its start time (the admission's delay from now), or both.
    private mutating func link(
        _ slot: Int32, behind predecessor: Int32, _ admission: Admission,
        actions: inout Actions<some MayDeliver & MayArmSleeper>
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

    /// Makes `slot` the last member of `lane`: returns the member it waits behind, or -1
    /// when the lane was empty (or `lane` is `nil`).
    private mutating func joinLane(_ lane: LaneKey?, _ slot: Int32) -> Int32 {
        guard let lane else { return -1 }
        return lanes.join(lane, slot) ?? -1
    }

    private mutating func allocate() -> Int32 {
        if let slot = freeSlots.popLast() { return slot }
        records.append(Record())
        return Int32(records.count - 1)
    }

    /// `true` when a live member (not ending) has this name.
    func hasLiveMember(named name: String) -> Bool {
        names.contains(name)
    }

    // MARK: Starting

    mutating func makeReady(_ slot: Int32) {
        records[Int(slot)].place = .ready
        let rank = Self.rank(records[Int(slot)].priority)
        let entry = TicketQueue.Entry(slot: slot, ticket: records[Int(slot)].ticket)
        ready.insert(entry, rank: rank)
    }

    /// Whether `entry`, queued at `rank`, names a ready member of that rank (an escalated
    /// member leaves a stale entry at its former rank).
    private func isReady(_ entry: TicketQueue.Entry, rank: UInt8) -> Bool {
        Self.isReady(entry, rank: rank, in: records)
    }

    /// Whether anything may start now.
    private var mayStart: Bool {
        busy.backgroundTimeHeld && suspensions == 0 && executingCount < limit
    }

    /// The next member to start, taken out of its ready queue (it still counts as ready
    /// until ``start(_:actions:)`` moves it on).
    private mutating func popReady() -> Int32? {
        guard ready.count > 0 else { return nil }
        while let (entry, rank) = ready.popFirst() {
            if isReady(entry, rank: rank) { return entry.slot }
        }
        return nil
    }

    /// Whether a ready member is waiting (drops the stale entries in front of it).
    private mutating func hasReady() -> Bool {
        guard ready.count > 0 else { return false }
        while let (entry, rank) = ready.first {
            if isReady(entry, rank: rank) { return true }
            _ = ready.popFirst()
        }
        return false
    }

    /// Starts up to `inline` members now (their start actions run on the caller's
    /// thread) and leaves the rest to a drainer.
    mutating func startReady(inline: Int, actions: inout Actions<some MayStart>) {
        var started = 0
        while started < inline, mayStart, let slot = popReady() {
            start(slot, actions: &actions)
            started += 1
        }
        if !isDrainerScheduled, mayStart, hasReady() {
            isDrainerScheduled = true
            actions.spawnDrainer()
        }
        // Members that expired as they would start may have been the last ones.
        _ = becomeIdleIfDone(actions: &actions)
    }

    /// One round of the drainer: starts up to 64 members. `false` when there was
    /// nothing to start: the drainer stops (and the role is free again).
    mutating func drain(actions: inout Actions<some MayStart>) -> Bool {
        var started = 0
        while started < 64, mayStart, let slot = popReady() {
            start(slot, actions: &actions)
            started += 1
        }
        if started == 0 { isDrainerScheduled = false }
        _ = becomeIdleIfDone(actions: &actions)
        return started > 0
    }

    private mutating func start(_ slot: Int32, actions: inout Actions<some MayStart>) {
        let member = records[Int(slot)].member!
        let timeout = records[Int(slot)].timeout
        if timeout != .min, timeout <= 0 {
            // It expires as it would start: its work never runs and it never holds a
            // slot (its sequential successor is ready at once).
            release(slot)
            actions.expire(member, reported: observedEvents.contains(.ended))
            emit(.ended(member, .timedOut), actions: &actions)
            noteProgress(actions: &actions)
            return
        }
        enqueuedCount -= 1
        ready.memberLeft()
        executingCount += 1
        records[Int(slot)].place = .executing
        records[Int(slot)].attempt &+= 1
        armDeadline(slot, actions: &actions)
        emit(.started(member), actions: &actions)
        noteStarted(slot, actions: &actions)
        actions.start(member, priority: records[Int(slot)].priority)
    }

    /// Arms the deadline of a member that just started executing (timeout > 0).
    private mutating func armDeadline(_ slot: Int32, actions: inout Actions<some MayArmSleeper>) {
        let timeout = records[Int(slot)].timeout
        guard timeout > 0 else { return }
        let (deadline, overflow) = now().addingReportingOverflow(timeout)
        let entry = DeadlineHeap.Entry(
            deadline: overflow ? .max : deadline, slot: slot, ticket: records[Int(slot)].ticket,
            attempt: records[Int(slot)].attempt)
        let wake = timers.armDeadline(entry)
        Self.arm(wake, actions: &actions)
    }

    /// A delayed member waits until `startTime`.
    private mutating func waitForStartTime(
        _ slot: Int32, _ startTime: Int64, actions: inout Actions<some MayArmSleeper>
    ) {
        let entry = DeadlineHeap.Entry(deadline: startTime, slot: slot, ticket: records[Int(slot)].ticket)
        let wake = timers.waitForStartTime(entry)
        Self.arm(wake, actions: &actions)
    }

    /// Makes sure the sleeper wakes up at `time`: a new sleeper is armed when it is
    /// earlier than the current one's.
    mutating func wakeSleeper(at time: Int64, actions: inout Actions<some MayArmSleeper>) {
        let wake = timers.wake(at: time)
        Self.arm(wake, actions: &actions)
    }

    /// Static, and given a `wake` computed beforehand: a method of `self` whose argument
    /// mutates `self` would copy the whole machine (and its buffers) first.
    private static func arm(_ wake: Timers.Wake?, actions: inout Actions<some MayArmSleeper>) {
        guard let wake else { return }
        actions.armSleeper(deadline: wake.deadline, generation: wake.generation)
    }

    /// The front end started an external member (`handle`, from ``addExternal(_:actions:)``)
    /// or, with no handle on a queue that keeps deadlines only, a member it never added:
    /// it counts as executing and its deadline is armed. Returns the member's handle;
    /// `nil` when the handle names nothing any more (the member's end overtook its
    /// start: nothing happens).
    @discardableResult
    mutating func externalStarted(
        _ handle: Handle?, member: Member, timeout: Int64?,
        actions: inout Actions<some MayEnd & MayDeliver & MayArmSleeper>
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

    /// A member reached its outcome (by itself, or through an ``Action/end(_:_:)``):
    /// it leaves the queue, its successor in a sequential group becomes ready, and
    /// what can start now starts. Exactly once per admitted member; a member the
    /// queue does not hold is ignored.
    mutating func memberEnded(_ handle: Handle, _ outcome: AsyncTask.Outcome, actions: inout Actions<some MayStart>) {
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
        progress.memberEnded()
        names.remove(slot)
        lanes.leave(slot, predecessor: place.isBlocked ? predecessor : -1)
        switch place {
        case .ready:
            enqueuedCount -= 1
            ready.memberLeft()
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
            if records[Int(slot)].timeout > 0 { timers.deadlineLeft() }
            noteStopped(slot)
        }
        if place.isDelayed { timers.startTimeLeft() }
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
        names.remove(slot)
    }

    /// An executing member failed an attempt and will make another one after `delay`
    /// nanoseconds: it frees its slot and waits, live, like a delayed member (then ready,
    /// by priority and first come, first served). Listeners hear `retry`. `false` when
    /// the queue does not hold it as executing (its end is on its way): nothing happens;
    /// or when the queue was closed: it makes no further attempt and ends
    /// ``AsyncTask/Outcome/cancelled``, as the members between attempts did at the close.
    ///
    /// Its next start arms a new deadline; the current attempt's stays in the heap until
    /// due, told apart by the attempt number. That number wraps at 256, which policies
    /// cannot reach (``RetryPolicy/attemptLimit``), so an earlier attempt's deadline
    /// never ends a later attempt.
    mutating func memberRetrying(
        _ handle: Handle, after delay: Int64, _ retry: RetryNote, actions: inout Actions<some MayStart & MayEnd>
    ) -> Bool {
        guard let slot = slot(of: handle), records[Int(slot)].place == .executing, !records[Int(slot)].isEnding
        else { return false }
        if isClosed {
            markEnding(slot, .cancelled, actions: &actions)
            return false
        }
        executingCount -= 1
        if records[Int(slot)].timeout > 0 { timers.deadlineLeft() }
        noteStopped(slot)
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
    mutating func memberEscalated(_ handle: Handle, to priority: UInt8, actions: inout Actions<some MayDeliver>) -> Bool
    {
        guard let slot = slot(of: handle), !records[Int(slot)].isEnding,
            Self.rank(priority) > Self.rank(records[Int(slot)].priority)
        else { return false }
        records[Int(slot)].priority = priority
        if records[Int(slot)].place == .ready {
            // Its entry at the former rank goes stale; makeReady counts it again.
            ready.memberLeft()
            makeReady(slot)
        }
        let member = records[Int(slot)].member!
        emit(.escalated(member, priority: priority), actions: &actions)
        return true
    }

    // MARK: Control

    mutating func setLimit(_ newLimit: Int, actions: inout Actions<some MayStart>) {
        limit = Swift.max(1, newLimit)
        startReady(inline: 0, actions: &actions)
    }

    mutating func suspend() {
        suspensions += 1
    }

    /// Balances one ``suspend()``; extra calls are ignored.
    mutating func resume(actions: inout Actions<some MayStart>) {
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
    mutating func close(actions: inout Actions<some MayEnd & MayDeliver>) {
        isClosed = true
        cancelPending(actions: &actions)
        if !isBusy { post(.closed, actions: &actions) }
    }
}

extension QueueStateMachine: Sendable where Member: Sendable {}
