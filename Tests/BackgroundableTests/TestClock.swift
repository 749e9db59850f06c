import Synchronization

@testable import Backgroundable

/// The package's small test clock: time moves only when the test advances it, and a
/// queue's sleeper wakes up then. A sleeper that starts sleeping after the clock
/// passed its deadline returns at once, so a test never waits for the sleeper to be
/// armed: it advances the clock, then waits for what the wake-up causes.
final class TestClock: Sendable {
    private struct State {
        var now: Int64 = 1_000_000_000
        var sleepers: [UInt64: (deadline: Int64, continuation: Continuation<Void>)] = [:]
        var sleeperIDs: UInt64 = 0
        /// Tests waiting for a sleeper to sleep until a given deadline.
        var watchers: [UInt64: (deadline: Int64, continuation: Continuation<Void>)] = [:]
    }

    private let state = Lock(State())

    var now: Int64 { state.withLock { $0.now } }

    /// The clock a queue reads and sleeps on.
    var queueClock: QueueClock {
        QueueClock(now: { self.now }, sleep: { await self.sleep(until: $0) })
    }

    /// Moves the clock and wakes up every sleeper whose deadline passed.
    func advance(by duration: Duration) {
        let due = state.withLock { state in
            state.now += AsyncTask.nanoseconds(duration)
            let due = state.sleepers.filter { $0.value.deadline <= state.now }
            for id in due.keys { state.sleepers[id] = nil }
            return due.values.map(\.continuation)
        }
        for continuation in due { continuation.resume() }
    }

    /// Returns once a sleeper sleeps until `deadline` (at once if one does): the sleeper
    /// has handled everything due before it. Returns early when cancelled.
    func sleeperArmed(until deadline: Int64) async {
        await waitCancellably(
            register: { continuation in
                state.withLock { state in
                    if state.sleepers.values.contains(where: { $0.deadline == deadline }) { return nil }
                    state.sleeperIDs += 1
                    state.watchers[state.sleeperIDs] = (deadline, continuation)
                    return state.sleeperIDs
                }
            },
            unregister: { id in self.state.withLock { $0.watchers.removeValue(forKey: id) }?.continuation.resume() })
    }

    private func sleep(until deadline: Int64) async {
        await waitCancellably(
            register: { continuation in
                let (id, watchers) = state.withLock { state -> (UInt64?, [Continuation<Void>]) in
                    guard deadline > state.now else { return (nil, []) }
                    state.sleeperIDs += 1
                    state.sleepers[state.sleeperIDs] = (deadline, continuation)
                    let watching = state.watchers.filter { $0.value.deadline == deadline }
                    for id in watching.keys { state.watchers[id] = nil }
                    return (state.sleeperIDs, watching.values.map(\.continuation))
                }
                for watcher in watchers { watcher.resume() }
                return id
            },
            unregister: { id in self.state.withLock { $0.sleepers.removeValue(forKey: id) }?.continuation.resume() })
    }
}

/// A queue on `clock`, recording its background time.
func makeQueue(
    clock: TestClock, maxConcurrentTasks: Int? = nil
) -> (BackgroundQueue, RecordingBackgroundTaskProvider) {
    let provider = RecordingBackgroundTaskProvider()
    let queue = BackgroundQueue(
        label: "test", maxConcurrentTasks: maxConcurrentTasks, backgroundTaskProvider: provider,
        expirationPolicy: .cancelAll, observers: [], measurer: nil, clock: clock.queueClock)
    return (queue, provider)
}
