import Backgroundable
import Dispatch
import Foundation

/// A scenario: `run(units)` does the work once and returns the value to record for that
/// repetition (nanoseconds per unit, or bytes per unit).
struct Scenario {
    let id: String
    let unit: String
    /// The scenario this one is compared with, and the target ratio of medians.
    /// (A `nil` target shows the ratio without judging it.)
    let baseline: (id: String, target: Double?)?
    let run: @Sendable (_ units: Int) -> Double
}

private func perUnit(_ start: UInt64, _ end: UInt64, _ units: Int) -> Double {
    Double(end - start) / Double(units)
}

private func drain(_ queue: BackgroundQueue) {
    blockingWait { await queue.waitUntilIdle() }
}

/// Every scenario the harness knows, in the order they run.
func allScenarios(memoryUnits: Int) -> [Scenario] {
    [
        // MARK: Memory per pending unit (first, while the heap is fresh).
        Scenario(id: "memory.BackgroundQueue.pendingUnit", unit: "bytes/unit", baseline: nil) { _ in
            pendingMemory(units: memoryUnits) { queue, _ in queue.add { $0.finish() } }
        },
        // The same with a distinct name per unit (short enough to be stored inline).
        Scenario(id: "memory.BackgroundQueue.pendingNamedUnit", unit: "bytes/unit", baseline: nil) { _ in
            pendingMemory(units: memoryUnits) { queue, index in
                queue.add(.init(name: "n\(index)", uniquenessPolicy: .drop)) { $0.finish() }
            }
        },

        // MARK: Enqueue: the caller's cost of handing over one no-op unit.
        Scenario(id: "enqueue.BackgroundQueue.sync", unit: "ns/unit", baseline: ("enqueue.DispatchQueue.async", 0.5)) {
            units in
            let queue = BackgroundQueue(name: "bench")
            let start = now()
            for _ in 0..<units {
                queue.add(.init(timeout: nil)) { $0.finish() }
            }
            let end = now()
            drain(queue)
            return perUnit(start, end, units)
        },
        Scenario(id: "enqueue.BackgroundQueue.async", unit: "ns/unit", baseline: ("enqueue.Task.detached", 0.5)) {
            units in
            let queue = BackgroundQueue(name: "bench")
            let result = Countdown(1)
            nonisolated(unsafe) var elapsed = 0.0
            Task.detached {
                let start = now()
                for _ in 0..<units {
                    queue.add(.init(timeout: nil)) { $0.finish() }
                }
                elapsed = perUnit(start, now(), units)
                result.arrive()
            }
            result.wait()
            drain(queue)
            return elapsed
        },
        Scenario(
            id: "enqueue.BackgroundOperationQueue.AsyncOperation", unit: "ns/unit",
            baseline: ("enqueue.OperationQueue.BlockOperation", nil)
        ) { units in
            let queue = BackgroundOperationQueue(name: "bench")
            let start = now()
            for _ in 0..<units {
                queue.addOperation(AsyncOperation(timeout: .infinity) { $0.finish() })
            }
            let end = now()
            queue.waitUntilAllOperationsAreFinished()
            return perUnit(start, end, units)
        },
        Scenario(id: "enqueue.OperationQueue.BlockOperation", unit: "ns/unit", baseline: nil) { units in
            let queue = OperationQueue()
            let start = now()
            for _ in 0..<units {
                queue.addOperation(BlockOperation {})
            }
            let end = now()
            queue.waitUntilAllOperationsAreFinished()
            return perUnit(start, end, units)
        },
        Scenario(id: "enqueue.DispatchQueue.async", unit: "ns/unit", baseline: nil) { units in
            let queue = DispatchQueue(label: "bench", attributes: .concurrent)
            let group = DispatchGroup()
            let start = now()
            for _ in 0..<units {
                queue.async(group: group) {}
            }
            let end = now()
            group.wait()
            return perUnit(start, end, units)
        },
        Scenario(id: "enqueue.Task.detached", unit: "ns/unit", baseline: nil) { units in
            let done = Countdown(units)
            let start = now()
            for _ in 0..<units {
                Task.detached { done.arrive() }
            }
            let end = now()
            done.wait()
            return perUnit(start, end, units)
        },

        // MARK: End to end: first enqueue until the last unit's outcome.
        Scenario(id: "e2e.BackgroundQueue.unbounded", unit: "ns/unit", baseline: ("e2e.Task.detached", 1.1)) { units in
            backgroundQueueEndToEnd(units: units)
        },
        Scenario(
            id: "e2e.BackgroundQueue.unbounded.timeout", unit: "ns/unit",
            baseline: ("e2e.BackgroundQueue.unbounded", 1.1)
        ) { units in
            backgroundQueueEndToEnd(units: units, timeout: AsyncTask.defaultTimeout)
        },
        Scenario(id: "e2e.BackgroundQueue.limit1", unit: "ns/unit", baseline: ("e2e.Task.detached", 1.2)) { units in
            backgroundQueueEndToEnd(units: units, queue: BackgroundQueue(name: "bench", maxConcurrentTasks: 1))
        },
        Scenario(
            id: "e2e.BackgroundQueue.lanes", unit: "ns/unit", baseline: ("e2e.BackgroundQueue.unbounded", 1.3)
        ) { units in
            // N units over 64 lanes: each lane runs one at a time, the lanes in parallel.
            let lanes = (0..<64).map { AsyncTask.Options(timeout: nil, lane: "account-\($0)") }
            return backgroundQueueEndToEnd(units: units, options: { lanes[$0 % 64] })
        },
        Scenario(
            id: "e2e.BackgroundQueue.join", unit: "ns/unit", baseline: ("e2e.BackgroundQueue.unbounded", 1.3)
        ) { units in
            // N callers of one name joining the one live unit, which then finishes: from
            // the first join until every joined unit has its outcome.
            let queue = BackgroundQueue(name: "bench")
            let running = DispatchSemaphore(value: 0)
            let live = queue.add(.init(name: "refresh", timeout: nil)) { _ in running.signal() }
            running.wait()
            let join = AsyncTask.Options(name: "refresh", timeout: nil, uniquenessPolicy: .join)
            let start = now()
            for _ in 0..<units {
                queue.add(join) { $0.finish() }
            }
            live.finish()
            // The joined units end before the live unit's awaiters resume.
            blockingWait { _ = await live.outcome }
            let end = now()
            drain(queue)
            return perUnit(start, end, units)
        },
        Scenario(
            id: "e2e.BackgroundQueue.delayed", unit: "ns/unit", baseline: ("e2e.BackgroundQueue.unbounded", 1.3)
        ) { units in
            // N units whose start time has passed: the start-time path without the wait.
            let past = AsyncTask.Options(timeout: nil, notBefore: .at(.now - .seconds(1)))
            return backgroundQueueEndToEnd(units: units, options: { _ in past })
        },
        Scenario(id: "e2e.BackgroundQueue.asyncBody", unit: "ns/unit", baseline: nil) { units in
            asyncBodyEndToEnd(units: units, options: .init())
        },
        Scenario(
            id: "e2e.BackgroundQueue.asyncBody.retry", unit: "ns/unit",
            baseline: ("e2e.BackgroundQueue.asyncBody", 1.1)
        ) { units in
            // A retry policy that is never used: every body succeeds at once.
            asyncBodyEndToEnd(units: units, options: .init(retry: .exponential()))
        },
        Scenario(id: "e2e.BackgroundQueue.asyncBody.observed", unit: "ns/unit", baseline: nil) { units in
            // A progress stream consumes every change while the units run; no unit reports.
            observedAsyncBodies(units: units, reports: 0)
        },
        Scenario(
            id: "e2e.BackgroundQueue.asyncBody.progress100", unit: "ns/unit",
            baseline: ("e2e.BackgroundQueue.asyncBody.observed", 1.2)
        ) { units in
            observedAsyncBodies(units: units, reports: 100)
        },
        Scenario(
            id: "e2e.BackgroundOperationQueue.AsyncOperation", unit: "ns/unit",
            baseline: ("e2e.OperationQueue.BlockOperation", 1.2)
        ) { units in
            let queue = BackgroundOperationQueue(name: "bench")
            let done = Countdown(units)
            let start = now()
            for _ in 0..<units {
                queue.addOperation(
                    AsyncOperation(timeout: .infinity) { operation in
                        operation.finish()
                        done.arrive()
                    })
            }
            done.wait()
            let end = now()
            queue.waitUntilAllOperationsAreFinished()
            return perUnit(start, end, units)
        },
        Scenario(id: "e2e.OperationQueue.BlockOperation", unit: "ns/unit", baseline: nil) { units in
            let queue = OperationQueue()
            let done = Countdown(units)
            let start = now()
            for _ in 0..<units {
                queue.addOperation(BlockOperation { done.arrive() })
            }
            done.wait()
            let end = now()
            queue.waitUntilAllOperationsAreFinished()
            return perUnit(start, end, units)
        },
        Scenario(id: "e2e.DispatchQueue.async", unit: "ns/unit", baseline: nil) { units in
            let queue = DispatchQueue(label: "bench", attributes: .concurrent)
            let done = Countdown(units)
            let start = now()
            for _ in 0..<units {
                queue.async { done.arrive() }
            }
            done.wait()
            return perUnit(start, now(), units)
        },
        Scenario(id: "e2e.Task.detached", unit: "ns/unit", baseline: nil) { units in
            let done = Countdown(units)
            let start = now()
            for _ in 0..<units {
                Task.detached { done.arrive() }
            }
            done.wait()
            return perUnit(start, now(), units)
        },

        // MARK: Deduplication scaling: enqueue cost per named unit, suspended queue.
        Scenario(id: "dedup.BackgroundQueue.names0", unit: "ns/unit", baseline: nil) { units in
            namedEnqueue(units: units, liveNames: 0)
        },
        Scenario(
            id: "dedup.BackgroundQueue.names100k", unit: "ns/unit", baseline: ("dedup.BackgroundQueue.names0", 1.2)
        ) { units in
            namedEnqueue(units: units, liveNames: 100_000)
        },

    ]
}

/// Resident memory per pending unit: `units` units added by `add` to a suspended queue.
private func pendingMemory(units: Int, _ add: (BackgroundQueue, Int) -> Void) -> Double {
    let queue = BackgroundQueue(name: "bench")
    queue.suspend()
    trimHeap()
    let before = residentBytes()
    for index in 0..<units {
        add(queue, index)
    }
    let after = residentBytes()
    queue.cancelAll()
    queue.resume()
    drain(queue)
    return Double(after - before) / Double(units)
}

/// First enqueue until the last unit's outcome, for no-op callback-style units.
/// `units` units, each finishing at once; `options` (by index, chosen before the clock
/// starts) replace the `timeout` when given.
func backgroundQueueEndToEnd(
    units: Int, timeout: Duration? = nil, queue: @autoclosure () -> BackgroundQueue = BackgroundQueue(name: "bench"),
    options: ((Int) -> AsyncTask.Options)? = nil
) -> Double {
    let queue = queue()
    let options = options.map { (0..<units).map($0) }
    let done = Countdown(units)
    let start = now()
    for index in 0..<units {
        if let options {
            queue.add(options[index]) { task in
                task.finish()
                done.arrive()
            }
        } else {
            queue.add(.init(timeout: timeout)) { task in
                task.finish()
                done.arrive()
            }
        }
    }
    done.wait()
    let end = now()
    drain(queue)
    return perUnit(start, end, units)
}

/// `units` async bodies with `options`, each returning at once.
private func asyncBodyEndToEnd(units: Int, options: AsyncTask.Options) -> Double {
    let queue = BackgroundQueue(name: "bench")
    let done = Countdown(units)
    let start = now()
    for index in 0..<units {
        queue.add(options) {
            done.arrive()
            return index
        }
    }
    done.wait()
    let end = now()
    drain(queue)
    return perUnit(start, end, units)
}

/// `units` async bodies, each reporting its progress `reports` times (reading
/// `AsyncTask.current` once, as documented), while a task consumes the queue's progress
/// stream.
private func observedAsyncBodies(units: Int, reports: Int) -> Double {
    let queue = BackgroundQueue(name: "bench")
    let consumer = Task.detached {
        var seen = 0
        for await _ in queue.progressUpdates { seen += 1 }
        return seen
    }
    let done = Countdown(units)
    let start = now()
    for index in 0..<units {
        queue.add {
            if reports > 0, let unit = AsyncTask.current {
                for step in 1...reports { unit.reportProgress(completed: step, of: reports) }
            }
            done.arrive()
            return index
        }
    }
    done.wait()
    let end = now()
    drain(queue)
    consumer.cancel()
    return perUnit(start, end, units)
}

private func namedEnqueue(units: Int, liveNames: Int) -> Double {
    let queue = BackgroundQueue(name: "bench")
    queue.suspend()
    for index in 0..<liveNames {
        queue.add(.init(name: "live-\(index)", timeout: nil, uniquenessPolicy: .drop)) { $0.finish() }
    }
    let names = (0..<units).map { "new-\($0)" }
    let start = now()
    for name in names {
        queue.add(.init(name: name, timeout: nil, uniquenessPolicy: .drop)) { $0.finish() }
    }
    let end = now()
    queue.cancelAll()
    queue.resume()
    drain(queue)
    return perUnit(start, end, units)
}
