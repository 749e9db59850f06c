import BackgroundableTesting
import Foundation
import Observation
import Synchronization
import Testing

@testable import Backgroundable

@Suite("Progress")
struct ProgressTests {
    // MARK: A unit's own progress

    @Test("A unit's reports: fractions clamped, NaN and empty totals ignored, the latest wins")
    func unitReports() {
        let unit = AsyncTask { $0.finish() }
        #expect(unit.fractionCompleted == nil)
        unit.reportProgress(0.25)
        #expect(unit.fractionCompleted == 0.25)
        unit.reportProgress(0.1)
        #expect(unit.fractionCompleted == 0.1)
        unit.reportProgress(.nan)
        #expect(unit.fractionCompleted == 0.1)
        unit.reportProgress(-3)
        #expect(unit.fractionCompleted == 0)
        unit.reportProgress(7)
        #expect(unit.fractionCompleted == 1)
        unit.reportProgress(completed: 3, of: 4)
        #expect(unit.fractionCompleted == 0.75)
        unit.reportProgress(completed: 9, of: 0)
        #expect(unit.fractionCompleted == 0.75)
        unit.reportProgress(completed: 9, of: 4)
        #expect(unit.fractionCompleted == 1)
        unit.reportProgress(completed: -1, of: 4)
        #expect(unit.fractionCompleted == 0)
    }

    @Test("AsyncTask.current is the unit whose async body runs, in its child tasks too, and nil elsewhere")
    func currentUnit() async throws {
        #expect(AsyncTask.current == nil)
        let queue = BackgroundQueue(backgroundTaskProvider: NoopBackgroundTaskProvider())
        let handle = queue.add(.init(name: "current")) { () async -> (String?, String?) in
            async let child = AsyncTask.current?.name
            return (AsyncTask.current?.name, await child)
        }
        let (own, child) = try await handle.value
        #expect(own == "current")
        #expect(child == "current")
        #expect(AsyncTask.current == nil)
    }

    // MARK: A queue's progress

    @Test("A queue counts its busy period's units, done and executing, and starts again in the next one")
    func queueProgress() async throws {
        let queue = BackgroundQueue(maxConcurrentTasks: 2, backgroundTaskProvider: NoopBackgroundTaskProvider())
        #expect(queue.progress == QueueProgress())
        #expect(queue.progress.fractionCompleted == 0)
        let reported = Signal()
        let release = [Signal(), Signal(), Signal(), Signal()]
        let handles = (0..<4).map { index in
            queue.add(.init(name: "unit \(index)")) {
                if index == 0 {
                    AsyncTask.current?.reportProgress(0.5)
                    reported.signal()
                }
                await release[index].wait()
            }
        }
        await reported.wait()
        var progress = queue.progress
        #expect(progress.isBusy)
        #expect(progress.totalUnitCount == 4)
        #expect(progress.completedUnitCount == 0)
        #expect(progress.enqueuedCount + progress.executingCount == 4)
        #expect(progress.executingProgress == 0.5)
        #expect(progress.fractionCompleted == 0.125)

        release[0].signal()
        release[1].signal()
        _ = await (handles[0].task.outcome, handles[1].task.outcome)
        progress = queue.progress
        #expect(progress.completedUnitCount == 2)
        #expect(progress.executingProgress == 0)  // the reporting unit ended: it counts as done
        #expect(progress.fractionCompleted == 0.5)

        release[2].signal()
        release[3].signal()
        await queue.waitUntilIdle()
        progress = queue.progress
        #expect(!progress.isBusy)
        #expect(progress.completedUnitCount == 4)
        #expect(progress.totalUnitCount == 4)
        #expect(progress.fractionCompleted == 1)

        let next = Signal()
        queue.add { await next.wait() }
        #expect(queue.progress.totalUnitCount == 1)
        #expect(queue.progress.completedUnitCount == 0)
        next.signal()
        await queue.waitUntilIdle()
    }

    @Test("Dropped and joined units never count; replaced and cancelled ones count as done")
    func outcomesThatCount() async {
        let queue = BackgroundQueue(backgroundTaskProvider: NoopBackgroundTaskProvider())
        queue.suspend()
        queue.add(.init(name: "a")) { $0.finish() }
        queue.add(.init(name: "a", uniquenessPolicy: .drop)) { $0.finish() }
        queue.add(AsyncTask(.init(name: "a", uniquenessPolicy: .join)) { $0.finish() })
        queue.add(.init(name: "b")) { $0.finish() }
        queue.add(.init(name: "b", uniquenessPolicy: .replace)) { $0.finish() }
        #expect(queue.progress.totalUnitCount == 3)
        #expect(queue.progress.completedUnitCount == 1)
        queue.cancelAll()
        queue.resume()
        await queue.waitUntilIdle()
        #expect(queue.progress.completedUnitCount == 3)
    }

    @Test("A retried unit starts each attempt with no progress")
    func retryResetsProgress() async throws {
        let queue = BackgroundQueue(
            backgroundTaskProvider: NoopBackgroundTaskProvider(), retryPolicy: .fixed(maxAttempts: 2, delay: .zero))
        let seen = Recorder<Double?>()
        let handle = queue.add { () async throws -> Int in
            let unit = AsyncTask.current!
            seen.append(unit.fractionCompleted)
            if unit.attempts == 1 {
                unit.reportProgress(0.7)
                throw TestError(code: 1)
            }
            return 2
        }
        #expect(try await handle.value == 2)
        #expect(seen.all == [nil, nil])
    }

    // MARK: Watching

    @Test("The stream starts with the current value, then a slow consumer sees only the newest")
    func streamIsCoalesced() async throws {
        let queue = BackgroundQueue(maxConcurrentTasks: 1, backgroundTaskProvider: NoopBackgroundTaskProvider())
        var updates = queue.progressUpdates.makeAsyncIterator()
        #expect(await updates.next() == QueueProgress())
        queue.suspend()
        for _ in 0..<100 { queue.add(.init(timeout: nil)) { $0.finish() } }
        queue.resume()
        await queue.waitUntilIdle()
        // A hundred units, each added, started and ended: the consumer slept through
        // them, and finds the last value only.
        let last = await updates.next()
        #expect(last == QueueProgress(isBusy: false, totalUnitCount: 100, completedUnitCount: 100))
    }

    @Test("While units execute, watchers hear samples of their progress (10 Hz on the queue's clock)")
    func sampling() async throws {
        let clock = TestClock()
        let (queue, _) = makeQueue(clock: clock)
        var updates = queue.progressUpdates.makeAsyncIterator()
        _ = await updates.next()
        let reported = [Signal(), Signal()]
        let step = Signal()
        let release = Signal()
        queue.add {
            AsyncTask.current?.reportProgress(0.25)
            reported[0].signal()
            await step.wait()
            AsyncTask.current?.reportProgress(0.5)
            reported[1].signal()
            await release.wait()
        }
        // Reports are plain stores: watchers hear them at the next sample.
        let sampleInterval = Duration.nanoseconds(QueueCore.Machine.defaultProgressSampleInterval)
        try await next(&updates) { $0.executingCount == 1 && $0.executingProgress == 0 }
        await reported[0].wait()
        #expect(queue.progress.executingProgress == 0.25)  // A read is fresh.
        await clock.waitForSleeper(until: clock.now.advanced(by: sampleInterval))
        clock.advance(by: .milliseconds(100))
        try await next(&updates) { $0.executingProgress == 0.25 }
        step.signal()
        await reported[1].wait()
        await clock.waitForSleeper(until: clock.now.advanced(by: sampleInterval))
        clock.advance(by: .milliseconds(100))
        try await next(&updates) { $0.executingProgress == 0.5 }
        release.signal()
        // Its end counts at once, and its sampled progress no longer does.
        try await next(&updates) { !$0.isBusy && $0.completedUnitCount == 1 && $0.executingProgress == 0 }
    }

    @Test("Under load, watchers see one busy period's counts only grow, never past the total, and end complete")
    func underLoad() async throws {
        let queue = BackgroundQueue(maxConcurrentTasks: 4, backgroundTaskProvider: NoopBackgroundTaskProvider())
        let updates = queue.progressUpdates
        let watcher = Task {
            var seen: [QueueProgress] = []
            for await progress in updates {
                seen.append(progress)
                if !progress.isBusy && progress.completedUnitCount == 2_000 { break }
            }
            return seen
        }
        queue.suspend()
        for index in 0..<2_000 {
            queue.add(.init(name: "unit \(index % 7)")) {
                let unit = AsyncTask.current
                for step in 1...10 {
                    unit?.reportProgress(completed: step, of: 10)
                    await Task.yield()
                }
            }
        }
        queue.resume()
        await queue.waitUntilIdle()
        let seen = await watcher.value
        let busy = seen.filter(\.isBusy)
        #expect(!busy.isEmpty)
        for (earlier, later) in zip(busy, busy.dropFirst()) {
            #expect(later.completedUnitCount >= earlier.completedUnitCount)
            #expect(later.totalUnitCount >= earlier.totalUnitCount)
        }
        #expect(seen.allSatisfy { $0.fractionCompleted <= 1 && $0.completedUnitCount <= $0.totalUnitCount })
        #expect(seen.last == QueueProgress(isBusy: false, totalUnitCount: 2_000, completedUnitCount: 2_000))
    }

    @Test("Watchers unregister when their stream ends or their model goes away; an unwatched queue samples nothing")
    @MainActor
    func watchersUnregister() async throws {
        let queue = BackgroundQueue(backgroundTaskProvider: NoopBackgroundTaskProvider())
        do {
            var updates = queue.progressUpdates.makeAsyncIterator()
            _ = await updates.next()
            #expect(queue.core.watcherCount == 1)
        }
        #expect(queue.core.watcherCount == 0)
        var model: BackgroundQueueActivity? = BackgroundQueueActivity(queue)
        #expect(queue.core.watcherCount == 1)
        _ = model
        model = nil
        #expect(queue.core.watcherCount == 0)
    }

    // MARK: The SwiftUI model

    @Test("The model follows the queue on the main actor: counts, progress, executing names in start order")
    @MainActor
    func model() async throws {
        let queue = BackgroundQueue(maxConcurrentTasks: 2, backgroundTaskProvider: NoopBackgroundTaskProvider())
        let activity = BackgroundQueueActivity(queue, nameLimit: 1)
        try await until(activity) { $0.progress == QueueProgress() }
        let release = [Signal(), Signal(), Signal()]
        let started = [Signal(), Signal(), Signal()]
        for index in 0..<3 {
            queue.add(.init(name: "unit \(index)")) {
                started[index].signal()
                await release[index].wait()
            }
        }
        await started[0].wait()
        await started[1].wait()
        try await until(activity) { $0.executingCount == 2 && $0.enqueuedCount == 1 }
        #expect(activity.isBusy)
        #expect(activity.executingNames == ["unit 0"])
        release[0].signal()
        try await until(activity) { $0.executingNames == ["unit 1"] && $0.progress.completedUnitCount == 1 }
        release[1].signal()
        release[2].signal()
        try await until(activity) { !$0.isBusy }
        #expect(activity.progress.completedUnitCount == 3)
        #expect(activity.executingNames.isEmpty)
    }

    @Test("The model sets only what changed: a view reading isBusy is not told about progress")
    @MainActor
    func modelSetsOnlyChanges() async throws {
        let queue = BackgroundQueue(backgroundTaskProvider: NoopBackgroundTaskProvider())
        let activity = BackgroundQueueActivity(queue)
        let keepBusy = Signal()
        queue.add { await keepBusy.wait() }
        try await until(activity) { $0.isBusy }
        let busyChanged = Mutex(false)
        withObservationTracking {
            _ = activity.isBusy
        } onChange: {
            busyChanged.withLock { $0 = true }
        }
        for _ in 0..<10 { queue.add { $0.finish() } }
        try await until(activity) { $0.progress.completedUnitCount == 10 }
        #expect(!busyChanged.withLock { $0 })
        keepBusy.signal()
        try await until(activity) { !$0.isBusy }
        #expect(busyChanged.withLock { $0 })
    }

    // MARK: Foundation

    @Test("BackgroundOperationQueue.busyPeriodProgress counts the busy period's operations and barrier blocks")
    func operationQueueBusyPeriodProgress() async {
        let queue = BackgroundOperationQueue(backgroundTaskProvider: NoopBackgroundTaskProvider())
        let progress = queue.busyPeriodProgress
        #expect(progress === queue.busyPeriodProgress)
        #expect(progress !== queue.progress)
        queue.addOperations((0..<3).map { _ in AsyncOperation { $0.finish() } }, waitUntilFinished: false)
        await queue.waitUntilIdle()
        #expect(progress.totalUnitCount == 3)
        #expect(progress.completedUnitCount == 3)
        // Suspended, so that both are work of one busy period (the block could
        // otherwise end it before the barrier is added).
        queue.isSuspended = true
        queue.addOperation(BlockOperation {})
        queue.addBarrierBlock {}
        queue.isSuspended = false
        await queue.waitUntilIdle()
        #expect(progress.totalUnitCount == 2)
        #expect(progress.completedUnitCount == 2)
    }

    @Test("AsyncOperation.progress follows its reports and its outcome; cancelling it cancels the operation")
    func asyncOperationProgress() async {
        let operation = AsyncOperation(timeout: .infinity) { _ in }
        let progress = operation.progress
        #expect(progress.totalUnitCount == 100)
        operation.reportProgress(0.5)
        #expect(progress.completedUnitCount == 50)
        #expect(operation.task.fractionCompleted == 0.5)
        operation.reportProgress(completed: 3, of: 4)
        #expect(progress.totalUnitCount == 4)
        #expect(progress.completedUnitCount == 3)
        operation.start()
        operation.finish()
        #expect(progress.completedUnitCount == 4)
        #expect(!progress.isCancelled)

        let cancelled = AsyncOperation(timeout: .infinity) { _ in }
        cancelled.start()
        cancelled.progress.cancel()  // Foundation calls the cancellation handler later, on a thread of its own.
        #expect(await cancelled.outcome.kind == .cancelled)
        #expect(cancelled.isFinished)
    }

    // MARK: Continued processing (iOS 26), through a fake system task

    @Test("Continued processing: a busy period submits a request, its task shows the progress and completes when idle")
    func continuedProcessing() async throws {
        let system = FakeSystem()
        let provider = system.provider(prefix: "app.export", title: "Exporting") {
            "\($0.completedUnitCount) of \($0.totalUnitCount)"
        }
        let queue = BackgroundQueue(backgroundTaskProvider: provider)
        let release = Signal()
        queue.add {
            AsyncTask.current?.reportProgress(0.5)
            await release.wait()
        }
        queue.add { $0.finish() }
        await system.changed.wait { system.tasks.all.first?.progress.completedUnitCount == 150 }
        let task = try #require(system.tasks.all.first)
        #expect(system.submitted.all == ["app.export.1"])
        #expect(task.progress.totalUnitCount == 200)
        #expect(task.titles.all.last == "Exporting: 1 of 2")
        release.signal()
        await queue.waitUntilIdle()
        #expect(task.completions.all == [true])
        #expect(task.progress.completedUnitCount == 200)
    }

    @Test("Continued processing: the system's expiration is the queue's, its policy applies, the task fails")
    func continuedProcessingExpires() async throws {
        let system = FakeSystem()
        let provider = system.provider(prefix: "app.sync", title: "Syncing", subtitle: nil)
        let queue = BackgroundQueue(backgroundTaskProvider: provider, expirationPolicy: .cancelAll)
        let handle = queue.add { await suspendUntilCancelled() }
        await system.changed.wait { system.tasks.all.first?.hasExpirationHandler == true }
        system.tasks.all[0].expire()
        #expect(await handle.task.outcome.kind == .cancelled)
        await queue.waitUntilIdle()
        #expect(system.tasks.all[0].completions.all == [false])
    }

    @Test(
        "Continued processing: a refused request grants no time; a task launched after its queue went idle completes at once"
    )
    func continuedProcessingEdges() {
        let refusing = ContinuedProcessing(identifierPrefix: "app", title: "T", subtitle: nil) { _ in
            throw TestError(code: 1)
        }
        #expect(refusing.beginBackgroundTask(named: "q", expirationHandler: {}) == nil)

        let provider = ContinuedProcessing(identifierPrefix: "app", title: "T", subtitle: nil) { _ in }
        let identifier = provider.beginBackgroundTask(named: "q", expirationHandler: {})
        provider.endBackgroundTask(try! #require(identifier))
        let late = FakeContinuedTask()
        provider.launched(taskIdentifier: "app.1", late)
        #expect(late.completions.all == [true])
        let unknown = FakeContinuedTask()
        provider.launched(taskIdentifier: "app.99", unknown)
        #expect(unknown.completions.all == [true])
    }
}

// MARK: Helpers

/// A fake of the system's side of continued processing: a submitted request launches
/// its task at once, on another thread.
final class FakeSystem: Sendable {
    let submitted = Recorder<String>()
    let tasks = Recorder<FakeContinuedTask>()
    /// Fired after every change a task goes through.
    let changed = Pulse()

    func provider(
        prefix: String, title: String, subtitle: (@Sendable (QueueProgress) -> String)?
    ) -> ContinuedProcessing {
        let provider = Recorder<ContinuedProcessing>()
        let made = ContinuedProcessing(identifierPrefix: prefix, title: title, subtitle: subtitle) {
            [self] identifier in
            submitted.append(identifier)
            let task = FakeContinuedTask(changed: changed)
            tasks.append(task)
            Task.detached { provider.all.first?.launched(taskIdentifier: identifier, task) }
        }
        provider.append(made)
        return made
    }
}

/// A fake `BGContinuedProcessingTask`.
final class FakeContinuedTask: ContinuedProcessingTask {
    let progress = Progress.discreteProgress(totalUnitCount: 0)
    let titles = Recorder<String>()
    let completions = Recorder<Bool>()
    private let handler = Mutex<(@Sendable () -> Void)?>(nil)
    private let changed: Pulse

    init(changed: Pulse = Pulse()) {
        self.changed = changed
    }

    var hasExpirationHandler: Bool { handler.withLock { $0 != nil } }

    func updateTitle(_ title: String, subtitle: String) {
        titles.append("\(title): \(subtitle)")
        changed.fire()
    }

    func setExpirationHandler(_ handler: @escaping @Sendable () -> Void) {
        self.handler.withLock { $0 = handler }
        changed.fire()
    }

    func setTaskCompleted(success: Bool) {
        completions.append(success)
        changed.fire()
    }

    /// The system runs out of time for the task.
    func expire() { handler.withLock { $0 }?() }
}

/// Wakes whoever waits for a condition after each change: no polling, no lost wake-up
/// (the condition is checked under the pulse's lock, which every fire takes).
final class Pulse: Sendable {
    private let waiters = Mutex<[CheckedContinuation<Bool, Never>]>([])

    func fire() {
        let woken = waiters.withLock { waiters in
            defer { waiters = [] }
            return waiters
        }
        for waiter in woken { waiter.resume(returning: false) }
    }

    func wait(until condition: @Sendable () -> Bool) async {
        while true {
            let holds = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let now = waiters.withLock { waiters in
                    if condition() { return true }
                    waiters.append(continuation)
                    return false
                }
                if now { continuation.resume(returning: true) }
            }
            if holds { return }
        }
    }
}

/// Waits until the model satisfies `condition`, woken by Observation (no polling).
@MainActor
func until(_ model: BackgroundQueueActivity, _ condition: @escaping @MainActor (BackgroundQueueActivity) -> Bool)
    async throws
{
    while true {
        let holds = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let resumed = Mutex(false)
            let resumeOnce: @Sendable (Bool) -> Void = { value in
                let first = resumed.withLock { resumed in
                    defer { resumed = true }
                    return !resumed
                }
                if first { continuation.resume(returning: value) }
            }
            let holds = withObservationTracking {
                condition(model)
            } onChange: {
                resumeOnce(false)
            }
            if holds { resumeOnce(true) }
        }
        if holds { return }
    }
}

/// The next value of `updates` that satisfies `condition`.
func next(
    _ updates: inout AsyncStream<QueueProgress>.Iterator, where condition: (QueueProgress) -> Bool
) async throws {
    while let progress = await updates.next() {
        if condition(progress) { return }
    }
    Issue.record("the stream finished first")
}
