// A child process for BlockedPoolTests.swift: its cooperative pool is its own, so the
// test can block all of it without holding back the other tests.
//
//     blocked-pool-fixture <priority>...   (raw `TaskPriority` values)
//
// For each priority, as many callback units as the machine has active cores, on one
// queue, block their threads (a semaphore wait, bounded by 30 s): they hold every
// thread of the pool at those priorities. The main thread — not a thread of the pool —
// then adds a unit with a 50 ms timeout to another queue, and checks that it and the
// blocking units time out while the bodies still block. Prints what it saw; exits 0 when
// every unit timed out, 1 otherwise. Every wait is bounded.
import Backgroundable
import Dispatch
import Foundation

/// Waits (polling from this thread) until `unit` has an outcome, for up to `seconds`.
func outcome(of unit: AsyncTask, within seconds: Double) -> AsyncTask.Outcome? {
    let deadline = Date(timeIntervalSinceNow: seconds)
    while unit.currentOutcome == nil, Date() < deadline { usleep(1_000) }
    return unit.currentOutcome
}

let priorities = CommandLine.arguments.dropFirst().compactMap(UInt8.init).map(TaskPriority.init(rawValue:))
let width = ProcessInfo.processInfo.activeProcessorCount
let blockingQueue = BackgroundQueue(name: "blocking", backgroundTaskProvider: NoopBackgroundTaskProvider.shared)
let otherQueue = BackgroundQueue(name: "other", backgroundTaskProvider: NoopBackgroundTaskProvider.shared)
let started = DispatchSemaphore(value: 0)
let release = DispatchSemaphore(value: 0)

let blocking = priorities.flatMap { priority in
    (0..<width).map { _ in
        blockingQueue.add(.init(timeout: .milliseconds(200), priority: priority)) { task in
            started.signal()
            _ = release.wait(timeout: .now() + 30)
            task.finish()
        }
    }
}
let blocked = blocking.filter { _ in started.wait(timeout: .now() + 10) == .success }.count
print("blocked \(blocked) of \(blocking.count) threads")
var succeeded = blocked == blocking.count
if succeeded {
    let other = otherQueue.add(.init(timeout: .milliseconds(50))) { _ in }  // Never finishes.
    let otherOutcome = outcome(of: other, within: 5)
    print("other queue: \(otherOutcome.map { "\($0.kind)" } ?? "no outcome")")
    let outcomes = blocking.map { outcome(of: $0, within: 5) }
    print("blocking queue: \(outcomes.map { $0.map { "\($0.kind)" } ?? "no outcome" }.joined(separator: ", "))")
    succeeded = otherOutcome?.kind == .timedOut && outcomes.allSatisfy { $0?.kind == .timedOut }
}
for _ in blocking { release.signal() }

// Once the pool is free again, the queues go idle (off the main actor: this thread waits).
let idle = DispatchSemaphore(value: 0)
Task.detached {
    await blockingQueue.waitUntilIdle()
    await otherQueue.waitUntilIdle()
    idle.signal()
}
if idle.wait(timeout: .now() + 10) == .timedOut {
    print("the queues did not go idle once released")
    succeeded = false
}
exit(succeeded ? 0 : 1)
