import BackgroundableTesting
import Dispatch
import Testing

@testable import Backgroundable

@Suite("AsyncTask outcomes and state")
struct AsyncTaskTests {
    @Test func callbackUnitIsDoneOnlyWhenFinishIsCalled() async {
        let (queue, _) = makeQueue()
        let started = Signal()
        let release = Signal()
        let unit = queue.add(.init(timeout: nil)) { task in
            started.signal()
            Task {
                await release.wait()
                task.finish()
            }
        }
        await started.wait()
        #expect(unit.isExecuting)
        #expect(unit.currentOutcome == nil)
        #expect(!unit.isFinished)
        release.signal()
        #expect(await unit.outcome.kind == .finished)
        #expect(unit.isFinished)
        #expect(!unit.isExecuting)
        #expect(!unit.isCancelled)
    }

    @Test func finishFromAnotherThreadCompletesTheUnit() async {
        let (queue, _) = makeQueue()
        let unit = queue.add(.init(timeout: nil)) { task in
            DispatchQueue.global().async { task.finish() }
        }
        #expect(await unit.outcome.kind == .finished)
    }

    @Test func operationValueAndError() async throws {
        let (queue, _) = makeQueue()
        let value = queue.add { "done" }
        let failure = queue.add { () async throws -> Int in throw TestError(code: 7) }
        #expect(try await value.value == "done")
        await #expect(throws: TestError(code: 7)) { try await failure.value }
        let outcome = await failure.outcome
        #expect(outcome.kind == .failed)
        #expect(outcome.error as? TestError == TestError(code: 7))
    }

    @Test func runReturnsTheValue() async throws {
        let (queue, _) = makeQueue()
        let value = try await queue.run { 6 * 7 }
        #expect(value == 42)
    }

    @Test func finishBeforeStartCancels() async {
        let (queue, _) = makeQueue()
        queue.suspend()
        let ran = Recorder<Int>()
        let unit = queue.add(.init(timeout: nil)) { task in
            ran.append(1)
            task.finish()
        }
        unit.finish()
        #expect(unit.currentOutcome?.kind == .cancelled)
        queue.resume()
        await queue.waitUntilIdle()
        #expect(ran.count == 0)
    }

    @Test func finishOnANeverEnqueuedUnitCancelsItAndAddingItLaterIsANoOp() async {
        let (queue, _) = makeQueue()
        let unit = AsyncTask(.init(timeout: nil)) { task in task.finish() }
        unit.finish()
        #expect(unit.currentOutcome?.kind == .cancelled)
        queue.add(unit)
        #expect(queue.enqueuedCount == 0)
        #expect(!queue.isBusy)
    }

    @Test func firstTerminalTransitionWins() async {
        let (queue, _) = makeQueue()
        let started = Signal()
        let unit = queue.add(.init(timeout: nil)) { _ in started.signal() }
        await started.wait()
        unit.cancel()
        unit.finish()
        unit.cancel()
        #expect(await unit.outcome.kind == .cancelled)
        #expect(unit.isCancelled)
    }

    @Test func addingAUnitTwiceOrToTwoQueuesIsANoOp() async {
        let (first, _) = makeQueue()
        let (second, _) = makeQueue()
        first.suspend()
        let runs = Recorder<Int>()
        let unit = AsyncTask(.init(timeout: nil)) { task in
            runs.append(1)
            task.finish()
        }
        first.add(unit)
        first.add(unit)
        second.add(unit)
        #expect(first.enqueuedCount == 1)
        #expect(second.enqueuedCount == 0)
        first.resume()
        #expect(await unit.outcome.kind == .finished)
        await first.waitUntilIdle()
        #expect(runs.count == 1)
    }

    @Test func wrappingTaskCarriesNameAndPriority() async throws {
        let (queue, _) = makeQueue()
        let seen = Recorder<(String?, TaskPriority)>()
        let ran = Signal()
        // Not awaited (an awaiter of higher priority would escalate it): observed.
        queue.add(.init(name: "named-unit", timeout: nil, priority: .low)) { unit in
            seen.append((Task.name, Task.currentPriority))
            ran.signal()
            unit.finish()
        }
        await ran.wait()
        #expect(seen.all.first?.0 == "named-unit")
        #expect(seen.all.first?.1 == .low)
    }

    @Test func priorityReadsBackAsGiven() {
        #expect(AsyncTask(.init(timeout: nil, priority: .high)) { _ in }.priority == .high)
        #expect(AsyncTask(.init(priority: TaskPriority(rawValue: 7))) { _ in }.priority?.rawValue == 7)
        #expect(AsyncTask(.init(timeout: nil)) { _ in }.priority == nil)
        // Raw value 0 is the runtime's "unspecified": the same as none.
        #expect(AsyncTask(.init(priority: TaskPriority(rawValue: 0))) { _ in }.priority == nil)
    }

    @Test func awaitingTheOutcomeOfAnEndedUnitReturnsAtOnce() async {
        let (queue, _) = makeQueue()
        let unit = queue.add(.init(timeout: nil)) { task in task.finish() }
        _ = await unit.outcome
        #expect(await unit.outcome.kind == .finished)
        #expect(await unit.outcome.kind == .finished)
    }

    @Test func exactlyOneOutcomeUnderRacingFinishCancelAndTimeout() async {
        let (queue, _) = makeQueue()
        let iterations = 300
        let timeouts = Recorder<Int>()
        let timeoutCalled = (0..<iterations).map { _ in Signal() }
        let endings = Recorder<Int>()
        var units: [AsyncTask] = []
        for index in 0..<iterations {
            let started = Signal()
            let unit = queue.add(
                .init(
                    timeout: .milliseconds(1),
                    onTimeout: { task in
                        #expect(task.currentOutcome?.kind == .timedOut)
                        timeouts.append(index)
                        timeoutCalled[index].signal()
                    })
            ) { _ in started.signal() }
            // The 1 ms timeout may end the unit before its body runs.
            unit.whenEnded { _ in
                endings.append(index)
                started.signal()
            }
            await started.wait()
            // Race the 1 ms timeout: every racer spins until about the deadline.
            let raceAt = ContinuousClock.now + .microseconds(index % 3 * 500 + 500)
            DispatchQueue.concurrentPerform(iterations: 4) { racer in
                while ContinuousClock.now < raceAt {}
                if racer % 2 == 0 { unit.finish() } else { unit.cancel() }
            }
            units.append(unit)
        }
        await queue.waitUntilIdle()
        #expect(endings.count == iterations)
        #expect(Set(endings.all).count == iterations)
        let timedOut = units.indices.filter { units[$0].currentOutcome?.kind == .timedOut }
        // `onTimeout` runs after the outcome, in a task of its own.
        for index in timedOut { await timeoutCalled[index].wait() }
        #expect(Set(timeouts.all) == Set(timedOut))
        #expect(timeouts.count == timedOut.count)
        let kinds = Set(units.compactMap { $0.currentOutcome?.kind })
        #expect(kinds.isSubset(of: [.finished, .cancelled, .timedOut]))
    }
}
