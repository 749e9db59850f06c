/// A front end that must hear when its unit ends (the Operation bridge): held strongly by
/// the unit until then, with no closure to allocate.
protocol UnitObserver: AnyObject, Sendable {
    /// Called at most once, on the thread that ended the unit, outside every lock.
    func unitEnded(_ outcome: AsyncTask.Outcome)
}

/// The lifecycle of one unit as a value: pure transitions that say what must be
/// done once the unit's lock is released (see ``UnitState/Ending``).
///
/// created → enqueued (in exactly one ``QueueCore``) → launching → executing →
/// ended(outcome), or reserved → executing → ended(outcome) for a unit whose front end
/// runs its work.
/// The first transition to `ended` wins; every later one returns `nil`, which is what
/// makes `finish()`, `cancel()`, timeouts and replacement race-free and exactly-once.
struct UnitState {
    enum Phase {
        case created(AsyncTask.Work)
        /// Belongs to a front end that runs the work itself (an ``AsyncOperation``): no
        /// queue admits it, and only that front end starts it.
        case reserved
        case enqueued(QueueCore, AsyncTask.Work)
        /// Started (its queue counts it as executing) and waiting for its wrapping `Task`
        /// to take the work. Kept here rather than captured, the work costs the `Task`'s
        /// closure no context of its own: it captures only the unit. `owner` and `task`
        /// as in `executing`.
        case launching(QueueCore?, task: Task<Void, Never>?, work: AsyncTask.Work)
        /// `owner` is the core that forgets the unit when it ends (`nil`: none tracks
        /// it); `task` is the wrapping `Task` once it is attached.
        case executing(QueueCore?, task: Task<Void, Never>?, Body)
        /// `value` is what an async-style body returned. Boxed: inline, the existential
        /// would make the phase 16 bytes larger and every copy of it a runtime call.
        case ended(AsyncTask.Outcome, value: Boxed<any Sendable>?)
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
    }

    /// Someone waiting for the outcome.
    enum Waiter {
        case continuation(Continuation<AsyncTask.Outcome>)
        case callback(@Sendable (AsyncTask.Outcome) -> Void)
        case observer(any UnitObserver)

        func resume(with outcome: AsyncTask.Outcome) {
            switch self {
            case .continuation(let continuation): continuation.resume(returning: outcome)
            case .callback(let callback): callback(outcome)
            case .observer(let observer): observer.unitEnded(outcome)
            }
        }
    }

    /// What to do, outside every lock, after a unit ended.
    struct Ending {
        let outcome: AsyncTask.Outcome
        /// The queue that must forget the unit; `nil` when the queue itself ended it
        /// under its own lock and has already forgotten it.
        var owner: QueueCore?
        /// The wrapping `Task`, to cancel when the outcome stops the work.
        var task: Task<Void, Never>?
        var parkedBody: Continuation<Void>?
        var waiters: [Waiter]
    }

    // `waiters` first: the phase's last byte is its tag, and the unit's one-byte fields
    // pack after it.
    var waiters: [Waiter] = []
    var phase: Phase

    init(phase: Phase) {
        self.phase = phase
    }

    var outcome: AsyncTask.Outcome? {
        if case .ended(let outcome, _) = phase { outcome } else { nil }
    }

    /// `outcome != nil`, reading only the phase's case: no copy of its payload.
    var hasEnded: Bool {
        if case .ended = phase { true } else { false }
    }

    /// `true` from the start (`launching`) until the end.
    var isExecuting: Bool {
        switch phase {
        case .launching, .executing: true
        default: false
        }
    }

    /// created → enqueued. `false` when the unit was already handed to a queue or has
    /// ended: adding it again is a no-op.
    mutating func enqueue(in owner: QueueCore) -> Bool {
        guard case .created(let work) = phase else { return false }
        phase = .enqueued(owner, work)
        return true
    }

    /// enqueued → launching: the caller launches the wrapping `Task`. `false` when the
    /// unit has ended.
    mutating func start() -> Bool {
        guard case .enqueued(let owner, let work) = phase else { return false }
        phase = .launching(owner, task: nil, work: work)
        return true
    }

    /// created → started in one step, for an executor that runs the unit at once, and
    /// returns the work: a callback-style body is now executing, for the caller to call
    /// on its thread; an async body is launching, for the caller to launch its `Task`.
    /// `owner` keeps the unit's deadline (`nil` when it has none). `nil` when the unit
    /// was already handed to a queue or has ended.
    mutating func startAtOnce(owner: QueueCore?) -> AsyncTask.Work? {
        guard case .created(let work) = phase else { return nil }
        if case .callback = work {
            phase = .executing(owner, task: nil, .callback(parked: nil))
        } else {
            phase = .launching(owner, task: nil, work: work)
        }
        return work
    }

    /// reserved → executing, for the front end that reserved the unit (it runs the work
    /// itself). `false` when the unit has ended.
    mutating func startReserved(owner: QueueCore?) -> Bool {
        guard case .reserved = phase else { return false }
        phase = .executing(owner, task: nil, .callback(parked: nil))
        return true
    }

    /// Stores the wrapping `Task`. `false` when the unit ended before the task was
    /// attached: the caller must cancel it.
    mutating func attach(_ task: Task<Void, Never>) -> Bool {
        switch phase {
        case .launching(let owner, nil, let work):
            phase = .launching(owner, task: task, work: work)
        case .executing(let owner, nil, let body):
            phase = .executing(owner, task: task, body)
        default:
            return false
        }
        return true
    }

    /// launching → executing, for the wrapping `Task`: returns the work to run, or `nil`
    /// when the unit ended before its `Task` ran (its work never runs). `taskID`
    /// identifies the running task (see ``Body/operation(taskID:)``); it is asked for
    /// async bodies only.
    mutating func takeWork(taskID: () -> Int) -> AsyncTask.Work? {
        guard case .launching(let owner, let task, let work) = phase else { return nil }
        switch work {
        case .callback: phase = .executing(owner, task: task, .callback(parked: nil))
        case .operation: phase = .executing(owner, task: task, .operation(taskID: taskID()))
        }
        return work
    }

    /// `true` while an async body runs in the task `taskID` identifies.
    func isRunningBody(in taskID: Int) -> Bool {
        guard case .executing(_, _, .operation(let runningID)) = phase else { return false }
        return runningID == taskID
    }

    /// Parks a callback-style body until the unit ends. `false` when it has already
    /// ended: the caller resumes the continuation itself.
    mutating func park(_ body: Continuation<Void>) -> Bool {
        guard case .executing(let owner, let task, .callback(parked: nil)) = phase else { return false }
        phase = .executing(owner, task: task, .callback(parked: body))
        return true
    }

    /// Registers a waiter, or returns the outcome when the unit has already ended.
    mutating func wait(_ waiter: Waiter) -> AsyncTask.Outcome? {
        if let outcome { return outcome }
        waiters.append(waiter)
        return nil
    }

    /// `finish()`: finished while executing; before the unit starts it cancels it
    /// (the 1.x behaviour).
    mutating func finish() -> Ending? {
        isExecuting ? end(.finished) : end(.cancelled)
    }

    /// The one transition to `ended`. Returns `nil` when the unit has already ended, or
    /// when the outcome does not apply to the current phase (a unit that is not
    /// executing cannot finish, fail or time out; only an arriving unit can be dropped).
    mutating func end(
        _ outcome: AsyncTask.Outcome,
        value: Boxed<any Sendable>? = nil,
        ownerKnows: Bool = false
    ) -> Ending? {
        var owner: QueueCore?
        var task: Task<Void, Never>?
        var parkedBody: Continuation<Void>?
        switch (phase, outcome) {
        case (.ended, _):
            return nil
        case (.created, .cancelled), (.created, .dropped), (.created, .replaced),
            (.reserved, .cancelled), (.reserved, .dropped), (.reserved, .replaced):
            break
        case (.enqueued(let core, _), .cancelled), (.enqueued(let core, _), .replaced),
            (.enqueued(let core, _), .dropped):
            owner = core
        case (.launching(let core, let runningTask, _), _):
            guard outcome.kind != .dropped else { return nil }
            owner = core
            if outcome.isCancellation { task = runningTask }
        case (.executing(let core, let runningTask, let body), _):
            guard outcome.kind != .dropped else { return nil }
            owner = core
            if case .callback(let parked) = body { parkedBody = parked }
            if outcome.isCancellation { task = runningTask }
        default:
            return nil
        }
        phase = .ended(outcome, value: value)
        let waiters = self.waiters
        self.waiters = []
        return Ending(
            outcome: outcome,
            owner: ownerKnows ? nil : owner,
            task: task,
            parkedBody: parkedBody,
            waiters: waiters
        )
    }
}
