/// The unit's waiters and the work it shares: callers awaiting its outcome, and units
/// that join it (``UniquenessPolicy/join``) or that it joins.
extension UnitState {
    /// Registers a waiter, or returns the outcome when the unit has already ended. An
    /// awaiting task counts as an interested caller of the shared work, if any.
    /// While the unit's ending is being performed, the waiter waits for it: it hears
    /// the outcome after the end hook returned and the queue forgot the unit, as the
    /// waiters that came before the end do.
    mutating func wait(_ waiter: Waiter) -> AsyncTask.Outcome? {
        if case .ended(let outcome, _, _, let performing) = phase {
            guard performing else { return outcome }
            waiters.append(waiter)
            return nil
        }
        waiters.append(waiter)
        if waiter.isAwaiting { sharedWork?.addAwaiters(1) }
        return nil
    }

    /// What the cancellation of the task `taskID`, awaiting the outcome, does.
    enum AwaiterCancellation {
        /// Cancel the unit (its end resumes the awaiter): its own work, or a joined unit.
        case cancelUnit
        /// The unit runs shared work others await: only this awaiter stops waiting
        /// (resume it with ``AsyncTask/Outcome/cancelled``); `cancelsSharedWork` when it
        /// was the last awaiting caller.
        case stopWaiting(Continuation<AsyncTask.Outcome>, cancelsSharedWork: Bool)
        /// Nothing: the unit has ended (its end resumes the awaiter), or the awaiter was
        /// handed out already.
        case nothing
    }

    mutating func awaiterCancelled(_ taskID: Int) -> AwaiterCancellation {
        guard !hasEnded else { return .nothing }
        guard case .joiners(let group)? = waiters.first else { return .cancelUnit }
        // O(its own awaiters), on a cancellation only.
        guard
            let index = waiters.firstIndex(where: {
                if case .continuation(_, taskID) = $0 { true } else { false }
            }), case .continuation(let continuation, _) = waiters.remove(at: index)
        else { return .nothing }
        return .stopWaiting(continuation, cancelsSharedWork: group.withdraw(1))
    }

    /// Claimed by the queue that is adding it (`claimed`), or created (the unit of an
    /// ``AsyncOperation``, which Foundation starts): it may still join another unit.
    func isWaitingToBeAdded(claimed: Bool) -> Bool {
        switch phase {
        case .enqueued: claimed
        case .created: !claimed
        default: false
        }
    }

    /// What ``shareWork(of:)`` found.
    enum Sharing {
        case group(JoinGroup)
        case ended(AsyncTask.Outcome, value: Boxed<any Sendable>?)
        /// The unit was cancelled: there is no work left to share.
        case abandoned
    }

    /// Another unit joins this one (`unit`): the group of its joiners, made on the first
    /// join (counting the tasks awaiting this unit so far), or this unit's outcome and
    /// value when it has ended already (`.abandoned` when it was cancelled). While its end
    /// is being performed, a joiner waits for that, as an awaiting caller does (a group
    /// of late joiners, told by ``endingPerformed()``).
    mutating func shareWork(of unit: AsyncTask) -> Sharing {
        if case .ended(let outcome, let value, _, let performing) = phase {
            if outcome.kind == .cancelled { return .abandoned }
            guard performing else { return .ended(outcome, value: value) }
            for case .joiners(let late) in waiters { return .group(late) }
            let late = JoinGroup(primary: unit, awaiting: 0)
            waiters.append(.joiners(late))
            return .group(late)
        }
        if case .joiners(let group)? = waiters.first { return .group(group) }
        let group = JoinGroup(primary: unit, awaiting: waiters.count(where: \.isAwaiting))
        waiters.insert(.joiners(group), at: 0)
        return .group(group)
    }

    /// The gate of the unit's body, when the unit ended while its body runs (see
    /// ``end(_:value:)``).
    var lingeringBody: ReplacementGate? {
        guard hasEnded, case .bodyReturn(let gate)? = waiters.first else { return nil }
        return gate
    }

    /// enqueued (claimed by the queue that did not add it: `claimed`) or created (an
    /// ``AsyncOperation``'s unit) → joined, for `unit`: it joins `group`, its awaiting
    /// tasks counting as callers. Its queue forgets it (it never held it). Returns
    /// `.ended` with the ending when the shared work has ended already, `.refused` (and
    /// changes nothing) when it is being cancelled, `.joined` otherwise; `nil` when the
    /// unit was in no such phase (ended, or another queue's).
    mutating func join(_ group: JoinGroup, as unit: AsyncTask, claimed: Bool) -> Joining? {
        guard isWaitingToBeAdded(claimed: claimed) else { return nil }
        let joining = group.add(unit, awaiting: waiters.count(where: \.isAwaiting))
        if case .abandoned = joining { return .refused }
        owner = nil
        let work = unrunWork
        phase = .joined(group)
        guard case .ended(let outcome, let value) = joining, var ending = end(outcome, value: value) else {
            return .joined(unrunWork: work)
        }
        ending.unrunWork = work
        return .ended(ending)
    }

    /// What ``join(_:as:claimed:)`` did; when it joined, the unit's own work, which will
    /// never run, is handed out to be released after unlocking.
    enum Joining {
        case joined(unrunWork: AsyncTask.Work?)
        case ended(Ending)
        /// The work to join was cancelled: the unit is as it was, to be added as work of
        /// its own.
        case refused
    }

    /// A unit its queue did not add ends with the outcome of the work it shares (see
    /// ``join(_:as:)``), the primary having ended before it joined.
    mutating func endUnjoined(
        _ outcome: AsyncTask.Outcome, value: Boxed<any Sendable>?, claimed: Bool
    ) -> Ending? {
        guard isWaitingToBeAdded(claimed: claimed) else { return nil }
        owner = nil
        let work = unrunWork
        phase = .joined(JoinGroup.ended)
        var ending = end(outcome, value: value)
        ending?.unrunWork = work
        return ending
    }
}
