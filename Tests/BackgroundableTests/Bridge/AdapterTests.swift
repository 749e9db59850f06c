import BackgroundableTesting
import Dispatch
import Foundation
import Testing

@testable import Backgroundable

@Suite(.timeLimit(.minutes(1)))
struct OperationToTaskAdapterTests {
    @Test func aBlockOperationRunsAsAUnit() async {
        let (queue, _) = makeQueue()
        let ran = Recorder<Int>()
        let operation = BlockOperation { ran.append(1) }
        operation.name = "block"
        let unit = queue.add(operation, options: .init(timeout: nil))
        #expect(unit.name == "block")
        #expect(await unit.outcome.kind == .finished)
        #expect(ran.all == [1])
        #expect(operation.isFinished)
        await queue.waitUntilIdle()
    }

    @Test func anAsynchronousOperationCompletesTheUnitWhenItFinishes() async {
        let (queue, _) = makeQueue(maxConcurrentTasks: 1)
        let order = Recorder<String>()
        let operation = AsyncOperation(timeout: .infinity) { operation in
            DispatchQueue.global().async {
                order.append("operation")
                operation.finish()
            }
        }
        let unit = AsyncTask(operation: operation, options: .init(timeout: nil))
        queue.add(unit)
        let after = queue.add(.init(timeout: nil)) { task in
            order.append("after")
            task.finish()
        }
        #expect(await after.outcome.kind == .finished)
        #expect(await unit.outcome.kind == .finished)
        #expect(order.all == ["operation", "after"])
    }

    @Test func cancellingTheUnitCancelsTheOperation() async {
        let (queue, _) = makeQueue()
        let started = Signal()
        let operation = gatedOperation(started: started, release: Signal())
        let unit = queue.add(operation, options: .init(timeout: nil))
        await started.wait()
        unit.cancel()
        #expect(await unit.outcome.kind == .cancelled)
        await waitUntilFinished(operation)
        #expect(operation.currentOutcome?.kind == .cancelled)
    }

    @Test func aUnitCancelledBeforeItStartsStillFinishesItsOperation() async {
        let (queue, _) = makeQueue()
        queue.suspend()
        let ran = Recorder<Int>()
        let operation = BlockOperation { ran.append(1) }
        let unit = queue.add(operation)
        unit.cancel()
        await waitUntilFinished(operation)  // never left hanging
        #expect(operation.isCancelled)
        #expect(ran.count == 0)
        queue.resume()
    }

    @Test func anOperationWhoseUnitJoinedAnotherStillFinishes() async {
        let (queue, _) = makeQueue()
        let started = Signal()
        let primary = queue.add(.init(name: "sync", timeout: nil)) { _ in started.signal() }
        await started.wait()
        let ran = Recorder<Int>()
        let operation = BlockOperation { ran.append(1) }
        let unit = queue.add(operation, options: .init(name: "sync", timeout: nil, uniquenessPolicy: .join))
        primary.finish()
        #expect(await unit.outcome.kind == .finished)
        await waitUntilFinished(operation)  // never left hanging
        #expect(operation.isCancelled)
        #expect(ran.count == 0)
    }

    @Test func anOperationCancelledByItsOwnerCancelsTheUnit() async {
        let (queue, _) = makeQueue()
        let started = Signal()
        let operation = gatedOperation(started: started, release: Signal())
        let unit = queue.add(operation, options: .init(timeout: nil))
        await started.wait()
        operation.cancel()
        #expect(await unit.outcome.kind == .cancelled)
    }

    @Test func theUnitsTimeoutCancelsTheOperation() async {
        let (queue, _) = makeQueue()
        let operation = AsyncOperation(timeout: .infinity) { _ in }
        let unit = queue.add(operation, options: .init(timeout: .milliseconds(50)))
        #expect(await unit.outcome.kind == .timedOut)
        await waitUntilFinished(operation)
        #expect(operation.isCancelled)
    }

    /// An operation that blocks its thread until `release`, then records that its
    /// `main()` returned.
    private func blockingOperation(started: Signal, release: DispatchSemaphore, order: Recorder<String>) -> Operation {
        BlockOperation {
            started.signal()
            release.wait()
            order.append("main returned")
        }
    }

    @Test func aUnitThatReplacedAnOperationRunsAfterTheOperationsMainReturned() async {
        let (queue, _) = makeQueue()
        let (started, release, order) = (Signal(), DispatchSemaphore(value: 0), Recorder<String>())
        let replaced = queue.add(
            blockingOperation(started: started, release: release, order: order),
            options: .init(name: "sync", timeout: nil, uniquenessPolicy: .replace))
        await started.wait()
        let newcomer = queue.add(.init(name: "sync", timeout: nil, uniquenessPolicy: .replace)) { task in
            order.append("newcomer")
            task.finish()
        }
        #expect(await replaced.outcome.kind == .replaced)
        release.signal()
        #expect(await newcomer.outcome.kind == .finished)
        #expect(order.all == ["main returned", "newcomer"])
    }

    @Test func aShutdownWaitsForTheMainOfAnOperationItCancelled() async {
        let shutdown = GracefulShutdown(gracePeriod: .zero, cancellationPeriod: .seconds(600))
        let queue = BackgroundQueue(name: "legacy", backgroundTaskProvider: shutdown)
        let (started, release, order) = (Signal(), DispatchSemaphore(value: 0), Recorder<String>())
        let unit = queue.add(blockingOperation(started: started, release: release, order: order))
        unit.whenEnded { _ in release.signal() }  // main() learns of the cancellation
        await started.wait()
        shutdown.requestShutdown()
        let report = await shutdown.drain(queue)
        order.append("drain returned")
        #expect(report.ending == .expired(.gracePeriodEnded), "\(report)")
        #expect(unit.currentOutcome?.kind == .cancelled)
        #expect(order.all == ["main returned", "drain returned"])
    }
}

@Suite(.timeLimit(.minutes(1)))
struct TaskToOperationAdapterTests {
    @Test func aCallbackUnitRunsOnAnyOperationQueue() async {
        let queue = OperationQueue()
        let unit = AsyncTask(.init(name: "unit", timeout: nil)) { task in
            DispatchQueue.global().async { task.finish() }
        }
        let operation = queue.addTask(unit)
        #expect(operation.name == "unit")
        await waitUntilFinished(operation)
        #expect(unit.currentOutcome?.kind == .finished)
        #expect(!operation.isCancelled)
    }

    @Test func anAsyncUnitKeepsItsValue() async throws {
        let handle = AsyncTaskHandle { 6 * 7 }
        let operation = OperationQueue().addTask(handle.task)
        await waitUntilFinished(operation)
        #expect(try await handle.value == 42)
    }

    @Test func itKeepsOperationQueueSemantics() async {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        let order = Recorder<Int>()
        let units = (0..<4).map { index in
            AsyncTask(.init(timeout: nil)) { task in
                DispatchQueue.global().async {
                    order.append(index)
                    task.finish()
                }
            }
        }
        let operations = units.map { queue.addTask($0) }
        await waitUntilFinished(operations.last!)
        await waitUntilAllOperationsAreFinished(queue)
        #expect(order.all == [0, 1, 2, 3])
    }

    @Test func cancellingTheOperationsCancelsTheUnits() async {
        let queue = OperationQueue()
        let started = Signal()
        let running = AsyncTask(.init(timeout: nil)) { _ in started.signal() }
        let runningOperation = queue.addTask(running)
        await started.wait()
        queue.isSuspended = true
        let pending = AsyncTask(.init(timeout: nil)) { $0.finish() }
        let pendingOperation = queue.addTask(pending)
        queue.cancelAllOperations()
        queue.isSuspended = false
        await waitUntilFinished(runningOperation)
        await waitUntilFinished(pendingOperation)
        #expect(running.currentOutcome?.kind == .cancelled)
        #expect(pending.currentOutcome?.kind == .cancelled)
    }

    @Test func theUnitsTimeoutFinishesTheOperation() async {
        let unit = AsyncTask(.init(timeout: .milliseconds(50))) { _ in }
        let operation = OperationQueue().addTask(unit)
        await waitUntilFinished(operation)
        #expect(unit.currentOutcome?.kind == .timedOut)
        #expect(operation.isCancelled)
    }

    @Test func aUnitAlreadyOnABackgroundQueueIsNotRunTwice() async {
        let (queue, _) = makeQueue()
        let runs = Recorder<Int>()
        let release = Signal()
        let unit = AsyncTask(.init(timeout: nil)) { task in
            runs.append(1)
            Task {
                await release.wait()
                task.finish()
            }
        }
        queue.add(unit)
        let operation = OperationQueue().addTask(unit)
        release.signal()
        await waitUntilFinished(operation)
        #expect(unit.currentOutcome?.kind == .finished)
        #expect(runs.count == 1)
    }
}
