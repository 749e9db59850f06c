import BackgroundableTesting
import Dispatch
import Foundation
import Synchronization
import Testing

@testable import Backgroundable

/// One test for each way the core broke on workloads shaped like real apps and
/// servers (issue "The core, rebuilt sound and flat"). The cost ones drive the pure
/// state machine with enough members that a scan per operation would take minutes
/// (their time limit fails them), and check that what an idle queue holds is freed.
@Suite("Core regressions")
struct CoreRegressionTests {
    typealias Machine = QueueStateMachine<ModelMember>

    /// The member that keeps ``busyMachine(limit:clock:)`` busy, executing, and its handle.
    private let holder = ModelMember(-1)
    private let holderHandle = Machine.Handle(slot: 0, ticket: 1)

    /// A machine whose background time is held, so members start as soon as rules allow.
    private func busyMachine(limit: Int = .max, clock: ManualClock = ManualClock()) -> Machine {
        var machine = Machine(limit: limit, now: { clock.now })
        var actions: Machine.ActionList = []
        _ = machine.add(.init(member: holder, name: nil, policy: .ignore, priority: 0, timeout: nil), actions: &actions)
        machine.backgroundTimeBegun(period: 1, actions: &actions)
        return machine
    }

    private func admission(
        _ member: ModelMember, name: String? = nil, policy: UniquenessPolicy = .ignore, timeout: Int64? = nil
    )
        -> Machine.Admission
    {
        .init(member: member, name: name, policy: policy, priority: 0, timeout: timeout)
    }

    // 1. A distinct timeout per unit: one heap, whatever the timeouts; freed when idle.
    @Test(.timeLimit(.minutes(1))) func distinctTimeoutsCostFlatAndLeaveNothingBehind() {
        let clock = ManualClock()
        var machine = Machine(limit: .max, now: { clock.now })
        var actions: Machine.ActionList = []
        let members = (0..<100_000).map(ModelMember.init)
        var handles: [Machine.Handle] = []
        for (index, member) in members.enumerated() {
            handles.append(machine.add(admission(member, timeout: Int64(1_000 + index)), actions: &actions)!)
            if index == 0 { machine.backgroundTimeBegun(period: 1, actions: &actions) }
        }
        while machine.drain(actions: &actions) {}
        #expect(machine.executingCount == members.count)
        #expect(machine.footprint.deadlineEntries == members.count)
        // End them in an order unrelated to their deadlines.
        for handle in handles.reversed() {
            machine.memberEnded(handle, .finished, actions: &actions)
        }
        #expect(!machine.isBusy)
        let footprint = machine.footprint
        #expect(footprint.deadlineEntries == 0 && footprint.readyEntries == 0 && footprint.names == 0)
    }

    // 2. Names used as labels: one name on every unit; each end is O(1).
    @Test(.timeLimit(.minutes(1))) func oneLabelNameOnEveryUnitCostsFlat() {
        var machine = busyMachine()
        var actions: Machine.ActionList = []
        machine.suspend()
        let members = (0..<100_000).map(ModelMember.init)
        let handles = members.map { machine.add(admission($0, name: "upload"), actions: &actions)! }
        // Ends from the middle, the front and the back of the name's group.
        for (index, handle) in handles.enumerated() where index % 3 == 1 {
            machine.memberEnded(handle, .cancelled, actions: &actions)
        }
        #expect(machine.hasLiveMember(named: "upload"))
        var dropped: Machine.ActionList = []
        let added = machine.add(admission(ModelMember(-2), name: "upload", policy: .drop), actions: &dropped)
        #expect(added == nil)
        for (index, handle) in handles.enumerated() where index % 3 != 1 {
            machine.memberEnded(handle, .cancelled, actions: &actions)
        }
        #expect(!machine.hasLiveMember(named: "upload"))
        #expect(machine.enqueuedCount == 0)
    }

    // Many short sequential groups (`scaling.manyShortSequences`): each start and end is
    // O(1), and each group's next member is ready behind every other group's first one
    // (FIFO by readiness) — the order that makes the benchmark's large run touch its
    // units in a memory order no cache holds, while the machine's work stays flat.
    @Test(.timeLimit(.minutes(1))) func manyShortGroupsCostFlatAndStartInReadinessOrder() {
        var machine = busyMachine()
        var actions: Machine.ActionList = []
        machine.suspend()
        let groups = (0..<25_000).map { group in (0..<4).map { ModelMember(group * 4 + $0) } }
        var handles: [Int: Machine.Handle] = [:]
        for group in groups {
            for (member, handle) in machine.add(
                contentsOf: group.map { admission($0) }, sequential: true, actions: &actions)
            {
                handles[member.id] = handle
            }
        }
        #expect(machine.enqueuedCount == groups.count * 4)
        actions = []
        machine.resume(actions: &actions)
        var started: [Int] = []
        func collectStarts() {
            while machine.drain(actions: &actions) {}
            for case .start(let member, _) in actions { started.append(member.id) }
            actions = []
        }
        collectStarts()
        #expect(started.count == groups.count)
        // End every started member in the order it started, as a queue's `Task`s would.
        var ended = 0
        while ended < started.count {
            machine.memberEnded(handles[started[ended]]!, .finished, actions: &actions)
            ended += 1
            collectStarts()
        }
        let readinessOrder = (0..<4).flatMap { position in groups.indices.map { $0 * 4 + position } }
        #expect(started == readinessOrder)
        machine.memberEnded(holderHandle, .finished, actions: &actions)
        #expect(!machine.isBusy)
        let footprint = machine.footprint
        #expect(footprint.readyEntries == 0 && footprint.names == 0 && footprint.lanes == 0)
    }

    @Test func aReplaceStormOnOneNameKeepsOnlyTheLast() {
        var machine = busyMachine()
        var actions: Machine.ActionList = []
        machine.suspend()
        let members = (0..<10_000).map(ModelMember.init)
        var handles: [ObjectIdentifier: Machine.Handle] = [:]
        var ended = 0
        for member in members {
            actions = []
            handles[ObjectIdentifier(member)] = machine.add(
                admission(member, name: "refresh", policy: .replace), actions: &actions)
            for case .replace(let replaced, _) in actions {
                ended += 1
                machine.memberEnded(handles[ObjectIdentifier(replaced)]!, .replaced, actions: &actions)
            }
        }
        #expect(ended == members.count - 1)
        #expect(machine.enqueuedCount == 1)
    }

    /// A newcomer whose join was refused (the work was cancelled) is admitted again after
    /// the machine forgot the cancelled primary: it is added, and the next one joins it.
    /// Forgetting a member that is not the name's newest (a newcomer joins that one)
    /// changes nothing; here, one the machine does not hold.
    @Test func aCancelledPrimaryIsForgottenForItsNameOnly() {
        var machine = busyMachine()
        var actions: Machine.ActionList = []
        let (primary, other, newcomer, next) = (ModelMember(1), ModelMember(2), ModelMember(3), ModelMember(4))
        _ = machine.add(admission(primary, name: "refresh"), actions: &actions)
        machine.forgetCancelled(other, named: "refresh")
        actions = []
        #expect(machine.add(admission(newcomer, name: "refresh", policy: .join), actions: &actions) == nil)
        #expect(actions.contains { if case .join(_, let joined, _, _) = $0 { joined === primary } else { false } })
        machine.forgetCancelled(primary, named: "refresh")
        #expect(machine.add(admission(newcomer, name: "refresh", policy: .join), actions: &actions) != nil)
        actions = []
        #expect(machine.add(admission(next, name: "refresh", policy: .join), actions: &actions) == nil)
        #expect(actions.contains { if case .join(_, let joined, _, _) = $0 { joined === newcomer } else { false } })
    }

    // 3. No start is ever lost: a drainer that gives up its role just as a member
    // arrives leaves the role free, and the arrival starts it; readers change nothing.
    @Test func aMemberArrivingAsTheDrainerStopsIsStarted() {
        var machine = busyMachine(limit: 2)
        var actions: Machine.ActionList = []
        let members = (0..<4).map(ModelMember.init)
        _ = machine.add(contentsOf: members.map { admission($0) }, sequential: false, actions: &actions)
        // The batch scheduled a drainer; it starts one (the other slot is the first
        // member's), then finds nothing more it may start, and stops.
        #expect(actions.contains { if case .spawnDrainer = $0 { true } else { false } })
        actions = []
        let first = machine.drain(actions: &actions)
        let second = machine.drain(actions: &actions)
        #expect(first && !second)
        // Readers in between, then the slot frees: the end starts the next one itself.
        _ = (machine.enqueuedCount, machine.isBusy, machine.executingCount)
        actions = []
        machine.memberEnded(holderHandle, .finished, actions: &actions)
        #expect(machine.enqueuedCount == 2)
        let started = actions.compactMap { if case .start(let member, _) = $0 { member.id } else { nil } }
        #expect(started == [1])
    }

    @Test func readersNeverStrandAUnitUnderRacingAdds() async {
        let queue = BackgroundQueue(maxConcurrentTasks: 2, backgroundTaskProvider: NoopBackgroundTaskProvider())
        let stop = Atomic(false)
        let reader = Task.detached {
            var reads = 0
            while !stop.load(ordering: .relaxed) {
                reads &+= queue.enqueuedCount + (queue.isBusy ? 1 : 0)
                await Task.yield()
            }
            return reads
        }
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<4 {
                group.addTask {
                    for _ in 0..<2_000 { queue.add(.init(timeout: nil)) { $0.finish() } }
                }
            }
        }
        await queue.waitUntilIdle()
        stop.store(true, ordering: .relaxed)
        _ = await reader.value
        #expect(queue.enqueuedCount == 0 && queue.executingCount == 0)
    }

    // 4. The caller's sequence runs before the queue's lock is taken.
    @Test func aLazySequenceThatReadsTheQueueIsIteratedOutsideItsLock() async {
        let (queue, _) = makeQueue()
        queue.suspend()
        let seen = Recorder<Int>()
        let units = (0..<3).lazy.map { _ in
            seen.append(queue.enqueuedCount)
            return AsyncTask(.init(timeout: nil)) { $0.finish() }
        }
        queue.add(contentsOf: units)
        let group = (0..<2).lazy.map { _ in
            seen.append(queue.enqueuedCount)
            return AsyncTask(.init(timeout: nil)) { $0.finish() }
        }
        queue.addSequence(group)
        #expect(seen.all == [0, 0, 0, 3, 3])
        queue.resume()
        await queue.waitUntilIdle()
    }

    // The same rule for what a caller's closure captured: its `deinit` is caller code
    // too, and may call the unit or the queue. Work that never ran is released after
    // the unit's lock; a delivered event holding the last reference to a unit is
    // released after the queue's lock.
    @Test func theCapturesOfWorkThatNeverRanAreReleasedOutsideTheUnitsLock() async {
        let released = Recorder<Bool>()
        // Ended before it ran.
        let cancelled = WeakUnitBox()
        let unit = AsyncTask(.init(timeout: nil), Self.body(whoseCaptureOnReleaseReads: cancelled, into: released))
        cancelled.unit = unit
        unit.cancel()
        #expect(released.all == [false])
        // Joined another unit: its own work never runs.
        let (queue, _) = makeQueue()
        queue.suspend()
        queue.add(.init(name: "refresh", timeout: nil, uniquenessPolicy: .join)) { $0.finish() }
        let joining = WeakUnitBox()
        let joiner = AsyncTask(
            .init(name: "refresh", timeout: nil, uniquenessPolicy: .join),
            Self.body(whoseCaptureOnReleaseReads: joining, into: released))
        joining.unit = joiner
        queue.add(joiner)
        #expect(released.all == [false, false])
        queue.resume()
        #expect(await joiner.outcome.kind == .finished)
    }

    @Test func aDeliveredEventHoldingTheLastReferenceToAUnitIsReleasedOutsideTheQueuesLock() async {
        let provider = GatedProvider()
        let queue = BackgroundQueue(
            label: "release", maxConcurrentTasks: nil, backgroundTaskProvider: provider,
            expirationPolicy: .cancelAll, observers: [IgnoringObserver()], measurer: nil)
        // A thread of its own makes the queue busy and, delivering that, waits in the
        // provider (not a thread of the pool the suite's tasks run on).
        Thread { queue.add(.init(timeout: nil)) { $0.finish() } }.start()
        await provider.entered.wait()
        // A unit that ends before it runs while that thread is the deliverer: the
        // outbox holds the last reference to it (its `onTimeout` captures the probe).
        let released = Signal()
        let probe = Capture {
            _ = queue.enqueuedCount  // takes the queue's lock
            released.signal()
        }
        do {
            let unit = AsyncTask(.init(timeout: .seconds(60), onTimeout: { _ in _ = probe })) { $0.finish() }
            queue.add(unit)
            unit.cancel()
        }
        _ = consume probe
        provider.open.signal()
        await released.wait()
        await queue.waitUntilIdle()
    }

    @Test func anAddThatBecameTheDelivererLeavesOtherThreadsEventsToATask() async {
        let observer = SteppingObserver()
        let queue = BackgroundQueue(
            label: "deliverer", maxConcurrentTasks: nil, backgroundTaskProvider: RecordingBackgroundTaskProvider(),
            expirationPolicy: .cancelAll, observers: [observer], measurer: nil)
        queue.suspend()  // the units stay enqueued: one event each
        @Sendable func unit(_ name: String) -> AsyncTask { AsyncTask(.init(name: name, timeout: nil)) { $0.finish() } }
        // The adder's add makes it the deliverer; it waits in the observer on each of its
        // deliveries, and while it waits, another unit is added: a batch of its own.
        let addReturned = Signal()
        Thread {
            Thread.current.threadDictionary[SteppingObserver.adder] = true
            queue.add(unit("0"))
            addReturned.signal()
        }
        .start()
        var delivered = observer.delivered.makeAsyncIterator()
        for next in 1...4 {
            guard let (_, onAdder) = await delivered.next() else { break }
            queue.add(unit("\(next)"))
            if onAdder { observer.open.signal() }
        }
        if let (_, onAdder) = await delivered.next(), onAdder { observer.open.signal() }
        await addReturned.wait()
        #expect(observer.deliveredOnAdder.all == ["0", "1"], "its own batch and one more, not every later one")
        queue.resume()
        await queue.waitUntilIdle()
    }

    @Test func theExpiryOfAnEndedBusyPeriodLeavesTheNextPeriodAlone() async {
        let provider = RecordingBackgroundTaskProvider()
        let observer = BlockingObserver()
        let queue = BackgroundQueue(
            label: "late-expiry", maxConcurrentTasks: nil, backgroundTaskProvider: provider,
            expirationPolicy: .cancelAll, observers: [observer], measurer: nil)
        // Period 1's unit ends on a thread of its own, which then delivers the end and
        // waits in the observer: period 1's idle is decided, not delivered, and its
        // background time is still held.
        let go = DispatchSemaphore(value: 0)
        queue.add(.init(timeout: nil)) { task in
            Thread {
                go.wait()
                task.finish()
            }
            .start()
        }
        go.signal()  // after the add returned: the test's thread no longer delivers
        await observer.entered.wait()
        // Period 2 begins; its unit waits for its own background time.
        let second = queue.add(.init(timeout: nil)) { $0.finish() }
        provider.expireAll()  // period 1's time expires, late
        observer.open.signal()
        #expect(await second.outcome.kind == .finished)
        await queue.waitUntilIdle()
        #expect(provider.activeIdentifiers.isEmpty)
    }

    @Test func anEarlierAttemptsErrorIsReleasedOutsideTheUnitsLock() async throws {
        let (queue, _) = makeQueue()
        let attempts = Lock(0)
        let read = Recorder<Int>()
        let handle = queue.add(.init(retry: .fixed(maxAttempts: 3, delay: .zero))) { () async throws -> Int in
            let attempt = attempts.withLock { count in
                count += 1
                return count
            }
            let unit = WeakUnitBox()
            unit.unit = AsyncTask.current
            // The first error is released when the second attempt fails, as the unit
            // records it instead; its `deinit` reads the unit.
            if attempt == 1 { throw ErrorReleasing(Capture { read.append(unit.unit?.attempts ?? -1) }) }
            if attempt == 2 { throw TestError(code: 2) }
            return attempt
        }
        #expect(try await handle.value == 3)
        #expect(read.all == [2])
    }

    @Test func providersReleaseWhatTheirHandlersCapturedOutsideTheirLocks() throws {
        let recording = RecordingBackgroundTaskProvider()
        let began = recording.beginBackgroundTask(
            named: "direct", expirationHandler: Self.handler(capturing: Capture { _ = recording.activeIdentifiers }))
        recording.endBackgroundTask(try #require(began))
        #expect(recording.activeIdentifiers.isEmpty)

        let continued = ContinuedProcessing(identifierPrefix: "app", title: "T", subtitle: nil) { _ in }
        let submitted = continued.beginBackgroundTask(
            named: "direct",
            expirationHandler: Self.handler(
                capturing: Capture {
                    continued.endBackgroundTask(BackgroundTaskIdentifier(rawValue: -1))  // takes its lock
                }))
        continued.endBackgroundTask(try #require(submitted))
    }

    /// An expiration handler holding the last reference to `capture`.
    private static func handler(capturing capture: Capture) -> @Sendable () -> Void {
        { withExtendedLifetime(capture) {} }
    }

    /// A callback body whose closure holds the last reference to an object that, when
    /// released, reads the unit in `box` (taking its lock) and records what it read.
    private static func body(
        whoseCaptureOnReleaseReads box: WeakUnitBox, into released: Recorder<Bool>
    ) -> @Sendable (AsyncTask) -> Void {
        let capture = Capture { released.append(box.unit?.isExecuting ?? true) }
        return { task in
            withExtendedLifetime(capture) { task.finish() }
        }
    }

    // 5. `finish()` on a unit its queue started but whose work has not run cancels it.
    @Test func finishWhileLaunchingCancelsAndTheWorkNeverRuns() {
        let queue = BackgroundQueue()
        var state = UnitState(work: .callback { _ in Issue.record("the work ran") })
        let claimed = state.claim(by: queue.core)
        let launched = state.launch() != nil
        #expect(claimed && launched && !state.isExecuting)
        let ending = state.finish()
        #expect(ending?.outcome.kind == .cancelled)
        let work = state.takeWork { 0 }
        #expect(work == nil)
        withExtendedLifetime(queue) {}
    }

    // 6. Background time is held before any unit of the busy period starts.
    @Test func noUnitStartsBeforeItsBusyPeriodHoldsBackgroundTime() async {
        let provider = RecordingBackgroundTaskProvider()
        let queue = BackgroundQueue(backgroundTaskProvider: provider)
        let heldWhenStarted = Recorder<Bool>()
        for _ in 0..<3 {
            for _ in 0..<20 {
                queue.add(.init(timeout: nil)) { task in
                    heldWhenStarted.append(!provider.activeIdentifiers.isEmpty)
                    task.finish()
                }
            }
            await queue.waitUntilIdle()
        }
        #expect(heldWhenStarted.all.count == 60)
        #expect(heldWhenStarted.all.allSatisfy { $0 })
        // In the machine: the busy transition starts nothing until its time is begun.
        var machine = Machine(limit: .max, now: { 0 })
        var actions: Machine.ActionList = []
        _ = machine.add(admission(ModelMember(1)), actions: &actions)
        #expect(!actions.contains { if case .start = $0 { true } else { false } })
        actions = []
        machine.backgroundTimeBegun(period: 1, actions: &actions)
        #expect(actions.contains { if case .start = $0 { true } else { false } })
    }

    // 7. One unit on an idle queue is started by the adding thread: no drainer task.
    @Test func aUnitOnAnIdleQueueStartsWithoutADrainer() {
        var machine = Machine(limit: .max, now: { 0 })
        var actions: Machine.ActionList = []
        _ = machine.add(admission(ModelMember(1)), actions: &actions)
        machine.backgroundTimeBegun(period: 1, actions: &actions)
        #expect(!actions.contains { if case .spawnDrainer = $0 { true } else { false } })
    }

    // 8. The bodies of one name cancelled again and again are swept: what the table
    // holds is bounded by the bodies still running, not by the cancellations so far.
    /// A unit cancelled after its queue claimed it and before the queue admitted it
    /// (between the two, on a busy queue with nothing executing, the admission may
    /// start it on the adding thread) is reported ended, never started: its work never
    /// ran.
    @Test func aUnitCancelledBeforeItsAdmissionIsNeverReportedStarted() async {
        let (queue, _) = makeQueue()
        let events = queue.events
        // Keeps the queue busy, holding its background time, with nothing executing.
        let delayed = queue.add(.init(timeout: nil, notBefore: .after(.seconds(3600)))) { $0.finish() }
        let probe = queue.add(.init(timeout: nil)) { $0.finish() }
        _ = await probe.outcome
        // Waiting for a state, not for time: the drainer that started the probe stops.
        while queue.core.read({ $0.isDrainerScheduled }) { await Task.yield() }
        let unit = AsyncTask(.init(timeout: nil)) { _ in Issue.record("the cancelled unit ran") }
        #expect(unit.state.withLock { $0.claim(by: queue.core) })
        unit.cancel()
        queue.core.add(claimed: unit)
        #expect(unit.currentOutcome?.kind == .cancelled)
        delayed.cancel()
        var reported: [String] = []
        for await event in events {
            if event.unit === unit { reported.append("\(event.kind)") }
            if event.kind == .idle { break }
        }
        #expect(reported == ["enqueued", "ended"])
    }

    /// The thread that performs a transition starts its members before it delivers its
    /// notifications: a watcher (or a delegate, a listener, a metrics backend) that is
    /// slow, or that waits for the member, never holds back that member's start.
    @Test func aTransitionStartsItsMembersBeforeItDelivers() async {
        let (queue, _) = makeQueue(maxConcurrentTasks: 1)
        let firstStarted = Signal()
        let first = queue.add(.init(timeout: nil)) { _ in firstStarted.signal() }
        await firstStarted.wait()
        let secondStarted = DispatchSemaphore(value: 0)
        queue.add(.init(timeout: nil)) { unit in
            secondStarted.signal()
            unit.finish()
        }
        let armed = Atomic(false)
        let registered = Signal()
        let waited = Recorder<Bool>()
        queue.core.watchProgress(names: 0) { _ in
            guard armed.load(ordering: .acquiring) else { return registered.signal() }
            guard waited.count == 0 else { return }
            // On the thread that ended `first`: the second unit starts meanwhile.
            waited.append(secondStarted.wait(timeout: .now() + 30) == .success)
        }
        await registered.wait()
        armed.store(true, ordering: .releasing)
        // From a Dispatch thread, which the watcher then blocks: never the cooperative
        // pool, where the second unit (and the rest of the suite) runs.
        DispatchQueue.global().async { first.finish() }
        await queue.waitUntilIdle()
        #expect(waited.all == [true], "the second unit's start waited for the delivery")
    }

    /// A progress model with names (``BackgroundQueueActivity``) reads the first executing
    /// members after every end. Behind one long-running member, in a first-in, first-out
    /// run, every member that ended had started before the ones read: a reading that
    /// passed them again would be O(n) per end (minutes here).
    @Test(.timeLimit(.minutes(1))) func readingTheFirstExecutingMembersAfterEachEndCostsFlat() {
        var machine = busyMachine()
        var actions: Machine.ActionList = []
        machine.watchProgress(names: true, actions: &actions)
        let members = (0..<100_000).map(ModelMember.init)
        let handles = members.map { machine.add(admission($0), actions: &actions)! }
        while machine.drain(actions: &actions) {}
        actions.removeAll()
        for (index, handle) in handles.enumerated() {
            machine.memberEnded(handle, .finished, actions: &actions)
            actions.removeAll()
            let reading = machine.readProgress(names: 8)
            #expect(reading.executingMembers.first === holder)
            if index + 1 < members.count {
                #expect(reading.executingMembers.dropFirst().first === members[index + 1])
            }
        }
    }

    @Test func lingeringBodiesOfOneNameAreSwept() {
        final class Returned: LingeringBody {
            var hasReturned: Bool { true }
        }
        var lingering = LingeringBodies()
        for _ in 0..<1_000 { lingering.add(Returned(), named: "request") }
        #expect(lingering.count < 16)
        #expect(lingering.running(named: "request").isEmpty && lingering.isEmpty && lingering.count == 0)
    }
}

/// Runs `onRelease` in its `deinit`: what a caller's closure captured.
private final class Capture: Sendable {
    let onRelease: @Sendable () -> Void

    init(_ onRelease: @escaping @Sendable () -> Void) { self.onRelease = onRelease }

    deinit { onRelease() }
}

/// A unit, held weakly, set once the unit exists.
private final class WeakUnitBox: @unchecked Sendable {
    /// Set before the unit ends, read by the release it causes: never concurrently.
    weak var unit: AsyncTask?
}

/// Holds the thread that begins background time until `open` is signalled; `entered`
/// says it is there.
private final class GatedProvider: BackgroundTaskProvider {
    let entered = Signal()
    let open = DispatchSemaphore(value: 0)

    func beginBackgroundTask(named name: String, expirationHandler: @escaping @Sendable () -> Void)
        -> BackgroundTaskIdentifier?
    {
        entered.signal()
        open.wait()  // The test's own thread, never a cooperative one.
        return nil
    }

    func endBackgroundTask(_ identifier: BackgroundTaskIdentifier) {}
}

/// Holds the thread that delivers the first `ended` event until `open` is signalled;
/// `entered` says it is there.
private final class BlockingObserver: QueueObserver {
    let entered = Signal()
    let open = DispatchSemaphore(value: 0)
    var events: ObservedEvents { .ended }

    func observe(_ event: QueueEvent<AsyncTask>) {
        guard !entered.isSignalled else { return }
        entered.signal()
        open.wait()  // A thread of the test's own, never a cooperative one.
    }
}

/// Reports each `enqueued` event it hears (the unit's name, and whether the thread marked
/// ``adder`` delivers it), and on that thread waits for `open` after each one.
private final class SteppingObserver: QueueObserver {
    static let adder = "adder"
    let open = DispatchSemaphore(value: 0)
    let deliveredOnAdder = Recorder<String>()
    let (delivered, report) = AsyncStream<(String, Bool)>.makeStream()
    var events: ObservedEvents { .enqueued }

    func observe(_ event: QueueEvent<AsyncTask>) {
        guard case .enqueued(let unit) = event else { return }
        let onAdder = Thread.current.threadDictionary[Self.adder] != nil
        if onAdder { deliveredOnAdder.append(unit.name ?? "") }
        report.yield((unit.name ?? "", onAdder))
        if onAdder { open.wait() }  // A thread of the test's own, never a cooperative one.
    }
}

/// Asks its queue for `ended` events, and keeps none of them.
private struct IgnoringObserver: QueueObserver {
    var events: ObservedEvents { .ended }
    func observe(_ event: QueueEvent<AsyncTask>) {}
}

/// An error holding a caller's object, as errors with a class payload do.
private struct ErrorReleasing: Error {
    let payload: Capture

    init(_ payload: Capture) { self.payload = payload }
}
