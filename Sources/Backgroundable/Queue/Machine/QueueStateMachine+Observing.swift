/// The coordinator's side that faces observers: busy periods and background time, the
/// deliveries and the deliverer, idle waiters, progress, and readings for tests.
extension QueueStateMachine {
    // MARK: Busy periods and background time

    // These three (and `noteProgress`) run in every add and end, and are a few
    // instructions each: the optimizer's choice to inline them flips with unrelated
    // changes, and the instruction gates (Benchmarks/Gates) fail when they are called.
    @inline(__always)
    mutating func becomeBusyIfIdle(actions: inout Actions<some MayDeliver>) {
        guard case .began(let period, let reported)? = busy.memberArrived() else { return }
        progress.periodBegan()
        if reported { post(.busy(period: period), actions: &actions) }
    }

    /// `true` when the queue went idle.
    @inline(__always)
    mutating func becomeIdleIfDone(actions: inout Actions<some MayDeliver>) -> Bool {
        guard case .ended(let period, let reported)? = busy.membersLeft(liveCount: liveCount) else { return false }
        releaseStorage()
        guard reported else { return true }
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
        ready.removeAll()
        timers.removeAll()
        lanes.removeAll()
        progress.removeAll()
        names.removeAll()
    }

    /// The deliverer began the background time of `period`: its members may start.
    mutating func backgroundTimeBegun(period begun: UInt64, actions: inout Actions<some MayStart>) {
        guard busy.backgroundTimeBegun(period: begun) else { return }
        startReady(inline: 1, actions: &actions)
    }

    /// The provider took the background time of `period` back (`nil`: whatever the
    /// queue holds now, as a shutdown does): listeners hear it, then `policy` decides
    /// what is cancelled. The expiry of a period that has ended is ignored: the units of
    /// a later period wait for their own background time, whose provider tells them.
    mutating func backgroundTimeExpired(
        period: UInt64?,
        policy: BackgroundQueue.ExpirationPolicy,
        actions: inout Actions<some MayEnd & MayDeliver>
    ) {
        if let period, !busy.isCurrent(period) { return }
        emit(.backgroundTimeExpiring, actions: &actions)
        switch policy.kind {
        case .cancelAll: cancelAll(actions: &actions)
        case .cancelPending: cancelPending(actions: &actions)
        case .keepRunning: break
        }
    }

    // MARK: Deliveries

    mutating func post(_ delivery: Delivery, actions: inout Actions<some MayDeliver>) {
        if outbox.post(delivery) == .becameDeliverer { actions.deliver() }
    }

    /// The storage settled a rejection or a join of this transition that did not take
    /// effect: the member had reached `outcome` before. The event posted about it is
    /// corrected: it tells that outcome (a member that expired as it would start had been
    /// admitted), or goes (one turned away at its add was never in the queue). O(events
    /// not yet delivered), on this rare path only.
    mutating func correctEvent(of member: Member, admitted: Bool, outcome: AsyncTask.Outcome?) {
        outbox.correctEvent(of: member, admitted: admitted, outcome: outcome)
    }

    /// Per-member events cost nothing while nobody listens.
    mutating func emit(_ event: @autoclosure () -> QueueEvent<Member>, actions: inout Actions<some MayDeliver>) {
        guard !observedEvents.isEmpty else { return }
        let event = event()
        if observedEvents.contains(event.kind) { post(.event(event), actions: &actions) }
    }

    /// Swaps the deliveries posted so far into `batch` (whose previous, delivered
    /// contents are dropped), for the deliverer; `false` when there are none left (the
    /// caller stops delivering). The two buffers are reused, not reallocated.
    mutating func takeDeliveries(into batch: inout [Delivery]) -> Bool {
        progress.deliveriesTaken()
        return outbox.take(into: &batch)
    }

    /// Registers someone waiting for the queue to be idle: returns the registration
    /// (for ``stopWaitingUntilIdle(_:)``), or `nil` when the queue already is idle (and
    /// everybody was told): the caller returns at once.
    mutating func waitUntilIdle(_ waiter: Continuation<Void>) -> UInt64? {
        busy.waitUntilIdle(waiter)
    }

    /// The waiter of `registration` stopped waiting (its task was cancelled): returns its
    /// continuation to resume, or `nil` when ``idleDelivered(period:)`` handed it out
    /// already. Either way it is handed out exactly once.
    mutating func stopWaitingUntilIdle(_ registration: UInt64) -> Continuation<Void>? {
        busy.stopWaitingUntilIdle(registration)
    }

    /// The idle notification of `period` was delivered: returns the waiters it covers.
    mutating func idleDelivered(period delivered: UInt64) -> [Continuation<Void>] {
        busy.idleDelivered(period: delivered)
    }

    // MARK: Progress

    /// Someone watches the queue's progress (with the executing members' names when
    /// `names`): they hear it now, then after every change. Balanced by
    /// ``unwatchProgress(names:)``.
    mutating func watchProgress(names: Bool, actions: inout Actions<some MayDeliver & MayArmSleeper>) {
        progress.watch(names: names)
        // The newcomer hears the current progress through the deliverer, in order with
        // what is delivered after it (a delivery already posted covers it too).
        noteProgress(actions: &actions)
        scheduleProgressSample(actions: &actions)
    }

    mutating func unwatchProgress(names: Bool) {
        progress.unwatch(names: names)
    }

    /// The storage read the progress of the members of a ``Action/sampleProgress(_:)``:
    /// the sampled values of those still executing replace their earlier ones, and
    /// watchers hear the new sum if it changed.
    mutating func progressSampled(_ samples: [(Handle, Double)], actions: inout Actions<some MayDeliver>) {
        let before = progress.sampledSum
        for (handle, value) in samples {
            guard let slot = slot(of: handle), records[Int(slot)].place == .executing else { continue }
            progress.record(value, for: slot)
        }
        if progress.sampledSum != before { noteProgress(actions: &actions) }
    }

    /// The progress as watchers hear it. O(1), plus O(`names`) when names are watched.
    func readProgress(names limit: Int) -> ProgressReading {
        ProgressReading(
            isBusy: isBusy, admitted: progress.admitted, ended: progress.ended, enqueued: enqueuedCount,
            executing: executingCount, executingProgress: progress.sampledSum,
            executingMembers: limit > 0 && progress.namesWatchers > 0 ? executingMembers(limit: limit).map(\.1) : [])
    }

    /// Up to `limit` executing members, in the order they started. O(`limit`).
    func executingMembers(limit: Int) -> [(Handle, Member)] {
        var members: [(Handle, Member)] = []
        var cursor = firstStarted
        while cursor >= 0, members.count < limit {
            members.append((handle(of: cursor), records[Int(cursor)].member!))
            cursor = records[Int(cursor)].startedAfter
        }
        return members
    }

    /// Watchers hear that the progress changed: one delivery until the deliverer takes
    /// it, however many changes come before. Nothing while nobody watches.
    @inline(__always)
    mutating func noteProgress(actions: inout Actions<some MayDeliver>) {
        if progress.changed() { post(.progress, actions: &actions) }
    }

    /// A member started executing: it joins the end of the start order (a list through
    /// the records, so that reading the first executing members costs only as many as
    /// are read, whatever ended before them), and watchers hear it.
    mutating func noteStarted(_ slot: Int32, actions: inout Actions<some MayDeliver & MayArmSleeper>) {
        records[Int(slot)].predecessor = lastStarted  // see `Record.predecessor`
        records[Int(slot)].startedAfter = -1
        if lastStarted >= 0 { records[Int(lastStarted)].startedAfter = slot } else { firstStarted = slot }
        lastStarted = slot
        guard progress.memberStarted() else { return }
        noteProgress(actions: &actions)
        scheduleProgressSample(actions: &actions)
    }

    /// A member stopped executing (it left, or waits for its next attempt): it leaves the
    /// start order, and its sampled progress no longer counts.
    mutating func noteStopped(_ slot: Int32) {
        let (before, after) = (records[Int(slot)].predecessor, records[Int(slot)].startedAfter)
        if before >= 0 { records[Int(before)].startedAfter = after } else { firstStarted = after }
        if after >= 0 { records[Int(after)].predecessor = before } else { lastStarted = before }
        records[Int(slot)].predecessor = -1
        records[Int(slot)].startedAfter = -1
        progress.forget(slot)
    }

    /// Arms the next sample of the executing members' progress while someone watches
    /// and a member executes.
    mutating func scheduleProgressSample(actions: inout Actions<some MayArmSleeper>) {
        guard progress.needsSample(executing: executingCount) else { return }
        let sample = progress.scheduleSample(now: now())
        wakeSleeper(at: sample, actions: &actions)
    }

    // MARK: Reading

    /// The live members (ending ones excluded), in admission order.
    func liveMembers() -> [Member] {
        liveMembersAndPlaces().map(\.member)
    }

    /// ``liveMembers()`` with where each one is: ready, blocked, delayed, executing.
    func liveMembersAndPlaces() -> [(member: Member, place: Place)] {
        records.filter { $0.member != nil && !$0.isEnding }.sorted { $0.ticket < $1.ticket }.map {
            ($0.member!, $0.place)
        }
    }

    /// The members that count for `name` (live, not ending), with their handles, in
    /// admission order: for a front end that must look at them outside the lock.
    func members(named name: String) -> [(member: Member, handle: Handle)] {
        var found: [(member: Member, handle: Handle)] = []
        var cursor = names.first(named: name) ?? -1
        while cursor >= 0 {
            found.append((records[Int(cursor)].member!, handle(of: cursor)))
            cursor = names.next(after: cursor)
        }
        return found
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
        guard (liveCount, ready.count, timers.timedCount, timers.delayedCount) != counts else { return nil }
        return
            "counts (live, ready, timed, delayed) are \((liveCount, ready.count, timers.timedCount, timers.delayedCount)), records say \(counts)"
    }

    /// Memory the machine holds, in entries: for tests that check nothing leaks.
    var footprint: (records: Int, readyEntries: Int, deadlineEntries: Int, names: Int, lanes: Int) {
        (
            records.count, ready.entryCount, timers.entryCount, names.count, lanes.count
        )
    }
}
