/// The lifecycle of one unit as a value: pure transitions that say what must be
/// done once the unit's lock is released (see ``UnitState/Ending``).
///
/// created → enqueued (claimed by exactly one queue) → launching (the queue started
/// it; its wrapping `Task` has not taken the work yet) → executing → ended(outcome).
/// An async body that throws and has a ``RetryPolicy`` goes executing → retrying (its
/// `Task` suspended, its queue holding it as waiting) → executing again, as often as
/// the policy allows. A unit its queue did not add because it joined a live unit of its
/// name (``UniquenessPolicy/join``) goes enqueued (or created) → joined → ended, with
/// that unit's outcome.
/// A front end that runs a unit on its own thread (the Operation bridge) goes through
/// the same transitions in one step (``startHere(byItsFrontEnd:)``).
///
/// The first transition to `ended` wins; every later one returns `nil`, which is what
/// makes `finish()`, `cancel()`, timeouts and replacement race-free and exactly-once.
struct UnitState {
    enum Phase {
        case created(AsyncTask.Work)
        case enqueued(AsyncTask.Work)
        /// Kept here rather than captured, the work costs the `Task`'s closure no
        /// context of its own: it captures only the unit. `task` once attached.
        case launching(AsyncTask.Work, task: Task<Void, Never>?)
        case executing(task: Task<Void, Never>?, Body)
        /// Between two attempts of an async body: `parked` is the continuation its `Task`
        /// waits on until the queue starts it again; `nil` once the queue did (or when no
        /// queue holds the unit, and its `Task` waits by itself).
        case retrying(task: Task<Void, Never>?, AttemptRecord, parked: Continuation<Void>?)
        /// It joined the unit that runs `group`'s shared work (``UniquenessPolicy/join``):
        /// its own work is dropped, and it ends with that unit's outcome.
        case joined(JoinGroup)
        /// `value` is what an async-style body returned. Boxed: inline, the existential
        /// would make the phase larger and every copy of it a runtime call.
        /// `performing`: the unit's ``Ending`` is being performed; a waiter that comes
        /// meanwhile waits for it (see ``UnitState/endingPerformed()``), so that nobody
        /// hears the outcome before the end hook returned and the queue forgot the unit.
        /// (Here rather than a stored property of the state, where one more field makes
        /// every unit's state be copied on its add.)
        case ended(AsyncTask.Outcome, value: Boxed<any Sendable>?, Attempts, performing: Bool)
    }

    /// The work of a unit that has not run it yet: what leaves the state when the unit
    /// ends or joins another one before its `Task` took the work.
    var unrunWork: AsyncTask.Work? {
        switch phase {
        case .created(let work), .enqueued(let work), .launching(let work, _): work
        default: nil
        }
    }

    /// How many attempts a unit made, kept with its outcome: one word, and no
    /// allocation unless it was retried.
    enum Attempts {
        case none, one
        case more(AttemptRecord)

        var count: Int {
            switch self {
            case .none: 0
            case .one: 1
            case .more(let record): record.count
            }
        }
    }

    /// What an executing unit's work is doing.
    enum Body {
        /// A callback-style body; `parked` is the continuation its wrapping `Task` is
        /// suspended on, once the body has returned, until the unit ends.
        case callback(parked: Continuation<Void>?)
        /// An async body, running in the task `taskID` identifies (its hash with the low
        /// bit set), so that the body awaiting its own unit is recognised instead of
        /// waiting forever.
        case operation(taskID: Int)
        /// An async body's attempt after the first (`record.count` is its number).
        case retried(AttemptRecord)
        /// Work its front end runs (an ``AsyncOperation``'s closure).
        case external
    }

    /// Someone waiting for the outcome.
    enum Waiter {
        /// A task awaiting ``AsyncTask/outcome``; `taskID` identifies it (see
        /// ``AsyncTask/currentTaskID()``), to take it back when it is cancelled.
        case continuation(Continuation<AsyncTask.Outcome>, taskID: Int)
        case callback(@Sendable (AsyncTask.Outcome) -> Void)
        case observer(any UnitObserver)
        /// The units that joined this one (always the first waiter): they end with its
        /// outcome and value.
        case joiners(JoinGroup)
        /// Held by a unit that ended while its body ran — replaced, or named and cancelled
        /// or timed out — (the only waiter left once it ended): the gate later units of
        /// its name wait on, opened when the body returns. The ending of a named unit
        /// carries it to the queue.
        case bodyReturn(ReplacementGate)

        var isAwaiting: Bool {
            if case .continuation = self { true } else { false }
        }
    }

    /// What to do, outside every lock, after a unit ended.
    struct Ending {
        let outcome: AsyncTask.Outcome
        /// The queue to tell that the unit ended (`nil` when none claimed it), retained
        /// while the unit's lock was held, and the unit's handle in it.
        var queue: QueueCore?
        var handle: QueueCore.Machine.Handle
        /// The wrapping `Task`, to cancel when the outcome stops the work.
        var task: Task<Void, Never>?
        var parkedBody: Continuation<Void>?
        var waiters: [Waiter]
        /// The group a joined unit leaves.
        var joined: JoinGroup?
        /// The work that never ran, carried out of the unit's lock so that it is released
        /// with the `Ending`, after unlocking: the `deinit` of what a caller's closure
        /// captured may do anything, call this unit included.
        var unrunWork: AsyncTask.Work?
    }

    var waiters: [Waiter] = []
    /// The queue that claimed the unit, told once when it ends; its handle is set once
    /// the queue admitted the unit (``attach(_:)-(Handle)``).
    var owner: Owner?
    var phase: Phase

    /// A new unit; already claimed by `queue` when the queue creates it itself (no one
    /// else can have seen it: the claim needs no lock).
    init(work: consuming sending AsyncTask.Work, claimedBy queue: QueueCore? = nil) {
        if let queue, !work.isExternal {
            self.phase = .enqueued(work)
            self.owner = Owner(claimedBy: queue)
        } else {
            self.phase = .created(work)
        }
    }

    var outcome: AsyncTask.Outcome? {
        if case .ended(let outcome, _, _, _) = phase { outcome } else { nil }
    }

    /// The shared work this unit takes part in: the group of the units that joined it,
    /// or the group it joined.
    var sharedWork: JoinGroup? {
        if case .joined(let group) = phase { return group }
        if case .joiners(let group)? = waiters.first { return group }
        return nil
    }

    /// The attempts started so far (see ``AsyncTask/attempts``).
    var attempts: Int {
        switch phase {
        case .created, .enqueued, .launching, .joined: 0
        case .executing(_, .retried(let record)), .retrying(_, let record, _): record.count
        case .executing: 1
        case .ended(_, _, let attempts, _): attempts.count
        }
    }

    /// The error of the last failed attempt, if one failed.
    var lastError: (any Error)? {
        switch phase {
        case .ended(.failed(let error), _, _, _): error
        case .executing(_, .retried(let record)), .retrying(_, let record, _), .ended(_, _, .more(let record), _):
            record.lastError
        default: nil
        }
    }

    /// `outcome != nil`, reading only the phase's case: no copy of its payload.
    var hasEnded: Bool {
        if case .ended = phase { true } else { false }
    }

    /// The wrapping `Task` while the unit is launching or executing.
    var runningTask: Task<Void, Never>? {
        switch phase {
        case .launching(_, let task), .executing(let task, _), .retrying(let task, _, _): task
        default: nil
        }
    }

    /// `true` while the work really runs: from the moment its `Task` (or its front end)
    /// took it until the end. A unit its queue started but whose `Task` has not run yet
    /// is not executing.
    var isExecuting: Bool {
        if case .executing = phase { true } else { false }
    }

    // MARK: Starting

    /// created → enqueued, for the queue the unit is being added to. `false` when it
    /// was already added, has ended, or runs only through its front end.
    mutating func claim(by queue: QueueCore) -> Bool {
        guard case .created(let work) = phase else { return false }
        if case .external = work { return false }
        phase = .enqueued(work)
        owner = Owner(claimedBy: queue)
        return true
    }

    /// The queue that claimed the unit admitted it as `handle`: it is told when the
    /// unit ends. Returns the outcome instead when the unit has already ended (the
    /// queue must then be told by the caller).
    mutating func attach(_ handle: QueueCore.Machine.Handle) -> Attached {
        if let outcome { return .ended(outcome) }
        owner?.admit(as: handle)
        // A body that failed its first attempt before its queue attached it parked
        // waiting for this: the attach tells the queue (see `park(untilNextAttempt:)`).
        if let owner, case .retrying(_, let record, _?) = phase { return .retrying(owner.queue, record) }
        return .attached
    }

    /// What ``attach(_:)-(Handle)`` found.
    enum Attached {
        case attached
        /// The unit has ended: the caller tells the queue.
        case ended(AsyncTask.Outcome)
        /// The unit waits to retry: the caller tells the queue (``QueueStorage/memberRetrying(_:after:_:)``).
        case retrying(QueueCore, AttemptRecord)
    }

    /// What the queue's start means for a unit.
    enum Launch {
        /// enqueued → launching: create the wrapping `Task`, which takes the work.
        case task
        /// A retrying unit's next attempt: resume its parked `Task`.
        case nextAttempt(Continuation<Void>)
    }

    /// The queue started the unit; `nil` when it has ended.
    mutating func launch() -> Launch? {
        switch phase {
        case .enqueued(let work):
            phase = .launching(work, task: nil)
            return .task
        case .retrying(let task, let record, let parked?):
            phase = .retrying(task: task, record, parked: nil)
            return .nextAttempt(parked)
        default:
            return nil
        }
    }

    /// Where a retrying unit's `Task` waits for its next attempt.
    enum RetryWait {
        /// A queue holds it: park (``park(untilNextAttempt:)``) until it starts it again.
        case queue
        /// No queue holds it: its `Task` waits the delay itself.
        case itself
    }

    /// executing → retrying, after an attempt failed with `error` and the next one
    /// should start `delay` later, for the unit's `Task`. `nil` when the unit has ended.
    /// `replaced` is the record of the attempt before, handed out so that its error —
    /// a caller's value — is released after unlocking.
    mutating func beginRetry(after error: any Error, delay: Duration) -> (
        wait: RetryWait, replaced: AttemptRecord?
    )? {
        let record: AttemptRecord
        var replaced: AttemptRecord?
        switch phase {
        case .executing(let task, .operation(let taskID)):
            record = AttemptRecord(count: 1, lastError: error, taskID: taskID, delay: delay)
            phase = .retrying(task: task, record, parked: nil)
        case .executing(let task, .retried(let current)):
            record = AttemptRecord(count: current.count, lastError: error, taskID: current.taskID, delay: delay)
            replaced = current
            phase = .retrying(task: task, record, parked: nil)
        default:
            return nil
        }
        return (owner == nil ? .itself : .queue, replaced)
    }

    /// What the retrying unit's `Task` does once parked.
    enum Parked {
        /// The unit has ended: resume the continuation at once.
        case ended
        /// Tell the queue (``QueueStorage/memberRetrying(_:after:_:)``); it starts the
        /// unit again, which resumes the continuation (or the unit's end does).
        case tellQueue(QueueCore, QueueCore.Machine.Handle, AttemptRecord)
        /// The queue has not attached the unit yet (its first attempt ran right after
        /// the add): the attach tells it (``attach(_:)-(Handle)``).
        case waitForAttach
    }

    /// Parks the retrying unit's `Task` on `parked`. Exactly one of this and the attach
    /// tells the queue: this when the unit was attached before, the attach otherwise.
    mutating func park(untilNextAttempt parked: Continuation<Void>) -> Parked {
        guard case .retrying(let task, let record, nil) = phase else { return .ended }
        phase = .retrying(task: task, record, parked: parked)
        guard let owner, owner.isAdmitted else { return .waitForAttach }
        return .tellQueue(owner.queue, owner.handle, record)
    }

    /// retrying → executing, for the `Task` its queue (or its own wait) resumed: `false`
    /// when the unit ended meanwhile (the next attempt never runs).
    mutating func resumeAttempt() -> Bool {
        guard case .retrying(let task, let record, nil) = phase else { return false }
        let next = AttemptRecord(
            count: record.count + 1, lastError: record.lastError, taskID: record.taskID, delay: .zero)
        phase = .executing(task: task, .retried(next))
        return true
    }

    /// Stores the wrapping `Task`. `false` when the unit ended before the task was
    /// attached: the caller must cancel it.
    mutating func attach(_ task: Task<Void, Never>) -> Bool {
        switch phase {
        case .launching(let work, nil):
            phase = .launching(work, task: task)
        case .executing(nil, let body):
            phase = .executing(task: task, body)
        case .retrying(nil, let record, let parked):
            phase = .retrying(task: task, record, parked: parked)
        default:
            return false
        }
        return true
    }

    /// What ``takeWork(taskID:)`` hands the unit's `Task`.
    enum Taken {
        /// launching → executing: run this work.
        case run(AsyncTask.Work)
        /// The unit replaced others whose bodies still run: wait for these gates, then
        /// take the work again.
        case waitFor([ReplacementGate])
    }

    /// launching → executing, for whoever runs the work: returns it, or `nil` when the
    /// unit ended before (its work never runs). A unit that replaced units whose bodies
    /// still run stays launching until they returned (``Taken/waitFor(_:)``). `taskID`
    /// identifies the running task (see ``Body/operation(taskID:)``); it is asked for
    /// async bodies only.
    mutating func takeWork(taskID: () -> Int) -> Taken? {
        guard case .launching(var work, let task) = phase else { return nil }
        if case .afterReplaced(let gates, let inner) = work {
            let closed = gates.filter { !$0.isOpen }
            guard closed.isEmpty else { return .waitFor(closed) }
            work = inner
        }
        switch work {
        case .callback: phase = .executing(task: task, .callback(parked: nil))
        case .operation: phase = .executing(task: task, .operation(taskID: taskID()))
        case .external: phase = .executing(task: task, .external)
        case .afterReplaced: return nil  // Not reachable: gates are never nested.
        }
        return .run(work)
    }

    /// What the caller of ``startHere(byItsFrontEnd:)`` does next.
    enum StartHere {
        /// The unit is launching: create its `Task`, which takes the work.
        case launchTask
        /// External work is executing: its front end runs it.
        case runExternally
    }

    /// claim and launch in one step, for a front end that runs the unit instead of a
    /// queue. `nil` when the unit was already added to a queue, has ended, or (unless
    /// `byItsFrontEnd`) its work belongs to a front end.
    mutating func startHere(byItsFrontEnd: Bool) -> StartHere? {
        guard case .created(let work) = phase else { return nil }
        if case .external = work {
            guard byItsFrontEnd else { return nil }
            phase = .executing(task: nil, .external)
            return .runExternally
        }
        phase = .launching(work, task: nil)
        return .launchTask
    }

    /// `true` while an async body runs in the task `taskID` identifies.
    func isRunningBody(in taskID: Int) -> Bool {
        switch phase {
        case .executing(_, .operation(let runningID)): runningID == taskID
        case .executing(_, .retried(let record)): record.taskID == taskID
        default: false
        }
    }

    /// Parks a callback-style body, which has returned, until the unit ends. `false`
    /// when it has already ended: the caller resumes the continuation itself (and opens
    /// `gate`, when the unit was replaced while its body ran).
    mutating func park(_ body: Continuation<Void>) -> (parked: Bool, gate: ReplacementGate?) {
        guard case .executing(let task, .callback(parked: nil)) = phase else { return (false, takeBodyGate()) }
        phase = .executing(task: task, .callback(parked: body))
        return (true, nil)
    }

    /// An async body returned (`outcome` is finished or failed): the unit ends with it,
    /// unless it ended before — then `gate` is the one later units of its name wait on,
    /// if it ended while the body ran (see ``countBody(in:)``).
    mutating func bodyReturned(
        _ outcome: AsyncTask.Outcome, value: Boxed<any Sendable>? = nil
    ) -> (ending: Ending?, gate: ReplacementGate?) {
        hasEnded ? (nil, takeBodyGate()) : (end(outcome, value: value), nil)
    }

    /// The gate an ended unit's body opens when it returns: after the end, the unit holds
    /// no other waiter.
    private mutating func takeBodyGate() -> ReplacementGate? {
        guard case .bodyReturn(let gate)? = waiters.first else { return nil }
        waiters.removeFirst()
        return gate
    }

    /// The unit ends while its body runs: `gate` (a new one if it is `nil`) counts that
    /// body until it returns. Returns the gate that counts it.
    private mutating func countBody(in gate: ReplacementGate? = nil) -> ReplacementGate {
        let counting = gate ?? ReplacementGate()
        counting.add()
        waiters = [.bodyReturn(counting)]
        return counting
    }

    // MARK: Ending

    /// Its queue replaced the unit (``UniquenessPolicy/replace``), under the queue's lock:
    /// it ends ``AsyncTask/Outcome/replaced``. When its body is running, `gate` (made
    /// here if it is the first) counts it until the body returns, so the replacement
    /// never runs beside it. `nil` when the unit had ended already.
    mutating func replace(gate: inout ReplacementGate?) -> Ending? {
        let bodyRuns = self.bodyRuns
        guard let ending = end(.replaced) else {
            // Ended already (cancelled, timed out), its body still running: the
            // replacement waits for that body as well.
            if case .bodyReturn(let lingering)? = waiters.first {
                if let gate { lingering.forward(to: gate) } else { gate = lingering }
            }
            return nil
        }
        if bodyRuns { gate = countBody(in: gate) }
        return ending
    }

    /// `true` while the unit's body (a callback that has not returned, or an attempt of
    /// an async body) runs.
    private var bodyRuns: Bool {
        switch phase {
        case .executing(_, .callback(parked: nil)), .executing(_, .operation), .executing(_, .retried): true
        default: false
        }
    }

    /// A unit that replaced others, or whose name's replaced bodies still run, waits
    /// before its work runs until they returned: under its queue's lock, before the
    /// queue can start it. A second call adds gates to those of the first.
    mutating func waitBeforeRunning(for gates: [ReplacementGate]) {
        guard case .enqueued(let work) = phase else { return }
        if case .afterReplaced(let earlier, let inner) = work {
            phase = .enqueued(.afterReplaced(earlier + gates, inner))
        } else {
            phase = .enqueued(.afterReplaced(gates, work))
        }
    }

    /// `finish()`: finished while the work runs; before that (even once its queue
    /// started it, while its `Task` has not taken the work) it cancels the unit, as in
    /// 1.x: work that never ran is never reported finished.
    mutating func finish() -> Ending? {
        isExecuting ? end(.finished) : end(.cancelled)
    }

    /// The one transition to `ended`. Returns `nil` when the unit has already ended,
    /// or when the outcome does not apply to the current phase: before the work runs a
    /// unit can only be stopped (cancelled, replaced, dropped; timed out once its queue
    /// started it); while it runs it cannot be dropped.
    ///
    /// A unit cancelled or timed out while its body runs keeps a gate that the body opens
    /// when it returns; the ending carries it to the queue, where later units of its name
    /// wait for it, and a shutdown too (see ``LingeringBodies``).
    mutating func end(_ outcome: AsyncTask.Outcome, value: Boxed<any Sendable>? = nil) -> Ending? {
        let lingers = outcome.kind != .replaced && outcome.isCancellation && bodyRuns
        var task: Task<Void, Never>?
        var parkedBody: Continuation<Void>?
        var attempts = Attempts.none
        switch (phase, outcome.kind) {
        case (.ended, _):
            return nil
        case (.created, .cancelled), (.created, .dropped), (.created, .replaced),
            (.enqueued, .cancelled), (.enqueued, .dropped), (.enqueued, .replaced),
            // The queue started it with a timeout of zero or less: it expired at once.
            (.enqueued, .timedOut):
            break
        case (.launching(_, let runningTask), .cancelled), (.launching(_, let runningTask), .replaced),
            (.launching(_, let runningTask), .timedOut):
            task = runningTask
        case (.executing(let runningTask, let body), let kind) where kind != .dropped:
            switch body {
            case .callback(let parked):
                parkedBody = parked
                attempts = .one
            case .retried(let record): attempts = .more(record)
            case .operation, .external: attempts = .one
            }
            if outcome.isCancellation { task = runningTask }
        case (.joined(let group), _):
            // The shared outcome, or its own cancellation; its own work never ran.
            return finishEnding(outcome, value: value, attempts: .none, joined: group)
        case (.retrying(let runningTask, let record, let parked), .cancelled),
            (.retrying(let runningTask, let record, let parked), .replaced),
            (.retrying(let runningTask, let record, let parked), .timedOut):
            // Between attempts (or restarted, its `Task` not resumed yet): no next attempt.
            task = runningTask
            parkedBody = parked
            attempts = .more(record)
        default:
            return nil
        }
        var ending = finishEnding(outcome, value: value, attempts: attempts, task: task, parkedBody: parkedBody)
        if lingers {
            // For the queue (see `Ending.perform`).
            ending.waiters.append(.bodyReturn(countBody()))
        }
        return ending
    }

    private mutating func finishEnding(
        _ outcome: AsyncTask.Outcome, value: Boxed<any Sendable>?, attempts: Attempts,
        task: Task<Void, Never>? = nil, parkedBody: Continuation<Void>? = nil, joined: JoinGroup? = nil
    ) -> Ending {
        let work = unrunWork
        phase = .ended(outcome, value: value, attempts, performing: true)
        let waiters = self.waiters
        self.waiters = []
        // The ending tells the queue; the unit lets it go, so that a caller holding an
        // ended unit does not keep its queue (and its provider and listeners) alive.
        let (queue, handle) = (owner?.queue, owner?.handle ?? .unadmitted)
        owner = nil
        return Ending(
            outcome: outcome, queue: queue, handle: handle, task: task,
            parkedBody: parkedBody, waiters: waiters, joined: joined, unrunWork: work)
    }

    /// The unit's ``Ending`` was performed: returns the waiters that came meanwhile, to
    /// be told the outcome now. (The gate of a body that still runs stays.)
    mutating func endingPerformed() -> [Waiter] {
        if case .ended(let outcome, let value, let attempts, performing: true) = phase {
            phase = .ended(outcome, value: value, attempts, performing: false)
        }
        guard !waiters.isEmpty, waiters.contains(where: { $0.isLate }) else { return [] }
        let late = waiters.filter { $0.isLate }
        waiters.removeAll { $0.isLate }
        return late
    }
}

extension UnitState.Waiter {
    /// A waiter that came while the ending was performed (anything but a body's gate).
    fileprivate var isLate: Bool {
        if case .bodyReturn = self { false } else { true }
    }
}
