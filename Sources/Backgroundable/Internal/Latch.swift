import Synchronization

/// A one-way gate that tasks wait on: closed until ``open()``, then open for good.
///
/// ``wait()`` returns once the latch is open, or as soon as the waiting task is
/// cancelled. Waiters are resumed outside the lock, each exactly once: by ``open()``,
/// or by their own cancellation, whichever takes them out of the waiting list first.
final class Latch: Sendable {
    private struct State {
        var isOpen = false
        var nextID: UInt64 = 0
        var waiters: [UInt64: Continuation<Void>] = [:]
    }

    private let state = Lock(State())

    var isOpen: Bool { state.withLock { $0.isOpen } }

    /// Opens the latch and resumes every waiter. `false` when it was already open.
    @discardableResult
    func open() -> Bool {
        let waiters = state.withLock { state -> [Continuation<Void>]? in
            guard !state.isOpen else { return nil }
            state.isOpen = true
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        guard let waiters else { return false }
        for waiter in waiters { waiter.resume() }
        return true
    }

    /// Suspends until the latch is open or the calling task is cancelled.
    func wait() async {
        await waitCancellably(
            register: { continuation in
                state.withLock { state -> UInt64? in
                    guard !state.isOpen else { return nil }
                    state.nextID += 1
                    state.waiters[state.nextID] = continuation
                    return state.nextID
                }
            },
            unregister: { id in self.state.withLock { $0.waiters.removeValue(forKey: id) }?.resume() })
    }
}

/// Runs `operations` concurrently and returns the index of the first one to return,
/// after cancelling the others and waiting for them: each must return promptly once
/// cancelled.
func firstToReturn(_ operations: [@Sendable () async -> Void]) async -> Int {
    await withTaskGroup(of: Int.self) { group in
        for (index, operation) in operations.enumerated() {
            group.addTask {
                await operation()
                return index
            }
        }
        let first = await group.next() ?? 0
        group.cancelAll()
        return first
    }
}
