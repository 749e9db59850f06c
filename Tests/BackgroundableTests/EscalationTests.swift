import BackgroundableTesting
import Synchronization
import Testing

@testable import Backgroundable

/// Priority escalation: a task of higher priority awaiting a unit raises it — its place
/// in the start order while it waits, its `Task` once it runs. Observed through
/// `Task.currentPriority` inside the bodies and the queue's `escalated` events; nothing
/// sleeps.
@Suite("Priority escalation", .timeLimit(.minutes(1)))
struct EscalationTests {
    /// Waits for the queue's next `escalated` event; returns its unit and priority.
    private func nextEscalation(
        _ events: inout AsyncStream<BackgroundQueue.Event>.Iterator
    ) async -> (AsyncTask, TaskPriority)? {
        while let event = await events.next() {
            if event.kind == .escalated, let unit = event.unit, let priority = event.priority {
                return (unit, priority)
            }
        }
        return nil
    }

    @Test func aWaitingUnitAwaitedFromAHigherPriorityStartsFirstAndRunsAtThatPriority() async {
        let (queue, _) = makeQueue(maxConcurrentTasks: 1)
        var events = queue.events.makeAsyncIterator()
        queue.suspend()
        let seen = Recorder<(String, TaskPriority)>()
        func unit(_ label: String, _ priority: TaskPriority) -> AsyncTask {
            queue.add(.init(name: label, priority: priority)) { unit in
                seen.append((label, Task.currentPriority))
                unit.finish()
            }
        }
        let first = unit("low", .low)
        let second = unit("background", .background)
        let awaiter = Task(priority: .high) { await second.outcome }
        let escalation = await nextEscalation(&events)
        #expect(escalation?.0 === second && escalation?.1 == .high)
        queue.resume()
        _ = await awaiter.value
        _ = await first.outcome
        #expect(seen.all.map(\.0) == ["background", "low"])
        #expect(seen.all.first.map { $0.1 >= .high } == true)
    }

    @Test func anAsyncBodyReadsItsEscalatedPriority() async throws {
        let (queue, _) = makeQueue()
        var events = queue.events.makeAsyncIterator()
        let started = Signal()
        let gate = Signal()
        let handle = queue.add(.init(priority: .background)) { () async -> TaskPriority in
            started.signal()
            await gate.wait()
            return Task.currentPriority
        }
        await started.wait()
        let awaiter = Task(priority: .high) { try await handle.value }
        _ = await nextEscalation(&events)
        gate.signal()
        #expect(try await awaiter.value >= .high)
    }

    @Test func anAwaiterOfLowerPriorityChangesNothing() async {
        let (queue, _) = makeQueue()
        let events = queue.events
        let unit = queue.add(.init(priority: .high)) { $0.finish() }
        _ = await Task(priority: .low) { await unit.outcome }.value
        await queue.waitUntilIdle()
        var escalations = 0
        for await event in events {
            if event.kind == .escalated { escalations += 1 }
            if event.kind == .idle { break }
        }
        #expect(escalations == 0)
    }

    @Test func awaitingAJoinedUnitEscalatesTheSharedWork() async {
        let (queue, _) = makeQueue(maxConcurrentTasks: 1)
        var events = queue.events.makeAsyncIterator()
        queue.suspend()
        let shared = queue.add(.init(name: "refresh", priority: .background)) { $0.finish() }
        let joined = queue.add(.init(name: "refresh", priority: .background, uniquenessPolicy: .join)) {
            $0.finish()
        }
        let awaiter = Task(priority: .high) { await joined.outcome }
        let escalation = await nextEscalation(&events)
        #expect(escalation?.0 === shared)
        queue.resume()
        #expect(await awaiter.value.kind == .finished)
    }

    /// PriorityEscalation.md: a unit is escalated "from the moment it is awaited, even
    /// before its queue has taken it in", and a unit that joined shared work escalates
    /// that work: an await that came before the join reaches the work it joins.
    @Test func aJoinerAwaitedBeforeItsAddEscalatesTheWorkItJoins() async {
        let (queue, _) = makeQueue(maxConcurrentTasks: 1)
        var events = queue.events.makeAsyncIterator()
        queue.suspend()
        let shared = queue.add(.init(name: "refresh", priority: .background)) { $0.finish() }
        let joiner = AsyncTask(.init(name: "refresh", priority: .background, uniquenessPolicy: .join)) {
            $0.finish()
        }
        let awaiter = Task(priority: .high) { await joiner.outcome }
        while joiner.escalation.load(ordering: .relaxed) == 0 { await Task.yield() }  // it awaits
        #expect(queue.add(joiner))
        let escalation = await nextEscalation(&events)
        #expect(escalation?.0 === shared && escalation?.1 == .high)
        queue.resume()
        #expect(await awaiter.value.kind == .finished)
    }

    @Test func aRuntimeEscalationBetweenAttemptsRaisesTheUnitsPlace() async {
        let clock = TestClock()
        let (queue, _) = makeQueue(clock: clock, maxConcurrentTasks: 1)
        var events = queue.events.makeAsyncIterator()
        let attempts = Recorder<Int>()
        let handle = queue.add(
            .init(priority: .background, retry: .fixed(maxAttempts: 2, delay: .seconds(1)))
        ) {
            attempts.append(1)
            if attempts.count == 1 { throw TestError(code: 1) }
        }
        while let event = await events.next() {
            if event.kind == .retrying { break }
        }
        // Someone awaits the unit's `Task` itself: the runtime escalates it, and the
        // unit's place in the start order follows.
        let task = handle.task.runningTask
        let awaiter = Task(priority: .high) { await task?.value }
        let escalation = await nextEscalation(&events)
        #expect(escalation?.0 === handle.task && (escalation?.1 ?? .low) >= .high)
        clock.advance(by: .seconds(1))
        _ = await awaiter.value
        #expect(await handle.outcome.kind == .finished)
    }
}
