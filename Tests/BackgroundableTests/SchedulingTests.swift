import BackgroundableTesting
import Dispatch
import Testing

@testable import Backgroundable

@Suite("Scheduling: FIFO, limits, priorities, suspension")
struct SchedulingTests {
    @Test func synchronousCallersKeepFIFOOrderWithLimitOne() async {
        let (queue, _) = makeQueue(maxConcurrentTasks: 1)
        let order = Recorder<Int>()
        // Added from plain synchronous code, as an IBAction or a callback would.
        func addAll() {
            for index in 0..<1_000 {
                queue.add(.init(timeout: nil)) { task in
                    order.append(index)
                    task.finish()
                }
            }
        }
        addAll()
        await queue.waitUntilIdle()
        #expect(order.all == Array(0..<1_000))
    }

    @Test func unboundedQueueStartsInFIFOOrder() async {
        let (queue, _) = makeQueue()
        queue.suspend()
        let order = Recorder<Int>()
        for index in 0..<200 {
            queue.add(.init(timeout: nil)) { task in
                order.append(index)
                task.finish()
            }
        }
        queue.resume()
        await queue.waitUntilIdle()
        // Starts are in order; with an unbounded queue the bodies may interleave, so
        // check the start events instead of the bodies.
        #expect(order.count == 200)
    }

    @Test func startEventsFollowFIFOOrderOnAnUnboundedQueue() async {
        let (queue, _) = makeQueue()
        let events = queue.events
        queue.suspend()
        let units = (0..<100).map { index in
            queue.add(.init(name: "u\(index)")) { task in task.finish() }
        }
        queue.resume()
        var started: [AsyncTask] = []
        for await event in events {
            if event.kind == .started, let unit = event.unit { started.append(unit) }
            if event.kind == .idle { break }
        }
        #expect(started.map(ObjectIdentifier.init) == units.map(ObjectIdentifier.init))
    }

    @Test(arguments: [1, 3])
    func limitIsNeverExceeded(limit: Int) async {
        let (queue, _) = makeQueue(maxConcurrentTasks: limit)
        let gauge = Gauge()
        for _ in 0..<60 {
            queue.add {
                gauge.enter()
                await Task.yield()
                gauge.leave()
            }
        }
        await queue.waitUntilIdle()
        #expect(gauge.maximum <= limit)
        #expect(gauge.maximum >= 1)
    }

    @Test func limitIsReachedAndSlotsAreReusedAsUnitsEnd() async {
        let (queue, _) = makeQueue(maxConcurrentTasks: 3)
        let started = Recorder<AsyncTask>()
        let allThreeStarted = Signal()
        let units = (0..<5).map { _ in
            queue.add(.init(timeout: nil)) { task in
                started.append(task)
                if started.count == 3 { allThreeStarted.signal() }
            }
        }
        await allThreeStarted.wait()
        #expect(queue.executingCount == 3)
        #expect(queue.enqueuedCount == 2)
        #expect(started.count == 3)
        for unit in units.prefix(3) { unit.finish() }
        for (index, unit) in units.suffix(2).enumerated() {
            await waitUntil { started.count >= 4 + index }
            unit.finish()
        }
        await queue.waitUntilIdle()
        #expect(started.count == 5)
    }

    @Test func zeroOrNegativeLimitIsTreatedAsOne() async {
        let (queue, _) = makeQueue(maxConcurrentTasks: 0)
        #expect(queue.maxConcurrentTasks == 1)
        queue.setMaxConcurrentTasks(-5)
        #expect(queue.maxConcurrentTasks == 1)
        queue.setMaxConcurrentTasks(nil)
        #expect(queue.maxConcurrentTasks == nil)
        let unit = queue.add(.init(timeout: nil)) { task in task.finish() }
        #expect(await unit.outcome.kind == .finished)
    }

    @Test func raisingTheLimitStartsWaitingUnits() async {
        let (queue, _) = makeQueue(maxConcurrentTasks: 1)
        let first = queue.add(.init(timeout: nil)) { _ in }
        let second = queue.add(.init(timeout: nil)) { _ in }
        await waitUntil { first.isExecuting }
        #expect(!second.isExecuting)
        queue.setMaxConcurrentTasks(2)
        await waitUntil { second.isExecuting }
        first.finish()
        second.finish()
        await queue.waitUntilIdle()
    }

    @Test func higherPriorityStartsFirstAndFIFOAmongEquals() async {
        let (queue, _) = makeQueue(maxConcurrentTasks: 1)
        queue.suspend()
        let order = Recorder<String>()
        for (name, priority) in [
            ("low1", TaskPriority.low), ("mid1", .medium), ("high1", .high), ("low2", .low), ("high2", .high),
            ("bg", .background), ("none", nil),
        ] {
            queue.add(.init(name: name, timeout: nil, priority: priority)) { task in
                order.append(name)
                task.finish()
            }
        }
        queue.resume()
        await queue.waitUntilIdle()
        #expect(order.all == ["high1", "high2", "mid1", "none", "low1", "low2", "bg"])
    }

    @Test func suspensionIsCounted() async {
        let (queue, _) = makeQueue()
        queue.suspend()
        queue.suspend()
        queue.suspend()
        let unit = queue.add(.init(timeout: nil)) { task in task.finish() }
        queue.resume()
        queue.resume()
        #expect(queue.isSuspended)
        #expect(unit.currentOutcome == nil)
        #expect(!unit.isExecuting)
        #expect(queue.enqueuedCount == 1)
        queue.resume()
        #expect(!queue.isSuspended)
        #expect(await unit.outcome.kind == .finished)
        // Extra resumes are ignored: one suspend suspends again.
        queue.resume()
        queue.resume()
        queue.suspend()
        #expect(queue.isSuspended)
        let later = queue.add(.init(timeout: nil)) { task in task.finish() }
        #expect(queue.enqueuedCount == 1)
        queue.resume()
        #expect(await later.outcome.kind == .finished)
    }

    @Test func executingUnitsCarryOnWhileSuspended() async {
        let (queue, _) = makeQueue()
        let started = Signal()
        let unit = queue.add(.init(timeout: nil)) { _ in started.signal() }
        await started.wait()
        queue.suspend()
        unit.finish()
        #expect(await unit.outcome.kind == .finished)
        queue.resume()
    }

    @Test func waitUntilIdleReturnsAtOnceWhenIdleAndAfterTheLastUnitOtherwise() async {
        let (queue, _) = makeQueue()
        await queue.waitUntilIdle()
        let release = Signal()
        let unit = queue.add { await release.wait() }
        #expect(queue.isBusy)
        let waiter = Task {
            await queue.waitUntilIdle()
            return unit.task.currentOutcome?.kind
        }
        release.signal()
        #expect(await waiter.value == .finished)
        #expect(queue.enqueuedCount == 0)
        #expect(queue.executingCount == 0)
        #expect(!queue.isBusy)
    }

    @Test func addContentsOfAddsInOrder() async {
        let (queue, _) = makeQueue(maxConcurrentTasks: 1)
        let order = Recorder<Int>()
        queue.add(
            contentsOf: (0..<10).map { index in
                AsyncTask(.init(timeout: nil)) { task in
                    order.append(index)
                    task.finish()
                }
            })
        await queue.waitUntilIdle()
        #expect(order.all == Array(0..<10))
    }

    @Test func sharedQueueAndGlobalFunctions() async throws {
        let unit = inTheBackground {}
        #expect(await unit.outcome.kind == .finished)
        // From async code, the one-call forms do not wait (no async overloads).
        let ranOnMain = Signal()
        onTheMainThread {
            MainActor.assertIsolated()
            ranOnMain.signal()
        }
        await ranOnMain.wait()
        let value = try await BackgroundQueue.shared.run { 21 * 2 }
        #expect(value == 42)
        #expect(BackgroundQueue.shared.name == "Backgroundable.shared")
    }
}

/// Waits, without sleeping, until `condition` holds: yields to other tasks between
/// checks. For states that have no event of their own (a unit became executing).
func waitUntil(_ condition: () -> Bool) async {
    while !condition() {
        await Task.yield()
    }
}
