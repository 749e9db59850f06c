import Synchronization

/// What a unit waits on before its work runs: the bodies of its name that still run
/// although their unit ended — replaced by it (``UniquenessPolicy/replace``), or
/// cancelled or timed out before. Such units end at once (their waiters hear the
/// outcome and their `Task` is cancelled), but a body that ignores cancellation keeps
/// running until it returns; the unit waiting starts its own body only after that, so
/// two bodies of one name never overlap.
///
/// Counted when the unit ends (a replacement's, under the queue's lock), opened by each
/// body's return. Lock order: a unit's lock, then the gate's.
final class ReplacementGate: LingeringBody {
    private struct State {
        var running = 0
        var waiters: [Continuation<Void>] = []
        /// Called once the gate opens (see ``whenOpen(_:)``).
        var callbacks: [@Sendable () -> Void] = []
        /// Gates that count this gate's bodies too (see ``forward(to:)``).
        var followers: [ReplacementGate] = []
    }

    private let state = Lock(State())

    /// One more replaced body runs.
    func add() {
        state.withLock { $0.running += 1 }
    }

    /// A replaced body returned; the last one resumes the waiting replacement.
    func bodyReturned() {
        let opened = state.withLock { state -> State? in
            state.running -= 1
            guard state.running == 0 else { return nil }
            defer { (state.waiters, state.followers, state.callbacks) = ([], [], []) }
            return state
        }
        guard let opened else { return }
        for waiter in opened.waiters { waiter.resume() }
        for follower in opened.followers { follower.bodyReturned() }
        for callback in opened.callbacks { callback() }
    }

    /// Calls `body` once every replaced body returned: now, on this thread, if the gate
    /// is open, otherwise on the thread of the last return. For a front end that waits
    /// without a task (the Operation bridge).
    func whenOpen(_ body: @escaping @Sendable () -> Void) {
        let open = state.withLock { state -> Bool in
            guard state.running > 0 else { return true }
            state.callbacks.append(body)
            return false
        }
        if open { body() }
    }

    /// `other` also waits for this gate's bodies: it counts one more body, which returns
    /// once this gate opens (at once if it is open). For a replacement that already
    /// counts other bodies when it meets one that its unit's end left behind.
    func forward(to other: ReplacementGate) {
        other.add()
        let open = state.withLock { state -> Bool in
            guard state.running > 0 else { return true }
            state.followers.append(other)
            return false
        }
        if open { other.bodyReturned() }
    }

    var isOpen: Bool {
        state.withLock { $0.running == 0 }
    }

    /// Someone waits for the gate to open (a unit, a callback, another gate).
    var isAwaited: Bool {
        state.withLock { !$0.waiters.isEmpty || !$0.callbacks.isEmpty || !$0.followers.isEmpty }
    }

    var hasReturned: Bool { isOpen }

    /// Suspends until every body it counts returned, or until the calling task is
    /// cancelled (a shutdown's wait, which has a deadline).
    func waitCancellably() async {
        let open = Latch()
        whenOpen { open.open() }
        await open.wait()
    }

    /// Suspends until every replaced body returned. Not cancellable: a replacement
    /// cancelled meanwhile finds itself ended once the gate opens, and never runs.
    func wait() async {
        // Resumed exactly once: here when the gate is open, else by the last
        // `bodyReturned`, which hands every waiter out once.
        await withContinuation { (continuation: Continuation<Void>) in
            let open = state.withLock { state -> Bool in
                guard state.running > 0 else { return true }
                state.waiters.append(continuation)
                return false
            }
            if open { continuation.resume() }
        }
    }
}
