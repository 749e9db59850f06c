import Synchronization

extension AsyncTask: QueueMember {
    /// The wrapping `Task`, while the unit is launching or executing (a shutdown waits
    /// for it to return).
    var runningTask: Task<Void, Never>? { state.withLock { $0.runningTask } }

    /// The queue started the unit: it moves to launching and gets its `Task`.
    func startFromQueue(priority: UInt8) {
        switch state.withLock({ $0.launch() }) {
        case .task:
            // The common case keeps the plain path: building a `TaskPriority?` from a raw
            // value costs runtime calls on every start.
            if priority == priorityRawValue {
                launchTask()
            } else {
                launchTask(escalatedTo: TaskPriority(rawValue: priority))
            }
        case .nextAttempt(let parked):
            parked.resume()
        case nil:
            break
        }
    }

    func endFromQueue(_ outcome: Outcome) {
        end(outcome)
    }

    func settle(_ decision: QueueDecision, gate: inout ReplacementGate?) -> SettledDecision {
        switch decision {
        case .end(let outcome):
            var result = state.withLock { state in
                (ending: state.end(outcome), outcome: state.outcome, lingering: state.lingeringBody)
            }
            // A body it leaves running: its gate goes to the queue now, under its lock,
            // instead of with the unit's end (``UnitState/Ending/perform(for:)``).
            if case .bodyReturn(let body)? = result.ending?.waiters.last {
                gate = body
                result.ending?.waiters.removeLast()
            } else if result.ending == nil {
                // It ended by itself, its body still running, and that end has not
                // reached the queue yet (its end hook runs, say): the queue, which frees
                // the name now, learns of the body now too (it hears it twice then).
                gate = result.lingering
            }
            return settled(result.ending, result.outcome)
        case .replace:
            let result = state.withLock { state in (ending: state.replace(gate: &gate), outcome: state.outcome) }
            return settled(result.ending, result.outcome)
        case .join(let primary, let inSequence):
            guard let primary = primary as? AsyncTask, let joining = joining(primary, claimed: true) else {
                // Not reachable with a primary of another kind: a queue's members are all units.
                return SettledDecision(applied: false, outcome: currentOutcome)
            }
            switch joining {
            case .joined(let unrunWork):
                return SettledDecision(applied: true, outcome: nil, remainder: .release(unrunWork))
            case .ended(let ending):
                return SettledDecision(
                    applied: true, outcome: ending.outcome, remainder: .ending(PendingEnding(self, ending)))
            case .refused:
                return inSequence ? endedCancelled() : addedInstead(of: primary)
            }
        }
    }

    /// The work it meant to join was cancelled, in a sequential group: it ends cancelled
    /// too, as an operation of the bridge does. Out of line: a join rarely meets cancelled
    /// work.
    @inline(never)
    private func endedCancelled() -> SettledDecision {
        let ending = state.withLock { $0.end(.cancelled) }
        return settled(ending, currentOutcome)
    }

    /// The work it meant to join was cancelled: after unlocking, it is added as work of
    /// its own. Out of line: a join rarely meets cancelled work.
    @inline(never)
    private func addedInstead(of primary: AsyncTask) -> SettledDecision {
        guard let queue = state.withLock({ $0.owner?.queue }) else {
            return SettledDecision(applied: false, outcome: currentOutcome)
        }
        return SettledDecision(
            applied: false, outcome: nil, remainder: .call { queue.add(claimed: self, instead: primary) })
    }

    private func settled(_ ending: UnitState.Ending?, _ outcome: Outcome?) -> SettledDecision {
        guard let ending else { return SettledDecision(applied: false, outcome: outcome) }
        return SettledDecision(applied: true, outcome: outcome, remainder: .ending(PendingEnding(self, ending)))
    }

    func waitBeforeRunning(for gates: [ReplacementGate]) {
        state.withLock { $0.waitBeforeRunning(for: gates) }
    }

    var reportedProgress: Double? { fractionCompleted }

    var memberName: String? { name }

    func publicEvent(_ event: MemberEvent) -> BackgroundQueue.Event? {
        switch event {
        case .enqueued: .enqueued(self)
        case .started: .started(self)
        case .ended(let outcome): .ended(self, outcome)
        case .retrying(let retry): .retrying(self, attempt: retry.attempt, error: retry.error, delay: retry.delay)
        case .joined(let primary): (primary as? AsyncTask).map { .joined(self, primary: $0) }
        case .escalated(let priority): .escalated(self, priority: TaskPriority(rawValue: priority))
        }
    }
}

extension AsyncTask: CustomStringConvertible {
    public var description: String {
        "AsyncTask(\(name.map { "\"\($0)\"" } ?? "unnamed"), \(currentOutcome.map { "\($0)" } ?? (isExecuting ? "executing" : "pending")))"
    }
}

extension UnitState.Ending {
    /// Performs the ending's side effects, outside every lock: the unit's end hook runs
    /// (see ``AsyncTask/Options/onEnd``), the queue's metrics count the outcome, then the
    /// owning queue forgets the unit (so waiters see its slot free, and whoever waits for
    /// the queue to be idle sees every outcome counted and every end hook returned), then
    /// the `Task` is cancelled, the parked body and the waiters are resumed (those that
    /// came while this ran too), and `onTimeout` runs.
    func perform(for unit: AsyncTask) {
        let extras = unit.extras
        extras?.onEnd?(outcome)
        if let queue {
            queue.measurer?.unitEnded(unit, outcome)
            if handle != .unadmitted {
                // The unit ended while its body runs: later units of its name, and a
                // shutdown, wait for it.
                if case .bodyReturn(let body)? = waiters.last {
                    queue.memberEnded(handle, outcome, leaving: body, named: unit.name)
                } else {
                    queue.memberEnded(handle, outcome)
                }
            } else {
                // Claimed but not admitted yet (it waits in the queue's inbox, or its
                // batch is being added): a transition admits it now, and the admission
                // reports this end; the queue never holds a unit that ended before.
                queue.transition { _, _ in }
            }
        }
        task?.cancel()
        parkedBody?.resume()
        var awaiting = 0
        for waiter in waiters {
            if waiter.isAwaiting { awaiting += 1 }
            tell(waiter, unit)
        }
        // The waiters that came while this ran (they do not count for shared work).
        for waiter in unit.state.withLock({ $0.endingPerformed() }) { tell(waiter, unit) }
        if let joined, joined.leave(unit, awaiting: awaiting) {
            // The last awaiting caller of the shared work cancelled this one.
            joined.primary?.cancel()
        }
        if case .timedOut = outcome, let onTimeout = extras?.onTimeout {
            // At the priority of the queue's timer: a pool busy with other units must not
            // hold back the one callback that reports a timeout.
            Task.detached(priority: .high) { await onTimeout(unit) }
        }
    }

    private func tell(_ waiter: UnitState.Waiter, _ unit: AsyncTask) {
        switch waiter {
        case .continuation(let continuation, _): continuation.resume(returning: outcome)
        case .callback(let callback): callback(outcome)
        case .observer(let observer): observer.unitEnded(outcome)
        case .joiners(let group): group.primaryEnded(outcome, value: unit.returnedValue)
        case .bodyReturn: break  // Handed to the queue above.
        }
    }
}
