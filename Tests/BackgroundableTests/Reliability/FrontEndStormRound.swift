import BackgroundableTesting
import Dispatch
import Foundation
import Synchronization

@testable import Backgroundable

extension FrontEnd {
    /// One concurrent round of ``FrontEndModelTests``: threads and tasks of several
    /// priorities drive one queue at once — two threads storm the hot names with paced
    /// `replace`s, two others mix every other operation — then the invariants are checked
    /// and the queue is dropped (sometimes while its units still run).
    final class StormRound: Sendable {
        let seed: UInt64
        let report: Report
        let budget: Budget
        let overlap = NameOverlap()
        /// Units the threads added, and those they cancelled (never one of a hot name: see
        /// ``addHot(_:_:paced:_:)``).
        private let registry = Lock<(units: [(AsyncTask, Probe)], touched: Set<ObjectIdentifier>)>(([], []))
        /// `run`s: their probe, their caller's rank, whether the caller was cancelled first.
        private let runs = Lock<[(probe: Probe, callerRank: UInt8, cancelled: Bool)]>([])
        /// Units added and awaited from a `.high` task right after a burst of adds.
        private let inboxProbes = Lock<[Probe]>([])
        private let violations = Lock<[(check: String, message: String)]>([])
        private let threads = DispatchGroup()
        private let tasks = DispatchGroup()

        static let hotNames = ["hot0", "hot1"]
        static let threadCount = 4
        static let stormThreads = 2
        static let operationsPerThread = 40
        static let priorities: [TaskPriority?] = [nil, .background, .low, .medium, .high]

        init(seed: UInt64, report: Report, budget: Budget) {
            self.seed = seed
            self.report = report
            self.budget = budget
        }

        func violate(_ check: String, _ message: String) {
            violations.withLock { $0.append((check, message)) }
        }

        func run() async {
            var random = SplitMix64(seed: seed)
            let limit = random.pick([nil, 2, 4] as [Int?])
            let dropWhileBusy = random.chance(30)
            let provider = RecordingBackgroundTaskProvider()
            var queue: BackgroundQueue? = BackgroundQueue(
                name: "storm", maxConcurrentTasks: limit, backgroundTaskProvider: provider)
            let delegate = RecordingDelegate()
            queue!.setDelegate(delegate)
            let log = EventLog.collecting(queue!.events)
            weak let weakCore = queue!.core
            defer { reportViolations(limit: limit, dropWhileBusy: dropWhileBusy) }
            for index in 0..<Self.threadCount {
                let threadSeed = random.next()
                threads.enter()
                DispatchQueue.global().async { [self, queue = queue!] in
                    drive(queue, seed: threadSeed, storm: index < Self.stormThreads)
                    threads.leave()
                }
            }
            guard await wait(for: threads, "threads") else { return violate("the drivers end", "a thread hangs") }
            // A resume issued before another thread's suspend may leave one unbalanced.
            while queue!.isSuspended { queue!.resume() }
            if dropWhileBusy { queue = nil }
            guard await wait(for: tasks, "tasks") else {
                return violate("run, await and waitUntilIdle return", "a task never returned; \(state(of: queue))")
            }
            if let queue {
                guard await checkIdlePoint(queue, delegate, provider) else { return }
            }
            checkUnits()
            queue = nil
            // The members end (those still waiting when the queue was dropped cancelled),
            // then the stream finishes.
            let everyUnitEnded = await eventually(within: budget.bound("members")) {
                registry.withLock { $0.units.allSatisfy { $0.0.isFinished } }
            }
            if !everyUnitEnded { violate("every unit reaches one outcome", "units still live after the drivers ended") }
            guard await log.finished.wait(atMost: budget.bound("stream")) else {
                budget.ranOut("stream")
                return violate("a dropped queue finishes its event streams", "the stream did not finish")
            }
            checkEvents(log.events, provider)
            let problem = await releaseProblem(report, isReleased: { weakCore == nil }) {
                log.forget()
                forgetUnits()
            }
            if let (check, message) = problem { violate(check, "\(message) (units with 30 s timeouts ran)") }
        }

        /// Lets go of every unit and probe.
        func forgetUnits() {
            registry.withLock { $0.units = [] }
            runs.withLock { $0 = [] }
            inboxProbes.withLock { $0 = [] }
        }

        /// After the storm: `waitUntilIdle()` returns, and by then the delegate heard the
        /// end of every busy period. `false` when it did not return.
        func checkIdlePoint(
            _ queue: BackgroundQueue, _ delegate: RecordingDelegate, _ provider: RecordingBackgroundTaskProvider
        ) async -> Bool {
            guard await budget.waitUntilIdle(queue) else {
                violate("waitUntilIdle returns once the queue is idle", "it did not return; \(state(of: queue))")
                return false
            }
            // Right away: the main actor had no other chance to run.
            let periods = FrontEnd.periods(provider)
            if let problem = delegateProblem(delegate.calls.all, periods: periods) {
                violate("the delegate heard didFinish before waitUntilIdle returned", problem)
            }
            await mainActorDeliveries()
            if let problem = delegateProblem(delegate.calls.all, periods: periods) {
                violate("delegate calls alternate and balance with the assertions", problem)
            }
            return true
        }

        func wait(for group: DispatchGroup, _ kind: String) async -> Bool {
            if await FrontEnd.wait(for: group, atMost: budget.bound(kind)) { return true }
            budget.ranOut(kind)
            return false
        }

        /// What is still going on, for a report of a hang.
        func state(of queue: BackgroundQueue?) -> String {
            let live = registry.withLock { $0.units.filter { !$0.0.isFinished }.map { "\($0.0)" } }
            let runsLeft = runs.withLock { $0.count { !$0.probe.runReturned.isRaised } }
            let counts = queue.map {
                "enqueued \($0.enqueuedCount), executing \($0.executingCount), busy \($0.isBusy), "
                    + "suspended \($0.isSuspended)"
            }
            return "queue: \(counts ?? "dropped"); live units: \(live); runs not returned: \(runsLeft)"
        }

        func reportViolations(limit: Int?, dropWhileBusy: Bool) {
            let step = "round (limit \(limit.map { "\($0)" } ?? "none")\(dropWhileBusy ? ", dropped while busy" : ""))"
            for (check, message) in violations.withLock({ $0 }) {
                report.fail(check, seed: seed, step: step, message)
            }
            if FrontEnd.traces {
                let ran = registry.withLock { $0.units.count { $0.1.countedName != nil && $0.1.snapshot.bodyRuns > 0 } }
                print("FrontEndModelTests seed \(seed): \(ran) bodies of hot names ran")
            }
        }

        // MARK: Driving

        /// One thread's seeded operations: a storm of `replace`s on the hot names (each
        /// waiting a moment for its unit to start, so that the next one meets a running
        /// body), or a mix of every other operation.
        func drive(_ queue: BackgroundQueue, seed: UInt64, storm: Bool) {
            var random = SplitMix64(seed: seed)
            var suspensions = 0
            for _ in 0..<Self.operationsPerThread {
                if storm {
                    addHot(queue, random.chance(85) ? .replace : random.pick([.drop, .join]), paced: true, &random)
                    continue
                }
                switch Int.random(in: 0..<100, using: &random) {
                case 0..<14: addHot(queue, .replace, paced: false, &random)
                case 14..<24: addHot(queue, random.pick([.drop, .join]), paced: false, &random)
                case 24..<36: addOther(queue, &random)
                case 36..<48: cancelOne(&random)
                case 48..<66: spawnRun(queue, cancelled: false, &random)
                case 66..<78: spawnRun(queue, cancelled: true, &random)
                case 78..<88: spawnInboxAwaiter(queue, &random)
                case 88..<93:
                    queue.suspend()
                    suspensions += 1
                case 93..<97:
                    // Sometimes one more than this thread suspended: an extra resume is ignored.
                    queue.resume()
                    suspensions = max(0, suspensions - 1)
                default: spawnIdleWaiter(queue)
                }
            }
            for _ in 0..<suspensions { queue.resume() }
        }

        func register(_ unit: AsyncTask, _ probe: Probe) {
            probe.bind(unit)
            registry.withLock { $0.units.append((unit, probe)) }
        }

        /// A body of a hot name: counted while it runs, up to `yields` yields long (its
        /// cancellation does not stop it).
        func hotBody(_ probe: Probe, yields: Int) -> @Sendable () async -> Int {
            { [overlap] in
                probe.bodyStarted(AsyncTask.current)
                overlap.enter(probe)
                defer {
                    overlap.leave(probe)
                    probe.exited.raise()
                }
                for _ in 0..<yields { await Task.yield() }
                return probe.id
            }
        }

        /// Adds a unit of a hot name. Only `replace`, `drop` and `join` use them, no thread
        /// cancels them and they have no zero timeout: a unit of a hot name ends by its
        /// body's return or by a replacement, so the name is never free while a replaced
        /// body still runs, and no other body of the name may start meanwhile. `paced`:
        /// then waits a moment, blocking the driver's own thread, until the unit started
        /// or ended — not a check: the wait may run out (the queue may be suspended).
        func addHot(_ queue: BackgroundQueue, _ policy: UniquenessPolicy, paced: Bool, _ random: inout SplitMix64) {
            let probe = Probe(countedName: random.pick(Self.hotNames))
            let timeout = random.pick([nil, nil, .seconds(30)] as [Duration?])
            let handle = queue.add(
                .init(
                    name: probe.countedName, timeout: timeout, priority: random.pick(Self.priorities),
                    uniquenessPolicy: policy), hotBody(probe, yields: Int.random(in: 0...40, using: &random)))
            register(handle.task, probe)
            if paced { _ = probe.startedOrEnded.wait(timeout: .now() + .milliseconds(100)) }
        }

        /// A unit of another name (or none), with any policy, in either style.
        func addOther(_ queue: BackgroundQueue, _ random: inout SplitMix64) {
            let probe = Probe()
            let name = random.pick(["x", nil] as [String?])
            let policy = random.pick(UniquenessPolicy.allCases)
            let priority = random.pick(Self.priorities)
            let unit: AsyncTask
            if random.chance(50) {
                unit = queue.add(.init(name: name, timeout: nil, priority: priority, uniquenessPolicy: policy)) {
                    unit in
                    probe.bodyStarted(unit)
                    unit.finish()
                }
            } else {
                unit =
                    queue.add(.init(name: name, priority: priority, uniquenessPolicy: policy)) {
                        probe.bodyStarted(AsyncTask.current)
                        await Task.yield()
                    }
                    .task
            }
            register(unit, probe)
        }

        /// Cancels a unit of another name than the hot ones.
        func cancelOne(_ random: inout SplitMix64) {
            let unit = registry.withLock { state -> AsyncTask? in
                let candidates = state.units.filter { $0.1.countedName == nil }
                guard !candidates.isEmpty else { return nil }
                let unit = candidates[Int.random(in: 0..<candidates.count, using: &random)].0
                state.touched.insert(ObjectIdentifier(unit))
                return unit
            }
            unit?.cancel()
        }

        /// `run` from a task of a random priority (cancelled before the call, or not). Its
        /// body reads its priority as it starts.
        func spawnRun(_ queue: BackgroundQueue, cancelled: Bool, _ random: inout SplitMix64) {
            let caller = random.pick([.background, .low, .medium, .high] as [TaskPriority])
            let priority = random.pick(Self.priorities)
            let hot = random.chance(60)
            let probe = Probe(countedName: hot ? random.pick(Self.hotNames) : nil)
            let policy: UniquenessPolicy = hot ? random.pick([.replace, .drop, .join]) : .ignore
            // A zero timeout only where the unit cannot run (see `addHot`).
            let zero = cancelled || !hot
            let timeout = random.pick(
                zero ? [nil, nil, .seconds(30), .zero] : [nil, nil, .seconds(30)] as [Duration?])
            let body = hotBody(probe, yields: Int.random(in: 0...2, using: &random))
            runs.withLock { $0.append((probe, Reference.rank(caller.rawValue), cancelled)) }
            tasks.enter()
            Task(priority: caller) { [tasks] in
                if cancelled { withUnsafeCurrentTask { $0?.cancel() } }
                let result = await Result {
                    try await queue.run(
                        .init(name: probe.countedName, timeout: timeout, priority: priority, uniquenessPolicy: policy),
                        body)
                }
                probe.runReturned(result)
                tasks.leave()
            }
        }

        /// From a `.high` task: a burst of adds (a drainer is then at work, and plain adds
        /// go through the lock-free inbox), then a `.low` unit awaited at once. Its body
        /// waits until its caller is about to await it, then yields until its priority
        /// rises (the await registers right after; a loaded machine may run the body
        /// first for a while, so the bound is the budget's), and reads it. (No timer: a
        /// timer in a task escalated while it waits may fire very late.)
        func spawnInboxAwaiter(_ queue: BackgroundQueue, _ random: inout SplitMix64) {
            let probe = Probe()
            let priority = random.pick([.low, .background] as [TaskPriority])
            inboxProbes.withLock { $0.append(probe) }
            tasks.enter()
            Task(priority: .high) { [tasks, budget] in
                for _ in 0..<3 { queue.add(.init(timeout: nil)) { $0.finish() } }
                let awaiting = Flag()
                let handle = queue.add(.init(priority: priority)) {
                    probe.bodyStarted(AsyncTask.current)
                    await awaiting.wait()
                    let clock = ContinuousClock()
                    let deadline = clock.now + budget.bound("inbox escalation")
                    while Task.currentPriority < .high {
                        guard clock.now < deadline else {
                            budget.ranOut("inbox escalation")
                            break
                        }
                        await Task.yield()
                    }
                    let read = Task.currentPriority
                    probe.state.withLock { $0.endPriority = read }
                }
                awaiting.raise()
                _ = await handle.task.outcome
                tasks.leave()
            }
        }

        /// `waitUntilIdle` amid the storm: it returns, at the latest once the storm ended.
        func spawnIdleWaiter(_ queue: BackgroundQueue) {
            tasks.enter()
            let returned = Flag()
            let waiter = Task {
                await queue.waitUntilIdle()
                returned.raise()
            }
            Task { [self] in
                if !(await returned.wait(atMost: budget.bound("idle"))) {
                    waiter.cancel()
                    violate(
                        "waitUntilIdle returns once the queue is idle",
                        "a waiter amid the storm never returned; \(state(of: queue))")
                }
                tasks.leave()
            }
        }

        // MARK: Checking

        func checkUnits() {
            for problem in overlap.takeProblems().prefix(1) {
                violate("no two bodies of one replace-name at once", problem)
            }
            for (unit, probe) in registry.withLock({ $0.units }) {
                let seen = probe.snapshot
                if seen.bodyRuns > 1 || seen.endings > 1 {
                    violate(
                        "a body runs once, a unit ends once", "\(unit): \(seen.bodyRuns) runs, \(seen.endings) ends")
                }
            }
            for (probe, callerRank, cancelled) in runs.withLock({ $0 }) {
                let seen = probe.snapshot
                if cancelled {
                    if seen.bodyRuns > 0 { violate("a pre-cancelled run never runs its body", "its body ran") }
                    if case .failure(let error)? = seen.runResult, error is CancellationError { continue }
                    let result = seen.runResult.map { "\($0)" } ?? "nothing"
                    violate("a pre-cancelled run ends cancelled", "it returned \(result)")
                } else if let read = seen.startPriority?.rawValue, read < callerRank {
                    violate("run escalates its unit", "a run from priority \(callerRank) ran its body at \(read)")
                }
            }
            for probe in inboxProbes.withLock({ $0 }) {
                if let read = probe.snapshot.endPriority?.rawValue, read < TaskPriority.high.rawValue {
                    violate(
                        "an await escalates a unit waiting in the inbox",
                        "a unit awaited from .high right after it was added read \(read)")
                }
            }
        }

        /// The whole stream, once it finished: the universal checks; units that joined end
        /// with the outcome of the work they joined (unless a thread cancelled them); a busy
        /// event per assertion.
        func checkEvents(_ events: [BackgroundQueue.Event], _ provider: RecordingBackgroundTaskProvider) {
            for (check, message) in universalEventProblems(events) { violate(check, message) }
            let touched = registry.withLock { $0.touched }
            for event in events where event.kind == .joined {
                guard let unit = event.unit, let primary = event.primary, !touched.contains(ObjectIdentifier(unit))
                else { continue }
                if unit.currentOutcome?.kind != primary.currentOutcome?.kind {
                    violate(
                        "joined units end with the shared outcome",
                        "joined(\(unit), primary: \(primary)): the unit's outcome is not the primary's")
                }
            }
            if let problem = providerProblem(provider) {
                violate("assertions begin and end once per busy period", problem)
            }
            let busy = events.count { $0.kind == .busy }
            if busy != periods(provider) {
                violate("busy events match the assertions", "\(busy) busy events, \(periods(provider)) assertions")
            }
        }
    }
}
