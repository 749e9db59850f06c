import Synchronization

/// What a unit added with ``UniquenessPolicy/replace`` waits on before its work runs:
/// the bodies of the units it replaced that were running at that moment. Replaced units
/// end at once (their waiters hear ``AsyncTask/Outcome/replaced`` and their `Task` is
/// cancelled), but a body that ignores cancellation keeps running until it returns;
/// the replacement starts its own body only after that, so two bodies of one name
/// never overlap.
///
/// Counted under the queue's lock when the replacement is added, opened by each
/// replaced body's return. Lock order: a unit's lock, then the gate's.
final class ReplacementGate: LingeringBody {
    private struct State {
        var running = 0
        var waiters: [Continuation<Void>] = []
    }

    private let state = Lock(State())

    /// One more replaced body runs.
    func add() {
        state.withLock { $0.running += 1 }
    }

    /// A replaced body returned; the last one resumes the waiting replacement.
    func bodyReturned() {
        let waiters = state.withLock { state -> [Continuation<Void>] in
            state.running -= 1
            guard state.running == 0 else { return [] }
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    var isOpen: Bool {
        state.withLock { $0.running == 0 }
    }

    var hasReturned: Bool { isOpen }

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
