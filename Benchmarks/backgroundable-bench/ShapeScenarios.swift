import Backgroundable
import Dispatch
import Foundation
import Synchronization

// Latency of one unit on an idle queue, and cost per unit as the number of live units
// grows, for the workload shapes apps and servers have.

/// `latency.*`: from the add to the first line of the body, one unit at a time with the
/// queue idle in between; the median over `count` units, in nanoseconds.
func latencyScenarios(count: Int) -> [Scenario] {
    [
        Scenario(id: "latency.BackgroundQueue.idle", unit: "ns (median)", baseline: ("latency.Task.detached", 1.2)) {
            _ in
            let queue = BackgroundQueue(name: "bench")
            return medianLatency(count: count) { start, started in
                queue.add(.init(timeout: nil)) { task in
                    started(now() - start)
                    task.finish()
                }
            } between: {
                drainQueue(queue)
            }
        },
        Scenario(id: "latency.Task.detached", unit: "ns (median)", baseline: nil) { _ in
            // Between units, the same kind of wait as the queue's: until the last
            // `Task` has completed, through the same blocking bridge.
            var last: Task<Void, Never>?
            return medianLatency(count: count) { start, started in
                last = Task.detached { started(now() - start) }
            } between: {
                let task = last!
                blockingWait { await task.value }
            }
        },
    ]
}

/// Runs `count` single units one after another; `launch` receives the start time and
/// a callback for the body's first line.
private func medianLatency(
    count: Int,
    launch: (_ start: UInt64, _ started: @escaping @Sendable (UInt64) -> Void) -> Void,
    between: () -> Void
) -> Double {
    let latency = Atomic<UInt64>(0)
    let ran = DispatchSemaphore(value: 0)
    var samples: [UInt64] = []
    samples.reserveCapacity(count)
    for _ in 0..<count {
        launch(now()) { elapsed in
            latency.store(elapsed, ordering: .relaxed)
            ran.signal()
        }
        ran.wait()
        samples.append(latency.load(ordering: .relaxed))
        between()
        // "Now and then": the machine settles before the next unit, as it does between
        // an app's occasional adds. Without the pause each sample depends on whether the
        // other core's worker thread (or virtual CPU) has parked yet — the noise of the
        // previous unit's tail, not the cost of this one.
        usleep(200)
    }
    samples.sort()
    return Double(samples[samples.count / 2])
}

private func drainQueue(_ queue: BackgroundQueue) {
    blockingWait { await queue.waitUntilIdle() }
}

/// `scaling.<shape>.small` and `.large`: nanoseconds per unit for `small` and `large`
/// units of the same shape, from the first add until the queue is idle; `large`
/// is judged against `small` (flat cost: ≤ 1.3). `reference.taskChains.*` runs right
/// after `scaling.manyShortSequences`, the shape it is the reference for, so that both
/// meet the same stretches of the machine and the same state of the heap.
func scalingScenarios(small: Int, large: Int) -> [Scenario] {
    scalingShapes.flatMap { shape in
        var scenarios = [
            Scenario(id: "scaling.\(shape.name).small", unit: "ns/unit", baseline: nil) { _ in
                shape.run(small)
            },
            Scenario(id: "scaling.\(shape.name).large", unit: "ns/unit", baseline: ("scaling.\(shape.name).small", 1.3))
            { _ in
                shape.run(large)
            },
        ]
        if shape.name == "manyShortSequences" {
            scenarios += [
                Scenario(id: "reference.taskChains.small", unit: "ns/unit", baseline: nil) { _ in
                    taskChains(units: small)
                },
                Scenario(
                    id: "reference.taskChains.large", unit: "ns/unit", baseline: ("reference.taskChains.small", nil)
                ) { _ in
                    taskChains(units: large)
                },
            ]
        }
        return scenarios
    }
}

/// `reference.taskChains.*`: `scaling.manyShortSequences`' shape without the library, to
/// tell what the machine costs from what the queue costs. Chains of 4 objects made
/// beforehand, each the size of a unit (136 bytes) with a lock; each object gets a bare
/// `Task.detached` when its predecessor's `Task` runs, and its lock is taken where a
/// queue takes its unit's: when the `Task` is made and when it runs. Every chain's head
/// is launched at once, as a resumed queue starts every group's first unit.
///
/// At 160,000 objects, 40,000 `Task`s are in flight and every successor was made long
/// before its turn: on a 32 MB last-level cache its memory has left the cache, at 10,000
/// it has not. The ratio of `.large` to `.small` is what any design with a unit made at
/// its add and a `Task` per unit pays on this shape (1.42–1.63 in five full runs on
/// the project's machine).
private func taskChains(units: Int) -> Double {
    let heads = (0..<units / 4).map { _ in
        let links = (0..<4).map { _ in ChainLink() }
        for index in 1..<links.count { links[index - 1].next = links[index] }
        return links[0]
    }
    let chains = ChainsLeft(heads.count)
    let start = now()
    for head in heads { head.launch(chains) }
    chains.done.wait()
    return Double(now() - start) / Double(units)
}

/// A stand-in for a unit in ``taskChains(units:)``: 136 bytes, a lock, its successor.
private final class ChainLink: @unchecked Sendable {
    let state = Mutex<UInt64>(0)
    /// Set once, before any `Task` reads it.
    var next: ChainLink?
    /// Fills the instance to a unit's size.
    let padding: (Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int) = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)

    func launch(_ chains: ChainsLeft) {
        state.withLock { $0 += 1 }
        Task.detached {
            self.state.withLock { $0 += 1 }
            if let next = self.next {
                next.launch(chains)
            } else if chains.left.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 {
                chains.done.signal()
            }
        }
    }
}

private final class ChainsLeft: Sendable {
    let left: Atomic<Int>
    let done = DispatchSemaphore(value: 0)

    init(_ count: Int) { left = Atomic(count) }
}

private struct Shape: Sendable {
    let name: String
    let run: @Sendable (_ units: Int) -> Double
}

/// Most shapes add every unit to a suspended queue (so all of them are live at once),
/// then resume it and wait until it is idle.
private func pendingThenRun(
    units: Int,
    limit: Int? = nil,
    prepare: (BackgroundQueue) -> Void = { _ in },
    add: (BackgroundQueue, Int) -> Void,
    beforeResume: (BackgroundQueue) -> Void = { _ in }
) -> Double {
    let queue = BackgroundQueue(name: "bench", maxConcurrentTasks: limit)
    prepare(queue)
    queue.suspend()
    let start = now()
    for index in 0..<units { add(queue, index) }
    beforeResume(queue)
    queue.resume()
    drainQueue(queue)
    return Double(now() - start) / Double(units)
}

private let noop: @Sendable (AsyncTask) -> Void = { $0.finish() }

private let scalingShapes: [Shape] = [
    Shape(name: "distinctNames") { units in
        let names = (0..<units).map { "unit-\($0)" }
        return pendingThenRun(units: units) { queue, index in
            queue.add(.init(name: names[index], timeout: nil), noop)
        }
    },
    Shape(name: "oneLabelName") { units in
        pendingThenRun(units: units) { queue, _ in
            queue.add(.init(name: "upload", timeout: nil), noop)
        }
    },
    Shape(name: "fewLabelNames") { units in
        let names = (0..<8).map { "label-\($0)" }
        return pendingThenRun(units: units) { queue, index in
            queue.add(.init(name: names[index % 8], timeout: nil), noop)
        }
    },
    Shape(name: "distinctTimeouts") { units in
        pendingThenRun(units: units) { queue, index in
            queue.add(.init(timeout: .seconds(10) + .nanoseconds(index)), noop)
        }
    },
    Shape(name: "randomPrioritiesLimit4") { units in
        // The same pseudo-random mix every run: a multiplicative hash of the index.
        let priorities: [TaskPriority] = [.background, .low, .medium, .high]
        let chosen = (0..<units).map { priorities[Int((UInt64($0) &* 0x9E37_79B9_7F4A_7C15) >> 62)] }
        return pendingThenRun(units: units, limit: 4) { queue, index in
            queue.add(.init(timeout: nil, priority: chosen[index]), noop)
        }
    },
    Shape(name: "oneLongSequence") { units in
        let tasks = (0..<units).map { _ in AsyncTask(.init(timeout: nil), noop) }
        // One add of the whole group: its time per unit.
        return pendingThenRun(units: 1) { queue, _ in
            queue.addSequence(tasks)
        } / Double(units)
    },
    Shape(name: "manyShortSequences") { units in
        let groups = (0..<units / 4).map { _ in (0..<4).map { _ in AsyncTask(.init(timeout: nil), noop) } }
        return pendingThenRun(units: groups.count) { queue, index in
            queue.addSequence(groups[index])
        } / 4
    },
    Shape(name: "lanes64") { units in
        // Per-account order: 64 lanes, each a long chain of waiting units.
        let lanes = (0..<64).map { AsyncTask.Options(timeout: nil, lane: "account-\($0)") }
        return pendingThenRun(units: units) { queue, index in
            queue.add(lanes[index % 64], noop)
        }
    },
    Shape(name: "oneLane") { units in
        let lane = AsyncTask.Options(timeout: nil, lane: "sync")
        return pendingThenRun(units: units) { queue, _ in
            queue.add(lane, noop)
        }
    },
    Shape(name: "distinctStartTimes") { units in
        // A start time per unit, 10 ns apart, all due within a few milliseconds: the
        // start-time heap holds every unit, then the sleeper makes them ready.
        let options = (0..<units).map { AsyncTask.Options(timeout: nil, notBefore: .after(.nanoseconds(10 * $0))) }
        return pendingThenRun(units: units) { queue, index in
            queue.add(options[index], noop)
        }
    },
    Shape(name: "retryOnce") { units in
        // Every unit fails its first attempt and succeeds on its second, at once: each
        // frees its slot, waits in the queue and starts again.
        let attempts = (0..<units).map { _ in FirstAttemptFails() }
        let retry = AsyncTask.Options(retry: .fixed(maxAttempts: 2, delay: .zero))
        return pendingThenRun(units: units) { queue, index in
            let attempt = attempts[index]
            queue.add(retry) { try attempt.run() }
        }
    },
    Shape(name: "joinOneName") { units in
        // Single flight: one unit named "refresh" waits, every later one joins it.
        let join = AsyncTask.Options(name: "refresh", timeout: nil, uniquenessPolicy: .join)
        return pendingThenRun(units: units) { queue, _ in
            queue.add(join, noop)
        }
    },
    Shape(name: "replaceStormOneName") { units in
        pendingThenRun(units: units) { queue, _ in
            queue.add(.init(name: "refresh", timeout: nil, uniquenessPolicy: .replace), noop)
        }
    },
    Shape(name: "dropStormBehindExecuting") { units in
        let queue = BackgroundQueue(name: "bench")
        let running = DispatchSemaphore(value: 0)
        let holder = queue.add(.init(name: "sync", timeout: nil)) { _ in running.signal() }
        running.wait()
        let start = now()
        for _ in 0..<units {
            queue.add(.init(name: "sync", timeout: nil, uniquenessPolicy: .drop), noop)
        }
        holder.finish()
        drainQueue(queue)
        return Double(now() - start) / Double(units)
    },
    Shape(name: "cancelPendingOneByOne") { units in
        var added: [AsyncTask] = []
        added.reserveCapacity(units)
        return pendingThenRun(units: units) { queue, _ in
            added.append(queue.add(.init(timeout: nil), noop))
        } beforeResume: { _ in
            for task in added { task.cancel() }
        }
    },
    Shape(name: "cancelAllPending") { units in
        pendingThenRun(units: units) { queue, _ in
            queue.add(.init(timeout: nil), noop)
        } beforeResume: { queue in
            queue.cancelAll()
        }
    },
    Shape(name: "awaitedAsyncBodies") { units in
        let queue = BackgroundQueue(name: "bench")
        let start = now()
        let handles = (0..<units).map { index in queue.add(.init(timeout: nil)) { index } }
        blockingWait {
            var sum = 0
            for handle in handles { sum &+= (try? await handle.value) ?? 0 }
            precondition(sum == units * (units - 1) / 2)
        }
        drainQueue(queue)
        return Double(now() - start) / Double(units)
    },
    Shape(name: "withEventsListener") { units in
        var listener: Task<Void, Never>?
        let result = pendingThenRun(units: units) { queue in
            let stream = queue.events
            listener = Task.detached {
                for await _ in stream {}
            }
        } add: { queue, _ in
            queue.add(.init(timeout: nil), noop)
        }
        listener?.cancel()
        return result
    },
]

/// Throws the first time it runs, then returns.
private final class FirstAttemptFails: Sendable {
    private struct Failure: Error {}
    private let failed = Atomic<Bool>(false)

    func run() throws {
        if !failed.exchange(true, ordering: .relaxed) { throw Failure() }
    }
}
