import Synchronization

/// Something to hand to observers, in order, outside the lock.
enum Delivery {
    /// idle → busy: begin background time, tell the delegate and listeners.
    case busy
    /// busy → idle at the end of busy period `period`: end background time, tell the
    /// delegate and listeners, resume idle waiters of that period.
    case idle(period: UInt64)
    case event(BackgroundQueue.Event)
    /// The queue was deinitialised and is idle: finish the event streams.
    case closed
}

/// What a locked transition asks the caller to do once the lock is released.
struct Effects {
    /// Units that ended under the queue's lock (already forgotten by the queue).
    var endings: [(AsyncTask, UnitState.Ending)] = []
    /// Units moved to `launching` whose wrapping `Task` must be created.
    var launches: [AsyncTask] = []
    var spawnDrainer = false
    /// The caller became the one delivering the outbox.
    var deliver = false
}

/// The scheduling state of one queue as a value: ready lists, executing list,
/// name index, deadline heap and counters. Every method runs under the queue's lock
/// and only records what must happen next in ``Effects``.
///
/// Lock order: the queue's lock may be held while a unit's lock is taken (the nested
/// `unit.state.withLock` calls below), never the other way round.
struct QueueState {
    struct Sleeper {
        let id: UInt64
        var deadline: Int64
        let task: Task<Void, Never>
    }

    var limit: Int
    var suspensions = 0
    var ready = ReadyLists()
    var executing = ExecutingLists()
    var names = NameIndex()
    var enqueuedCount = 0
    var executingCount = 0
    var isClosed = false

    var sleeper: Sleeper?
    var sleeperIDs: UInt64 = 0

    var busyPeriods = BusyPeriods()
    var isBusy: Bool { busyPeriods.isBusy }

    var outbox: [Delivery] = []
    var isDelivering = false
    var listeners: [UInt64: AsyncStream<BackgroundQueue.Event>.Continuation] = [:]
    var listenerIDs: UInt64 = 0
    weak var delegate: (any BackgroundQueueDelegate)?
    var assertion: BackgroundTimeAssertion?

    /// `false` for an executor with no observers of its own (the bridge's direct
    /// core): no busy / idle deliveries, no background time.
    let reportsBusyPeriods: Bool

    init(limit: Int, reportsBusyPeriods: Bool = true) {
        self.limit = limit
        self.reportsBusyPeriods = reportsBusyPeriods
    }

    var canStart: Bool {
        suspensions == 0 && executingCount < limit && ready.first != nil
    }

    // MARK: Delivery

    mutating func post(_ delivery: Delivery, _ effects: inout Effects) {
        outbox.append(delivery)
        if !isDelivering {
            isDelivering = true
            effects.deliver = true
        }
    }

    /// Per-unit events cost nothing when nobody listens.
    mutating func emit(_ event: @autoclosure () -> BackgroundQueue.Event, _ effects: inout Effects) {
        if !listeners.isEmpty {
            post(.event(event()), &effects)
        }
    }

    private mutating func becomeBusyIfIdle(_ effects: inout Effects) {
        guard !isBusy, reportsBusyPeriods else { return }
        _ = busyPeriods.begin()
        post(.busy, &effects)
    }

    private mutating func becomeIdleIfDone(_ effects: inout Effects) {
        guard isBusy, enqueuedCount == 0, executingCount == 0 else { return }
        post(.idle(period: busyPeriods.end()), &effects)
        if isClosed {
            post(.closed, &effects)
        }
    }

    // MARK: Adding

    /// Admits `unit` (created → enqueued) and applies its uniqueness policy.
    /// Returns `false` when it was not admitted: handed to a queue before, already
    /// ended, or dropped (then its ending is in `effects`).
    mutating func admit(_ unit: AsyncTask, into core: QueueCore, _ effects: inout Effects) -> Bool {
        guard !isClosed else {
            // Adding to a queue that is being deinitialised: the unit is cancelled.
            if let ending = unit.state.withLock({ $0.end(.cancelled, ownerKnows: true) }) {
                effects.endings.append((unit, ending))
            }
            return false
        }
        guard unit.state.withLock({ $0.enqueue(in: core) }) else { return false }
        if let name = unit.name {
            // One lookup decides and registers. Units that ended but whose cleanup has
            // not run yet are not live: they never cause a drop, and are not replaced.
            let displaced: [AsyncTask]? = names.withEntry(name) { entry in
                switch unit.uniquenessPolicy {
                case .ignore:
                    entry.append(unit)
                    return []
                case .drop:
                    if entry.contains(where: { $0.state.withLock { !$0.hasEnded } }) { return nil }
                    entry.append(unit)
                    return []
                case .replace:
                    let live = entry.units
                    entry = .one(unit)
                    return live
                }
            }
            guard let displaced else {
                let ending = unit.state.withLock { $0.end(.dropped, ownerKnows: true) }!
                effects.endings.append((unit, ending))
                emit(.ended(unit, .dropped), &effects)
                return false
            }
            for live in displaced {
                // Already removed from the index above; `detach` finds nothing there.
                if let ending = live.state.withLock({ $0.end(.replaced, ownerKnows: true) }) {
                    effects.endings.append((live, ending))
                    detach(live, .replaced, &effects)
                } else {
                    detachEnded(live, &effects)
                }
            }
        }
        unit.links.location = .arriving
        enqueuedCount += 1  // counted from now, so a replacement never looks idle
        return true
    }

    /// Admits the units pushed to the inbox (already `enqueued`, unnamed), oldest first.
    mutating func absorb(_ inbox: borrowing Inbox, core: QueueCore, _ effects: inout Effects) {
        for unit in inbox.takeAll() {
            if isClosed {
                if let ending = unit.state.withLock({ $0.end(.cancelled, ownerKnows: true) }) {
                    effects.endings.append((unit, ending))
                }
                continue
            }
            guard unit.state.withLock({ !$0.hasEnded }) else { continue }  // cancelled meanwhile
            unit.links.location = .arriving
            enqueuedCount += 1
            link(unit, behind: nil, &effects)
        }
    }

    /// Links an admitted unit: ready, or blocked behind `predecessor` when that unit
    /// of the same sequential group is still live.
    mutating func link(_ unit: AsyncTask, behind predecessor: AsyncTask?, _ effects: inout Effects) {
        guard unit.links.location == .arriving else { return }  // replaced by its own batch
        if let predecessor, predecessor.links.location != .none {
            predecessor.links.successor = unit
            unit.links.predecessor = predecessor
            unit.links.location = .blocked
        } else {
            unit.links.location = .ready
            ready.append(unit)
        }
        becomeBusyIfIdle(&effects)
        emit(.enqueued(unit), &effects)
    }

    // MARK: Ending and forgetting

    /// Forgets a unit found ended while the queue was about to act on it; its own
    /// cleanup call, still on its way, will then find it detached.
    private mutating func detachEnded(_ unit: AsyncTask, _ effects: inout Effects) {
        detach(unit, unit.state.withLock { $0.outcome } ?? .cancelled, &effects)
    }

    /// Ends a live unit from the queue's side and forgets it.
    mutating func end(_ unit: AsyncTask, _ outcome: AsyncTask.Outcome, _ effects: inout Effects) {
        if let ending = unit.state.withLock({ $0.end(outcome, ownerKnows: true) }) {
            effects.endings.append((unit, ending))
            detach(unit, outcome, &effects)
        }
    }

    /// Removes an ended unit from every structure: its slot, its name, its deadline.
    /// Idempotent: a unit already detached is left alone.
    mutating func detach(_ unit: AsyncTask, _ outcome: AsyncTask.Outcome, _ effects: inout Effects) {
        let location = unit.links.location
        switch location {
        case .none:
            return
        case .arriving:
            enqueuedCount -= 1
        case .ready:
            ready.remove(unit)
            enqueuedCount -= 1
        case .blocked:
            let predecessor = unit.links.predecessor!
            let successor = unit.links.successor
            successor?.links.predecessor = predecessor
            unit.links.successor = nil
            unit.links.predecessor = nil
            predecessor.links.successor = successor
            enqueuedCount -= 1
        case .executing:
            executing.remove(unit)
            executingCount -= 1
        }
        unit.links.location = .none
        if let name = unit.name {
            names.remove(unit, name: name)
        }
        if location == .ready || location == .executing, let successor = unit.links.successor {
            // The next member of a sequential group may start: whatever the outcome.
            unit.links.successor = nil
            successor.links.predecessor = nil
            successor.links.location = .ready
            ready.append(successor)
        }
        if location != .arriving {
            emit(.ended(unit, outcome), &effects)
        }
        becomeIdleIfDone(&effects)
    }

    /// Every live unit: executing, ready, and the blocked members behind them.
    var liveUnits: [AsyncTask] {
        var units: [AsyncTask] = []
        for head in executing.all + ready.all {
            var cursor: AsyncTask? = head
            while let unit = cursor {
                units.append(unit)
                cursor = unit.links.successor
            }
        }
        return units
    }

    /// Units that have not started: ready ones and blocked group members.
    var pendingUnits: [AsyncTask] {
        liveUnits.filter { $0.links.location != .executing }
    }

    // MARK: Starting

    /// Starts up to `inlineLimit` ready units on the caller's thread — even while a
    /// drainer runs, so that threads ending units help create the next units' tasks —
    /// and makes sure a drainer is scheduled for the rest.
    mutating func startReadyUnits(inlineLimit: Int, core: QueueCore, _ effects: inout Effects) {
        if inlineLimit > 0 {
            _ = popStartable(max: inlineLimit, core: core, &effects)
        }
        if canStart, core.scheduleDrainer() {
            effects.spawnDrainer = true
        }
    }

    /// Moves up to `max` ready units to executing, in priority then FIFO order, while
    /// the queue is not suspended and below its limit. Returns how many units it took.
    mutating func popStartable(max: Int, core: QueueCore, _ effects: inout Effects) -> Int {
        var taken = 0
        var now: Int64?
        while taken < max, suspensions == 0, executingCount < limit, let unit = ready.first {
            taken += 1
            guard unit.state.withLock({ $0.start() }) else {
                detachEnded(unit, &effects)
                continue
            }
            ready.remove(unit)
            enqueuedCount -= 1
            if beginExecuting(unit, now: &now, core: core, &effects) {
                effects.launches.append(unit)
            }
        }
        return taken
    }

    /// Holds `unit`, which a direct executor has just moved to executing itself, until
    /// it ends, and arms its deadline: for the bridge's direct cores (unbounded, never
    /// suspended, nobody listening). Returns `false` when a timeout of zero or less
    /// ended it at once.
    mutating func keepDeadline(of unit: AsyncTask, core: QueueCore, _ effects: inout Effects) -> Bool {
        var now: Int64?
        return beginExecuting(unit, now: &now, core: core, &effects)
    }

    /// Moves a unit that has just started (`UnitState/start()`), and is out of every
    /// ready list and count, to executing: arms its deadline from `now` (read once per
    /// batch). Returns `false` when a timeout of zero or less ended it at once.
    private mutating func beginExecuting(
        _ unit: AsyncTask,
        now: inout Int64?,
        core: QueueCore,
        _ effects: inout Effects
    ) -> Bool {
        let timeout = unit.timeoutNanoseconds
        if unit.hasTimeout {
            let start = now ?? ContinuousNanoseconds.now()
            now = start
            unit.links.deadline = ContinuousNanoseconds.deadline(after: start, timeout)
        }
        unit.links.location = .executing
        executing.append(unit)
        executingCount += 1
        if unit.hasTimeout {
            guard timeout > 0 else {
                end(unit, .timedOut, &effects)
                return false
            }
            armSleeper(for: unit.links.deadline, core: core)
        }
        emit(.started(unit), &effects)
        return true
    }

    // MARK: Timeouts

    /// Makes sure a sleeper wakes up by `deadline`. One sleeper per queue, replaced
    /// only when a new deadline is earlier than the one it sleeps for.
    private mutating func armSleeper(for deadline: Int64, core: QueueCore) {
        if let sleeper, sleeper.deadline <= deadline { return }
        sleeper?.task.cancel()
        sleeperIDs += 1
        let id = sleeperIDs
        // Creating the task under the lock keeps `sleeper` exact; it runs no user code.
        let task = Task.detached(priority: .high) {
            await core.sleep(id: id, until: deadline)
        }
        sleeper = Sleeper(id: id, deadline: deadline, task: task)
    }

    /// Times out every unit whose deadline has passed. Returns the next deadline to
    /// sleep for, or `nil` when the sleeper `id` should stop.
    mutating func expireDeadlines(
        sleeper id: UInt64,
        now: Int64,
        core: QueueCore,
        _ effects: inout Effects
    ) -> Int64? {
        guard sleeper?.id == id else { return nil }  // superseded by an earlier deadline
        for unit in executing.expired(at: now) {
            if let ending = unit.state.withLock({ $0.end(.timedOut, ownerKnows: true) }) {
                effects.endings.append((unit, ending))
                detach(unit, .timedOut, &effects)
            } else {
                detachEnded(unit, &effects)
            }
        }
        startReadyUnits(inlineLimit: 0, core: core, &effects)
        guard let next = executing.earliestDeadline else {
            sleeper = nil
            return nil
        }
        sleeper?.deadline = next
        return next
    }
}
