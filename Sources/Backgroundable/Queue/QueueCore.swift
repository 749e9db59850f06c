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
    /// The actor, for delegate callbacks. Written once, before the core is shared.
    nonisolated(unsafe) weak var queue: BackgroundQueue?

    init(
        label: String,
        limit: Int,
        provider: any BackgroundTaskProvider,
        expirationPolicy: BackgroundQueue.ExpirationPolicy
    ) {
        self.label = label
        self.provider = provider
        self.expirationPolicy = expirationPolicy
        self.state = Lock(QueueState(limit: limit))
    }

    /// Runs a transition under the lock, then performs its effects.
    @inline(__always)
    func transition(_ body: (inout QueueState, inout Effects) -> Void) {
        var effects = Effects()
        state.withLock { body(&$0, &effects) }
        perform(effects)
    }

    private func perform(_ effects: Effects) {
        for (unit, ending) in effects.endings {
            ending.perform(for: unit)
        }
        for (unit, work) in effects.launches {
            unit.launch(work)
        }
        if effects.spawnDrainer {
            Task.detached { self.drain() }
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

    /// The hot path of ``add(_:sequential:)`` for one unit: no intermediate array.
    func add(_ unit: AsyncTask) {
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
            state.startReadyUnits(inlineLimit: 4, core: self, &effects)
        }
    }

    /// Starts ready units in batches until none can start.
    private func drain() {
        while true {
            var progressed = false
            transition { state, effects in
                progressed = state.popStartable(max: 64, core: self, &effects) > 0
                if !progressed { state.isDrainScheduled = false }
            }
            if !progressed { return }
        }
    }

    /// The body of the queue's one sleeper task: wakes at the earliest deadline, times
    /// out what is due, and sleeps again until no deadline is left.
    func sleep(id: UInt64, until deadline: ContinuousClock.Instant) async {
        var deadline = deadline
        while true {
            // Cancellation means an earlier deadline superseded this sleeper;
            // `expireDeadlines` then sees a stale id and stops it.
            try? await Task.sleep(until: deadline, clock: .continuous)
            var next: ContinuousClock.Instant?
            transition { state, effects in
                next = state.expireDeadlines(sleeper: id, now: .now, core: self, &effects)
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
        await withUnsafeContinuation { continuation in
            if state.withLock({ $0.waitUntilIdle(continuation) }) {
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
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.listeners.removeValue(forKey: id) }
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
                    for waiter in state.withLock({ $0.idleDelivered(period: period) }) {
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
        let assertion = BackgroundTimeAssertion.begin(named: label, provider: provider) { [weak self] in
            self?.backgroundTimeExpired()
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
