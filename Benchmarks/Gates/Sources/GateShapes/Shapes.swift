import Backgroundable
import Dispatch
import Foundation
import Synchronization

/// One shape of work: `run(units, meter)` does `units` units of it, calling
/// `meter.start()` and `meter.stop()` around the part that is measured. Units are no-ops
/// that signal their end, as in the timing benchmark (`backgroundable-bench`).
public struct Shape: Sendable {
    public let id: String
    public let summary: String
    let run: @Sendable (_ units: Int, _ meter: any Meter) -> Void
}

/// What is counted between `start()` and `stop()`: allocations or instructions.
public protocol Meter: Sendable {
    func start()
    /// Stops counting and returns the count since `start()`.
    @discardableResult func stop() -> Int
}

/// Every shape, in the order they run: the library's, then its peers. Every Swift task
/// runs on the measuring thread (see `JobPump`), so the counts of a shape that uses no
/// other thread are the same on every run.
public let allShapes: [Shape] = [
    // MARK: The caller's add alone, into a suspended queue.
    Shape(id: "add.BackgroundQueue.sync", summary: "add from a thread, options written at the call, queue suspended") {
        units, meter in
        suspendedAdds(units: units, meter: meter) { queue, _ in queue.add(.init(timeout: nil), noop) }
    },
    Shape(id: "add.BackgroundQueue.async", summary: "add from a task, queue suspended") { units, meter in
        let queue = BackgroundQueue(name: "gates")
        queue.suspend()
        blockingWait {
            meter.start()
            for _ in 0..<units { queue.add(noTimeout, noop) }
            meter.stop()
        }
        cancelAndDrain(queue)
    },
    Shape(id: "add.BackgroundQueue.named", summary: "add with a distinct name, .drop (dedup by name)") {
        units, meter in
        let named = distinctNames(units)
        suspendedAdds(units: units, meter: meter) { queue, index in queue.add(named[index], noop) }
    },

    // MARK: End to end: from the first add until the queue is idle.
    Shape(id: "e2e.BackgroundQueue.sync", summary: "unbounded, added from a thread") { units, meter in
        endToEnd(units: units, meter: meter) { queue, _, work in queue.add(noTimeout, work) }
    },
    Shape(id: "idle.BackgroundQueue.sync", summary: "one unit at a time on an idle queue, then idle again") {
        units, meter in
        let queue = BackgroundQueue(name: "gates")
        meter.start()
        for _ in 0..<units {
            let done = Countdown(1)
            queue.add(noTimeout) { unit in
                unit.finish()
                done.arrive()
            }
            done.wait()
            drain(queue)
        }
        meter.stop()
    },
    Shape(id: "e2e.BackgroundQueue.async", summary: "unbounded, added from a task") { units, meter in
        let queue = BackgroundQueue(name: "gates")
        let done = Countdown(units)
        meter.start()
        blockingWait {
            for _ in 0..<units {
                queue.add(noTimeout) { unit in
                    unit.finish()
                    done.arrive()
                }
            }
        }
        done.wait()
        drain(queue)
        meter.stop()
    },
    Shape(id: "e2e.BackgroundQueue.timeout", summary: "unbounded, the default 10 s timeout") { units, meter in
        endToEnd(units: units, meter: meter) { queue, _, work in queue.add(work) }
    },
    Shape(id: "e2e.BackgroundQueue.limit1", summary: "maxConcurrentTasks 1") { units, meter in
        endToEnd(units: units, meter: meter, limit: 1) { queue, _, work in queue.add(noTimeout, work) }
    },
    Shape(id: "e2e.BackgroundQueue.named", summary: "a distinct name per unit, .drop") { units, meter in
        let named = distinctNames(units)
        return endToEnd(units: units, meter: meter) { queue, index, work in queue.add(named[index], work) }
    },
    Shape(id: "e2e.BackgroundQueue.join", summary: "joining one live unit of the same name") { units, meter in
        let queue = BackgroundQueue(name: "gates")
        let running = Countdown(1)
        let join = AsyncTask.Options(name: "refresh", timeout: nil, uniquenessPolicy: .join)
        meter.start()
        let live = queue.add(.init(name: "refresh", timeout: nil)) { _ in running.arrive() }
        running.wait()
        for _ in 0..<units { queue.add(join, noop) }
        live.finish()
        drain(queue)
        meter.stop()
    },
    Shape(id: "e2e.BackgroundQueue.lanes", summary: "spread over 64 lanes") { units, meter in
        let lanes = (0..<64).map { AsyncTask.Options(timeout: nil, lane: "account-\($0)") }
        return endToEnd(units: units, meter: meter) { queue, index, work in queue.add(lanes[index % 64], work) }
    },
    Shape(id: "e2e.BackgroundQueue.delayed", summary: "a start time that has passed") { units, meter in
        let past = AsyncTask.Options(timeout: nil, notBefore: .at(.now - .seconds(1)))
        return endToEnd(units: units, meter: meter) { queue, _, work in queue.add(past, work) }
    },
    Shape(id: "e2e.BackgroundQueue.asyncBody", summary: "async bodies") { units, meter in
        asyncBodies(units: units, meter: meter, options: .init())
    },
    Shape(id: "e2e.BackgroundQueue.asyncBody.retry", summary: "async bodies, a retry policy never used") {
        units, meter in
        asyncBodies(units: units, meter: meter, options: .init(retry: .exponential()))
    },
    Shape(id: "e2e.BackgroundQueue.retryOnce", summary: "async bodies failing once, retried at once") {
        units, meter in
        let attempts = (0..<units).map { _ in FirstAttemptFails() }
        let retry = AsyncTask.Options(retry: .fixed(maxAttempts: 2, delay: .zero))
        let queue = BackgroundQueue(name: "gates")
        meter.start()
        for attempt in attempts { queue.add(retry) { try attempt.run() } }
        drain(queue)
        meter.stop()
    },
    Shape(id: "e2e.BackgroundQueue.progress", summary: "async bodies reporting progress 10 times") {
        units, meter in
        let queue = BackgroundQueue(name: "gates")
        let done = Countdown(units)
        meter.start()
        for _ in 0..<units {
            queue.add {
                if let unit = AsyncTask.current {
                    for step in 1...10 { unit.reportProgress(completed: step, of: 10) }
                }
                done.arrive()
            }
        }
        done.wait()
        drain(queue)
        meter.stop()
    },
    Shape(id: "add.BackgroundOperationQueue.AsyncOperation", summary: "addOperation, queue suspended") {
        units, meter in
        let queue = BackgroundOperationQueue(name: "gates")
        queue.isSuspended = true
        meter.start()
        for _ in 0..<units { queue.addOperation(AsyncOperation(timeout: .infinity) { $0.finish() }) }
        meter.stop()
        queue.isSuspended = false
        JobPump.shared.run { queue.operationCount == 0 }
    },
    Shape(id: "e2e.AsyncOperation.start", summary: "AsyncOperation started by hand (the bridge alone)") {
        units, meter in
        let done = Countdown(units)
        meter.start()
        for _ in 0..<units {
            AsyncOperation(timeout: .infinity) { operation in
                operation.finish()
                done.arrive()
            }.start()
        }
        done.wait()
        meter.stop()
    },
    // MARK: The peer doing the same work.
    Shape(id: "idle.Task.detached", summary: "one Task.detached at a time, awaited") { units, meter in
        meter.start()
        for _ in 0..<units {
            let done = Countdown(1)
            let task = Task.detached { done.arrive() }
            done.wait()
            blockingWait { await task.value }
        }
        meter.stop()
    },
    Shape(id: "e2e.Task.detached", summary: "bare Task.detached") { units, meter in
        let done = Countdown(units)
        meter.start()
        for _ in 0..<units { Task.detached { done.arrive() } }
        done.wait()
        meter.stop()
    },
    // MARK: On Foundation's and Dispatch's threads: these counts move from run to run.
    Shape(
        id: "e2e.BackgroundOperationQueue.AsyncOperation",
        summary: "AsyncOperation on the bridge's queue (Foundation's threads)"
    ) { units, meter in
        let queue = BackgroundOperationQueue(name: "gates")
        let done = Countdown(units)
        meter.start()
        for _ in 0..<units {
            queue.addOperation(
                AsyncOperation(timeout: .infinity) { operation in
                    operation.finish()
                    done.arrive()
                })
        }
        done.wait()
        JobPump.shared.run { queue.operationCount == 0 }
        meter.stop()
    },

    Shape(id: "e2e.DispatchQueue.async", summary: "concurrent DispatchQueue") { units, meter in
        let queue = DispatchQueue(label: "gates", attributes: .concurrent)
        let done = Countdown(units)
        meter.start()
        for _ in 0..<units { queue.async { done.arrive() } }
        done.wait()
        meter.stop()
    },
    Shape(id: "e2e.OperationQueue.BlockOperation", summary: "BlockOperation on an OperationQueue") {
        units, meter in
        let queue = OperationQueue()
        let done = Countdown(units)
        meter.start()
        for _ in 0..<units { queue.addOperation(BlockOperation { done.arrive() }) }
        done.wait()
        queue.waitUntilAllOperationsAreFinished()
        meter.stop()
    },
]

private let noop: @Sendable (AsyncTask) -> Void = { $0.finish() }
/// The options of most shapes' units, made once as an app keeps its `Options`.
private let noTimeout = AsyncTask.Options(timeout: nil)

/// `units` options with distinct names and `.drop`, made before the measurement.
private func distinctNames(_ units: Int) -> [AsyncTask.Options] {
    (0..<units).map { AsyncTask.Options(name: "unit-\($0)", timeout: nil, uniquenessPolicy: .drop) }
}

/// Adds `units` units to a suspended queue, measuring the adds only; then cancels them.
private func suspendedAdds(units: Int, meter: any Meter, add: (BackgroundQueue, Int) -> Void) {
    let queue = BackgroundQueue(name: "gates")
    queue.suspend()
    meter.start()
    for index in 0..<units { add(queue, index) }
    meter.stop()
    cancelAndDrain(queue)
}

/// Callback-style units added from this thread, each finishing and signalling at once;
/// measured from the first add until the queue is idle.
private func endToEnd(
    units: Int, meter: any Meter, limit: Int? = nil,
    add: (BackgroundQueue, Int, sending @escaping @isolated(any) (AsyncTask) -> Void) -> Void
) {
    let queue = BackgroundQueue(name: "gates", maxConcurrentTasks: limit)
    let done = Countdown(units)
    meter.start()
    for index in 0..<units {
        add(queue, index) { unit in
            unit.finish()
            done.arrive()
        }
    }
    done.wait()
    drain(queue)
    meter.stop()
}

private func asyncBodies(units: Int, meter: any Meter, options: AsyncTask.Options) {
    let queue = BackgroundQueue(name: "gates")
    let done = Countdown(units)
    meter.start()
    for _ in 0..<units { queue.add(options) { done.arrive() } }
    done.wait()
    drain(queue)
    meter.stop()
}

private func cancelAndDrain(_ queue: BackgroundQueue) {
    queue.cancelAll()
    queue.resume()
    drain(queue)
}

private func drain(_ queue: BackgroundQueue) {
    blockingWait { await queue.waitUntilIdle() }
}

/// Runs async work from synchronous code, running the pump until it is done.
private func blockingWait(_ body: @escaping @Sendable () async -> Void) {
    let done = Countdown(1)
    Task.detached {
        await body()
        done.arrive()
    }
    done.wait()
}

/// Counts `arrive()` calls down; `wait()` runs the pump until there were `count`.
private final class Countdown: Sendable {
    private let remaining: Atomic<Int>

    init(_ count: Int) { remaining = Atomic(count) }

    func arrive() { remaining.subtract(1, ordering: .acquiringAndReleasing) }

    func wait() { JobPump.shared.run { remaining.load(ordering: .acquiring) == 0 } }
}

/// Throws the first time it runs, then returns.
private final class FirstAttemptFails: Sendable {
    private struct Failure: Error {}
    private let failed = Atomic<Bool>(false)

    func run() throws {
        if !failed.exchange(true, ordering: .relaxed) { throw Failure() }
    }
}
