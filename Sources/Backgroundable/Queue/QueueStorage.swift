import Synchronization

/// The storage of one queue: its ``QueueStateMachine`` under a lock, and the code that
/// performs the actions of each transition after the lock is released — starting and
/// ending members, the one sleeper task that drives timeouts, the drainer task,
/// background-time assertions, the front end's delegate and the event listeners.
///
/// Nothing but the machine's transitions and plain reads run under the lock: members,
/// providers, delegates, continuations and listeners are called only after it.
///
/// Lock order: the queue's lock, then a member's own (settling a decision about it, see
/// ``QueueMember/settle(_:gate:)``), then a join group's or a replacement gate's. Nothing
/// takes the queue's lock while it holds a member's.
final class QueueStorage<Member, Inbox: QueueInbox<Member>>: Sendable {
    typealias Machine = QueueStateMachine<Member>

    private struct Locked {
        var machine: Machine
        var listeners: [UInt64: AsyncStream<BackgroundQueue.Event>.Continuation] = [:]
        var listenerIDs: UInt64 = 0
        /// Who watches the queue's progress; see ``QueueStorage/watchProgress(names:deliver:finish:)``.
        var watchers: [UInt64: ProgressWatcher] = [:]
        /// The current sleeper and its generation (see ``Machine/Action/armSleeper(deadline:generation:)``).
        var sleeper: (generation: UInt64, task: Task<Void, Never>)?
        /// The background time of the current busy period; only the deliverer and the
        /// expiration handler touch it.
        var backgroundTime: HeldBackgroundTime?
        /// Orders the levels handed to ``QueueStorage/measurer``.
        var levelsVersion: UInt64 = 0
        /// The bodies of replaced members that may still run, by name.
        var lingering = LingeringBodies()
    }

    let label: String
    let provider: any BackgroundTaskProvider
    let expirationPolicy: BackgroundQueue.ExpirationPolicy
    private let state: Lock<Locked>
    /// Members pushed without the lock; every transition admits them first.
    let inbox = Inbox()
    /// Told about busy periods. Written once, before the storage is shared.
    nonisolated(unsafe) weak var front: (any QueueFront)?
    /// Metrics and tracing (see ``QueueObserver``); fixed when the queue is created.
    let observers: [any QueueObserver<Member>]
    /// Metrics (see ``QueueMeasurer``); fixed when the queue is created.
    let measurer: (any QueueMeasurer)?
    /// The events the observers need.
    let observerEvents: ObservedEvents
    /// What the sleeper sleeps on (the machine reads the same clock's `now`).
    let clock: QueueClock
    /// The retry policy of members that have none of their own.
    let defaultRetryPolicy: RetryPolicy?

    init(
        label: String,
        limit: Int,
        provider: any BackgroundTaskProvider,
        expirationPolicy: BackgroundQueue.ExpirationPolicy,
        reportsBusyPeriods: Bool = true,
        observers: [any QueueObserver<Member>] = [],
        measurer: (any QueueMeasurer)? = nil,
        clock: QueueClock = .continuous,
        defaultRetryPolicy: RetryPolicy? = nil
    ) {
        self.clock = clock
        self.defaultRetryPolicy = defaultRetryPolicy
        self.label = label
        self.provider = provider
        self.expirationPolicy = expirationPolicy
        self.observers = observers
        self.measurer = measurer
        self.observerEvents = observers.reduce(into: []) { $0.formUnion($1.events) }
        var machine = Machine(limit: limit, reportsBusyPeriods: reportsBusyPeriods, now: clock.now)
        machine.observedEvents = observerEvents
        self.state = Lock(Locked(machine: machine))
        if let follower = provider as? any QueueProgressFollower {
            watchProgress(names: 0) { follower.queueProgressChanged($0.progress) }
        }
    }

    deinit {
        // The sleeper holds the storage weakly: cancelled, it stops sleeping at once.
        state.withLock { $0.sleeper?.task }?.cancel()
    }

    /// Runs one transition under the lock, then performs the actions it returned.
    @discardableResult
    func transition<Result>(_ body: (inout Machine, inout Machine.ActionList) -> Result) -> Result {
        withLocked { locked, actions in body(&locked.machine, &actions) }
    }

    /// ``transition(_:)`` with the table of bodies that may still run after their member
    /// ended (see ``LingeringBodies``): for adds, which wait for those of their names,
    /// and for ends that leave one.
    @discardableResult
    func admittingTransition<Result>(
        _ body: (inout Machine, inout Machine.ActionList, inout LingeringBodies) -> Result
    ) -> Result {
        withLocked { locked, actions in body(&locked.machine, &actions, &locked.lingering) }
    }

    /// Reads the machine under the lock (after admitting what the inbox holds, so a
    /// caller sees its own adds).
    func read<Result>(_ body: (borrowing Machine) -> Result) -> Result {
        transition { machine, _ in body(machine) }
    }

    /// The one way into the locked state: admits the inbox's members (in the order they
    /// were pushed, before the event, so they keep their place), runs `body`, mirrors
    /// the drainer role into the inbox, settles the decisions about members, then —
    /// after unlocking — performs the actions.
    private func withLocked<Result>(
        _ body: (inout Locked, inout Machine.ActionList) -> Result
    ) -> Result {
        var actions = Machine.ActionList()
        return withLocked(into: &actions, body)
    }

    /// ``withLocked(_:)`` with the caller's (empty) list of actions.
    private func withLocked<Result>(
        into actions: inout Machine.ActionList, _ body: (inout Locked, inout Machine.ActionList) -> Result
    ) -> Result {
        let (result, settled, firstBatch) = lockedStep(into: &actions, body)
        performAfterUnlocking(actions, settled, consume firstBatch)
        return result
    }

    /// ``withLocked(into:_:)`` up to unlocking: what the caller must perform next.
    private func lockedStep<Result>(
        into actions: inout Machine.ActionList, _ body: (inout Locked, inout Machine.ActionList) -> Result
    ) -> (Result, SettledRemainders, DeliveryBatch?) {
        var settled = SettledRemainders()
        var firstBatch: DeliveryBatch?
        var levels: (enqueued: Int, executing: Int, version: UInt64)?
        let result = state.withLock { locked in
            let result = run(body, on: &locked, &actions)
            if actions.needsSettling {
                settle(&locked.machine, &actions, &locked.lingering, into: &settled)
            }
            if measurer != nil {
                locked.levelsVersion &+= 1
                levels = (locked.machine.enqueuedCount, locked.machine.executingCount, locked.levelsVersion)
            }
            // The new deliverer takes its first batch now, while it holds the lock.
            if actions.delivers {
                var batch = DeliveryBatch()
                if takeBatch(from: &locked, into: &batch) { firstBatch = batch }
            }
            return result
        }
        if let levels {
            measurer?.levelsChanged(enqueued: levels.enqueued, executing: levels.executing, version: levels.version)
        }
        return (result, settled, firstBatch)
    }

    /// Under the lock: settles the transition's decisions about members (see
    /// ``QueueMember/settle(_:gate:)``) in order; an event about a decision that did not take
    /// effect is corrected to tell the outcome the member really has. A replaced member's
    /// body that still runs holds back the newcomer that replaced it.
    private func settle(
        _ machine: inout Machine, _ actions: inout Machine.ActionList, _ lingering: inout LingeringBodies,
        into settled: inout SettledRemainders
    ) {
        var noGate: ReplacementGate?
        var replacing: (newcomer: Member, gate: ReplacementGate?)?
        // The gates this transition made, by name: a later newcomer of a batch that
        // replaces an earlier one also waits for the bodies that one replaced (its add
        // looked for lingering bodies before these gates existed). Only members with gates
        // (units) are asked their name here: an `Operation`'s `name` is open to a
        // subclass, whose code must not run under the lock.
        var made: [String: [ReplacementGate]] = [:]
        func holdBackNewcomer() {
            guard let replacing, let gate = replacing.gate, let name = replacing.newcomer.memberName else { return }
            lingering.add(gate, named: name)
            replacing.newcomer.waitBeforeRunning(for: [gate])
            made[name, default: []].append(gate)
        }
        actions.visit { action in
            switch action {
            case .reject(let member, let outcome, reported: true):
                let result = member.settle(.end(outcome), gate: &noGate)
                settled.append(result.remainder)
                if !result.applied {
                    // Admitted only when it expired as it would start.
                    let admitted = outcome.kind == .timedOut
                    machine.correctEvent(of: member, admitted: admitted, outcome: result.outcome)
                }
            case .join(let member, let primary, reported: true, let inSequence):
                let result = member.settle(.join(primary: primary, inSequence: inSequence), gate: &noGate)
                settled.append(result.remainder)
                if !result.applied { machine.correctEvent(of: member, admitted: false, outcome: nil) }
            case .end(let member, let outcome, named: true):
                // Its name is free from now on: a body it leaves running holds back the
                // newcomers of its name from this same step.
                var body: ReplacementGate?
                settled.append(member.settle(.end(outcome), gate: &body).remainder)
                if let body, let name = member.memberName { lingering.add(body, named: name) }
            case .replace(let member, let newcomer):
                if replacing?.newcomer !== newcomer {
                    holdBackNewcomer()
                    replacing = (newcomer, nil)
                    if !made.isEmpty, let name = newcomer.memberName, let gates = made[name] {
                        newcomer.waitBeforeRunning(for: gates)
                    }
                }
                settled.append(member.settle(.replace, gate: &replacing!.gate).remainder)
            default:
                break
            }
        }
        holdBackNewcomer()
    }

    private func run<Result>(
        _ body: (inout Locked, inout Machine.ActionList) -> Result, on locked: inout Locked,
        _ actions: inout Machine.ActionList
    ) -> sending Result {
        admitInbox(&locked.machine, &actions)
        let result = body(&locked, &actions)
        while !inbox.mirror(drainerScheduled: locked.machine.isDrainerScheduled) {
            admitInbox(&locked.machine, &actions)
        }
        return result
    }

    private func performAfterUnlocking(
        _ actions: Machine.ActionList, _ settled: SettledRemainders, _ firstBatch: consuming DeliveryBatch?
    ) {
        if !settled.isEmpty {
            performSettling(actions, settled, firstBatch)
        } else if !actions.isEmpty {
            perform(actions, firstBatch)
        }
    }

    /// ``performAfterUnlocking(_:_:_:)`` for a step that settled members. Their remainders
    /// run end hooks, caller code that may take its time: the step's deadlines are armed
    /// first, so as not to wait for them (``perform(_:_:)`` arms them again, and that
    /// second sleeper is cancelled at once). Not inlined: the common step settles nothing.
    @inline(never)
    private func performSettling(
        _ actions: Machine.ActionList, _ settled: SettledRemainders, _ firstBatch: consuming DeliveryBatch?
    ) {
        actions.visit { action in
            guard case .armSleeper(let deadline, let generation) = action else { return }
            armSleeper(until: deadline, generation: generation)
        }
        settled.perform()
        perform(actions, firstBatch)
    }

    /// Under the lock: adds what was pushed, as a run of single adds; each admitted
    /// member learns its handle in the same transition, before anything can start or end it.
    private func admitInbox(_ machine: inout Machine, _ actions: inout Machine.ActionList) {
        for admission in inbox.takeAll() {
            guard let handle = machine.enqueue(admission, actions: &actions) else { continue }
            inbox.attach(admission.member, handle, machine: &machine, actions: &actions)
            machine.startEnqueued(actions: &actions)
        }
    }

    /// The bodies that still run although their member ended (see ``LingeringBodies``).
    func lingeringBodies() -> [any LingeringBody] {
        state.withLock { $0.lingering.all() }
    }

    /// A member reached its outcome: the queue forgets it. Once per admitted member
    /// (from its own end, or from whoever admitted it when it ended first); a handle
    /// that names nothing any more is ignored.
    func memberEnded(_ handle: Machine.Handle, _ outcome: AsyncTask.Outcome) {
        transition { machine, actions in machine.memberEnded(handle, outcome, actions: &actions) }
    }

    /// ``memberEnded(_:_:)`` for a member (of `name`, if it has one) whose body still
    /// runs (it was cancelled or timed out): in the same step, later members of the name
    /// wait for `body`, and so does a shutdown (see ``LingeringBodies``).
    func memberEnded(
        _ handle: Machine.Handle, _ outcome: AsyncTask.Outcome, leaving body: any LingeringBody, named name: String?
    ) {
        admittingTransition { machine, actions, lingering in
            lingering.add(body, named: name)
            machine.memberEnded(handle, outcome, actions: &actions)
        }
    }

    /// A member failed an attempt and makes another one after `delay`; see
    /// ``QueueStateMachine/memberRetrying(_:after:_:actions:)``.
    @discardableResult
    func memberRetrying(_ handle: Machine.Handle, after delay: Duration, _ retry: RetryNote) -> Bool {
        let nanoseconds = AsyncTask.nanoseconds(delay)
        return transition { machine, actions in
            machine.memberRetrying(handle, after: nanoseconds, retry, actions: &actions)
        }
    }

    /// A member reached its outcome but its front end still holds it; see
    /// ``QueueStateMachine/memberStopped(_:)``.
    func memberStopped(_ handle: Machine.Handle) {
        transition { machine, _ in machine.memberStopped(handle) }
    }

    // MARK: Performing actions

    /// Performs the actions in order, except the delivery, which comes last: the new
    /// deliverer delivers until the outbox is empty, and the members this transition
    /// started must not wait for that.
    private func perform(_ actions: Machine.ActionList, _ firstBatch: consuming DeliveryBatch?) {
        actions.visit { action in
            switch action {
            case .start(let member, let priority):
                member.startFromQueue(priority: priority)
            case .end(let member, let outcome, named: false):
                member.endFromQueue(outcome)
            case .reject(let member, let outcome, reported: false):
                member.endFromQueue(outcome)
            case .join(let member, let primary, reported: false, let inSequence):
                var noGate: ReplacementGate?
                member.settle(.join(primary: primary, inSequence: inSequence), gate: &noGate).remainder.perform()
            case .end, .reject, .join, .replace:
                break  // Settled under the lock; what remained was performed first.
            case .sampleProgress(let members):
                let samples = members.map { ($0.0, $0.1.reportedProgress ?? 0) }
                transition { machine, actions in machine.progressSampled(samples, actions: &actions) }
            case .armSleeper(let deadline, let generation):
                armSleeper(until: deadline, generation: generation)
            case .spawnDrainer:
                Task.detached { self.drain() }
            case .deliver:
                break  // Below, after the others.
            }
        }
        // No first batch: the settling corrected away everything the transition posted,
        // and the role was freed as the batch was taken; another thread may hold it now.
        if let firstBatch = consume firstBatch { deliver(startingWith: firstBatch) }
    }

    /// Starts ready members in rounds until nothing can start; the machine then frees
    /// the drainer role under its lock, so the next event that makes a member startable
    /// schedules a new drainer (or starts it inline).
    private func drain() {
        var actions = Machine.ActionList()
        while withLocked(into: &actions, { locked, actions in locked.machine.drain(actions: &actions) }) {
            actions.removeAll()
        }
    }

    // MARK: Timeouts

    /// One sleeper per queue: a `Task` at `.high` priority that sleeps until the earliest
    /// deadline or start time, times out or lets start what is due, and sleeps again until
    /// none is left. An earlier deadline arms a new sleeper and cancels the older one
    /// (which then finds its generation stale).
    ///
    /// It holds the storage weakly, and the storage's `deinit` cancels it: nothing armed
    /// keeps a queue alive (its live members do, each one retains the storage).
    ///
    /// A sleeper `handingOver` its role passes it to the new one, of its own generation,
    /// and stops (see ``deadlineReached(generation:)``).
    private func armSleeper(until deadline: Int64, generation: UInt64, handingOver: Bool = false) {
        let sleep = clock.sleep
        let task = Task.detached(priority: .high) { [weak self] in
            var deadline = deadline
            while !Task.isCancelled {
                await sleep(deadline)
                guard let next = self?.deadlineReached(generation: generation) else { return }
                deadline = next
            }
        }
        // Actions of two transitions may be performed out of order: only a newer
        // generation replaces (and cancels) the sleeper kept here. One armed twice (see
        // ``performSettling(_:_:_:)``) keeps the first.
        let superseded = state.withLock { locked -> Task<Void, Never>? in
            if let current = locked.sleeper,
                current.generation > generation || (current.generation == generation && !handingOver)
            {
                return task
            }
            defer { locked.sleeper = (generation, task) }
            // The one handing over is the caller, which stops by itself.
            return handingOver && locked.sleeper?.generation == generation ? nil : locked.sleeper?.task
        }
        superseded?.cancel()
    }

    /// The sleeper of `generation` woke up; the next deadline, or `nil` when it stops.
    ///
    /// A step that times members out runs caller code before it returns (their end
    /// hooks, the observers of their operations, a provider as the queue goes idle):
    /// so that a slow one does not hold back the deadlines after it, such a step first
    /// hands the sleeping over to a new sleeper, and this one stops.
    private func deadlineReached(generation: UInt64) -> Int64? {
        var actions = Machine.ActionList()
        let (next, settled, firstBatch) = lockedStep(into: &actions) { locked, actions in
            locked.machine.deadlineReached(generation: generation, actions: &actions)
        }
        guard let next, !settled.isEmpty || Self.runsCallerCode(actions) else {
            performAfterUnlocking(actions, settled, consume firstBatch)
            return next
        }
        armSleeper(until: next, generation: generation, handingOver: true)
        performAfterUnlocking(actions, settled, consume firstBatch)
        return nil
    }

    /// Whether performing `actions` may run caller code: anything but starting members
    /// and arming tasks.
    private static func runsCallerCode(_ actions: Machine.ActionList) -> Bool {
        var runs = false
        actions.visit { action in
            switch action {
            case .start, .armSleeper, .spawnDrainer: break
            default: runs = true
            }
        }
        return runs
    }

    // MARK: Deliveries

    /// What the deliverer takes out of the machine under the lock, at once: deliveries
    /// and the listeners to tell.
    private struct DeliveryBatch: Sendable {
        var deliveries: [Machine.Delivery] = []
        var listeners: [AsyncStream<BackgroundQueue.Event>.Continuation] = []
        var watchers: [ProgressWatcher] = []
        /// The progress when the batch was taken, if it has a `progress` delivery.
        var progress: Machine.ProgressReading?

        /// Drops what was delivered, keeping the deliveries' buffer for the next batch.
        mutating func clear() {
            deliveries.removeAll(keepingCapacity: true)
            listeners = []
            watchers = []
            progress = nil
        }
    }

    /// Under the lock: the next batch, or `false` when the outbox is empty (the machine
    /// then frees the deliverer role).
    private func takeBatch(from locked: inout Locked, into batch: inout DeliveryBatch) -> Bool {
        guard locked.machine.takeDeliveries(into: &batch.deliveries) else { return false }
        batch.listeners = locked.listeners.isEmpty ? [] : Array(locked.listeners.values)
        batch.watchers = locked.watchers.isEmpty ? [] : Array(locked.watchers.values)
        batch.progress = nil
        if !batch.watchers.isEmpty, batch.deliveries.contains(where: { if case .progress = $0 { true } else { false } })
        {
            let names = batch.watchers.lazy.map(\.names).max() ?? 0
            batch.progress = locked.machine.readProgress(names: names)
        }
        return true
    }

    /// Delivers the outbox in order, starting with `batch` (taken by the transition that
    /// made this thread the deliverer). Only one thread delivers at a time (the one the
    /// machine made the deliverer), so begin / end of background time, the delegate's
    /// calls and the events can never be reordered.
    ///
    /// The thread whose step made it the deliverer delivers at most
    /// ``inlineDeliveryBatches`` batches: its own, and what its deliveries posted in
    /// turn (a busy period's begin posts its members' starts). What other threads keep
    /// posting meanwhile goes to a task, which holds the role from then on: an `add`
    /// (from the main thread, say) never stays to deliver the events of other threads'
    /// units for as long as they keep coming. That task (`byATask`) delivers until the
    /// outbox is empty.
    ///
    /// `batch` is consumed, all the way from the step that took it: while the step still
    /// held a reference, emptying the batch for the next one made a new buffer instead of
    /// reusing the outbox's (the gates' `idle` shape counts those allocations).
    private func deliver(startingWith batch: consuming DeliveryBatch, byATask: Bool = false) {
        var delivered = 0
        repeat {
            deliver(batch)
            // Dropped here, not by the next `takeBatch` under the lock: a delivered event
            // may hold the last reference to a unit, and a unit the last one to a
            // caller's value or closure, whose `deinit` may call this queue.
            batch.clear()
            delivered += 1
            guard state.withLock({ takeBatch(from: &$0, into: &batch) }) else { return }
        } while byATask || delivered < Self.inlineDeliveryBatches
        // This thread delivered its share and took the next batch: the role passes on.
        let rest = batch
        Task.detached { self.deliver(startingWith: rest, byATask: true) }
    }

    /// The batches a thread delivers before it hands the role to a task (see
    /// ``deliver(startingWith:byATask:)``).
    static var inlineDeliveryBatches: Int { 2 }

    /// Delivers one batch, in order.
    private func deliver(_ batch: DeliveryBatch) {
        let (listeners, watchers) = (batch.listeners, batch.watchers)
        for delivery in batch.deliveries {
            switch delivery {
            case .busy(let period):
                // Background time first, then the delegate and listeners; members
                // of the period start only after all of them.
                let time = HeldBackgroundTime.begin(named: label, provider: provider, period: period) {
                    self.expireBackgroundTime(period: $0)
                }
                state.withLock { $0.backgroundTime = time }
                front?.queueWillStartWork()
                for listener in listeners { listener.yield(.busy) }
                transition { machine, actions in machine.backgroundTimeBegun(period: period, actions: &actions) }
            case .idle(let period):
                state.withLock { $0.backgroundTime.take() }?.end()
                for listener in listeners { listener.yield(.idle) }
                // The idle waiters of the period are resumed once every idle notification
                // was delivered, the delegate's last (on the main actor, it may come later).
                if let front {
                    front.queueDidFinishWork { self.idleDelivered(period: period) }
                } else {
                    idleDelivered(period: period)
                }
            case .event(let event):
                for observer in observers { observer.observe(event) }
                if !listeners.isEmpty, let event = Self.publicEvent(event) {
                    for listener in listeners { listener.yield(event) }
                }
            case .progress:
                guard let reading = batch.progress else { break }
                let activity = QueueActivity(reading)
                for watcher in watchers { watcher.offer(activity) }
            case .closed:
                for listener in listeners { listener.finish() }
                for watcher in watchers { watcher.finish() }
            }
        }
    }

    /// Every idle notification of `period` was delivered: its waiters return.
    private func idleDelivered(period: UInt64) {
        // Resumed exactly once: `idleDelivered` hands each waiter out once.
        for waiter in state.withLock({ $0.machine.idleDelivered(period: period) }) {
            waiter.resume()
        }
    }

    private static func publicEvent(_ event: QueueEvent<Member>) -> BackgroundQueue.Event? {
        switch event {
        case .enqueued(let member): member.publicEvent(.enqueued)
        case .started(let member): member.publicEvent(.started)
        case .ended(let member, let outcome): member.publicEvent(.ended(outcome))
        case .retrying(let member, let retry): member.publicEvent(.retrying(retry))
        case .joined(let member, let primary): member.publicEvent(.joined(primary: primary))
        case .escalated(let member, let priority): member.publicEvent(.escalated(priority: priority))
        case .backgroundTimeExpiring: .backgroundTimeExpiring
        }
    }

    /// The provider took the background time of `period` back (the assertion has ended
    /// itself), or a shutdown expires the queue's work (`nil`): listeners hear it, then
    /// the expiration policy applies — unless `period` has ended meanwhile.
    func expireBackgroundTime(period: UInt64? = nil) {
        transition { machine, actions in
            machine.backgroundTimeExpired(period: period, policy: expirationPolicy, actions: &actions)
        }
    }

    // MARK: Observers

    /// Waits until the queue is idle and the idle notification was delivered, or until
    /// the waiting task is cancelled (then it returns at once).
    func waitUntilIdle() async {
        // Resumed exactly once: here when the queue already is idle, or by whichever of
        // the `.idle` delivery and the cancellation takes the waiter out of the machine.
        await waitCancellably(
            register: { continuation in transition { machine, _ in machine.waitUntilIdle(continuation) } },
            unregister: { self.stopWaitingUntilIdle($0) })
    }

    private func stopWaitingUntilIdle(_ registration: UInt64) {
        transition { machine, _ in machine.stopWaitingUntilIdle(registration) }?.resume()
    }

    /// A new listener of the queue's events, from now on, in order.
    func makeEventStream() -> AsyncStream<BackgroundQueue.Event> {
        let (stream, continuation) = AsyncStream.makeStream(of: BackgroundQueue.Event.self)
        let id = withLocked { locked, _ -> UInt64? in
            guard !(locked.machine.isClosed && !locked.machine.isBusy) else { return nil }
            locked.listenerIDs += 1
            locked.listeners[locked.listenerIDs] = continuation
            locked.machine.observedEvents = .all
            return locked.listenerIDs
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        // Strong on purpose: the cycle storage → listener → storage ends when the
        // stream terminates (its consumer is gone, or the queue closed).
        continuation.onTermination = { _ in
            self.state.withLock { locked in
                locked.listeners[id] = nil
                locked.machine.observedEvents = locked.listeners.isEmpty ? self.observerEvents : .all
            }
        }
        return stream
    }

    /// Listeners registered now: for tests that check nothing leaks.
    var listenerCount: Int { state.withLock { $0.listeners.count } }

    // MARK: Progress

    /// The queue's progress now (see ``QueueProgress``): its counts under the lock, then
    /// the progress of its executing members, read from them. O(executing members).
    func progress() -> QueueProgress {
        let (reading, executing) = transition { machine, _ in
            (machine.readProgress(names: 0), machine.executingMembers(limit: .max))
        }
        var progress = QueueActivity(reading).progress
        progress.executingProgress = executing.reduce(0) { $0 + ($1.1.reportedProgress ?? 0) }
        return progress
    }

    /// Registers a progress watcher: `deliver` hears the current progress, then every
    /// change (coalesced: the deliverer reads the latest when it gets to it, and a value
    /// equal to the last one delivered is skipped), with up to `names` executing members'
    /// names; `finish` runs once the queue closed and went idle. Both run on the
    /// deliverer's thread, outside every lock, one call at a time. Returns the
    /// registration for ``unwatchProgress(_:)``.
    @discardableResult
    func watchProgress(
        names: Int, deliver: @escaping @Sendable (QueueActivity) -> Void, finish: @escaping @Sendable () -> Void = {}
    ) -> UInt64? {
        let watcher = ProgressWatcher(names: names, deliver: deliver, finish: finish)
        let id = withLocked { locked, actions -> UInt64? in
            guard !(locked.machine.isClosed && !locked.machine.isBusy) else { return nil }
            locked.listenerIDs += 1
            locked.watchers[locked.listenerIDs] = watcher
            locked.machine.watchProgress(names: names > 0, actions: &actions)
            return locked.listenerIDs
        }
        if id == nil {
            deliver(QueueActivity(progress: progress(), executingNames: []))
            finish()
        }
        return id
    }

    /// Ends a registration of ``watchProgress(names:deliver:finish:)``; unknown ones are ignored.
    func unwatchProgress(_ id: UInt64) {
        state.withLock { locked in
            guard let watcher = locked.watchers.removeValue(forKey: id) else { return }
            locked.machine.unwatchProgress(names: watcher.names > 0)
        }
    }

    /// A new stream of the queue's progress: the current value first, then every change,
    /// keeping only the newest for a slow consumer.
    func makeProgressStream() -> AsyncStream<QueueProgress> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: QueueProgress.self, bufferingPolicy: .bufferingNewest(1))
        let id = watchProgress(
            names: 0, deliver: { continuation.yield($0.progress) }, finish: { continuation.finish() })
        // Strong on purpose, as for the event streams: the cycle ends with the stream.
        if let id { continuation.onTermination = { _ in self.unwatchProgress(id) } }
        return stream
    }

    /// Progress watchers registered now: for tests that check nothing leaks.
    var watcherCount: Int { state.withLock { $0.watchers.count } }
}
