import Synchronization

/// The storage behind a ``BackgroundQueue``: its ``QueueState`` under a `Mutex`, and
/// the code that performs what a transition asks for — launching `Task`s, resuming
/// waiters, calling the delegate and the background-task provider — always after the
/// lock is released.
///
/// Units reference the core (never the actor), so the actor can be deinitialised
/// while units still execute; its `deinit` cancels the pending ones.
final class QueueCore: Sendable {
    let label: String
    let provider: any BackgroundTaskProvider
    let expirationPolicy: BackgroundQueue.ExpirationPolicy
    let state: Lock<QueueState>
    /// Unnamed units added without taking `state`'s lock; absorbed by every transition.
    let inbox = Inbox()
    /// `true` from the moment a drainer task is requested until it stops.
    private let drainerScheduled = Atomic<Bool>(false)
    /// The actor, for delegate callbacks. Written once, before the core is shared.
    nonisolated(unsafe) weak var queue: BackgroundQueue?

    init(
        label: String,
        limit: Int,
        provider: any BackgroundTaskProvider,
        expirationPolicy: BackgroundQueue.ExpirationPolicy,
        reportsBusyPeriods: Bool = true
    ) {
        self.label = label
        self.provider = provider
        self.expirationPolicy = expirationPolicy
        self.state = Lock(QueueState(limit: limit, reportsBusyPeriods: reportsBusyPeriods))
    }

    /// Runs a transition under the lock — after absorbing the inbox, so it sees every
    /// unit added before it — then performs its effects.
    @inline(__always)
    @discardableResult
    func transition<Result>(_ body: (inout QueueState, inout Effects) -> Result) -> Result {
        var effects = Effects()
        let result = state.withLock { state in
            state.absorb(inbox, core: self, &effects)
            return body(&state, &effects)
        }
        perform(effects)
        return result
    }

    var isDrainerScheduled: Bool { drainerScheduled.load(ordering: .acquiring) }

    /// Claims the drainer role. `true` when the caller must spawn the drainer task.
    func scheduleDrainer() -> Bool {
        !drainerScheduled.exchange(true, ordering: .acquiringAndReleasing)
    }

    private func perform(_ effects: Effects) {
        for (unit, ending) in effects.endings {
            ending.perform(for: unit)
        }
        for unit in effects.launches {
            unit.launch()
        }
        if effects.spawnDrainer {
            spawnDrainer()
        }
        if effects.deliver {
            deliverOutbox()
        }
    }

    // MARK: Units

    /// Adds units, each after the previous one when `sequential`. Never starts work on
    /// the caller's thread: a drainer task does, so adding costs a lock and a link.
    func add(_ units: some Sequence<AsyncTask>, sequential: Bool) {
        transition { state, effects in
            var admitted: [AsyncTask] = []
            for unit in units where state.admit(unit, into: self, &effects) {
                admitted.append(unit)
            }
            var predecessor: AsyncTask?
            for unit in admitted {
                state.link(unit, behind: sequential ? predecessor : nil, &effects)
                if unit.links.location != .none { predecessor = unit }
            }
            state.startReadyUnits(inlineLimit: 0, core: self, &effects)
        }
    }

    /// The hot path of ``add(_:sequential:)`` for one unit. An unnamed unit has no
    /// policy to apply, so it only moves to `enqueued` and is pushed to the inbox: no
    /// queue lock. A named one is checked and linked under the lock.
    func add(_ unit: AsyncTask) {
        if unit.name == nil {
            guard unit.state.withLock({ $0.enqueue(in: self) }) else { return }
            if inbox.push(unit), scheduleDrainer() {
                spawnDrainer()
            }
            return
        }
        transition { state, effects in
            if state.admit(unit, into: self, &effects) {
                state.link(unit, behind: nil, &effects)
                state.startReadyUnits(inlineLimit: 0, core: self, &effects)
            }
        }
    }

    /// Called once by a unit that ended by itself (finish, body returned, cancel):
    /// frees its slot and name, and starts what can start now, on this thread.
    func forget(_ unit: AsyncTask, outcome: AsyncTask.Outcome) {
        transition { state, effects in
            state.detach(unit, outcome, &effects)
            state.startReadyUnits(inlineLimit: 2, core: self, &effects)
        }
    }

    private func spawnDrainer() {
        Task.detached { self.drain() }
    }

    /// Absorbs the inbox and starts ready units in batches until nothing is left to
    /// do, then gives up the drainer role. The role is given up under the lock, so a
    /// transition that ends a unit either sees the drainer still scheduled (and the
    /// drainer's next pass starts the freed slot's unit) or starts it itself. A push
    /// that raced with the end found the role taken and relied on us: take it back.
    private func drain() {
        while true {
            let progressed = transition { state, effects in
                let taken = state.popStartable(max: 64, core: self, &effects)
                if taken == 0 { drainerScheduled.store(false, ordering: .releasing) }
                return taken > 0
            }
            if progressed { continue }
            if inbox.isEmpty || !scheduleDrainer() { return }
        }
    }

    /// The body of the queue's one sleeper task: wakes at the earliest deadline, times
    /// out what is due, and sleeps again until no deadline is left.
    func sleep(id: UInt64, until deadline: Int64) async {
        var deadline = deadline
        while true {
            // Cancellation means an earlier deadline superseded this sleeper;
            // `expireDeadlines` then sees a stale id and stops it.
            await ContinuousNanoseconds.sleep(until: deadline)
            var next: Int64?
            transition { state, effects in
                next = state.expireDeadlines(sleeper: id, now: ContinuousNanoseconds.now(), core: self, &effects)
            }
            guard let next else { return }
            deadline = next
        }
    }

    func cancel(_ units: (borrowing QueueState) -> [AsyncTask]) {
        transition { state, effects in
            for unit in units(state) {
                state.end(unit, .cancelled, &effects)
            }
        }
    }

    /// The actor was deinitialised: pending units are cancelled, new ones are refused
    /// (cancelled at once); executing units run to their outcome.
    func close() {
        transition { state, effects in
            state.isClosed = true
            for unit in state.pendingUnits {
                state.end(unit, .cancelled, &effects)
            }
            if !state.isBusy {
                state.post(.closed, &effects)
            }
        }
    }

    // MARK: Observers

    func waitUntilIdle() async {
        // Resumed exactly once: here, or by the single `.idle` delivery whose period
        // covers it (`idleDelivered` removes it from the list).
        await withContinuation { continuation in
            if transition({ state, _ in state.busyPeriods.wait(continuation) }) {
                continuation.resume()
            }
        }
    }

    func makeEventStream() -> AsyncStream<BackgroundQueue.Event> {
        let (stream, continuation) = AsyncStream.makeStream(of: BackgroundQueue.Event.self)
        let id = state.withLock { state -> UInt64? in
            guard !(state.isClosed && !state.isBusy) else { return nil }
            state.listenerIDs += 1
            state.listeners[state.listenerIDs] = continuation
            return state.listenerIDs
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        // Strong on purpose: a weak reference would give the core a side table and slow
        // every retain of it on the hot path. The cycle core → listener → core ends when
        // the stream terminates (its consumer is gone, or the queue closed).
        continuation.onTermination = { _ in
            _ = self.state.withLock { $0.listeners.removeValue(forKey: id) }
        }
        return stream
    }

    /// Delivers the outbox in order. Only one thread delivers at a time (the one that
    /// found `isDelivering` false), so busy / idle, begin / end and the delegate's two
    /// calls can never be reordered.
    private func deliverOutbox() {
        while true {
            let batch = state.withLock { state -> ([Delivery], [AsyncStream<BackgroundQueue.Event>.Continuation], (any BackgroundQueueDelegate)?)? in
                guard !state.outbox.isEmpty else {
                    state.isDelivering = false
                    return nil
                }
                defer { state.outbox.removeAll(keepingCapacity: true) }
                return (state.outbox, Array(state.listeners.values), state.delegate)
            }
            guard let (deliveries, listeners, delegate) = batch else { return }
            for delivery in deliveries {
                switch delivery {
                case .busy:
                    beginBackgroundTime()
                    if let queue { delegate?.backgroundQueueWillStartTasks(queue) }
                    for listener in listeners { listener.yield(.busy) }
                case .idle(let period):
                    state.withLock { $0.assertion.take() }?.end()
                    if let queue { delegate?.backgroundQueueDidFinishTasks(queue) }
                    for listener in listeners { listener.yield(.idle) }
                    for waiter in state.withLock({ $0.busyPeriods.idleDelivered(period: period) }) {
                        waiter.resume()
                    }
                case .event(let event):
                    for listener in listeners { listener.yield(event) }
                case .closed:
                    for listener in listeners { listener.finish() }
                }
            }
        }
    }

    // MARK: Background time

    private func beginBackgroundTime() {
        // Strong on purpose (see `makeEventStream`): the cycle through the stored
        // assertion ends when the busy period does.
        let assertion = BackgroundTimeAssertion.begin(named: label, provider: provider) {
            self.backgroundTimeExpired()
        }
        state.withLock { $0.assertion = assertion }
    }

    /// The provider took the background time back. The assertion has already ended
    /// itself; tell listeners and apply the expiration policy.
    private func backgroundTimeExpired() {
        transition { state, effects in
            state.emit(.backgroundTimeExpiring, &effects)
            let units: [AsyncTask] =
                switch expirationPolicy.kind {
                case .cancelAll: state.liveUnits
                case .cancelPending: state.pendingUnits
                case .keepRunning: []
                }
            for unit in units {
                state.end(unit, .cancelled, &effects)
            }
        }
    }
}
