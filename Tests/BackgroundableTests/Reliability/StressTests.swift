import BackgroundableTesting
import Dispatch
import Foundation
import Synchronization
import Testing

@testable import Backgroundable

/// Randomised stress with invariants.
///
/// Each round drives three ``BackgroundQueue``s (limits 1, 2 and unbounded, each
/// randomly with or without suspension) and one ``BackgroundOperationQueue`` with a
/// random mix generated from a seed: adds with random names, policies, priorities and
/// timeouts (ms), lanes, start times and retries, batches and sequential groups, `finish()` and `cancel()` from other
/// threads at random moments, `cancelAll()`, suspend / resume (extra resumes included),
/// Operation-bridge units (`BackgroundQueue.add(_ operation:)`, an `AsyncOperation`
/// wrapped in a unit, `AsyncOperation`s on the operation queue). After every round it
/// checks the invariants listed in ``Round/check()``.
///
/// - `BACKGROUNDABLE_STRESS_SEED`: replay one seed (printed in every failure).
/// - `BACKGROUNDABLE_STRESS_OPERATIONS`: total driver operations (default 30,000: a
///   few seconds in debug and under the thread sanitizer); rounds hold at most 600.
@Suite("Stress")
struct StressTests {
    static let operationsPerRound = 600

    @Test(.timeLimit(.minutes(60)))
    func randomMixKeepsEveryInvariant() async throws {
        let environment = ProcessInfo.processInfo.environment
        let baseSeed =
            environment["BACKGROUNDABLE_STRESS_SEED"].flatMap { UInt64($0) } ?? UInt64.random(in: 1..<UInt64.max)
        let total = environment["BACKGROUNDABLE_STRESS_OPERATIONS"].flatMap { Int($0) } ?? 30_000
        var remaining = total
        var round: UInt64 = 0
        let clock = ContinuousClock()
        let start = clock.now
        while remaining > 0 {
            let operations = min(remaining, Self.operationsPerRound)
            // Round n uses seed base + n: a failure names the seed that replays just that round.
            let seed = baseSeed &+ round
            let failures = await Round(seed: seed, operations: operations).run()
            #expect(
                failures.isEmpty,
                "stress seed \(seed) (replay: BACKGROUNDABLE_STRESS_SEED=\(seed) BACKGROUNDABLE_STRESS_OPERATIONS=\(operations)): \(failures.prefix(20).joined(separator: "; "))"
            )
            if !failures.isEmpty { break }
            remaining -= operations
            round += 1
        }
        if total >= 100_000 {
            print("stress: \(total) operations in \(round) rounds from seed \(baseSeed), \(clock.now - start)")
        }
    }
}

// MARK: - Probes

/// What a test saw of one unit (or one `AsyncOperation`): body runs, endings, outcome.
private final class Probe: Sendable {
    struct State {
        var bodyRuns = 0
        /// Global order in which bodies started, within the round.
        var bodyStart: Int?
        var endings = 0
        var outcome: AsyncTask.Outcome.Kind?
        var awaited: AsyncTask.Outcome.Kind?
        /// `finish()` / `cancel()` from outside the body, or a `cancelAll()`, may have hit it.
        var touched = false
    }

    let id: Int
    let queueIndex: Int
    /// Position among the round's plain adds to `queueIndex` (FIFO check); `nil` for
    /// sequential-group members.
    let order: Int?
    let priority: UInt8
    let nonPositiveTimeout: Bool
    /// How often its body may run (more than once only with a retry policy).
    let maxAttempts: Int
    let state = Lock(State())

    init(
        id: Int, queueIndex: Int, order: Int?, priority: TaskPriority?, nonPositiveTimeout: Bool, maxAttempts: Int = 1
    ) {
        self.maxAttempts = maxAttempts
        self.id = id
        self.queueIndex = queueIndex
        self.order = order
        self.priority = (priority ?? .medium).rawValue
        self.nonPositiveTimeout = nonPositiveTimeout
    }

    func bodyRan(_ counter: Shared) {
        let index = counter.bodyStarts.add(1, ordering: .relaxed).newValue
        state.withLock {
            $0.bodyRuns += 1
            if $0.bodyStart == nil { $0.bodyStart = index }
        }
    }

    func touch() { state.withLock { $0.touched = true } }

    var snapshot: State { state.withLock { $0 } }
}

/// Counts endings and signals when every expected one has arrived.
private final class EndingGate: Sendable {
    private let state = Lock<(expected: Int, seen: Int, sealed: Bool)>((0, 0, false))
    let allEnded = Signal()

    func expect() { state.withLock { $0.expected += 1 } }

    func ended() {
        let done = state.withLock { state -> Bool in
            state.seen += 1
            return state.sealed && state.seen >= state.expected
        }
        if done { allEnded.signal() }
    }

    /// No more units will be created.
    func seal() {
        let done = state.withLock { state -> Bool in
            state.sealed = true
            return state.seen >= state.expected
        }
        if done { allEnded.signal() }
    }
}

/// Something the chaos threads may `finish()` or `cancel()`.
private enum Target: Sendable {
    case unit(AsyncTask, Probe)
    case operation(AsyncOperation, Probe)
}

/// Targets handed to the chaos threads, one action each.
private final class ChaosInbox: Sendable {
    private let targets = Lock<(items: [Target], stopped: Bool)>(([], false))
    private let semaphore = DispatchSemaphore(value: 0)

    func push(_ target: Target) {
        targets.withLock { $0.items.append(target) }
        semaphore.signal()
    }

    func stop(threads: Int) {
        targets.withLock { $0.stopped = true }
        for _ in 0..<threads { semaphore.signal() }
    }

    /// Blocks until a target or the stop; `nil` means stop.
    func next() -> Target? {
        semaphore.wait()
        return targets.withLock { state -> Target? in
            if !state.items.isEmpty { return state.items.removeFirst() }
            return nil  // stopped
        }
    }
}

// MARK: - One queue under test

private final class QueueUnderTest: Sendable {
    let index: Int
    let limit: Int?
    let suspends: Bool
    let queue: BackgroundQueue
    let provider = RecordingBackgroundTaskProvider()
    let delegate = RecordingDelegate()
    let collected: Task<[BackgroundQueue.Event], Never>
    static let markerName = "\u{0}stress-marker"

    init(index: Int, limit: Int?, suspends: Bool) {
        self.index = index
        self.limit = limit
        self.suspends = suspends
        queue = BackgroundQueue(name: "stress-\(index)", maxConcurrentTasks: limit, backgroundTaskProvider: provider)
        queue.setDelegate(delegate)
        let events = queue.events
        collected = Task {
            var all: [BackgroundQueue.Event] = []
            var sawMarker = false
            for await event in events {
                all.append(event)
                if event.kind == .ended, event.unit?.name == Self.markerName { sawMarker = true }
                if sawMarker, event.kind == .idle { break }
            }
            return all
        }
    }

    /// Adds a marker unit after everything ended, then returns every event up to the
    /// idle that follows it.
    func events() async -> [BackgroundQueue.Event] {
        queue.add(.init(name: Self.markerName, timeout: nil)) { $0.finish() }
        let events = await collected.value
        await queue.waitUntilIdle()
        return events
    }
}

// MARK: - One round

private struct Round {
    let seed: UInt64
    let operations: Int

    func run() async -> [String] {
        var rng = SplitMix64(seed: seed)
        let queues = [
            QueueUnderTest(index: 0, limit: 1, suspends: rng.chance(50)),
            QueueUnderTest(index: 1, limit: 2, suspends: rng.chance(50)),
            QueueUnderTest(index: 2, limit: nil, suspends: rng.chance(50)),
        ]
        let operationQueue = BackgroundOperationQueue(
            name: "stress-operations", backgroundTaskProvider: RecordingBackgroundTaskProvider())
        let operationDelegate = RecordingOperationQueueDelegate()
        operationQueue.delegate = operationDelegate
        if rng.chance(50) { operationQueue.maxConcurrentOperationCount = 1 }

        let shared = Shared()
        let chaosThreads = 2
        var threadsDone: [Signal] = []
        for thread in 0..<chaosThreads {
            let done = Signal()
            threadsDone.append(done)
            let threadSeed = seed ^ (0xC0FFEE &* UInt64(thread + 1))
            let inbox = shared.inbox
            Thread.detachNewThread {
                var chaos = SplitMix64(seed: threadSeed)
                while let target = inbox.next() {
                    let finish = chaos.chance(50)
                    switch target {
                    case .unit(let unit, let probe):
                        probe.touch()
                        if finish { unit.finish() } else { unit.cancel() }
                    case .operation(let operation, let probe):
                        probe.touch()
                        if finish { operation.finish() } else { operation.cancel() }
                    }
                }
                done.signal()
            }
        }

        // The driver: one thread, so the adds of one queue have a single, known order.
        let driverDone = Signal()
        let driverSeed = rng.next()
        let operations = operations
        let awaiters = Lock<[Task<Void, Never>]>([])
        Thread.detachNewThread {
            var driver = Driver(
                rng: SplitMix64(seed: driverSeed), queues: queues, operationQueue: operationQueue, shared: shared)
            for _ in 0..<operations { driver.step(awaiters: awaiters) }
            driver.balanceSuspensions()
            driverDone.signal()
        }
        await driverDone.wait()
        shared.inbox.stop(threads: chaosThreads)
        for done in threadsDone { await done.wait() }
        shared.gate.seal()

        var failures: [String] = []
        if !(await Self.withinDeadline { await shared.gate.allEnded.wait() }) {
            let stuck = shared.probes.all.filter { $0.snapshot.endings == 0 }.map(\.id)
            failures.append("units never reached an outcome within 30 s: \(stuck.prefix(20))")
            return failures
        }
        let pendingAwaiters = awaiters.withLock { $0 }
        if !(await Self.withinDeadline { for task in pendingAwaiters { await task.value } }) {
            return ["an `await unit.outcome` never returned"]
        }
        for tested in queues {
            if !(await Self.withinDeadline { await tested.queue.waitUntilIdle() }) {
                return [
                    "queue \(tested.index) never became idle: \(tested.queue.enqueuedCount) enqueued, \(tested.queue.executingCount) executing, busy \(tested.queue.isBusy)"
                ]
            }
        }
        if !(await Self.withinDeadline { await operationQueue.waitUntilIdle() }) {
            return ["the operation queue never became idle: \(operationQueue.operationCount) operations"]
        }
        let eventsBox = Recorder<[BackgroundQueue.Event]>()
        for tested in queues {
            if !(await Self.withinDeadline { eventsBox.append(await tested.events()) }) {
                return ["queue \(tested.index): the events up to the marker's idle never arrived"]
            }
        }
        let eventsByQueue = eventsBox.all
        // The delegates hear busy / idle on the main actor, after the transitions.
        await mainActorDeliveries()
        failures += Check(
            queues: queues, events: eventsByQueue, probes: shared.probes.all, units: shared.units.all,
            groups: shared.groups.all, lanes: shared.lanes.all,
            operationQueue: operationQueue, operationDelegate: operationDelegate
        ).run()
        if ProcessInfo.processInfo.environment["BACKGROUNDABLE_STRESS_VERBOSE"] != nil {
            var outcomes: [String: Int] = [:]
            var ran = 0
            for probe in shared.probes.all {
                let state = probe.snapshot
                outcomes["\(state.outcome.map { "\($0)" } ?? "none")", default: 0] += 1
                ran += state.bodyRuns
            }
            print(
                "stress seed \(seed): \(shared.probes.count) units, \(ran) bodies ran, outcomes \(outcomes.sorted { $0.key < $1.key }), events \(eventsByQueue.map(\.count))"
            )
        }
        return failures
    }

    /// `true` when `body` returned within 30 seconds (a hang detector, not a wait for
    /// ordering). `body` runs in a task of its own that nothing here waits for once the
    /// 30 seconds have passed: a hang that ignores cancellation (a continuation nobody
    /// resumes) still becomes a failure that names the seed.
    static func withinDeadline(_ body: @escaping @Sendable () async -> Void) async -> Bool {
        await withCheckedContinuation { continuation in
            let first = FirstAnswer(continuation)
            let timer = Task {
                do { try await Task.sleep(for: .seconds(30)) } catch { return }
                first.resume(returning: false)
            }
            Task {
                await body()
                first.resume(returning: true)
                timer.cancel()
            }
        }
    }
}

/// Resumes a continuation with the first answer it is given; later ones are ignored.
private final class FirstAnswer: Sendable {
    private let continuation: Lock<CheckedContinuation<Bool, Never>?>

    init(_ continuation: CheckedContinuation<Bool, Never>) {
        self.continuation = Lock(continuation)
    }

    func resume(returning answer: Bool) {
        continuation.withLock { $0.take() }?.resume(returning: answer)
    }
}

/// State shared by the driver, the chaos threads and the checks.
private final class Shared: Sendable {
    let inbox = ChaosInbox()
    let gate = EndingGate()
    let probes = Recorder<Probe>()
    /// Every unit with its probe; keeps the units alive, so identities stay unique.
    let units = Recorder<(AsyncTask, Probe)>()
    let groups = Recorder<[Probe]>()
    /// Units added with a lane, in the order they were added: (queue, lane, probe).
    let lanes = Recorder<(Int, String, Probe)>()
    let bodyStarts = Atomic<Int>(0)
    let ids = Atomic<Int>(0)
}

// MARK: - The driver

private struct Driver {
    var rng: SplitMix64
    let queues: [QueueUnderTest]
    let operationQueue: BackgroundOperationQueue
    let shared: Shared
    var suspensions: [Int]
    var operationQueueSuspensions = 0
    var plainOrders: [Int]
    var live: [(AsyncTask, Probe)] = []

    init(rng: SplitMix64, queues: [QueueUnderTest], operationQueue: BackgroundOperationQueue, shared: Shared) {
        self.rng = rng
        self.queues = queues
        self.operationQueue = operationQueue
        self.shared = shared
        suspensions = Array(repeating: 0, count: queues.count)
        plainOrders = Array(repeating: 0, count: queues.count)
    }

    mutating func step(awaiters: borrowing Lock<[Task<Void, Never>]>) {
        let queueIndex = Int.random(in: 0..<queues.count, using: &rng)
        let tested = queues[queueIndex]
        let roll = Int.random(in: 0..<100, using: &rng)
        switch roll {
        case 0..<50:
            let (unit, probe) = makeUnit(queueIndex: queueIndex, plain: true)
            tested.queue.add(unit)
            afterAdd(unit, probe, awaiters: awaiters)
        case 50..<56:
            let batch = (0..<Int.random(in: 2...4, using: &rng)).map { _ in
                makeUnit(queueIndex: queueIndex, plain: true)
            }
            tested.queue.add(contentsOf: batch.map(\.0))
            for (unit, probe) in batch { afterAdd(unit, probe, awaiters: awaiters) }
        case 56..<64:
            let group = (0..<Int.random(in: 2...5, using: &rng)).map { _ in
                makeUnit(queueIndex: queueIndex, plain: false)
            }
            shared.groups.append(group.map(\.1))
            tested.queue.addSequence(group.map(\.0))
            for (unit, probe) in group { afterAdd(unit, probe, awaiters: awaiters) }
        case 64..<68:
            addOperationToOperationQueue()
        case 68..<72:
            // Lanes and start times: not plain adds (they may start out of FIFO order).
            let lane = rng.chance(70) ? rng.pick(Self.lanes) : nil
            let delay: Duration? = rng.chance(50) ? .microseconds(Int.random(in: -100...3_000, using: &rng)) : nil
            // Retries apply to the shapes whose async body throws; the others ignore them.
            let retry: RetryPolicy? =
                rng.chance(40)
                ? .fixed(
                    maxAttempts: Int.random(in: 2...4, using: &rng),
                    delay: .microseconds(Int.random(in: 0...500, using: &rng)))
                : nil
            let (unit, probe) = makeUnit(
                queueIndex: queueIndex, plain: false, lane: lane, delay: delay, retry: retry)
            if let lane { shared.lanes.append((queueIndex, lane, probe)) }
            tested.queue.add(unit)
            afterAdd(unit, probe, awaiters: awaiters)
        case 72..<80:
            // finish() / cancel() right here, on the driver thread.
            guard !live.isEmpty else { return }
            let (unit, probe) = live[Int.random(in: 0..<live.count, using: &rng)]
            probe.touch()
            if rng.chance(50) { unit.finish() } else { unit.cancel() }
        case 80..<82:
            for (_, probe) in live where probe.queueIndex == queueIndex { probe.touch() }
            tested.queue.cancelAll()
        case 82..<88:
            guard tested.suspends else { return }
            if suspensions[queueIndex] < 3, rng.chance(55) {
                tested.queue.suspend()
                suspensions[queueIndex] += 1
            } else {
                tested.queue.resume()  // may be an extra resume: ignored
                suspensions[queueIndex] = max(0, suspensions[queueIndex] - 1)
            }
        case 88..<90:
            if operationQueueSuspensions < 2, rng.chance(55) {
                operationQueue.isSuspended = true
                operationQueueSuspensions += 1
            } else {
                operationQueue.isSuspended = false
                operationQueueSuspensions = max(0, operationQueueSuspensions - 1)
            }
        default:
            sched_yield()
        }
        if live.count > 256 { live.removeFirst(128) }
    }

    mutating func balanceSuspensions() {
        for index in queues.indices {
            for _ in 0..<suspensions[index] { queues[index].queue.resume() }
            suspensions[index] = 0
        }
        for _ in 0..<operationQueueSuspensions { operationQueue.isSuspended = false }
        operationQueueSuspensions = 0
    }

    private mutating func afterAdd(_ unit: AsyncTask, _ probe: Probe, awaiters: borrowing Lock<[Task<Void, Never>]>) {
        live.append((unit, probe))
        if rng.chance(12) { shared.inbox.push(.unit(unit, probe)) }
        if rng.chance(5) {
            let task = Task {
                let outcome = await unit.outcome
                probe.state.withLock { $0.awaited = outcome.kind }
            }
            awaiters.withLock { $0.append(task) }
        }
    }

    private mutating func nextID() -> Int { shared.ids.add(1, ordering: .relaxed).newValue }

    private static let names = ["a", "b", "c", "d", "", "e"]
    private static let lanes = ["x", "y"]

    private mutating func randomName() -> String? {
        rng.chance(40) ? nil : rng.pick(Self.names)
    }

    private mutating func randomPolicy() -> UniquenessPolicy {
        rng.pick([.ignore, .ignore, .drop, .replace, .join])
    }

    /// A unit of one of ten shapes, registered with a probe that counts its body runs
    /// and its endings; in `lane` and delayed by `delay` when given.
    private mutating func makeUnit(
        queueIndex: Int, plain: Bool, lane: String? = nil, delay: Duration? = nil, retry: RetryPolicy? = nil
    ) -> (AsyncTask, Probe) {
        let shape = Int.random(in: 0..<100, using: &rng)
        let endsByItself = !(shape >= 90)  // shapes 90..<100 only end by timeout or cancellation
        var timeout: Duration?
        switch Int.random(in: 0..<100, using: &rng) {
        case 0..<3: timeout = rng.chance(50) ? .zero : .milliseconds(-1)
        case 3..<40: timeout = .milliseconds(Int.random(in: 1...30, using: &rng))
        case 40..<70: timeout = AsyncTask.defaultTimeout
        default: timeout = nil
        }
        if !endsByItself, timeout == nil || timeout! > .milliseconds(5) {
            timeout = .milliseconds(Int.random(in: 1...5, using: &rng))
        }
        let priority = rng.pick([nil, nil, TaskPriority.low, .high])
        let order: Int? = plain ? plainOrders[queueIndex] : nil
        if plain { plainOrders[queueIndex] += 1 }
        let probe = Probe(
            id: nextID(), queueIndex: queueIndex, order: order, priority: priority,
            nonPositiveTimeout: timeout.map { $0 <= .zero } ?? false, maxAttempts: retry?.maxAttempts ?? 1)
        let name = randomName()
        let options = AsyncTask.Options(
            name: name, timeout: timeout, priority: priority, uniquenessPolicy: randomPolicy(),
            notBefore: delay.map { .after($0) }, lane: lane, retry: retry)
        let counter = shared
        let unit: AsyncTask
        switch shape {
        case 0..<20:
            unit = AsyncTask(options) { task in
                probe.bodyRan(counter)
                task.finish()
            }
        case 20..<35:
            unit = AsyncTask(options) { task in
                probe.bodyRan(counter)
                DispatchQueue.global().async { task.finish() }
            }
        case 35..<42:
            unit = AsyncTask(options) { task in
                probe.bodyRan(counter)
                DispatchQueue.global().async { task.finish() }
                task.finish()
                task.cancel()
            }
        case 42..<60:
            unit =
                AsyncTaskHandle(options) {
                    probe.bodyRan(counter)
                    return probe.id
                }.task
        case 60..<68:
            unit =
                AsyncTaskHandle(options) {
                    probe.bodyRan(counter)
                    throw TestError(code: probe.id)
                }.task
        case 68..<78:
            unit =
                AsyncTaskHandle(options) {
                    probe.bodyRan(counter)
                    await Task.yield()
                    return probe.id
                }.task
        case 78..<86:
            let operation = BlockOperation { probe.bodyRan(counter) }
            operation.name = name
            unit = AsyncTask(operation: operation, options: options)
        case 86..<90:
            let operation = AsyncOperation(name: name) { operation in
                probe.bodyRan(counter)
                operation.finish()
            }
            unit = AsyncTask(operation: operation, options: options)
        case 90..<95:
            unit = AsyncTask(options) { _ in
                probe.bodyRan(counter)
            }
        default:
            unit =
                AsyncTaskHandle(options) {
                    probe.bodyRan(counter)
                    await suspendUntilCancelled()
                }.task
        }
        register(unit, probe)
        return (unit, probe)
    }

    private func register(_ unit: AsyncTask, _ probe: Probe) {
        shared.probes.append(probe)
        shared.units.append((unit, probe))
        shared.gate.expect()
        let gate = shared.gate
        unit.whenEnded { outcome in
            probe.state.withLock {
                $0.endings += 1
                $0.outcome = outcome.kind
            }
            gate.ended()
        }
    }

    private mutating func addOperationToOperationQueue() {
        let probe = Probe(id: nextID(), queueIndex: -1, order: nil, priority: nil, nonPositiveTimeout: false)
        let counter = shared
        let later = rng.chance(50)
        let operation = AsyncOperation(
            name: randomName(), timeout: rng.chance(30) ? 0.005 : 10, uniquenessPolicy: randomPolicy()
        ) { operation in
            probe.bodyRan(counter)
            if later { DispatchQueue.global().async { operation.finish() } } else { operation.finish() }
        }
        register(operation.task, probe)
        operationQueue.addOperation(operation)
        if rng.chance(15) { shared.inbox.push(.operation(operation, probe)) }
    }
}

// MARK: - The invariants

private struct Check {
    let queues: [QueueUnderTest]
    let events: [[BackgroundQueue.Event]]
    let probes: [Probe]
    let units: [(AsyncTask, Probe)]
    let groups: [[Probe]]
    let lanes: [(Int, String, Probe)]
    let operationQueue: BackgroundOperationQueue
    let operationDelegate: RecordingOperationQueueDelegate

    var probeOfUnit: [ObjectIdentifier: Probe] {
        Dictionary(uniqueKeysWithValues: units.map { (ObjectIdentifier($0.0), $0.1) })
    }

    var unitOfProbe: [Int: AsyncTask] {
        Dictionary(uniqueKeysWithValues: units.map { ($0.1.id, $0.0) })
    }

    func run() -> [String] {
        var failures: [String] = []
        let snapshots = Dictionary(uniqueKeysWithValues: probes.map { ($0.id, $0.snapshot) })

        // Every unit reached exactly one outcome; no body ran twice; dropped units and
        // units with a timeout of zero or less never ran; awaiters saw the outcome.
        for probe in probes {
            let state = snapshots[probe.id]!
            if state.endings != 1 { failures.append("unit \(probe.id) ended \(state.endings) times") }
            if state.bodyRuns > probe.maxAttempts {
                failures.append("unit \(probe.id) body ran \(state.bodyRuns) times")
            }
            if state.outcome == .dropped, state.bodyRuns != 0 { failures.append("dropped unit \(probe.id) ran") }
            if probe.nonPositiveTimeout, probe.queueIndex >= 0, state.bodyRuns != 0 {
                failures.append("unit \(probe.id) with a timeout <= 0 ran")
            }
            if let awaited = state.awaited, awaited != state.outcome {
                failures.append("unit \(probe.id): awaited \(awaited), outcome \(String(describing: state.outcome))")
            }
        }

        for (tested, events) in zip(queues, events) {
            failures += checkQueue(tested, events, snapshots)
        }

        // The operation queue: every operation finished; busy / idle and assertions alternate.
        if operationQueue.isBusy { failures.append("operation queue still busy") }
        failures += alternation(
            operationDelegate.calls.all.map { $0 == .willStart }, label: "operation queue delegate")
        if let provider = operationQueue.backgroundTaskProvider as? RecordingBackgroundTaskProvider,
            !isBalanced(provider)
        {
            failures.append("operation queue assertions unbalanced: \(provider.log.suffix(6))")
        }
        return failures
    }

    private func alternation(_ beginsAndEnds: [Bool], label: String) -> [String] {
        for (index, isBegin) in beginsAndEnds.enumerated() where isBegin != (index % 2 == 0) {
            return ["\(label) out of order at \(index): \(beginsAndEnds.map { $0 ? "busy" : "idle" }.suffix(8))"]
        }
        return beginsAndEnds.count % 2 == 0 ? [] : ["\(label) ends busy"]
    }

    private func checkQueue(
        _ tested: QueueUnderTest,
        _ events: [BackgroundQueue.Event],
        _ snapshots: [Int: Probe.State]
    ) -> [String] {
        var failures: [String] = []
        let label = "queue \(tested.index) (limit \(tested.limit.map(String.init) ?? "none"))"
        let queue = tested.queue
        if queue.enqueuedCount != 0 || queue.executingCount != 0 || queue.isBusy {
            failures.append("\(label) not idle: \(queue.enqueuedCount) enqueued, \(queue.executingCount) executing")
        }

        // Busy / idle: the events, the delegate and the assertions alternate and balance.
        var busyIdle: [Bool] = []
        for event in events {
            if event.kind == .busy { busyIdle.append(true) }
            if event.kind == .idle { busyIdle.append(false) }
        }
        failures += alternation(busyIdle, label: "\(label) events")
        let delegateCalls = tested.delegate.calls.all
        failures += alternation(delegateCalls.map { $0 == "willStart" }, label: "\(label) delegate")
        if !isBalanced(tested.provider) {
            failures.append("\(label) assertions unbalanced: \(tested.provider.log.suffix(6))")
        }
        let begins = tested.provider.log.filter { if case .began = $0 { true } else { false } }.count
        if begins * 2 != busyIdle.count || delegateCalls.count != busyIdle.count {
            failures.append(
                "\(label): \(begins) assertions, \(delegateCalls.count) delegate calls, \(busyIdle.count) busy/idle events"
            )
        }

        // Per unit, in the queue's own order: enqueued, started and ended at most once,
        // the limit never exceeded, FIFO among equal priorities, groups in sequence.
        var enqueued: Set<ObjectIdentifier> = []
        /// Units between two attempts: the only ones that may start again.
        var betweenAttempts: Set<ObjectIdentifier> = []
        var escalated: Set<ObjectIdentifier> = []
        var started: [ObjectIdentifier: Int] = [:]
        var ended: [ObjectIdentifier: Int] = [:]
        var executing = 0
        var maximum = 0
        let probeOfUnit = probeOfUnit
        for (position, event) in events.enumerated() {
            guard let unit = event.unit else { continue }  // busy, idle, background time expiring
            switch event.kind {
            case .enqueued:
                if !enqueued.insert(ObjectIdentifier(unit)).inserted {
                    failures.append("\(label): \(unit) enqueued twice")
                }
            case .started:
                let key = ObjectIdentifier(unit)
                if started[key] != nil, betweenAttempts.remove(key) == nil {
                    failures.append("\(label): \(unit) started twice")
                }
                if !enqueued.contains(key) { failures.append("\(label): \(unit) started before enqueued") }
                if started[key] == nil { started[key] = position }
                executing += 1
                maximum = max(maximum, executing)
            case .ended:
                let key = ObjectIdentifier(unit)
                if ended[key] != nil { failures.append("\(label): \(unit) ended twice") }
                ended[key] = position
                if started[key] != nil, betweenAttempts.remove(key) == nil { executing -= 1 }
            case .retrying:
                let key = ObjectIdentifier(unit)
                if started[key] == nil || !betweenAttempts.insert(key).inserted {
                    failures.append("\(label): \(unit) retried while not executing")
                }
                executing -= 1
            case .joined:
                // Never added: its work never runs, and unless it was cancelled itself it
                // ends with the outcome of the unit it joined.
                if enqueued.contains(ObjectIdentifier(unit)) {
                    failures.append("\(label): \(unit) joined after its add")
                }
                if let joiner = probeOfUnit[ObjectIdentifier(unit)],
                    let shared = probeOfUnit[ObjectIdentifier(event.primary!)]
                {
                    let (joinerState, sharedState) = (snapshots[joiner.id]!, snapshots[shared.id]!)
                    if joinerState.bodyRuns != 0 { failures.append("\(label): joined unit \(joiner.id) ran") }
                    if !joinerState.touched, joinerState.outcome != sharedState.outcome {
                        failures.append(
                            "\(label): joined unit \(joiner.id) ended \(String(describing: joinerState.outcome)), the one it joined \(String(describing: sharedState.outcome))"
                        )
                    }
                }
            case .escalated:
                // An awaiter of higher priority moved it ahead: not in FIFO order any more.
                escalated.insert(ObjectIdentifier(unit))
            default:
                failures.append("\(label): an event of a kind this check does not know: \(event)")
            }
        }
        for key in enqueued where ended[key] == nil { failures.append("\(label): a unit was enqueued and never ended") }
        if maximum > (tested.limit ?? .max) { failures.append("\(label): \(maximum) units executed at once") }
        return failures + checkOrder(tested, events, started, ended, snapshots, escalated, label: label)
    }

    /// FIFO among equal priorities (plain adds from the one driver thread), sequential
    /// groups, and — on the limit-1 queue — body start order of undisturbed units.
    private func checkOrder(
        _ tested: QueueUnderTest,
        _ events: [BackgroundQueue.Event],
        _ started: [ObjectIdentifier: Int],
        _ ended: [ObjectIdentifier: Int],
        _ snapshots: [Int: Probe.State],
        _ escalated: Set<ObjectIdentifier>,
        label: String
    ) -> [String] {
        var failures: [String] = []
        let probeOfUnit = probeOfUnit
        let unitOfProbe = unitOfProbe
        var lastOrder: [UInt8: Int] = [:]
        var undisturbedBodyStarts: [Int] = []
        var seen: Set<ObjectIdentifier> = []
        for event in events {
            // A unit's first start (a retried unit starts again after each failed attempt).
            guard event.kind == .started, let unit = event.unit, seen.insert(ObjectIdentifier(unit)).inserted,
                let probe = probeOfUnit[ObjectIdentifier(unit)]
            else { continue }
            if let order = probe.order, !escalated.contains(ObjectIdentifier(unit)) {
                if let last = lastOrder[probe.priority], last > order {
                    failures.append(
                        "\(label): FIFO broken at priority \(probe.priority): order \(order) started after \(last)")
                }
                lastOrder[probe.priority] = order
            }
            let state = snapshots[probe.id]!
            if tested.limit == 1, !state.touched, state.outcome == .finished || state.outcome == .failed,
                let bodyStart = state.bodyStart
            {
                undisturbedBodyStarts.append(bodyStart)
            }
        }
        if undisturbedBodyStarts != undisturbedBodyStarts.sorted() {
            failures.append("\(label): bodies of undisturbed units started out of the queue's start order")
        }
        for group in groups where group.first?.queueIndex == tested.index {
            let units = group.compactMap { unitOfProbe[$0.id] }
            for (previous, next) in zip(units, units.dropFirst()) {
                if let start = started[ObjectIdentifier(next)], let end = ended[ObjectIdentifier(previous)], start < end
                {
                    failures.append("\(label): a group member started before its predecessor ended")
                }
            }
        }
        // Lanes: a unit starts only after every unit added to its lane before it ended.
        for lane in Set(lanes.map(\.1)) {
            let units = lanes.filter { $0.0 == tested.index && $0.1 == lane }.compactMap { unitOfProbe[$0.2.id] }
            for (index, next) in units.enumerated() {
                guard let start = started[ObjectIdentifier(next)] else { continue }
                // (A unit that joined another one was never in the lane: it has no `ended`
                // event; every unit that was has one, checked above.)
                for previous in units[..<index] where (ended[ObjectIdentifier(previous)] ?? .min) > start {
                    failures.append("\(label): a unit of lane \(lane) started before an earlier one ended")
                }
            }
        }
        return failures
    }
}
