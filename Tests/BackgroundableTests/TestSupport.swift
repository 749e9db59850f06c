import BackgroundableTesting
import Synchronization

@testable import Backgroundable

/// A thread-safe box for values tests collect from units.
final class Recorder<Value: Sendable>: Sendable {
    private let values = Lock<[Value]>([])

    func append(_ value: Value) {
        values.withLock { $0.append(value) }
    }

    var all: [Value] { values.withLock { $0 } }
    var count: Int { values.withLock { $0.count } }
}

/// A one-shot signal a test can await: `signal()` from anywhere, `wait()` suspends
/// until it was signalled (returns at once if it already was).
final class Signal: Sendable {
    private struct State {
        var signalled = false
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
        var nextWaiter: UInt64 = 0
    }

    private let state = Lock(State())

    func signal() {
        let waiters = state.withLock { state in
            state.signalled = true
            defer { state.waiters = [:] }
            return state.waiters.values
        }
        for waiter in waiters { waiter.resume() }
    }

    var isSignalled: Bool { state.withLock { $0.signalled } }

    func wait() async {
        _ = await wait(upTo: nil)
    }

    /// Waits for the signal, or until `limit` has passed: a guard that turns a hang
    /// into a failure, never a means of ordering. Returns whether it was signalled.
    func wait(upTo limit: Duration?) async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let waiter: UInt64? = state.withLock { state in
                if state.signalled { return nil }
                state.nextWaiter += 1
                state.waiters[state.nextWaiter] = continuation
                return state.nextWaiter
            }
            guard let waiter else { return continuation.resume() }
            if let limit {
                Task {
                    try? await Task.sleep(for: limit)
                    state.withLock { $0.waiters.removeValue(forKey: waiter) }?.resume()
                }
            }
        }
        return isSignalled
    }
}

/// A unit held weakly, to check that it was released.
struct WeakUnit {
    weak var unit: AsyncTask?
    init(_ unit: AsyncTask) { self.unit = unit }
}

/// A counter with a maximum, to check concurrency limits.
final class Gauge: Sendable {
    private let state = Lock<(current: Int, maximum: Int)>((0, 0))

    func enter() {
        state.withLock { state in
            state.current += 1
            state.maximum = max(state.maximum, state.current)
        }
    }

    func leave() {
        state.withLock { $0.current -= 1 }
    }

    var maximum: Int { state.withLock { $0.maximum } }
}

extension AsyncTask.Outcome {
    var isFinished: Bool { kind == .finished }
}

/// A queue that records its background-time calls, on `clock` when one is given.
func makeQueue(
    clock: TestClock? = nil,
    maxConcurrentTasks: Int? = nil,
    expirationPolicy: BackgroundQueue.ExpirationPolicy = .cancelAll
) -> (BackgroundQueue, RecordingBackgroundTaskProvider) {
    let provider = RecordingBackgroundTaskProvider()
    let queue =
        if let clock {
            BackgroundQueue(
                name: "test", maxConcurrentTasks: maxConcurrentTasks, backgroundTaskProvider: provider,
                expirationPolicy: expirationPolicy, clock: clock)
        } else {
            BackgroundQueue(
                name: "test", maxConcurrentTasks: maxConcurrentTasks, backgroundTaskProvider: provider,
                expirationPolicy: expirationPolicy)
        }
    return (queue, provider)
}

/// Suspends until the current task is cancelled: "work that runs until stopped",
/// without sleeping.
func suspendUntilCancelled() async {
    let signal = Signal()
    await withTaskCancellationHandler {
        await signal.wait()
    } onCancel: {
        signal.signal()
    }
}

/// Waits until the main actor has run what was posted to it before this call: the
/// delegates' will-start notifications (did-finish ones have run by the time
/// ``BackgroundQueue/waitUntilIdle()`` returns).
func mainActorDeliveries() async {
    await MainActor.run {}
}

/// A delegate that records the queue's notifications (on the main actor).
final class RecordingDelegate: BackgroundQueueDelegate {
    nonisolated let calls = Recorder<String>()

    nonisolated init() {}

    func backgroundQueueWillStartTasks(_ queue: BackgroundQueue) {
        calls.append("willStart")
    }

    func backgroundQueueDidFinishTasks(_ queue: BackgroundQueue) {
        calls.append("didFinish")
    }
}

/// Whether real-clock upper bounds mean anything in this build: not under the thread
/// sanitizer (CI's sanitizer run, `-DBACKGROUNDABLE_PTHREAD_LOCK`), where two busy cores
/// have held a 50 ms timer back for seconds. That run checks races; the plain run checks
/// timing.
#if BACKGROUNDABLE_PTHREAD_LOCK
    let realTimeBoundsHold = false
#else
    let realTimeBoundsHold = true
#endif

struct TestError: Error, Equatable {
    let code: Int
}

/// Whether `unit`'s work is held back behind a body of its name that has not returned
/// (see ``LingeringBodies``).
func waitsBehindAClosedGate(_ unit: AsyncTask) -> Bool {
    unit.state.withLock { state in
        switch state.phase {
        case .enqueued(.afterReplaced(let gates, _)), .launching(.afterReplaced(let gates, _), _):
            gates.contains { !$0.isOpen }
        default:
            false
        }
    }
}
