import BackgroundableTesting
import Dispatch
import Foundation
import Synchronization
import Testing

@testable import Backgroundable

/// One test per row of the misuse catalogue (`Backgroundable.docc/Misuse.md`): each
/// misuse has a defined result, and no other work is lost.
@Suite("Misuse and its defined results")
struct MisuseTests {
    /// A unit that must still run normally beside the misuse.
    private func bystander(on queue: BackgroundQueue) -> AsyncTask {
        queue.add(.init(name: "bystander", timeout: nil)) { $0.finish() }
    }

    @Test func zeroOrNegativeTimeoutTimesOutWhenTheUnitWouldStartAndTheWorkNeverRuns() async {
        let (queue, _) = makeQueue(maxConcurrentTasks: 1)
        let ran = Recorder<Int>()
        let callbacks = Recorder<Int>()
        let called = Signal()
        let zero = queue.add(
            .init(
                timeout: .zero,
                onTimeout: { _ in
                    callbacks.append(0)
                    called.signal()
                })
        ) { task in
            ran.append(0)
            task.finish()
        }
        let negative = queue.add(.init(timeout: .milliseconds(-5))) { ran.append(1) }
        let other = bystander(on: queue)
        #expect(await zero.outcome.kind == .timedOut)
        #expect(await negative.task.outcome.kind == .timedOut)
        #expect(await other.outcome.kind == .finished)
        await queue.waitUntilIdle()
        await called.wait()  // `onTimeout` runs in a task of its own, after the outcome
        #expect(ran.all.isEmpty)
        #expect(callbacks.all == [0], "onTimeout still runs exactly once")
    }

    @Test(arguments: [0, -1, Int.min])
    func limitOfZeroOrBelowIsTreatedAsOne(limit: Int) async {
        let (queue, _) = makeQueue(maxConcurrentTasks: limit)
        #expect(queue.maxConcurrentTasks == 1)
        let gauge = Gauge()
        let units = (0..<20).map { _ in
            queue.add(.init(timeout: nil)) {
                gauge.enter()
                await Task.yield()
                gauge.leave()
            }
        }
        for unit in units { #expect(await unit.task.outcome.kind == .finished) }
        #expect(gauge.maximum == 1)
        queue.setMaxConcurrentTasks(-3)
        #expect(queue.maxConcurrentTasks == 1)
    }

    @Test func addingTheSameUnitTwiceIsANoOp() async {
        let (queue, _) = makeQueue()
        let ran = Recorder<Int>()
        let unit = AsyncTask(.init(timeout: nil)) { task in
            ran.append(1)
            task.finish()
        }
        #expect(queue.add(unit))
        #expect(!queue.add(unit), "the second add says it did nothing")
        #expect(queue.add(contentsOf: [unit, unit]) == 0)
        #expect(await unit.outcome.kind == .finished)
        await queue.waitUntilIdle()
        #expect(ran.count == 1)
        #expect(queue.enqueuedCount == 0 && queue.executingCount == 0)
    }

    @Test func addingAUnitToASecondQueueIsANoOp() async {
        let (first, _) = makeQueue()
        let (second, secondProvider) = makeQueue()
        let ran = Recorder<Int>()
        first.suspend()
        let unit = AsyncTask(.init(timeout: nil)) { task in
            ran.append(1)
            task.finish()
        }
        #expect(first.add(unit))
        #expect(!second.add(unit), "the unit belongs to the first queue")
        #expect(second.enqueuedCount == 0 && !second.isBusy)
        #expect(secondProvider.log.isEmpty, "the second queue never went busy")
        first.resume()
        #expect(await unit.outcome.kind == .finished)
        #expect(ran.count == 1)
    }

    @Test func finishOrCancelOnANeverEnqueuedUnitCancelsItAndALaterAddIsANoOp() async {
        let (queue, provider) = makeQueue()
        let ran = Recorder<Int>()
        let finished = AsyncTask { task in
            ran.append(1)
            task.finish()
        }
        let cancelled = AsyncTask { task in
            ran.append(2)
            task.finish()
        }
        finished.finish()
        cancelled.cancel()
        #expect(finished.currentOutcome?.kind == .cancelled)
        #expect(cancelled.currentOutcome?.kind == .cancelled)
        #expect(!queue.add(finished) && !queue.add(cancelled), "ended units cannot be added")
        #expect(!queue.isBusy && provider.log.isEmpty)
        #expect(await bystander(on: queue).outcome.kind == .finished)
        await queue.waitUntilIdle()
        #expect(ran.all.isEmpty)
    }

    /// Foundation itself refuses an operation that is already in a queue: on Linux
    /// (swift-corelibs-foundation) `addOperation` stops the process with "operations
    /// finished, executing or already in a queue cannot be enqueued"; on Darwin it raises
    /// `NSInvalidArgumentException`. Neither can be caught in Swift, so that call is not
    /// made here. What the package defines is the unit underneath: while an
    /// `AsyncOperation` is in one queue, handing its unit to another queue is a no-op, so
    /// the closure runs once and both sides see the one outcome.
    @Test(arguments: [UniquenessPolicy.drop, .join, .replace, .ignore])
    func anEndHookAddingAUnitOfItsNameMeetsTheEndingUnit(_ policy: UniquenessPolicy) async {
        let (queue, _) = makeQueue()
        let readded = Recorder<AsyncTask>()
        var options = AsyncTask.Options(
            name: "sync",
            onEnd: { _ in
                readded.append(queue.add(.init(name: "sync", timeout: nil, uniquenessPolicy: policy)) { $0.finish() })
            })
        options.timeout = nil
        let first = queue.add(options) { $0.finish() }
        #expect(await first.outcome.kind == .finished)
        // The hook runs before the queue forgets its unit: once idle, it has returned.
        // (`outcome` may return as soon as the outcome is set, before the hook runs.)
        await queue.waitUntilIdle()
        #expect(readded.count == 1)
        guard let newcomer = readded.all.first else { return }
        #expect(await newcomer.outcome.kind == (policy == .drop ? .dropped : .finished), "\(policy)")
    }

    @Test func asyncOperationInTwoQueuesRunsOnce() async {
        let (operationQueue, _) = makeOperationQueue()
        let (queue, _) = makeQueue()
        let ran = Recorder<Int>()
        let operation = AsyncOperation(name: "twice") { operation in
            ran.append(1)
            operation.finish()
        }
        operationQueue.addOperation(operation)
        #expect(!queue.add(operation.task), "the unit belongs to its operation")
        let other = OperationQueue()
        other.addOperation(AsyncOperation(task: operation.task))
        #expect(await operation.outcome.kind == .finished)
        await waitUntilAllOperationsAreFinished(other)
        await operationQueue.waitUntilIdle()
        await queue.waitUntilIdle()
        #expect(ran.count == 1)
        #expect(operation.isFinished)
    }

    @Test func finishOnARunningAsyncBodyEndsItWithoutAValue() async {
        let (queue, _) = makeQueue()
        let started = Signal()
        let release = Signal()
        let returned = Signal()
        let handle = queue.add(.init(timeout: nil)) { () async -> Int in
            started.signal()
            await release.wait()
            returned.signal()
            return 42
        }
        await started.wait()
        handle.task.finish()
        #expect(handle.task.currentOutcome?.kind == .finished)
        await #expect(throws: AsyncTaskError.finishedWithoutValue) { try await handle.value }
        #expect(await bystander(on: queue).outcome.kind == .finished)
        release.signal()
        await returned.wait()
        await #expect(throws: AsyncTaskError.finishedWithoutValue) { try await handle.value }
        await queue.waitUntilIdle()
    }

    @Test func finishFromInsideOnTimeoutIsANoOp() async {
        let (queue, _) = makeQueue()
        let callbacks = Recorder<AsyncTask.Outcome.Kind?>()
        let called = Signal()
        let unit = queue.add(
            .init(
                timeout: .milliseconds(5),
                onTimeout: { task in
                    task.finish()
                    task.cancel()
                    callbacks.append(task.currentOutcome?.kind)
                    called.signal()
                })
        ) { _ in }
        #expect(await unit.outcome.kind == .timedOut)
        await called.wait()
        await queue.waitUntilIdle()
        #expect(callbacks.all == [.timedOut])
        #expect(await bystander(on: queue).outcome.kind == .finished)
    }

    /// Decision: `""` is a name like any other (it deduplicates); only `nil` means "no name".
    @Test func emptyStringIsANameLikeAnyOther() async {
        let (queue, _) = makeQueue()
        let release = Signal()
        let holder = queue.add(.init(name: "", timeout: nil)) { await release.wait() }
        let dropped = queue.add(.init(name: "", uniquenessPolicy: .drop)) { $0.finish() }
        #expect(dropped.currentOutcome?.kind == .dropped)
        let unnamed = queue.add(.init(uniquenessPolicy: .drop)) { $0.finish() }
        let replacing = queue.add(.init(name: "", timeout: nil, uniquenessPolicy: .replace)) { $0.finish() }
        #expect(await holder.task.outcome.kind == .replaced)
        #expect(await unnamed.outcome.kind == .finished, "nil never deduplicates")
        #expect(await replacing.outcome.kind == .finished)
        release.signal()
    }

    /// A queue cannot be reached through its public API while it is deinitialised (a
    /// strong reference would keep it alive, weak ones are already `nil`), but code that
    /// runs during its deinit — here the `onEnd` of a pending unit the deinit cancels —
    /// can still hand work to its core: that work ends `cancelled` and never runs. A
    /// named unit is checked under the queue's lock and has ended before `add` returns;
    /// an unnamed one goes through the lock-free inbox and ends when it is absorbed.
    @Test func addingToAQueueDuringItsDeinitCancelsTheNewUnit() async {
        let ran = Recorder<Int>()
        let lateNamed = AsyncTask(.init(name: "late", timeout: nil)) { task in
            ran.append(1)
            task.finish()
        }
        let lateUnnamed = AsyncTask(.init(timeout: nil)) { task in
            ran.append(2)
            task.finish()
        }
        let namedOutcomeWhenAdded = Lock<AsyncTask.Outcome.Kind?>(nil)
        var pending: AsyncTask?
        do {
            let (queue, _) = makeQueue()
            let core = queue.core
            queue.suspend()
            let unit = queue.add(.init(timeout: nil)) { $0.finish() }
            unit.whenEnded { _ in
                core.add(lateNamed)
                namedOutcomeWhenAdded.withLock { $0 = lateNamed.currentOutcome?.kind }
                core.add(lateUnnamed)
            }
            pending = unit
        }
        #expect(pending?.currentOutcome?.kind == .cancelled, "pending work is cancelled by the deinit")
        #expect(namedOutcomeWhenAdded.withLock { $0 } == .cancelled, "ended before `add` returned")
        #expect(await lateNamed.outcome.kind == .cancelled)
        #expect(await lateUnnamed.outcome.kind == .cancelled)
        #expect(ran.all.isEmpty)
    }

    /// An expiration handler that hands new work back to the queue: the queue has ended
    /// its assertion and applied its policy first; the new work runs, in a new busy period
    /// with a fresh assertion.
    @Test func expirationHandlerThatAddsWorkGetsAFreshAssertion() async {
        let recording = RecordingBackgroundTaskProvider()
        let rethrowing = RethrowingProvider(recording)
        let queue = BackgroundQueue(name: "expiring", backgroundTaskProvider: rethrowing)
        let started = Signal()
        let first = queue.add(.init(name: "first", timeout: nil)) {
            started.signal()
            await suspendUntilCancelled()
        }
        await started.wait()
        let retried = Lock<AsyncTask?>(nil)
        rethrowing.afterExpiration = {
            retried.withLock { $0 = queue.add(.init(name: "retry", timeout: nil)) { $0.finish() } }
        }
        recording.expireAll()
        #expect(await first.task.outcome.kind == .cancelled)
        let retry = retried.withLock { $0 }
        #expect(await retry?.outcome.kind == .finished)
        await queue.waitUntilIdle()
        let log = recording.log
        #expect(log.count == 4, "\(log)")
        #expect(isBalanced(recording))
    }

    @Test func extraResumesAreIgnored() async {
        let (queue, _) = makeQueue()
        queue.resume()
        queue.resume()
        queue.suspend()
        #expect(queue.isSuspended, "one suspend after extra resumes still suspends")
        let unit = queue.add(.init(timeout: nil)) { $0.finish() }
        #expect(queue.executingCount == 0 && unit.currentOutcome == nil)
        queue.resume()
        queue.resume()
        #expect(!queue.isSuspended)
        #expect(await unit.outcome.kind == .finished)
    }

    /// Awaiting a unit's own `outcome` from inside its async body is detected at once:
    /// the unit is cancelled (so its slot is freed and the deadlock is broken) and the
    /// await returns `.cancelled`.
    @Test func awaitingAUnitFromInsideItsOwnBodyReturnsAtOnce() async {
        let (queue, _) = makeQueue()
        let seen = Lock<AsyncTask.Outcome.Kind?>(nil)
        let handleBox = Lock<AsyncTask?>(nil)
        let gate = Signal()
        // A long timeout: detection must not depend on the machine being fast (5 s ran out
        // under the sanitizer on a loaded run); without detection the test would wait the
        // whole timeout and then fail.
        let handle = queue.add(.init(timeout: .seconds(60))) {
            await gate.wait()
            if let unit = handleBox.withLock({ $0 }) {
                let outcome = await unit.outcome
                seen.withLock { $0 = outcome.kind }
            }
        }
        handleBox.withLock { $0 = handle.task }
        gate.signal()
        _ = await handle.task.outcome
        await queue.waitUntilIdle()
        #expect(handle.task.currentOutcome?.kind == .cancelled)
        #expect(seen.withLock { $0 } == .cancelled)
        #expect(await bystander(on: queue).outcome.kind == .finished, "the queue moves on either way")
        _ = seen
    }
    @Test func aNegativeDelayOrAPassedStartInstantMeansNoDelay() async {
        let clock = TestClock()
        let (queue, _) = makeQueue(clock: clock)
        // The clock never moves: these start only if they are not delayed.
        let negative = queue.add(.init(notBefore: .after(.seconds(-5)))) { $0.finish() }
        let zero = queue.add(.init(notBefore: .after(.zero))) { $0.finish() }
        let past = queue.add(.init(notBefore: .at(.now - .seconds(1)))) { $0.finish() }
        #expect(await negative.outcome.kind == .finished)
        #expect(await zero.outcome.kind == .finished)
        #expect(await past.outcome.kind == .finished)
        #expect(await bystander(on: queue).outcome.kind == .finished)
    }

    @Test func aLaneKeyOnASequenceMemberIsIgnored() async {
        let (queue, _) = makeQueue()
        let gate = Signal()
        let order = Recorder<String>()
        let blockerStarted = Signal()
        let blocker = queue.add(.init(timeout: nil, lane: "l")) { unit in
            order.append("blocker")
            blockerStarted.signal()
            Task {
                await gate.wait()
                unit.finish()
            }
        }
        await blockerStarted.wait()
        // The sequence is a lane of its own: it does not wait behind lane "l".
        let members = (0..<3).map { index in
            AsyncTask(.init(lane: "l")) { unit in
                order.append("member \(index)")
                unit.finish()
            }
        }
        #expect(queue.addSequence(members) == 3)
        for member in members { #expect(await member.outcome.kind == .finished) }
        #expect(order.all == ["blocker", "member 0", "member 1", "member 2"])
        #expect(members.allSatisfy { $0.lane == "l" })
        // The key's lane goes on without them.
        let next = queue.add(.init(lane: "l")) { $0.finish() }
        gate.signal()
        #expect(await blocker.outcome.kind == .finished)
        #expect(await next.outcome.kind == .finished)
    }

    @Test func aRetryPolicyOfNoAttemptsRunsTheBodyOnce() async {
        let (queue, _) = makeQueue()
        let runs = Recorder<Int>()
        for attempts in [0, -2] {
            let handle = queue.add(.init(retry: .fixed(maxAttempts: attempts, delay: .seconds(-1)))) {
                runs.append(1)
                throw TestError(code: attempts)
            }
            #expect(await handle.outcome.kind == .failed)
            #expect(handle.task.attempts == 1)
        }
        #expect(runs.count == 2)
        #expect(RetryPolicy.fixed(maxAttempts: 10_000, delay: .zero).maxAttempts == RetryPolicy.attemptLimit)
        #expect(await bystander(on: queue).outcome.kind == .finished)
    }

    @Test func aReplacedBodyThatNeverReturnsHoldsBackOnlyItsReplacement() async throws {
        let clock = TestClock()
        let (queue, _) = makeQueue(clock: clock)
        let (entered, release) = (Signal(), Signal())
        let stubborn = queue.add(.init(name: "sync", uniquenessPolicy: .replace)) {
            entered.signal()
            await release.wait()  // Never looks at its cancellation.
        }
        await entered.wait()
        let ran = Recorder<String>()
        let replacement = queue.add(.init(name: "sync", timeout: .seconds(5), uniquenessPolicy: .replace)) {
            ran.append("replacement")
        }
        #expect(stubborn.task.currentOutcome?.kind == .replaced)
        let bystander = bystander(on: queue)
        #expect(await bystander.outcome.isFinished, "the queue moves on")
        // The replacement waits for the stubborn body: its own timeout still applies.
        await clock.waitForSleeper(until: clock.now.advanced(by: .seconds(5)))
        clock.advance(by: .seconds(5))
        #expect(await replacement.outcome.kind == .timedOut)
        release.signal()
        await queue.waitUntilIdle()
        #expect(ran.all.isEmpty, "its work never ran")
    }

    @Test func aRetryPolicyOnACallbackUnitIsIgnored() async {
        let (queue, _) = makeQueue()
        let runs = Recorder<Int>()
        let unit = queue.add(.init(timeout: nil, retry: .fixed(maxAttempts: 3, delay: .zero))) { unit in
            runs.append(1)
            unit.cancel()
        }
        #expect(await unit.outcome.kind == .cancelled)
        #expect(runs.count == 1 && unit.attempts == 1)
        #expect(await bystander(on: queue).outcome.kind == .finished)
    }

    // MARK: Durations out of range

    /// The longest wait the package keeps: `Int64.max` nanoseconds, about 292 years.
    private static let longest = Duration.nanoseconds(Int64.max)

    /// `AsyncOperation`'s `TimeInterval` timeout: longer than about 292 years saturates,
    /// NaN means none (as infinity does, and as `DispatchTime + .nan` waits forever),
    /// zero or less — minus infinity too — expires as the operation starts.
    @Test func operationTimeoutsOutOfRangeSaturateOrHaveADefinedMeaning() async {
        for huge in [1e10, 9.3e18, 1e300, TimeInterval.greatestFiniteMagnitude] {
            #expect(AsyncOperation(timeout: huge) { $0.finish() }.task.timeout == Self.longest, "\(huge)")
        }
        #expect(AsyncOperation(timeout: .nan) { $0.finish() }.task.timeout == nil)
        #expect(AsyncOperation(timeout: .infinity) { $0.finish() }.task.timeout == nil)
        #expect(AsyncOperation(timeout: -1e300) { $0.finish() }.task.timeout == .zero)
        #expect(AsyncOperation(timeout: -.infinity) { $0.finish() }.task.timeout == .zero)
        let (operationQueue, _) = makeOperationQueue()
        let ran = Recorder<String>()
        let huge = AsyncOperation(timeout: 1e300) { operation in
            ran.append("huge")
            operation.finish()
        }
        let notANumber = AsyncOperation(timeout: .nan) { operation in
            ran.append("nan")
            operation.finish()
        }
        let minusInfinity = AsyncOperation(timeout: -.infinity) { operation in
            ran.append("minus infinity")
            operation.finish()
        }
        operationQueue.addOperations([huge, notANumber, minusInfinity], waitUntilFinished: false)
        #expect(await huge.outcome.kind == .finished)
        #expect(await notANumber.outcome.kind == .finished)
        #expect(await minusInfinity.outcome.kind == .timedOut)
        await operationQueue.waitUntilIdle()
        #expect(Set(ran.all) == ["huge", "nan"])
    }

    /// A unit's timeout and start time longer than about 292 years saturate: the unit
    /// runs (or waits) as with a timeout or start time that never comes.
    @Test func unitTimeoutsAndStartTimesTooLongSaturate() async {
        let clock = TestClock()
        let (queue, _) = makeQueue(clock: clock)
        let timed = queue.add(.init(timeout: .seconds(Int64.max))) { $0.finish() }
        #expect(timed.timeout == Self.longest)
        // Beyond what an `Int64` of seconds holds (`Duration.components` would trap).
        let beyond = queue.add(.init(timeout: .seconds(Int64.max) * 4)) { $0.finish() }
        #expect(beyond.timeout == Self.longest)
        #expect(await beyond.outcome.kind == .finished)
        #expect(await timed.outcome.kind == .finished)
        let later = queue.add(.init(notBefore: .after(.seconds(Int64.max)))) { $0.finish() }
        let atAnInstant = queue.add(.init(notBefore: .at(.now + .seconds(Int64.max)))) { $0.finish() }
        clock.advance(by: .seconds(200 * 365 * 86_400))
        await clock.waitForSleeper(until: TestClock.Instant(nanoseconds: .max))
        #expect(later.currentOutcome == nil && !later.isExecuting, "200 years later, it still waits")
        #expect(atAnInstant.currentOutcome == nil && !atAnInstant.isExecuting)
        #expect(await bystander(on: queue).outcome.kind == .finished)
        later.cancel()
        atAnInstant.cancel()
        await queue.waitUntilIdle()
        #expect(later.currentOutcome?.kind == .cancelled && atAnInstant.currentOutcome?.kind == .cancelled)
    }

    /// Retry delays saturate at about 292 years, and every attempt number has a delay.
    @Test func retryDelaysSaturateAndEveryAttemptNumberHasADelay() {
        let fixed = RetryPolicy.fixed(maxAttempts: 3, delay: .seconds(Int64.max))
        #expect(fixed.delay(beforeAttempt: 2) == Self.longest)
        let exponential = RetryPolicy.exponential(
            maxAttempts: 3, initialDelay: .seconds(1), multiplier: .infinity, maximumDelay: .seconds(Int64.max),
            jitter: 0)
        #expect(exponential.delay(beforeAttempt: 3) == Self.longest)
        for attempt in [Int.min, -1, 0, 1, 2] {
            #expect(exponential.delay(beforeAttempt: attempt) == .seconds(1), "attempt \(attempt)")
        }
        #expect(exponential.delay(beforeAttempt: .max) == Self.longest)
    }

    /// A unit that no queue holds waits its retry delay itself: a saturated one lasts
    /// until the unit is cancelled.
    @Test func aRetryDelayTooLongForAUnitNoQueueHoldsLastsUntilItIsCancelled() async {
        let attempts = Recorder<Int>()
        let handle = AsyncTaskHandle(.init(timeout: nil, retry: .fixed(maxAttempts: 2, delay: .seconds(Int64.max)))) {
            () async throws -> Int in
            attempts.append(1)
            throw TestError(code: 1)
        }
        OperationQueue().addTask(handle.task)
        await waitUntil {
            handle.task.state.withLock { if case .retrying = $0.phase { true } else { false } }
        }
        handle.task.cancel()
        #expect(await handle.task.outcome.kind == .cancelled)
        #expect(attempts.count == 1)
    }

    /// A grace period or cancellation period longer than about 292 years saturates; a
    /// negative one counts as zero. ``GracefulShutdown`` reports what it applies.
    @Test func shutdownPeriodsOutOfRangeSaturateOrCountAsZero() async {
        let huge = GracefulShutdown(gracePeriod: .seconds(Int64.max), cancellationPeriod: .seconds(Int64.max))
        #expect(huge.gracePeriod == Self.longest && huge.cancellationPeriod == Self.longest)
        let queue = BackgroundQueue(name: "huge", backgroundTaskProvider: huge)
        let started = Signal()
        let unit = queue.add(.init(name: "export", timeout: nil)) {
            started.signal()
            await suspendUntilCancelled()
        }
        await started.wait()
        huge.requestShutdown()
        let drained = Task { await huge.drain(queue) }
        await waitUntil { !queue.isAcceptingWork }
        huge.requestShutdown()  // The second request cuts the grace period short.
        let report = await drained.value
        #expect(report.ending == .expired(.secondRequest(.requested)), "\(report)")
        #expect(unit.task.currentOutcome?.kind == .cancelled)

        let negative = GracefulShutdown(gracePeriod: .seconds(-1), cancellationPeriod: .seconds(-1))
        #expect(negative.gracePeriod == .zero && negative.cancellationPeriod == .zero)
        let other = BackgroundQueue(name: "negative", backgroundTaskProvider: negative)
        let otherStarted = Signal()
        let otherUnit = other.add(.init(name: "export", timeout: nil)) {
            otherStarted.signal()
            await suspendUntilCancelled()
        }
        await otherStarted.wait()
        negative.requestShutdown()
        let expired = await negative.drain(other)
        #expect(expired.ending == .expired(.gracePeriodEnded), "\(expired)")
        #expect(await otherUnit.task.outcome.kind == .cancelled)
    }
}

/// Wraps a provider; its expiration handler calls the queue's, then `afterExpiration`.
private final class RethrowingProvider: BackgroundTaskProvider {
    let base: RecordingBackgroundTaskProvider
    private let hook = Lock<(@Sendable () -> Void)?>(nil)

    init(_ base: RecordingBackgroundTaskProvider) { self.base = base }

    var afterExpiration: (@Sendable () -> Void)? {
        get { hook.withLock { $0 } }
        set { hook.withLock { $0 = newValue } }
    }

    func beginBackgroundTask(named name: String, expirationHandler: @escaping @Sendable () -> Void)
        -> BackgroundTaskIdentifier?
    {
        base.beginBackgroundTask(named: name) { [weak self] in
            expirationHandler()
            self?.afterExpiration?()
        }
    }

    func endBackgroundTask(_ identifier: BackgroundTaskIdentifier) {
        base.endBackgroundTask(identifier)
    }
}
