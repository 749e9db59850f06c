import BackgroundableTesting
import Foundation
import Synchronization
import Testing

@testable import Backgroundable

/// `UniquenessPolicy.join`: a unit arriving while a live unit of its name exists shares
/// that unit's work, outcome and value; awaiting callers are counted, and the work is
/// cancelled only when the last of them cancels.
@Suite("Single flight")
struct SingleFlightTests {
    /// Work that waits for `gate`, counting its runs, then returns `value`.
    private final class SharedWork: Sendable {
        let gate = Signal()
        let started = Signal()
        let cancelled = Signal()
        let runs = Recorder<Int>()

        func run(returning value: Int) async throws -> Int {
            runs.append(1)
            started.signal()
            await withTaskCancellationHandler {
                await gate.wait()
            } onCancel: {
                cancelled.signal()
                gate.signal()
            }
            try Task.checkCancellation()
            return value
        }
    }

    private let join = AsyncTask.Options(name: "refresh", uniquenessPolicy: .join)

    @Test func aJoiningUnitSharesTheLiveUnitsOutcomeAndValue() async throws {
        let (queue, _) = makeQueue()
        let events = queue.events
        let work = SharedWork()
        let first = queue.add(join) { try await work.run(returning: 1) }
        await work.started.wait()
        let second = queue.add(join) { try await work.run(returning: 2) }
        let third = queue.add(join) { try await work.run(returning: 3) }
        #expect(queue.enqueuedCount + queue.executingCount == 1, "joined units are not added")
        work.gate.signal()
        #expect(try await first.value == 1)
        #expect(try await second.value == 1)
        #expect(try await third.value == 1)
        #expect(work.runs.count == 1)
        #expect(second.task.attempts == 0, "its own work never ran")
        var joined: [ObjectIdentifier] = []
        for await event in events {
            if event.kind == .joined, let unit = event.unit, event.primary === first.task {
                joined.append(ObjectIdentifier(unit))
            }
            if event.kind == .idle { break }
        }
        #expect(joined == [ObjectIdentifier(second.task), ObjectIdentifier(third.task)])
    }

    /// A unit that joins while the live unit's end is being performed (its end hook
    /// runs on the thread that finished it) ends with that outcome once the end was
    /// performed, as the callers that joined before do: never ahead of the hook.
    @Test func aUnitJoiningWhileTheLiveUnitsEndIsPerformedEndsAfterIt() async {
        let (queue, _) = makeQueue()
        let started = Signal()
        let inEndHook = Signal()
        let leave = DispatchSemaphore(value: 0)
        var options = AsyncTask.Options(name: "refresh", uniquenessPolicy: .join)
        options.timeout = nil
        options.onEnd = { _ in
            inEndHook.signal()
            leave.wait()  // A thread of the test's own, never a cooperative one.
        }
        let primary = queue.add(options) { _ in started.signal() }
        await started.wait()
        Thread { primary.finish() }.start()
        await inEndHook.wait()
        let joiner = queue.add(.init(name: "refresh", timeout: nil, uniquenessPolicy: .join)) { $0.finish() }
        #expect(joiner.currentOutcome == nil, "it ended before the live unit's end hook returned")
        leave.signal()
        #expect(await joiner.outcome.kind == .finished)
        #expect(await primary.outcome.kind == .finished)
    }

    /// A unit that can no longer join (cancelled before it was added) leaves the live
    /// unit's work its own: cancelling one of that unit's awaiting callers still cancels
    /// it, as for any unit that shares nothing.
    @Test func aJoinThatCannotTakePlaceLeavesTheWorkUnshared() {
        let primary = AsyncTask(.init(name: "refresh", timeout: nil, uniquenessPolicy: .join)) { _ in }
        let late = AsyncTask(.init(name: "refresh", timeout: nil, uniquenessPolicy: .join)) { $0.finish() }
        late.cancel()
        #expect(!late.join(primary, claimed: false))
        #expect(primary.state.withLock { $0.sharedWork } == nil)
    }

    /// The Operation bridge does not add a unit again: an ``AsyncOperation``'s unit that
    /// meets cancelled work ends cancelled too, sharing nothing (see
    /// `aNewcomerMeetingAbandonedWorkRunsItsOwn` for a queue's units).
    @Test func anOperationsUnitMeetingCancelledWorkEndsCancelled() {
        let primary = AsyncTask(.init(name: "refresh", timeout: nil, uniquenessPolicy: .join)) { _ in }
        let late = AsyncTask(.init(name: "refresh", timeout: nil, uniquenessPolicy: .join)) { $0.finish() }
        primary.cancel()
        #expect(late.join(primary, claimed: false))
        #expect(late.currentOutcome?.kind == .cancelled)
        #expect(late.state.withLock { $0.sharedWork } == nil)
    }

    @Test func withNoLiveUnitTheUnitIsAddedAndLaterOnesJoinIt() async throws {
        let (queue, _) = makeQueue()
        #expect(try await queue.run(join) { 7 } == 7)
        // The first one ended: the next one runs its own work.
        #expect(try await queue.run(join) { 8 } == 8)
    }

    @Test func cancellingAJoinedUnitLeavesTheSharedWorkRunning() async throws {
        let (queue, _) = makeQueue()
        let work = SharedWork()
        let first = queue.add(join) { try await work.run(returning: 1) }
        await work.started.wait()
        let second = queue.add(join) { try await work.run(returning: 2) }
        second.cancel()
        #expect(await second.outcome.kind == .cancelled)
        #expect(!work.cancelled.isSignalled && first.task.currentOutcome == nil)
        work.gate.signal()
        #expect(try await first.value == 1)
    }

    @Test func aCancelledAwaiterStopsWaitingWhileOthersStillAwait() async throws {
        let (queue, _) = makeQueue()
        let work = SharedWork()
        let first = queue.add(join) { try await work.run(returning: 1) }
        await work.started.wait()
        let second = queue.add(join) { try await work.run(returning: 2) }
        let firstCaller = Task { try await first.value }
        let secondCaller = Task { try await second.value }
        await waitUntilAwaited(first.task, by: 1)
        await waitUntilAwaited(second.task, by: 1)
        // The first caller cancels: it stops waiting at once; the work goes on for the second.
        firstCaller.cancel()
        await #expect(throws: CancellationError.self) { try await firstCaller.value }
        #expect(!work.cancelled.isSignalled && first.task.currentOutcome == nil)
        work.gate.signal()
        #expect(try await secondCaller.value == 1)
        #expect(first.task.currentOutcome?.kind == .finished, "the shared work finished")
    }

    @Test func theWorkIsCancelledWhenTheLastAwaitingCallerCancels() async {
        let (queue, _) = makeQueue()
        let work = SharedWork()
        let first = queue.add(join) { try await work.run(returning: 1) }
        await work.started.wait()
        let second = queue.add(join) { try await work.run(returning: 2) }
        let third = queue.add(join) { try await work.run(returning: 3) }
        let callers = [first, second, third].map { handle in Task { try await handle.value } }
        // Registered: each caller's task is suspended on its unit before any cancels.
        await waitUntilAwaited(first.task, by: 1)
        await waitUntilAwaited(second.task, by: 1)
        await waitUntilAwaited(third.task, by: 1)
        callers[1].cancel()
        callers[0].cancel()
        #expect(!work.cancelled.isSignalled)
        callers[2].cancel()
        await work.cancelled.wait()
        for caller in callers { await #expect(throws: CancellationError.self) { try await caller.value } }
        #expect(await first.outcome.kind == .cancelled)
    }

    @Test func callersThatNeverAwaitHaveNoSay() async {
        let (queue, _) = makeQueue()
        let work = SharedWork()
        // Added and never awaited: its caller does not count.
        let first = queue.add(join) { try await work.run(returning: 1) }
        await work.started.wait()
        let second = queue.add(join) { try await work.run(returning: 2) }
        let caller = Task { try await second.value }
        await waitUntilAwaited(second.task, by: 1)
        caller.cancel()
        await work.cancelled.wait()
        #expect(await first.outcome.kind == .cancelled)
    }

    @Test func cancellingTheUnitThatRunsTheWorkCancelsItForEveryone() async {
        let (queue, _) = makeQueue()
        let work = SharedWork()
        let first = queue.add(join) { try await work.run(returning: 1) }
        await work.started.wait()
        let second = queue.add(join) { try await work.run(returning: 2) }
        first.cancel()
        #expect(await second.outcome.kind == .cancelled)
    }

    @Test func joiningAnotherValueTypeThrowsAClearError() async throws {
        let (queue, _) = makeQueue()
        let work = SharedWork()
        let number = queue.add(join) { try await work.run(returning: 1) }
        await work.started.wait()
        let text = queue.add(join) { "text" }
        work.gate.signal()
        #expect(try await number.value == 1)
        await #expect(throws: AsyncTaskError.joinedAnotherValueType) { try await text.value }
        #expect(await text.outcome.kind == .finished)
    }

    @Test func aCallbackUnitCanJoinAndGetsTheOutcome() async {
        let (queue, _) = makeQueue()
        let gate = Signal()
        let first = queue.add(.init(name: "sync", timeout: nil)) { unit in
            Task {
                await gate.wait()
                unit.finish()
            }
        }
        let ran = Recorder<Int>()
        let second = queue.add(.init(name: "sync", timeout: nil, uniquenessPolicy: .join)) { unit in
            ran.append(1)
            unit.finish()
        }
        gate.signal()
        #expect(await first.outcome.kind == .finished)
        #expect(await second.outcome.kind == .finished)
        #expect(ran.count == 0)
    }

    @Test func aJoinedUnitSharesARetryingUnitsFinalValue() async throws {
        let (queue, _) = makeQueue()
        var events = queue.events.makeAsyncIterator()
        let failures = Recorder<Int>()
        let gate = Signal()
        let retrying = queue.add(
            .init(name: "token", uniquenessPolicy: .join, retry: .fixed(maxAttempts: 3, delay: .zero))
        ) {
            failures.append(1)
            if failures.count == 1 { throw TestError(code: 1) }
            await gate.wait()
            return "token-2"
        }
        while let event = await events.next() {
            if event.kind == .retrying { break }
        }
        // Between or during attempts, the unit is live: a join shares its final value.
        let joined = queue.add(.init(name: "token", uniquenessPolicy: .join)) { "never" }
        gate.signal()
        #expect(try await retrying.value == "token-2")
        #expect(try await joined.value == "token-2")
    }

    @Test func joiningWorkThatHasJustEndedGetsItsOutcomeAtOnce() async throws {
        // The queue decided the join while the live unit ran; it ended before the join
        // was performed.
        let (queue, _) = makeQueue()
        let ended = queue.add { 5 }
        #expect(try await ended.value == 5)
        let late = AsyncTaskHandle { 6 }
        #expect(late.task.state.withLock { $0.claim(by: queue.core) })
        var gate: ReplacementGate?
        late.task.settle(.join(primary: ended.task, inSequence: false), gate: &gate).remainder.perform()
        #expect(try await late.value == 5)
    }

    @Test func aCallerCancelledBeforeItsRunNeverStartsOrJoins() async {
        let (queue, _) = makeQueue()
        let ran = Recorder<Int>()
        let caller = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await queue.run(join) {
                ran.append(1)
                return 1
            }
        }
        await #expect(throws: CancellationError.self) { try await caller.value }
        await queue.waitUntilIdle()
        #expect(ran.count == 0)
    }

    @Test func anAsyncOperationWhoseUnitAQueueHoldsIsDroppedInsteadOfJoining() async {
        let (operations, _) = makeOperationQueue()
        let (queue, _) = makeQueue()
        queue.suspend()
        let unit = queue.add(.init(name: "sync", timeout: nil, uniquenessPolicy: .join)) { $0.finish() }
        let gate = Signal()
        let live = AsyncOperation(name: "sync", timeout: .infinity) { operation in
            Task {
                await gate.wait()
                operation.finish()
            }
        }
        operations.addOperation(live)
        operations.addOperation(AsyncOperation(task: unit))
        #expect(unit.currentOutcome?.kind == .dropped)
        queue.resume()
        await queue.waitUntilIdle()
        gate.signal()
        await operations.waitUntilIdle()
    }

    /// The unit that a newcomer would join is being cancelled as it arrives: its only
    /// awaiting caller stopped awaiting, and its end (held here by its end hook) has not
    /// reached the queue, which still counts it. The newcomer does not share that
    /// cancellation: it is added as work of its own, and runs. With a listener a join is
    /// settled under the queue's lock, without one after it: both are covered.
    @Test(arguments: [false, true])
    func aNewcomerMeetingAbandonedWorkRunsItsOwn(listening: Bool) async throws {
        let (queue, _) = makeQueue()
        let events = listening ? queue.events : nil
        queue.suspend()  // The abandoned unit never starts.
        let (caller, leave) = await abandonAWaitingUnit(on: queue)
        let newcomer = queue.add(join) { "its own" }
        #expect(newcomer.task.currentOutcome == nil, "it did not share the cancellation")
        leave.signal()
        queue.resume()
        #expect(try await newcomer.value == "its own")
        await #expect(throws: CancellationError.self) { try await caller.value }
        guard let events else { return }
        var joinedNewcomer = false
        var enqueuedNewcomer = false
        for await event in events {
            if event.unit === newcomer.task {
                joinedNewcomer = joinedNewcomer || event.kind == .joined
                enqueuedNewcomer = enqueuedNewcomer || event.kind == .enqueued
            }
            if event.kind == .idle { break }
        }
        #expect(!joinedNewcomer && enqueuedNewcomer, "listeners hear it added, not joined")
    }

    /// As above, with work abandoned while its body runs (a body that does not stop at
    /// cancellation) and shared with a joined unit nobody awaits: the newcomer runs its
    /// own work only once that body returned, as after any cancellation of its name.
    @Test func aNewcomerMeetingAbandonedWorkWaitsForItsBody() async throws {
        let (queue, _) = makeQueue()
        let order = Recorder<String>()
        let started = Signal()
        let returnBody = Signal()
        let (abandoned, inEndHook, leave) = heldAtItsEnd()
        let primary = queue.add(abandoned) {
            started.signal()
            await returnBody.wait()
            order.append("abandoned body returned")
            return "abandoned"
        }
        await started.wait()
        queue.suspend()  // The newcomer stays enqueued, where its wait can be read.
        let joined = queue.add(join) { "never runs" }
        let caller = Task { try await primary.value }
        await waitUntilAwaited(primary.task, by: 1)
        Thread { caller.cancel() }.start()
        await inEndHook.wait()
        let newcomer = queue.add(join) {
            order.append("its own body")
            return "its own"
        }
        #expect(waitsForABody(newcomer.task), "it waits for the abandoned body")
        // A unit that replaces the newcomer (whose body never ran) waits for that body too.
        let replacing = queue.add(.init(name: "refresh", uniquenessPolicy: .replace)) {
            order.append("the replacing body")
            return "replacing"
        }
        #expect(waitsForABody(replacing.task), "the replacing unit waits for the abandoned body")
        leave.signal()
        queue.resume()
        returnBody.signal()
        #expect(try await replacing.value == "replacing")
        #expect(await newcomer.outcome.kind == .replaced)
        #expect(order.all == ["abandoned body returned", "the replacing body"])
        #expect(await joined.outcome.kind == .cancelled, "the unit that joined in time shares the cancellation")
    }

    /// In a sequential group a newcomer cannot be added again in its place: meeting
    /// abandoned work, it ends cancelled too, and the group goes on behind it.
    @Test func aGroupMemberMeetingAbandonedWorkEndsCancelled() async throws {
        let (queue, _) = makeQueue()
        queue.suspend()
        let (_, leave) = await abandonAWaitingUnit(on: queue)
        let member = AsyncTask(join) { $0.finish() }
        let next = AsyncTask(.init(timeout: nil)) { $0.finish() }
        #expect(queue.addSequence([member, next]) == 2)
        #expect(member.currentOutcome?.kind == .cancelled, "it shares the cancellation")
        leave.signal()
        queue.resume()
        #expect(await next.outcome.kind == .finished)
    }

    /// Adds a unit of the join's name to `queue` (suspended, so it waits) and has its only
    /// awaiting caller cancel, on a thread of the test's: the unit is cancelled, and its
    /// end hook holds its end there, before the queue has heard of it, until `leave`.
    private func abandonAWaitingUnit(
        on queue: BackgroundQueue
    ) async -> (caller: Task<String, any Error>, leave: DispatchSemaphore) {
        let (abandoned, inEndHook, leave) = heldAtItsEnd()
        let primary = queue.add(abandoned) { "abandoned" }
        let caller = Task { try await primary.value }
        await waitUntilAwaited(primary.task, by: 1)
        Thread { caller.cancel() }.start()
        await inEndHook.wait()
        return (caller, leave)
    }

    /// Options for the unit to abandon: its end hook signals `inEndHook`, then waits
    /// (on the thread that ended it, one of the test's own) until `leave` is signalled.
    private func heldAtItsEnd() -> (AsyncTask.Options, inEndHook: Signal, leave: DispatchSemaphore) {
        let inEndHook = Signal()
        let leave = DispatchSemaphore(value: 0)
        var options = join
        options.onEnd = { _ in
            inEndHook.signal()
            leave.wait()  // A thread of the test's own, never a cooperative one.
        }
        return (options, inEndHook, leave)
    }

    /// Enqueued, behind the gate of a body that still runs.
    private func waitsForABody(_ unit: AsyncTask) -> Bool {
        unit.state.withLock { state in
            guard case .enqueued(.afterReplaced(let gates, _)) = state.phase else { return false }
            return gates.contains { !$0.isOpen }
        }
    }

    /// Suspends until `count` tasks await `unit`'s outcome (their registration is what
    /// the interest count sees).
    private func waitUntilAwaited(_ unit: AsyncTask, by count: Int) async {
        while unit.state.withLock({ $0.waiters.count(where: \.isAwaiting) }) < count {
            await Task.yield()
        }
    }
}
