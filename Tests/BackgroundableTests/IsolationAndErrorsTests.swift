import BackgroundableTesting
import Testing

@testable import Backgroundable

/// A main-actor model, as an app module has them.
@MainActor final class ModelOnTheMainActor {
    nonisolated init() {}
    var log: [String] = []
    func note(_ entry: String) { log.append(entry) }
}

/// A view model as written in a Swift 6 module: its conformance makes it main-actor
/// isolated; no `nonisolated`, no hop.
final class BusyIndicatorModel: BackgroundQueueDelegate {
    var isBusy = false
    var transitions = 0
    let idle = Signal()

    nonisolated init() {}

    func backgroundQueueWillStartTasks(_ queue: BackgroundQueue) {
        MainActor.assertIsolated()
        isBusy = true
        transitions += 1
    }

    func backgroundQueueDidFinishTasks(_ queue: BackgroundQueue) {
        MainActor.assertIsolated()
        isBusy = false
        transitions += 1
        idle.signal()
    }
}

/// Where bodies and callbacks run (issue "Natural in today's Swift"), what awaiting a
/// unit's value throws, and the default timeouts of the two styles.
@Suite("Isolation, errors and default timeouts")
struct IsolationAndErrorsTests {
    private func isMainActor(_ isolation: (any Actor)?) -> Bool {
        (isolation as AnyObject?) === MainActor.shared
    }

    // MARK: Where bodies run

    @Test func anUnannotatedBodyRunsOffEveryActorLikeTaskDetached() async throws {
        let (queue, _) = makeQueue()
        let callbackIsolation = Recorder<Bool>()
        let unit = queue.add { task in
            callbackIsolation.append(#isolation == nil)
            task.finish()
        }
        _ = await unit.outcome
        let asyncIsolated = try await queue.run { #isolation != nil }
        #expect(callbackIsolation.all == [true])
        #expect(!asyncIsolated)
    }

    @Test func aBodyIsolatedToTheMainActorRunsThere() async throws {
        let (queue, _) = makeQueue()
        let model = ModelOnTheMainActor()
        let unit = queue.add(.init(timeout: nil)) { @MainActor task in
            MainActor.assertIsolated()
            model.note("callback")
            task.finish()
        }
        #expect(await unit.outcome.kind == .finished)
        let value = try await queue.run { @MainActor in
            MainActor.assertIsolated()
            model.note("async")
            return model.log.count
        }
        #expect(value == 2)
        #expect(await model.log == ["callback", "async"])
    }

    @Test func onTimeoutIsolatedToTheMainActorRunsThere() async {
        let (queue, _) = makeQueue()
        let model = ModelOnTheMainActor()
        let called = Signal()
        queue.add(
            .init(
                timeout: .milliseconds(5),
                onTimeout: { @MainActor task in
                    MainActor.assertIsolated()
                    model.note("timed out: \(task.currentOutcome?.kind == .timedOut)")
                    called.signal()
                })
        ) { _ in }
        await called.wait()
        #expect(await model.log == ["timed out: true"])
    }

    @Test func aBodyMayCaptureNonSendableStateItTakesOver() async throws {
        final class Accumulator {
            var total = 0
        }
        let (queue, _) = makeQueue()
        let accumulator = Accumulator()
        // `sending`: the closure takes the accumulator over, as a `Task`'s operation would.
        let total = try await queue.run {
            accumulator.total += 42
            return accumulator.total
        }
        #expect(total == 42)
    }

    // MARK: Errors

    @Test func droppedReplacedAndTimedOutMatchInCatchClauses() async {
        let (queue, _) = makeQueue()
        queue.suspend()
        let first = queue.add(.init(name: "sync", uniquenessPolicy: .drop)) { 1 }
        let dropped = queue.add(.init(name: "sync", uniquenessPolicy: .drop)) { 2 }
        let replacing = queue.add(.init(name: "sync", uniquenessPolicy: .replace)) { 3 }
        queue.resume()
        func caught(_ handle: AsyncTaskHandle<Int>) async -> String {
            do {
                return "value \(try await handle.value)"
            } catch AsyncTaskError.dropped {
                return "dropped"
            } catch AsyncTaskError.replaced {
                return "replaced"
            } catch AsyncTaskError.timedOut {
                return "timed out"
            } catch {
                return "other \(error)"
            }
        }
        #expect(await caught(dropped) == "dropped")
        #expect(await caught(first) == "replaced")
        #expect(await caught(replacing) == "value 3")
        let slow = queue.add(.init(timeout: .milliseconds(5))) { () async -> Int in
            await suspendUntilCancelled()
            return 0
        }
        #expect(await caught(slow) == "timed out")
        // A switch over an error matches the same way.
        switch AsyncTaskError.timedOut as any Error {
        case AsyncTaskError.dropped: Issue.record("matched the wrong case")
        case AsyncTaskError.timedOut: break
        default: Issue.record("matched nothing")
        }
    }

    @Test func aCancelledUnitThrowsCancellationErrorHoweverItWasCancelled() async {
        let (queue, _) = makeQueue()
        queue.suspend()
        let byCancel = queue.add { 1 }
        let byCancelAll = queue.add { 2 }
        byCancel.cancel()
        await #expect(throws: CancellationError.self) { try await byCancel.value }
        queue.cancelAll()
        await #expect(throws: CancellationError.self) { try await byCancelAll.value }
        queue.resume()
        // The awaiting task's cancellation cancels the unit.
        let started = Signal()
        let caller = Task {
            try await queue.run { () async -> Int in
                started.signal()
                await suspendUntilCancelled()
                return 0
            }
        }
        await started.wait()
        caller.cancel()
        await #expect(throws: CancellationError.self) { try await caller.value }
    }

    // MARK: Default timeouts

    @Test func callbackUnitsKeepTenSecondsAsyncBodiesHaveNone() {
        let queue = BackgroundQueue()
        queue.suspend()
        #expect(queue.add { $0.finish() }.timeout == .seconds(10))
        #expect(AsyncTask { $0.finish() }.timeout == .seconds(10))
        #expect(queue.add { 1 }.task.timeout == nil)
        #expect(AsyncTaskHandle { 1 }.task.timeout == nil)
        #expect(queue.add(.init(timeout: .seconds(3))) { 1 }.task.timeout == .seconds(3))
        queue.cancelAll()
        queue.resume()
    }

    // MARK: Waiting for idle

    @Test(.timeLimit(.minutes(1))) func waitingForIdleReturnsWhenTheWaitingTaskIsCancelled() async {
        let (queue, _) = makeQueue()
        queue.suspend()
        queue.add { $0.finish() }
        let waiters = (0..<20).map { _ in
            Task {
                await queue.waitUntilIdle()
                return Task.isCancelled
            }
        }
        // Some are cancelled before they registered, some after: all return.
        for waiter in waiters {
            waiter.cancel()
            #expect(await waiter.value)
        }
        #expect(queue.isBusy, "the queue's work is not affected")
        let alreadyCancelled = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            await queue.waitUntilIdle()
        }
        await alreadyCancelled.value
        // A waiter that is not cancelled still waits for idle, and is resumed once.
        let patient = Task { await queue.waitUntilIdle() }
        queue.resume()
        await patient.value
        #expect(!queue.isBusy)
    }

    // MARK: Delegates

    @Test func aMainActorViewModelIsTheDelegateAsItIs() async {
        let (queue, _) = makeQueue()
        let model = BusyIndicatorModel()
        queue.setDelegate(model)
        queue.add { $0.finish() }
        await model.idle.wait()
        #expect(await model.transitions == 2)
        #expect(await !model.isBusy)
    }
}
