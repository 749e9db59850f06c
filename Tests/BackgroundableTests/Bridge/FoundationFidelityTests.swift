import Dispatch
import Foundation
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
        // On an idle queue Foundation runs the block on its dispatch queue, outside its
        // operations.
        queue.addBarrierBlock {
            seen.append("busy: \(queue.isBusy), assertions: \(provider.activeIdentifiers.count)")
        }
        #expect(queue.isBusy)
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
}
