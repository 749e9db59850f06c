import Synchronization

extension AsyncTask {
    /// The admission the queue's rules need: the unit's immutable attributes.
    var admission: QueueStateMachine<AsyncTask>.Admission {
        let escalated = escalation.load(ordering: .relaxed)
        let isEscalated = escalated != 0 && Self.rank(escalated) > Self.rank(priorityRawValue)
        return .init(
            member: self, name: name, policy: uniquenessPolicy, priority: isEscalated ? escalated : priorityRawValue,
            timeout: storedTimeout.nanoseconds, delay: extras?.notBefore?.delayFromNow ?? 0,
            lane: extras?.lane, escalated: isEscalated)
    }

    /// Its queue admitted it as `handle`, under the queue's lock, in the transition that
    /// admitted it: from now on the unit tells the queue when it ends — before anyone can
    /// start it, and before its waiters can be resumed. What happened to it meanwhile is
    /// applied to the machine right here: an end (it was cancelled while being added, or
    /// ran to its end already), a retry, or an escalation its admission did not see.
    func attach(
        _ handle: QueueCore.Machine.Handle, machine: inout QueueCore.Machine,
        actions: inout QueueCore.Machine.ActionList
    ) {
        switch state.withLock({ $0.attach(handle) }) {
        case .attached:
            if let escalated = pendingEscalation { machine.memberEscalated(handle, to: escalated, actions: &actions) }
        case .ended(let outcome):
            machine.memberEnded(handle, outcome, actions: &actions)
        case .retrying(_, let record):
            _ = machine.memberRetrying(handle, after: Self.nanoseconds(record.delay), record.note, actions: &actions)
        }
    }

    /// The priority an awaiting caller escalated the unit to, when it ranks above its own.
    private var pendingEscalation: UInt8? {
        let escalated = escalation.load(ordering: .relaxed)
        return escalated != 0 && Self.rank(escalated) > Self.rank(priorityRawValue) ? escalated : nil
    }

    /// Creates the wrapping `Task` of a unit that has just moved to `launching`. The
    /// `Task` takes the work from the unit's state when it runs.
    func launchTask() {
        attach(Task.detached(name: name, priority: priority) { await self.execute() })
    }

    /// ``launchTask()`` at `priority`, to which the unit was escalated while it waited.
    func launchTask(escalatedTo priority: TaskPriority) {
        attach(Task.detached(name: name, priority: priority) { await self.execute() })
    }

    private func attach(_ task: Task<Void, Never>) {
        if !state.withLock({ $0.attach(task) }) {
            task.cancel()
        } else if let escalated = pendingEscalation {
            // Escalated between its start and this attach, when there was no `Task` to raise.
            Self.escalate(task, to: TaskPriority(rawValue: escalated))
        }
    }

    /// Starts the unit without a queue, for a front end that runs it instead (the
    /// Operation bridge): a body gets its wrapping `Task`, as from a queue; external
    /// work is executing when this returns `true`, for the caller to run. Returns `true`
    /// when the unit started: `false` when it was already added to a queue or has
    /// ended, or when its work is external and `byItsFrontEnd` is `false`.
    @discardableResult
    func startHere(byItsFrontEnd: Bool = false, beforeRunning: () -> Void = {}) -> Bool {
        guard let start = state.withLock({ $0.startHere(byItsFrontEnd: byItsFrontEnd) }) else { return false }
        beforeRunning()
        if case .launchTask = start { launchTask() }
        return true
    }

    private func execute() async {
        // A unit that ended before its `Task` ran (cancelled, timed out) never runs its
        // work.
        var taken = takeWork()
        while case .waitFor(let gates) = taken {
            // It replaced units whose bodies still run: its own runs after theirs.
            for gate in gates { await gate.wait() }
            taken = takeWork()
        }
        guard case .run(let work) = taken else { return }
        switch work {
        case .callback(let body):
            await body(self)
            // The `Task` lives until the unit ends. A body that already ended it (the
            // common `finish()` before returning) leaves nothing to wait for: the
            // continuation is resumed right here and the `Task` never suspends.
            // Otherwise it is resumed exactly once, by the single `Ending` that takes
            // `parkedBody` out of the state.
            await withContinuation { (continuation: Continuation<Void>) in
                let (parked, gate) = state.withLock { $0.park(continuation) }
                if !parked {
                    continuation.resume()
                    gate?.bodyReturned()
                }
            }
        case .operation(let body):
            await runAttempts(of: body)
        case .external, .afterReplaced:
            break  // Never launched: external work is run by its front end; gates are taken above.
        }
    }

    /// ``UnitState/takeWork(taskID:)`` for the unit's `Task`.
    private func takeWork() -> UnitState.Taken? {
        #if Metrics
            // Under the unit's lock: whoever ends the unit later sees when it started.
            let measured = metricsAddedAt != 0
            return state.withLock { state in
                let taken = state.takeWork(taskID: Self.currentTaskID)
                if measured, case .run = taken { metricsStartedAt = ContinuousNanoseconds.now() }
                return taken
            }
        #else
            return state.withLock { $0.takeWork(taskID: Self.currentTaskID) }
        #endif
    }
}

extension AsyncTask {
    /// Runs an async body until it returns, or throws with no retry left. A function of
    /// its own: its locals would otherwise enlarge the frame of every unit's `Task`,
    /// callback-style ones included.
    private func runAttempts(of body: @isolated(any) () async throws -> any Sendable) async {
        while true {
            do {
                bodyReturned(.finished, value: Boxed(try await Self.$current.withValue(self) { try await body() }))
                return
            } catch {
                guard let delay = retryDelay(after: error), await waitToRetryEscalating(after: error, delay: delay)
                else {
                    // Also when the unit ended meanwhile: then this is a no-op.
                    bodyReturned(.failed(error))
                    return
                }
            }
        }
    }

    /// The body returned or threw for good: the unit ends with `outcome`, or, if it
    /// ended meanwhile, the unit that replaced it may now run.
    private func bodyReturned(_ outcome: Outcome, value: Boxed<any Sendable>? = nil) {
        let returned = state.withLock { $0.bodyReturned(outcome, value: value) }
        returned.ending?.perform(for: self)
        returned.gate?.bodyReturned()
    }

    /// ``waitToRetry(after:delay:)``, and while the unit waits, a runtime escalation of
    /// its `Task` (someone awaited the `Task` itself) raises its place in the start order
    /// too, as an awaiting caller's does.
    private func waitToRetryEscalating(after error: any Error, delay: Duration) async -> Bool {
        if #available(macOS 26.0, iOS 26.0, watchOS 26.0, tvOS 26.0, visionOS 26.0, *) {
            return await withTaskPriorityEscalationHandler {
                await waitToRetry(after: error, delay: delay)
            } onPriorityEscalated: { _, priority in
                self.escalate(to: priority)
            }
        }
        return await waitToRetry(after: error, delay: delay)
    }

    /// The wait before the next attempt, after the current one failed with `error`;
    /// `nil` for no retry: no policy (the unit's, else its queue's), none left, an error
    /// the policy does not retry, or the unit is being cancelled.
    private func retryDelay(after error: any Error) -> Duration? {
        guard !Task.isCancelled else { return nil }
        let (attempt, queueDefault) = state.withLock { state in
            (state.attempts, extras?.retry == nil ? state.owner?.queue.defaultRetryPolicy : nil)
        }
        return (extras?.retry ?? queueDefault)?.delay(after: error, attempt: attempt)
    }

    /// Suspends the unit's `Task` between two attempts: `true` when the next attempt
    /// runs, `false` when the unit ended meanwhile. Its queue holds it as waiting for
    /// `delay` and starts it again like any ready unit, which resumes the `Task`; a unit
    /// no queue holds (started by its front end) waits the delay itself.
    private func waitToRetry(after error: any Error, delay: Duration) async -> Bool {
        // The next attempt reports its own progress, from none.
        progressBits.store(0, ordering: .relaxed)
        switch state.withLock({ $0.beginRetry(after: error, delay: delay) })?.wait {
        case .queue:
            // Resumed exactly once: here when the unit has ended, else by whichever of the
            // queue's next start and the unit's end takes it out of the state.
            await withContinuation { (parked: Continuation<Void>) in
                switch state.withLock({ $0.park(untilNextAttempt: parked) }) {
                case .ended: parked.resume()
                case .tellQueue(let queue, let handle, let record):
                    queue.memberRetrying(handle, after: record.delay, record.note)
                case .waitForAttach: break
                }
            }
        case .itself:
            try? await Task.sleep(for: delay)
        case nil:
            return false
        }
        return state.withLock { $0.resumeAttempt() }
    }
}

extension AsyncTask {
    /// Joins `primary`'s work: ends with its outcome and value. `claimed`: its queue
    /// claimed it (and did not add it); otherwise it is an ``AsyncOperation``'s unit,
    /// which must still be unclaimed. `false` when it was in neither case (nothing
    /// changed). For the Operation bridge, which does not add a unit again: when
    /// `primary`'s work was cancelled, the unit ends cancelled too (a queue's unit is
    /// added again instead, see ``QueueStorage/add(claimed:instead:)``).
    @discardableResult
    func join(_ primary: AsyncTask, claimed: Bool) -> Bool {
        guard let joining = joining(primary, claimed: claimed) else { return false }
        // Its unrun work is released here, after unlocking.
        switch joining {
        case .ended(let ending): ending.perform(for: self)
        case .joined: forwardEscalationToSharedWork()
        case .refused: end(.cancelled)
        }
        return true
    }

    /// After its add, or its join: a caller that awaited the unit at a higher priority
    /// before it joined shared work (noted, with no work of its own to raise then)
    /// escalates the work it joined. Later awaits escalate the shared work themselves.
    func forwardEscalationToSharedWork() {
        let escalated = escalation.load(ordering: .relaxed)
        guard escalated != 0, let primary = state.withLock({ $0.sharedWork?.primary }), primary !== self else { return }
        primary.escalate(to: TaskPriority(rawValue: escalated))
    }

    /// The transitions of ``join(_:claimed:)``, with nothing performed yet (see
    /// ``UnitState/Joining``); `nil` when the unit could not join.
    func joining(_ primary: AsyncTask, claimed: Bool) -> UnitState.Joining? {
        // A unit that can no longer join (it ended, say cancelled while it waited to be
        // added) leaves the primary's work its own: sharing it would change what
        // cancelling one of the primary's awaiting callers does.
        guard state.withLock({ $0.isWaitingToBeAdded(claimed: claimed) }) else { return nil }
        switch primary.state.withLock({ $0.shareWork(of: primary) }) {
        case .group(let group):
            return state.withLock { $0.join(group, as: self, claimed: claimed) }
        case .ended(let outcome, let value):
            return state.withLock { $0.endUnjoined(outcome, value: value, claimed: claimed) }.map { .ended($0) }
        case .abandoned:
            return .refused
        }
    }

    /// The work it joined ended: it ends with the same outcome and value.
    func endJoined(_ outcome: Outcome, value: Boxed<any Sendable>?) {
        state.withLock { $0.end(outcome, value: value) }?.perform(for: self)
    }
}
