import Synchronization

/// Wakes a durable queue's loop: a ring before the wait is kept for it, and a wait
/// ends at a ring, at its timeout, or when its task is cancelled.
final class Doorbell: Sendable {
    private struct State {
        var rung = false
        var waiters: [UInt64: Continuation<Void>] = [:]
        var nextID: UInt64 = 0
    }

    private let state = Lock(State())

    /// Wakes every waiter; with none, the next wait returns at once.
    func ring() {
        let waiters = state.withLock { state in
            defer { state.waiters = [:] }
            if state.waiters.isEmpty { state.rung = true }
            return state.waiters.values
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Suspends until a ring (or returns at once after one since the last wait), until
    /// `timeout` has passed, or until the calling task is cancelled.
    func wait(upTo timeout: Duration) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                if (try? await Task.sleep(for: timeout)) != nil { self.ring() }
            }
            await waitCancellably(
                register: { continuation in
                    state.withLock { state in
                        if state.rung {
                            state.rung = false
                            return nil
                        }
                        state.nextID += 1
                        state.waiters[state.nextID] = continuation
                        return state.nextID
                    }
                },
                unregister: { [self] id in
                    // Resumed here only if no ring took it first.
                    state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
                })
            group.cancelAll()
        }
    }
}
