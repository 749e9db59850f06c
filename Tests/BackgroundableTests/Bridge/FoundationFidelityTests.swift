import BackgroundableTesting
import Dispatch
import Foundation
import Synchronization
import Testing

@testable import Backgroundable

/// Where `BackgroundOperationQueue` behaves as Foundation's own `OperationQueue`.
@Suite(.timeLimit(.minutes(1)))
struct FoundationFidelityTests {
    @Test func barrierBlocksAreWorkOfTheBusyPeriod() async {
        let (queue, provider) = makeOperationQueue()
        let delegate = RecordingOperationQueueDelegate()
        queue.delegate = delegate
        let seen = Recorder<String>()
        // On an idle queue Foundation runs the block at once on its dispatch queue,
        // outside its operations (the queue may be idle again when this returns).
        queue.addBarrierBlock {
            seen.append("busy: \(queue.isBusy), assertions: \(provider.activeIdentifiers.count)")
        }
        await queue.waitUntilIdle()
        #expect(seen.count == 1)

        // Behind an operation, Foundation runs it as an operation that waits for it.
        let started = Signal()
        let release = Signal()
        queue.addOperation(gatedOperation(started: started, release: release))
        queue.addBarrierBlock {
            seen.append("busy: \(queue.isBusy), assertions: \(provider.activeIdentifiers.count)")
        }
        await started.wait()
        release.signal()
        await queue.waitUntilIdle()
        #expect(seen.all == ["busy: true, assertions: 1", "busy: true, assertions: 1"])
        #expect(isBalanced(provider))
        await mainActorDeliveries()
        #expect(delegate.calls.all == [.willStart, .didFinish, .willStart, .didFinish])
    }

    @Test func cancelAllOperationsCancelsTheOperationsAndLeavesBarrierBlocksToRun() async {
        let (queue, provider) = makeOperationQueue()
        let ran = Recorder<String>()
        queue.isSuspended = true
        let pending = queue.addAsyncOperation { $0.finish() }
        queue.addBarrierBlock { ran.append("barrier, after \(pending.currentOutcome.map { "\($0)" } ?? "nothing")") }
        // Foundation would cancel the barrier as well; on swift-corelibs-foundation the
        // process then crashes once the operation it waited for finishes.
        queue.cancelAllOperations()
        queue.isSuspended = false
        await queue.waitUntilIdle()
        #expect(ran.all == ["barrier, after cancelled"])
        #expect(isBalanced(provider))
    }

    @Test func progressCountsAgainstTheTotalTheCallerSet() async {
        let queue = BackgroundOperationQueue(backgroundTaskProvider: NoopBackgroundTaskProvider())
        let progress = queue.progress
        #expect(progress === queue.progress)
        progress.totalUnitCount = 5
        queue.addOperations((0..<3).map { _ in BlockOperation {} }, waitUntilFinished: false)
        await queue.waitUntilIdle()
        #expect(progress.totalUnitCount == 5)
        #expect(progress.completedUnitCount == 3)
        // A new busy period goes on counting; an operation that overrides `start()` (an
        // AsyncOperation) does not count, as Foundation documents.
        queue.addOperation {}
        queue.addAsyncOperation { $0.finish() }
        await queue.waitUntilIdle()
        #expect(progress.totalUnitCount == 5)
        #expect(progress.completedUnitCount == 4)
    }

    @Test func blockOperationsTakeTheQueuesQualityOfService() async {
        let (queue, _) = makeOperationQueue()
        queue.isSuspended = true
        queue.addOperation {}
        queue.qualityOfService = .utility
        queue.addOperation {}
        #expect(queue.operations.map(\.qualityOfService) == [.default, .utility])
        queue.isSuspended = false
        await queue.waitUntilIdle()
    }

    @Test func unnamedQueuesHaveDistinctNamesAndAssertionLabels() async {
        let provider = RecordingBackgroundTaskProvider()
        let queues = (0..<2).map { _ in BackgroundOperationQueue(backgroundTaskProvider: provider) }
        let names = queues.map { $0.name ?? "" }
        #expect(names[0] != names[1])
        #expect(names.allSatisfy { $0.hasPrefix("Backgroundable.BackgroundOperationQueue ") })
        for queue in queues {
            queue.addOperation {}
            await queue.waitUntilIdle()
        }
        let labels = provider.log.compactMap { entry -> String? in
            if case .began(_, let name) = entry { name } else { nil }
        }
        #expect(labels == names)
    }

    @Test func aNewcomerStartsOnlyOnceTheOperationsItReplacedEnded() async {
        let (queue, _) = makeOperationQueue()
        queue.maxConcurrentOperationCount = 2
        let running = RunningOperations()
        let plain = await PlainAsynchronousOperation.executing(named: "hot", on: queue, counting: running)
        // Two newcomers: the second replaces the first before it started, and Foundation
        // starts a cancelled operation without waiting for its dependencies.
        let newcomers = (0..<2).map { _ in
            queue.addAsyncOperation(name: "hot", uniquenessPolicy: .replace) { operation in
                if running.enter(operation) { operation.finish() }
            }
        }
        // The second slot goes to the newcomers first, in order, if they may start.
        let otherRan = Signal()
        queue.addOperation { otherRan.signal() }
        await otherRan.wait()
        plain.end()
        await queue.waitUntilIdle()
        #expect(running.maximum == 1)
        #expect(newcomers.map { $0.currentOutcome?.kind } == [.replaced, .finished])
    }

    /// The replacement of an executing operation is cancelled before it started (so
    /// Foundation finishes it without waiting); a later operation of the name replaces
    /// nothing live, yet still waits for the replaced one to finish.
    @Test func aLaterOperationOfTheNameWaitsForAReplacedOneWhoseReplacementNeverRan() async {
        let (queue, _) = makeOperationQueue()
        queue.maxConcurrentOperationCount = 3
        let running = RunningOperations()
        let plain = await PlainAsynchronousOperation.executing(named: "hot", on: queue, counting: running)
        queue.addAsyncOperation(name: "hot", uniquenessPolicy: .replace) { $0.finish() }.cancel()
        let later = queue.addAsyncOperation(name: "hot", uniquenessPolicy: .drop) { operation in
            if running.enter(operation) { operation.finish() }
        }
        #expect(later.dependencies.contains(plain))
        plain.end()
        await queue.waitUntilIdle()
        #expect(running.maximum == 1)
        #expect(later.currentOutcome?.kind == .finished)
    }

    /// A storm of `.replace` operations of one name from several threads, while a plain
    /// operation of that name executes (replacing cancels it, but it runs on) until one
    /// thread ends it, mid-storm: the work of an operation never starts while an
    /// operation it replaced, or one that that one was still waiting for, executes.
    @Test(arguments: [UInt64(0x5EED), 0xB0B, 0xFACADE])
    func replacementsOfOneNameNeverRunTogether(seed: UInt64) async {
        let (queue, _) = makeOperationQueue()
        let running = RunningOperations()
        let plain = await PlainAsynchronousOperation.executing(named: "hot", on: queue, counting: running)

        // Each thread sometimes waits for its operation to finish, so that operations get to
        // start mid-storm; thread 0 never waits while the plain operation executes.
        let threads = 4
        let perThread = 150
        let endPlainAt = perThread / 2 + Int(seed % UInt64(perThread / 4))
        var done: [Signal] = []
        for thread in 0..<threads {
            let threadDone = Signal()
            done.append(threadDone)
            Thread.detachNewThread {
                var rng = SplitMix64(seed: seed &+ UInt64(thread))
                for index in 0..<perThread {
                    if thread == 0, index == endPlainAt { plain.end() }
                    let finishesLater = rng.chance(50)
                    let operation = queue.addAsyncOperation(
                        name: "hot", timeout: .infinity, uniquenessPolicy: .replace
                    ) { operation in
                        guard running.enter(operation) else { return }
                        if finishesLater {
                            DispatchQueue.global().async { operation.finish() }
                        } else {
                            operation.finish()
                        }
                    }
                    if thread != 0 || index > endPlainAt, rng.chance(30) { operation.waitUntilFinished() }
                }
                threadDone.signal()
            }
        }
        for threadDone in done { await threadDone.wait() }
        await queue.waitUntilIdle()
        #expect(plain.isCancelled)
        #expect(running.entered > 1)
        #expect(running.maximum == 1)
    }
}

/// An asynchronous `Operation` that is not an ``AsyncOperation``: it executes from its
/// start until ``end()``, cancelled or not, its work counted by a ``RunningOperations``.
private final class PlainAsynchronousOperation: Operation, @unchecked Sendable {
    private let state = Lock<(executing: Bool, finished: Bool)>((false, false))
    private let running: RunningOperations
    private let started = Signal()

    private init(counting running: RunningOperations) {
        self.running = running
    }

    /// Adds one to `queue` and waits until it executes.
    static func executing(
        named name: String, on queue: OperationQueue, counting running: RunningOperations
    ) async -> PlainAsynchronousOperation {
        let operation = PlainAsynchronousOperation(counting: running)
        operation.name = name
        queue.addOperation(operation)
        await operation.started.wait()
        return operation
    }

    override var isAsynchronous: Bool { true }
    override var isExecuting: Bool { state.withLock { $0.executing } }
    override var isFinished: Bool { state.withLock { $0.finished } }

    override func start() {
        willChangeValue(forKey: "isExecuting")
        state.withLock { $0.executing = true }
        didChangeValue(forKey: "isExecuting")
        running.enter(plain: self)
        started.signal()
    }

    func end() {
        running.leave(plain: self)
        willChangeValue(forKey: "isExecuting")
        willChangeValue(forKey: "isFinished")
        state.withLock { $0 = (false, true) }
        didChangeValue(forKey: "isExecuting")
        didChangeValue(forKey: "isFinished")
    }
}

/// The work that runs and has not ended, for one name.
private final class RunningOperations: Sendable {
    private let state = Lock<(running: [AnyObject], entered: Int, maximum: Int)>(([], 0, 0))

    /// An ``AsyncOperation``'s closure starts: `false` when the operation was replaced
    /// already (its closure then does nothing). It counts until the operation's outcome;
    /// the check and the count are one step.
    func enter(_ operation: AsyncOperation) -> Bool {
        state.withLock { state in
            guard !operation.isCancelled else { return false }
            add(operation, to: &state)
            return true
        }
    }

    /// Another operation's work starts; it counts until ``leave(plain:)``.
    func enter(plain operation: Operation) {
        state.withLock { add(operation, to: &$0) }
    }

    func leave(plain operation: Operation) {
        state.withLock { $0.running.removeAll { $0 === operation } }
    }

    private func add(_ work: AnyObject, to state: inout (running: [AnyObject], entered: Int, maximum: Int)) {
        state.running.removeAll { ($0 as? AsyncOperation)?.currentOutcome != nil }
        state.running.append(work)
        state.entered += 1
        state.maximum = max(state.maximum, state.running.count)
    }

    var entered: Int { state.withLock { $0.entered } }
    var maximum: Int { state.withLock { $0.maximum } }
}
