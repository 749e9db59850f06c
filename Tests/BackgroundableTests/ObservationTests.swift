import BackgroundableTesting
import Dispatch
import Synchronization
import Testing

@testable import Backgroundable

@Suite("Events, delegate and idle")
struct ObservationTests {
    @Test func eventsOfOneUnitArriveInOrder() async {
        let (queue, _) = makeQueue()
        let events = queue.events
        let unit = queue.add(.init(name: "one", timeout: nil)) { $0.finish() }
        var seen: [String] = []
        for await event in events {
            switch event.kind {
            case .busy: seen.append("busy")
            case .enqueued: seen.append(event.unit === unit ? "enqueued" : "other")
            case .started: seen.append(event.unit === unit ? "started" : "other")
            case .ended: seen.append(event.unit === unit ? "ended:\(event.outcome!)" : "other")
            case .idle: seen.append("idle")
            default: seen.append("\(event.kind)")
            }
            if seen.last == "idle" { break }
        }
        #expect(seen == ["busy", "enqueued", "started", "ended:finished", "idle"])
    }

    @Test func droppedUnitsAreReportedAsEnded() async {
        let (queue, _) = makeQueue()
        queue.suspend()
        let events = queue.events
        let kept = queue.add(.init(name: "n", timeout: nil)) { $0.finish() }
        let dropped = queue.add(.init(name: "n", timeout: nil, uniquenessPolicy: .drop)) { $0.finish() }
        queue.resume()
        var droppedReported = false
        for await event in events {
            if event.kind == .ended, event.unit === dropped, event.outcome?.kind == .dropped { droppedReported = true }
            if event.kind == .idle { break }
        }
        #expect(droppedReported)
        #expect(kept.currentOutcome?.kind == .finished)
    }

    @Test func delegateSeesBusyAndIdleAlternatingExactlyOncePerPeriod() async {
        let (queue, _) = makeQueue()
        let delegate = RecordingDelegate()
        queue.setDelegate(delegate)
        for _ in 0..<50 {
            DispatchQueue.concurrentPerform(iterations: 4) { _ in
                queue.add(.init(timeout: nil)) { task in DispatchQueue.global().async { task.finish() } }
            }
            await queue.waitUntilIdle()
        }
        await mainActorDeliveries()
        let calls = delegate.calls.all
        #expect(calls.count >= 100)
        #expect(calls.count % 2 == 0)
        for (index, call) in calls.enumerated() {
            #expect(call == (index % 2 == 0 ? "willStart" : "didFinish"))
        }
    }

    @Test func aDelegateSetWhileBusyHearsTheNextPeriodInPairs() async {
        let (queue, _) = makeQueue()
        let first = RecordingDelegate()
        let second = RecordingDelegate()
        queue.setDelegate(first)
        let started = Signal()
        let release = Signal()
        queue.add {
            started.signal()
            await release.wait()
        }
        await started.wait()  // the period's will-start went to `first`
        queue.setDelegate(second)
        release.signal()
        await queue.waitUntilIdle()
        queue.add(.init(timeout: nil)) { $0.finish() }
        await queue.waitUntilIdle()
        await mainActorDeliveries()
        #expect(first.calls.all == ["willStart"])
        #expect(second.calls.all == ["willStart", "didFinish"])
    }

    @Test func delegateIsHeldWeakly() async {
        let (queue, _) = makeQueue()
        weak var weakDelegate: RecordingDelegate?
        do {
            let delegate = RecordingDelegate()
            weakDelegate = delegate
            queue.setDelegate(delegate)
        }
        #expect(weakDelegate == nil)
        #expect(queue.delegate == nil)
    }

    @Test func listenersCostNothingUntilSubscribed() async {
        let (queue, _) = makeQueue()
        queue.suspend()
        queue.add(.init(timeout: nil)) { $0.finish() }
        // Only what the queue's observers need (none, unless a trait's backend is bootstrapped).
        #expect(queue.core.read { $0.observedEvents } == queue.core.observerEvents && queue.core.listenerCount == 0)
        queue.resume()
        await queue.waitUntilIdle()
    }

    @Test func countsFollowTheUnits() async {
        let (queue, _) = makeQueue(maxConcurrentTasks: 1)
        #expect(queue.enqueuedCount == 0 && queue.executingCount == 0 && !queue.isBusy)
        let started = Signal()
        let first = queue.add(.init(timeout: nil)) { _ in started.signal() }
        let second = queue.add(.init(timeout: nil)) { $0.finish() }
        await started.wait()
        #expect(queue.executingCount == 1)
        #expect(queue.enqueuedCount == 1)
        #expect(queue.isBusy)
        first.finish()
        _ = await second.outcome
        await queue.waitUntilIdle()
        #expect(queue.enqueuedCount == 0 && queue.executingCount == 0 && !queue.isBusy)
    }

    @Test func deinitCancelsPendingUnitsAndLetsExecutingOnesFinish() async {
        let started = Signal()
        var executing: AsyncTask?
        var pending: [AsyncTask] = []
        weak var weakQueue: BackgroundQueue?
        do {
            let (queue, _) = makeQueue(maxConcurrentTasks: 1)
            weakQueue = queue
            executing = queue.add(.init(timeout: nil)) { _ in started.signal() }
            await started.wait()
            pending = (0..<3).map { _ in queue.add(.init(timeout: nil)) { $0.finish() } }
        }
        #expect(weakQueue == nil)
        for unit in pending {
            #expect(unit.currentOutcome?.kind == .cancelled)
        }
        #expect(executing?.currentOutcome == nil)
        executing?.finish()
        #expect(await executing?.outcome.kind == .finished)
    }

    @Test func eventStreamsFinishAfterTheQueueIsGone() async {
        var events: AsyncStream<BackgroundQueue.Event>?
        do {
            let (queue, _) = makeQueue()
            events = queue.events
        }
        var count = 0
        for await _ in events! { count += 1 }
        #expect(count == 0)
    }
}

@Suite("Background time")
struct BackgroundTimeTests {
    @Test func oneAssertionPerBusyPeriodBegunAndEndedInOrder() async {
        let (queue, provider) = makeQueue()
        for _ in 0..<5 {
            let unit = queue.add(.init(timeout: nil)) { $0.finish() }
            _ = await unit.outcome
            await queue.waitUntilIdle()
        }
        let log = provider.log
        #expect(log.count == 10)
        for (index, entry) in log.enumerated() {
            switch entry {
            case .began(let identifier, let name):
                #expect(index % 2 == 0)
                #expect(name == "test")
                #expect(log[index + 1] == .ended(identifier))
            case .ended:
                #expect(index % 2 == 1)
            }
        }
        #expect(provider.activeIdentifiers.isEmpty)
        #expect(provider.unbalancedEndCount == 0)
    }

    @Test func expirationEndsTheAssertionInsideTheHandlerAndCancelsAllByDefault() async {
        let (queue, provider) = makeQueue(maxConcurrentTasks: 1)
        let events = queue.events
        let started = Signal()
        let running = queue.add {
            started.signal()
            await suspendUntilCancelled()
        }
        let waiting = queue.add(.init(timeout: nil)) { $0.finish() }
        await started.wait()
        provider.expireAll()
        // Ended inside the handler: nothing is active right after `expireAll` returns.
        #expect(provider.activeIdentifiers.isEmpty)
        #expect(await running.outcome.kind == .cancelled)
        #expect(waiting.currentOutcome?.kind == .cancelled)
        await queue.waitUntilIdle()
        #expect(provider.unbalancedEndCount == 0)
        var sawExpiring = false
        for await event in events {
            if event.kind == .backgroundTimeExpiring { sawExpiring = true }
            if event.kind == .idle { break }
        }
        #expect(sawExpiring)
    }

    @Test func cancelPendingPolicyLetsRunningWorkFinish() async {
        let (queue, provider) = makeQueue(maxConcurrentTasks: 1, expirationPolicy: .cancelPending)
        let started = Signal()
        let running = queue.add(.init(timeout: nil)) { _ in started.signal() }
        let waiting = queue.add(.init(timeout: nil)) { $0.finish() }
        await started.wait()
        provider.expireAll()
        #expect(waiting.currentOutcome?.kind == .cancelled)
        #expect(running.currentOutcome == nil)
        running.finish()
        #expect(await running.outcome.kind == .finished)
        await queue.waitUntilIdle()
        #expect(provider.unbalancedEndCount == 0)
        #expect(provider.log.count == 2)
    }

    @Test func keepRunningPolicyCancelsNothing() async {
        let (queue, provider) = makeQueue(expirationPolicy: .keepRunning)
        let started = Signal()
        let running = queue.add(.init(timeout: nil)) { _ in started.signal() }
        await started.wait()
        provider.expireAll()
        #expect(running.currentOutcome == nil)
        running.finish()
        await queue.waitUntilIdle()
        #expect(provider.unbalancedEndCount == 0)
        // The next busy period gets a new assertion.
        let next = queue.add(.init(timeout: nil)) { $0.finish() }
        _ = await next.outcome
        await queue.waitUntilIdle()
        #expect(provider.log.count == 4)
    }

    @Test func withBackgroundTimeEndsOnReturnThrowAndCancellation() async throws {
        let provider = RecordingBackgroundTaskProvider()
        let value = withBackgroundTime(named: "sync", provider: provider) { 1 }
        #expect(value == 1)
        #expect(throws: TestError.self) {
            try withBackgroundTime(named: "throws", provider: provider) { throw TestError(code: 1) }
        }
        let asyncValue = await withBackgroundTime(named: "async", provider: provider) {
            await Task.yield()
            return 2
        }
        #expect(asyncValue == 2)
        let cancelled = Task {
            await withBackgroundTime(named: "cancelled", provider: provider) {
                await suspendUntilCancelled()
            }
        }
        cancelled.cancel()
        await cancelled.value
        #expect(provider.activeIdentifiers.isEmpty)
        #expect(provider.log.count == 8)
        #expect(provider.unbalancedEndCount == 0)
    }

    @Test func assertionExpiryRunsTheHandlerOnceAndEndIsThenANoOp() {
        let provider = RecordingBackgroundTaskProvider()
        let expirations = Recorder<Int>()
        let assertion = BackgroundTimeAssertion.begin(named: "a", provider: provider) { expirations.append(1) }
        #expect(assertion.isHeld)
        provider.expireAll()
        provider.expireAll()
        assertion.end()
        #expect(!assertion.isHeld)
        #expect(expirations.count == 1)
        #expect(provider.unbalancedEndCount == 0)
        #expect(provider.log.count == 2)
    }

    @Test func endBeforeExpiryMeansTheHandlerNeverRuns() {
        let provider = RecordingBackgroundTaskProvider()
        let expirations = Recorder<Int>()
        let assertion = BackgroundTimeAssertion.begin(named: "a", provider: provider) { expirations.append(1) }
        assertion.end()
        assertion.end()
        provider.expireAll()
        #expect(expirations.count == 0)
        #expect(provider.log.count == 2)
    }

    @Test func anAssertionDroppedWithoutEndEndsItself() {
        let provider = RecordingBackgroundTaskProvider()
        do {
            let assertion = BackgroundTimeAssertion.begin(named: "dropped", provider: provider)
            #expect(assertion.isHeld && provider.activeIdentifiers.count == 1)
        }
        #expect(provider.activeIdentifiers.isEmpty)
        #expect(provider.unbalancedEndCount == 0)
        // Its expiration handler outlives it and does nothing.
        provider.expireAll()
        #expect(provider.log.count == 2)
    }

    @Test func noopProviderKeepsCounts() async {
        let provider = NoopBackgroundTaskProvider()
        let queue = BackgroundQueue(backgroundTaskProvider: provider)
        let unit = queue.add(.init(timeout: nil)) { $0.finish() }
        _ = await unit.outcome
        await queue.waitUntilIdle()
        #expect(provider.beginCount == 1)
        #expect(provider.endCount == 1)
        #expect(provider.activeCount == 0)
    }
}
