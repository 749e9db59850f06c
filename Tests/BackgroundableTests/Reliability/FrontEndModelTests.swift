import BackgroundableTesting
import Foundation
import Testing

@testable import Backgroundable

/// Model-based tests of a ``BackgroundQueue`` through its public front end: the lock-free
/// inbox, `run`, priority escalation, the events, the delegate's main-actor mailbox, the
/// sleeper and the release of a dropped queue — the glue around `QueueStateMachine`, which
/// its own model-based test drives alone.
///
/// - `singleDriverSequencesMatchTheModel`: one driver, seeded sequences of public calls
///   (adds with every policy, `run` from tasks of several priorities, awaits from several
///   priorities, cancellation before and after adding, `finish()` before the start,
///   suspend / resume, `cancelAll()`, timeouts on a test clock, `waitUntilIdle()`, the
///   queue dropped) on units whose bodies the test gates. After every step the outcomes,
///   starts, counts and body priorities are compared with ``FrontEnd/Reference``, a model
///   of the contract; at every `waitUntilIdle()` the events, the delegate's calls and the
///   background-time assertions too; once the queue is dropped, its release.
/// - `concurrentStormsKeepTheInvariants`: threads and tasks of several priorities at once
///   (``FrontEnd/StormRound``): paced replace storms on hot names, cancels, `run`s,
///   pre-cancelled `run`s, adds awaited from a higher priority while a drainer is at work,
///   suspensions, `waitUntilIdle()`s — checked against invariants: one outcome per unit,
///   events that agree with outcomes, at most one body of a replace-name at any instant,
///   delegate calls that alternate and balance with the assertions, nothing of a dropped
///   queue left once its members ended.
///
/// A failure names its check, the seed and the step; each check is reported once per
/// test. Nothing hangs: every wait is bounded, and a kind of wait that ran out once is
/// given a short bound from then on. No sleep orders anything: the test clock, the gates
/// and the queue's events do.
///
/// - `BACKGROUNDABLE_FRONTEND_SEED`: replay from this seed (printed by every run).
/// - `BACKGROUNDABLE_FRONTEND_SEQUENCES`, `BACKGROUNDABLE_FRONTEND_ROUNDS`: how many
///   sequences, rounds (the n-th from seed + n).
/// - `BACKGROUNDABLE_FRONTEND_TRACE`: print the steps.
@Suite("Front-end model", .timeLimit(.minutes(5)))
struct FrontEndModelTests {
    @Test func singleDriverSequencesMatchTheModel() async {
        let seed = FrontEnd.baseSeed
        let count = FrontEnd.count("BACKGROUNDABLE_FRONTEND_SEQUENCES", default: 32)
        print("FrontEndModelTests seed \(seed) (\(count) single-driver sequences)")
        let report = FrontEnd.Report(variable: "BACKGROUNDABLE_FRONTEND_SEQUENCES")
        let budget = FrontEnd.Budget()
        for index in 0..<UInt64(count) {
            await FrontEnd.SequenceDriver(seed: seed &+ index, report: report, budget: budget).run()
        }
        report.recordIssues()
    }

    @Test func concurrentStormsKeepTheInvariants() async {
        let seed = FrontEnd.baseSeed
        let count = FrontEnd.count("BACKGROUNDABLE_FRONTEND_ROUNDS", default: 8)
        print("FrontEndModelTests seed \(seed) (\(count) concurrent rounds)")
        let report = FrontEnd.Report(variable: "BACKGROUNDABLE_FRONTEND_ROUNDS")
        let budget = FrontEnd.Budget()
        for index in 0..<UInt64(count) {
            await FrontEnd.StormRound(seed: seed &+ index, report: report, budget: budget).run()
        }
        report.recordIssues()
    }
}

extension FrontEnd {
    /// One seeded sequence of ``FrontEndModelTests``: a queue on a test clock, driven by
    /// one task, compared with the ``Reference`` after every step.
    final class SequenceDriver {
        let seed: UInt64
        let report: Report
        let budget: Budget
        var random: SplitMix64
        let clock = TestClock()
        var queue: BackgroundQueue?
        var provider: RecordingBackgroundTaskProvider?
        let delegate = RecordingDelegate()
        let log: EventLog
        let overlap = NameOverlap()
        var model: Reference
        var probes: [Int: Probe] = [:]
        var step = "setup"
        var stepIndex = 0
        /// A failure the model cannot recover from happened: the sequence stops.
        var aborted = false
        /// The test's awaiter tasks: the unit each awaited, the outcome it got, its return.
        var awaiters: [(id: Int, outcome: Recorder<AsyncTask.Outcome.Kind>, returned: Flag)] = []
        /// Units whose events, start and end priorities, `run` result were checked (once each).
        var eventsChecked: Set<Int> = []
        var startChecked: Set<Int> = []
        var endChecked: Set<Int> = []
        var runsChecked: Set<Int> = []
        /// The step is a pre-cancelled `run`: a unit replaced now was replaced by it.
        var inPreCancelledRun = false
        /// Cleared once a `run` from a higher priority did not escalate: later callers no
        /// longer outrank their units (each such step would fail the same way, and the
        /// model would have to guess the queue's order).
        var runsEscalate = true

        static let steps = 36
        static let priorities: [TaskPriority?] = [nil, .background, .low, .medium, .high]

        init(seed: UInt64, report: Report, budget: Budget) {
            self.seed = seed
            self.report = report
            self.budget = budget
            random = SplitMix64(seed: seed)
            let limit = random.pick([1, 1, 2, 3])
            model = Reference(limit: limit)
            let provider = RecordingBackgroundTaskProvider()
            let queue = BackgroundQueue(
                label: "front-end-model", maxConcurrentTasks: limit, backgroundTaskProvider: provider,
                expirationPolicy: .cancelAll, observers: [], measurer: nil, clock: clock.queueClock)
            self.queue = queue
            self.provider = provider
            log = EventLog.collecting(queue.events)
            queue.setDelegate(delegate)
        }

        func fail(_ check: String, _ message: String) {
            report.fail(check, seed: seed, step: "step \(stepIndex) (\(step))", message)
        }

        /// A failure the model cannot recover from: the rest of the sequence is skipped.
        func abort(_ check: String, _ message: String) {
            fail(check, message)
            aborted = true
        }

        func run() async {
            for index in 0..<Self.steps where !aborted {
                stepIndex = index
                await perform(nextStep())
            }
            stepIndex = Self.steps
            if !aborted { await drain() }
            if !aborted { await dropQueue() }
            cleanUp()
        }

        /// At the end, or after an abort: nothing this sequence started keeps running.
        func cleanUp() {
            queue?.cancelAll()
            for probe in probes.values { probe.release(throwing: false) }
            for _ in 0..<model.suspensions { queue?.resume() }
            // Sleepers armed on the test clock wake up and find nothing left to do.
            clock.advance(by: .seconds(3600))
        }

        // MARK: Steps

        enum Step: CustomStringConvertible {
            case add(Reference.Style, name: String?, UniquenessPolicy, TaskPriority?, timeout: Int?)
            case run(caller: TaskPriority, name: String?, UniquenessPolicy, TaskPriority?, timeout: Int?)
            case runCancelled(name: String?, UniquenessPolicy, TaskPriority?, timeout: Int?)
            case addCancelled(name: String?, UniquenessPolicy)
            case await(Int, TaskPriority)
            case cancel(Int)
            case finishBeforeStart(Int)
            case complete(Int, throwing: Bool)
            case suspend, resume, advance, cancelAll, drain

            var description: String {
                func unit(_ name: String?, _ policy: UniquenessPolicy, _ priority: TaskPriority?, _ timeout: Int?)
                    -> String
                {
                    "\(name ?? "unnamed") \(policy), priority \(priority?.rawValue ?? 0), "
                        + "timeout \(timeout.map { "\($0) s" } ?? "none")"
                }
                return switch self {
                case .add(let style, let name, let policy, let priority, let timeout):
                    "add \(style) \(unit(name, policy, priority, timeout))"
                case .run(let caller, let name, let policy, let priority, let timeout):
                    "run from \(caller.rawValue): \(unit(name, policy, priority, timeout))"
                case .runCancelled(let name, let policy, let priority, let timeout):
                    "pre-cancelled run: \(unit(name, policy, priority, timeout))"
                case .addCancelled(let name, let policy): "add a cancelled unit: \(unit(name, policy, nil, nil))"
                case .await(let id, let priority): "await \(id) from \(priority.rawValue)"
                case .cancel(let id): "cancel \(id)"
                case .finishBeforeStart(let id): "finish \(id) before it starts"
                case .complete(let id, let throwing): "complete \(id)\(throwing ? " throwing" : "")"
                case .suspend: "suspend"
                case .resume: "resume"
                case .advance: "advance the clock 5 s"
                case .cancelAll: "cancelAll"
                case .drain: "drain and waitUntilIdle"
                }
            }
        }

        /// "r" is a replace-name: never `ignore`, so at most one of its bodies may run; "a"
        /// takes every policy.
        func pickName(replaceNames: Bool) -> String? {
            random.pick(replaceNames ? ["r", "r", "a", nil] : ["a", "a", nil])
        }

        func pickPolicy(for name: String?) -> UniquenessPolicy {
            name == "r" ? random.pick([.replace, .replace, .drop, .join]) : random.pick(UniquenessPolicy.allCases)
        }

        /// None, 5 s of the test clock, or zero (expires as the unit would start).
        func pickTimeout() -> Int? {
            let roll = Int.random(in: 0..<10, using: &random)
            return roll < 7 ? nil : roll < 9 ? 5 : 0
        }

        func pickUnit(_ matching: (Reference.Unit) -> Bool) -> Int? {
            let candidates = model.units.values.filter(matching).map(\.id).sorted()
            return candidates.isEmpty ? nil : random.pick(candidates)
        }

        func nextStep() -> Step {
            while true {
                switch Int.random(in: 0..<100, using: &random) {
                case 0..<22:
                    let style: Reference.Style = random.chance(70) ? .task : .callback
                    let name = pickName(replaceNames: style == .task)
                    return .add(
                        style, name: name, pickPolicy(for: name), random.pick(Self.priorities), timeout: pickTimeout())
                case 22..<36:
                    let name = pickName(replaceNames: true)
                    let caller = random.pick([.low, .medium, .high] as [TaskPriority])
                    let (policy, priority, timeout) = (
                        pickPolicy(for: name), random.pick(Self.priorities), pickTimeout()
                    )
                    if random.chance(25) { return .runCancelled(name: name, policy, priority, timeout: timeout) }
                    return .run(
                        caller: runsEscalate ? caller : .background, name: name, policy, priority, timeout: timeout)
                case 36..<39:
                    let name = pickName(replaceNames: true)
                    return .addCancelled(name: name, pickPolicy(for: name))
                case 39..<49:
                    if let id = pickUnit({ $0.isLive || $0.isJoined }) {
                        return .await(id, random.pick([.background, .low, .medium, .high]))
                    }
                case 49..<57:
                    if let id = pickUnit({ $0.isLive }) { return .cancel(id) }
                case 57..<59:
                    if let id = pickUnit({ $0.phase == .waiting && $0.style == .callback }) {
                        return .finishBeforeStart(id)
                    }
                case 59..<83:
                    if let id = pickUnit({ $0.phase == .executing }) {
                        return .complete(id, throwing: random.chance(20))
                    }
                case 83..<88: return .suspend
                case 88..<93: return .resume
                case 93..<96: return .advance
                case 96..<98: return .cancelAll
                default: return .drain
                }
            }
        }

        /// Keeps clear of an order the contract leaves open: a `replace` that displaces an
        /// executing unit while other units wait for a slot (whether the newcomer or a
        /// waiting unit takes the slot while the displaced body winds down is the queue's
        /// choice). Such a step becomes a `drop`.
        func unambiguous(_ name: String?, _ policy: UniquenessPolicy) -> UniquenessPolicy {
            guard policy == .replace, let name, model.enqueuedCount > 0,
                model.live(named: name).contains(where: { $0.phase == .executing })
            else { return policy }
            return .drop
        }

        func perform(_ step: Step) async {
            self.step = "\(step)"
            if FrontEnd.traces { print("FrontEndModelTests seed \(seed) step \(stepIndex): \(step)") }
            switch step {
            case .add(let style, let name, let policy, let priority, let timeout):
                await add(style, name: name, unambiguous(name, policy), priority, timeout: timeout)
            case .run(let caller, let name, let policy, let priority, let timeout):
                await run(caller: caller, name: name, unambiguous(name, policy), priority, timeout: timeout)
            case .runCancelled(let name, let policy, let priority, let timeout):
                await runCancelled(name: name, policy, priority, timeout: timeout)
            case .addCancelled(let name, let policy):
                await addCancelled(name: name, policy)
            case .await(let id, let priority):
                await awaitUnit(id, from: priority)
            case .cancel(let id):
                probes[id]!.unit!.cancel()
                model.end(id, .cancelled)
                await settle()
            case .finishBeforeStart(let id):
                // As in 1.x: `finish()` before the unit starts cancels it.
                probes[id]!.unit!.finish()
                model.end(id, .cancelled)
                await settle()
            case .complete(let id, let throwing):
                await complete(id, throwing: throwing)
            case .suspend:
                queue!.suspend()
                model.suspensions += 1
                await settle()
            case .resume:
                queue!.resume()
                model.suspensions = max(0, model.suspensions - 1)
                await settle()
            case .advance:
                clock.advance(by: .seconds(5))
                model.advance(by: 5)
                await settle()
            case .cancelAll:
                queue!.cancelAll()
                model.cancelAll()
                await settle()
            case .drain:
                await drain()
            }
        }

        func newProbe(
            name: String?, _ style: Reference.Style, _ policy: UniquenessPolicy, _ priority: TaskPriority?,
            timeout: Int?
        ) -> Probe {
            let id = probes.count + 1
            let probe = Probe(id: id, countedName: name == "r" ? name : nil)
            probes[id] = probe
            model.units[id] = Reference.Unit(
                id: id, style: style, name: name, policy: policy, timeout: timeout,
                rank: Reference.rank(priority?.rawValue ?? 0))
            return probe
        }

        func add(
            _ style: Reference.Style, name: String?, _ policy: UniquenessPolicy, _ priority: TaskPriority?,
            timeout: Int?
        ) async {
            let probe = newProbe(name: name, style, policy, priority, timeout: timeout)
            let duration = timeout.map { Duration.seconds($0) }
            let unit: AsyncTask
            if style == .task {
                unit =
                    queue!.add(
                        .init(name: name, timeout: duration, priority: priority, uniquenessPolicy: policy),
                        probe.body(overlap)
                    )
                    .task
            } else {
                unit = queue!.add(.init(name: name, timeout: duration, priority: priority, uniquenessPolicy: policy)) {
                    unit in
                    probe.bodyStarted(unit)
                    probe.exited.raise()
                }
            }
            probe.bind(unit)
            model.arrive(probe.id)
            await settle()
        }

        /// `run` from a task of priority `caller`. Its unit is a lane of its own: the lane
        /// names it in the events (the test never holds it otherwise).
        func run(
            caller: TaskPriority, name: String?, _ policy: UniquenessPolicy, _ priority: TaskPriority?, timeout: Int?
        ) async {
            let probe = newProbe(name: name, .run, policy, priority, timeout: timeout)
            let named = log.laneFlag("run-\(probe.id)")
            spawnRun(probe, caller: caller, cancelled: false, name: name, policy, priority, timeout: timeout)
            guard await named.wait(atMost: budget.bound("run")) else {
                budget.ranOut("run")
                return abort("a run reaches its queue", "no event named the unit of run \(probe.id)")
            }
            probe.bind(log.unit(ofLane: "run-\(probe.id)")!)
            model.arrive(probe.id)
            // The caller awaits its unit from the start: from a higher priority it escalates
            // it (or the work it joined).
            let joined = model.units[probe.id]!.isJoined
            await expectEscalation(
                of: probe.id, by: caller,
                check: joined ? "run with join escalates the shared unit" : "run escalates its unit")
            await settle()
        }

        func spawnRun(
            _ probe: Probe, caller: TaskPriority, cancelled: Bool, name: String?, _ policy: UniquenessPolicy,
            _ priority: TaskPriority?, timeout: Int?
        ) {
            let queue = queue!
            let options = AsyncTask.Options(
                name: name, timeout: timeout.map { .seconds($0) }, priority: priority, uniquenessPolicy: policy,
                lane: "run-\(probe.id)")
            let body = probe.body(overlap)
            Task(priority: caller) {
                if cancelled { withUnsafeCurrentTask { $0?.cancel() } }
                let result = await Result { try await queue.run(options, body) }
                probe.runReturned(result)
            }
        }

        /// `run` from a task cancelled before the call: the unit ends cancelled and touches
        /// nothing (the live unit of its name stays, an idle queue stays idle).
        func runCancelled(name: String?, _ policy: UniquenessPolicy, _ priority: TaskPriority?, timeout: Int?) async {
            let probe = newProbe(name: name, .run, policy, priority, timeout: timeout)
            model.units[probe.id]!.preCancelled = true
            spawnRun(probe, caller: .medium, cancelled: true, name: name, policy, priority, timeout: timeout)
            guard await probe.runReturned.wait(atMost: budget.bound("run")) else {
                budget.ranOut("run")
                return abort("a pre-cancelled run returns", "run \(probe.id) did not return")
            }
            bindLateRuns()
            model.end(probe.id, .cancelled)
            inPreCancelledRun = true
            await settle()
            inPreCancelledRun = false
        }

        /// Runs whose unit no event had named yet (a pre-cancelled one may be named late).
        func bindLateRuns() {
            for probe in probes.values where probe.unit == nil {
                if let unit = log.unit(ofLane: "run-\(probe.id)") { probe.bind(unit) }
            }
        }

        /// A unit cancelled before it is added: the queue does not take it.
        func addCancelled(name: String?, _ policy: UniquenessPolicy) async {
            let probe = newProbe(name: name, .task, policy, nil, timeout: nil)
            let handle = AsyncTaskHandle(.init(name: name, uniquenessPolicy: policy), probe.body(overlap))
            probe.bind(handle.task)
            handle.cancel()
            if queue!.add(handle) {
                fail("a cancelled unit is not added", "add returned true for a unit cancelled before")
            }
            model.end(probe.id, .cancelled)
            await settle()
        }

        /// A task of `priority` awaits unit `id`.
        func awaitUnit(_ id: Int, from priority: TaskPriority) async {
            let outcome = Recorder<AsyncTask.Outcome.Kind>()
            let returned = Flag()
            awaiters.append((id, outcome, returned))
            let unit = probes[id]!.unit!
            Task(priority: priority) {
                outcome.append(await unit.outcome.kind)
                returned.raise()
            }
            await expectEscalation(of: id, by: priority, check: "await escalates")
            await settle()
        }

        /// A caller of `priority` awaits `id`: when it outranks the unit it waits for
        /// (itself, or the work it joined), the queue says so with an `escalated` event,
        /// and the model escalates the unit. Without the event the model does not.
        func expectEscalation(of id: Int, by priority: TaskPriority, check: String) async {
            guard let target = model.escalationTarget(id), let unit = probes[target]!.unit else { return }
            let rank = Reference.rank(priority.rawValue)
            let before = model.units[target]!
            guard rank > before.rank else { return }
            if await log.escalationFlag(unit, rank: rank).wait(atMost: budget.bound("escalation")) {
                model.escalate(target, to: rank)
            } else {
                budget.ranOut("escalation")
                if check != "await escalates" { runsEscalate = false }
                fail(
                    check,
                    "no escalated event for unit \(target) (\(before.phase), priority \(before.rank)) awaited from \(rank)"
                )
            }
        }

        func complete(_ id: Int, throwing: Bool) async {
            model.units[id]!.released = true
            if model.units[id]!.style == .callback {
                probes[id]!.unit!.finish()
                model.end(id, .finished)
            } else {
                probes[id]!.release(throwing: throwing)
                model.end(id, throwing ? .failed : .finished)
            }
            await settle()
        }

        // MARK: Comparing

        /// Lets the model start what may start, waits for what the step made happen
        /// (starts, ends, bodies winding down), then compares the queue with the model.
        func settle() async {
            for _ in 0..<8 where !aborted {
                model.startReady()
                let effects = model.takeEffects()
                for id in effects.starts where !aborted {
                    guard await probes[id]!.started.wait(atMost: budget.bound("start")) else {
                        budget.ranOut("start")
                        return abort("units start as the model says", "unit \(id) never started")
                    }
                }
                for id in effects.ends where !aborted && probes[id]!.unit != nil {
                    guard await probes[id]!.ended.wait(atMost: budget.bound("end")) else {
                        budget.ranOut("end")
                        return abort("units end as the model says", "unit \(id) never ended")
                    }
                }
                for id in effects.exits where !aborted && probes[id]!.started.isRaised {
                    guard await probes[id]!.exited.wait(atMost: budget.bound("exit")) else {
                        budget.ranOut("exit")
                        return abort("a stopped body returns", "the body of unit \(id) kept running after its end")
                    }
                }
                switch compare() {
                case .agree: return
                case .resynced: continue
                case .countsDiffer(let counts): return await countsDiffer(counts)
                }
            }
        }

        typealias Counts = (enqueued: Int, executing: Int, busy: Bool, suspended: Bool)

        var counts: Counts? {
            queue.map { ($0.enqueuedCount, $0.executingCount, $0.isBusy, $0.isSuspended) }
        }

        var expectedCounts: Counts {
            (model.enqueuedCount, model.executingCount, model.isBusy, model.suspensions > 0)
        }

        enum Comparison {
            /// The queue agrees with the model.
            case agree
            /// A unit ended otherwise than the model says (reported): the model took the
            /// queue's word, and more may start now.
            case resynced
            /// Every unit is as the model says, but not the queue's counts.
            case countsDiffer(Counts)
        }

        func compare() -> Comparison {
            guard !aborted else { return .agree }
            var resynced = false
            for id in model.units.keys.sorted() {
                let expected = model.units[id]!
                let probe = probes[id]!
                let actual = probe.unit?.currentOutcome?.kind
                if let kind = expected.outcome, let unit = probe.unit, actual != kind {
                    guard let actual else {
                        abort("units end as the model says", "\(unit) has no outcome, expected \(kind)")
                        return .agree
                    }
                    fail(outcomeCheck(expected, actual), "unit \(id) ended \(actual), expected \(kind)")
                    model.units[id]!.phase = .ended(actual)
                } else if expected.outcome == nil, let actual {
                    fail(outcomeCheck(expected, actual), "unit \(id) ended \(actual), expected \(expected.phase)")
                    model.end(id, actual)
                    resynced = true
                }
                let seen = probe.snapshot
                if seen.bodyRuns > 1 || seen.endings > 1 {
                    abort(
                        "a body runs once, a unit ends once", "unit \(id): \(seen.bodyRuns) runs, \(seen.endings) ends")
                    return .agree
                }
                if seen.bodyRuns == 1, expected.rankAtStart == nil {
                    abort("units start as the model says", "unit \(id) started, the model has it \(expected.phase)")
                    return .agree
                }
                checkPriorities(id, expected, seen)
            }
            if let problem = overlap.takeProblems().first {
                fail("no two bodies of one replace-name at once", problem)
            }
            if resynced { return .resynced }
            if let counts, counts != expectedCounts { return .countsDiffer(counts) }
            return .agree
        }

        /// A body runs at least at its unit's rank when it starts, and at the rank of the
        /// callers that awaited it meanwhile when it returns (checked once each).
        func checkPriorities(_ id: Int, _ expected: Reference.Unit, _ seen: Probe.State) {
            if let rank = expected.rankAtStart, let read = seen.startPriority?.rawValue,
                startChecked.insert(id).inserted, read < rank
            {
                fail("a body runs at its (escalated) priority", "unit \(id) started at \(read), expected \(rank)")
            }
            if expected.released, let read = seen.endPriority?.rawValue, endChecked.insert(id).inserted,
                read < expected.rankAtEnd
            {
                fail(
                    "a body runs at its (escalated) priority",
                    "unit \(id) returned at \(read), expected at least \(expected.rankAtEnd)")
            }
        }

        /// The check an outcome the model did not expect breaks.
        func outcomeCheck(_ unit: Reference.Unit, _ actual: AsyncTask.Outcome.Kind) -> String {
            if unit.preCancelled { return "a pre-cancelled run ends cancelled" }
            if inPreCancelledRun, actual == .replaced { return "a pre-cancelled run replaces nothing" }
            return "outcomes agree with the model"
        }

        /// Every unit has the outcome the model says, yet the queue's counts differ: if they
        /// come right a moment later, the queue told a unit's waiters its outcome before it
        /// forgot the unit (they must hear it after); else the counts are wrong.
        func countsDiffer(_ counts: Counts) async {
            let expected = expectedCounts
            let converged = await eventually(within: budget.bound("counts")) {
                self.counts.map { $0 == expected } ?? true
            }
            let message = "enqueued, executing, busy, suspended: \(counts), expected \(expected)"
            if converged {
                fail("a unit's waiters resume after its queue forgot it", "right after the outcome, \(message)")
            } else {
                budget.ranOut("counts")
                abort("counts and busy state agree with the model", message)
            }
        }

        // MARK: Idle points

        /// Lets everything end (resumes the queue, completes what executes), waits until
        /// the queue is idle, and checks the delegate's calls (right away, then once the
        /// main actor ran), the assertions, the busy periods, the events, the awaiters.
        func drain() async {
            step = "drain and waitUntilIdle"
            let queue = queue!
            while model.suspensions > 0 {
                queue.resume()
                model.suspensions -= 1
            }
            queue.resume()  // An extra one is ignored.
            await settle()
            while !aborted, let id = model.units.values.filter({ $0.phase == .executing }).map(\.id).min() {
                await complete(id, throwing: false)
            }
            guard !aborted else { return }
            guard await budget.waitUntilIdle(queue) else {
                return abort("waitUntilIdle returns once the queue is idle", "it did not return")
            }
            // Right away: the main actor had no other chance to run.
            let provider = provider!
            let periods = FrontEnd.periods(provider)
            if let problem = delegateProblem(delegate.calls.all, periods: periods) {
                fail("the delegate heard didFinish before waitUntilIdle returned", problem)
            }
            await mainActorDeliveries()
            if let problem = delegateProblem(delegate.calls.all, periods: periods) {
                fail("delegate calls alternate and balance with the assertions", problem)
            }
            if let problem = providerProblem(provider) {
                fail("assertions begin and end once per busy period", problem)
            }
            if periods != model.periods {
                fail("busy periods as the model says", "\(periods) assertions, the model has \(model.periods) periods")
                model.periods = periods
            }
            guard await log.idleFlag(count: periods).wait(atMost: budget.bound("events")) else {
                budget.ranOut("events")
                return fail("an idle event ends each busy period", "\(log.idleCount) idle events, \(periods) periods")
            }
            await checkAwaiters()
            bindLateRuns()
            checkEvents(log.events, final: false)
        }

        /// Awaiters of ended units got the unit's outcome; `run` callers its value or error.
        /// Each returns once the unit's end resumed it: waited for, with a bound.
        func checkAwaiters() async {
            for (id, outcome, returned) in awaiters {
                if !(await returned.wait(atMost: budget.bound("awaiter"))) { budget.ranOut("awaiter") }
                let expected = model.units[id]!.outcome
                if outcome.all.count != 1 || outcome.all.first != expected {
                    fail(
                        "awaiting returns the outcome",
                        "an awaiter of unit \(id) got \(outcome.all), expected \(expected.map { "\($0)" } ?? "none")")
                }
            }
            awaiters = []
            for id in model.units.keys.sorted() where model.units[id]!.style == .run {
                guard let outcome = model.units[id]!.outcome, runsChecked.insert(id).inserted else { continue }
                let probe = probes[id]!
                guard await probe.runReturned.wait(atMost: budget.bound("awaiter")),
                    let result = probe.snapshot.runResult
                else {
                    budget.ranOut("awaiter")
                    fail("run returns once its unit ended", "run \(id) did not return")
                    continue
                }
                if let problem = runResultProblem(model.units[id]!, outcome, result) {
                    fail("run returns the unit's value or error", "run \(id): \(problem)")
                }
            }
        }

        func runResultProblem(
            _ unit: Reference.Unit, _ outcome: AsyncTask.Outcome.Kind, _ result: Result<Int, any Error>
        ) -> String? {
            // A unit that joined returns the value of the work it joined.
            var source = unit.id
            if case .joined(let primary)? = unit.heard.first { source = primary }
            switch (outcome, result) {
            case (.finished, .success(let value)) where value == source:
                return nil
            case (.finished, .failure(AsyncTaskError.finishedWithoutValue))
            where model.units[source]!.style == .callback:
                return nil
            case (.failed, .failure(let error as TestError)) where error.code == source:
                return nil
            case (.cancelled, .failure(let error)) where error is CancellationError:
                return nil
            case (.replaced, .failure(AsyncTaskError.replaced)), (.dropped, .failure(AsyncTaskError.dropped)),
                (.timedOut, .failure(AsyncTaskError.timedOut)):
                return nil
            default:
                return "outcome \(outcome), run returned \(result)"
            }
        }

        /// The events of every unit that ended, once each: those the model says
        /// (escalations aside; only units in the queue are escalated). `final`: the stream
        /// finished, so the universal checks run on all of it.
        func checkEvents(_ events: [BackgroundQueue.Event], final: Bool) {
            var ids: [ObjectIdentifier: Int] = [:]
            for probe in probes.values { if let unit = probe.unit { ids[ObjectIdentifier(unit)] = probe.id } }
            var heard: [Int: [Reference.Heard]] = [:]
            var escalated: Set<Int> = []
            for event in events {
                guard let unit = event.unit else { continue }
                guard let id = ids[ObjectIdentifier(unit)] else {
                    if final { fail("events name units of the queue", "an event about an unknown unit: \(event)") }
                    continue
                }
                switch event.kind {
                case .enqueued: heard[id, default: []].append(.enqueued)
                case .started: heard[id, default: []].append(.started)
                case .ended: heard[id, default: []].append(.ended(event.outcome!.kind))
                case .joined: heard[id, default: []].append(.joined(ids[ObjectIdentifier(event.primary!)] ?? 0))
                case .escalated: escalated.insert(id)
                case .retrying: fail("events agree with outcomes", "unit \(id) retried, with no retry policy")
                default: break
                }
            }
            for id in model.units.keys.sorted() where !eventsChecked.contains(id) {
                let unit = model.units[id]!
                guard unit.outcome != nil else { continue }
                eventsChecked.insert(id)
                let actual = heard[id] ?? []
                if unit.preCancelled {
                    // It may be reported cancelled; never started, dropped, joined, timed out.
                    if let wrong = actual.first(where: { $0 != .enqueued && $0 != .ended(.cancelled) }) {
                        let timeout = unit.timeout.map { "\($0) s" } ?? "none"
                        fail(
                            "events agree with outcomes",
                            "pre-cancelled run \(id) (\(unit.policy), timeout \(timeout)) heard \(wrong)")
                    }
                } else if actual != unit.heard {
                    fail(
                        actual.count == unit.heard.count
                            ? "events agree with outcomes" : "each unit hears the events of its path",
                        "unit \(id) (\(unit.style), \(unit.policy)) heard \(actual), expected \(unit.heard)")
                }
                if escalated.contains(id), !unit.heard.contains(.enqueued) {
                    fail("only units in the queue are escalated", "unit \(id) (\(unit.heard)) was escalated")
                }
            }
            guard final else { return }
            for (check, message) in universalEventProblems(events) { fail(check, message) }
        }

        // MARK: Dropping the queue

        /// Drops the queue — half the time with one unit executing and others waiting on
        /// the suspended queue: the waiting ones end cancelled, the executing one runs to
        /// its end; then the event stream finishes, and the queue's storage, provider and
        /// listeners are released.
        func dropQueue() async {
            var running: Int?
            if random.chance(50) {
                step = "add before dropping the queue"
                await add(.task, name: "a", .ignore, nil, timeout: random.chance(50) ? 5 : nil)
                running = model.units.values.first { $0.phase == .executing }?.id
                queue!.suspend()
                model.suspensions += 1
                for _ in 0..<Int.random(in: 1...3, using: &random) {
                    await add(.task, name: nil, .ignore, random.pick(Self.priorities), timeout: pickTimeout())
                }
            }
            guard !aborted else { return }
            step = "drop the queue"
            weak let weakQueue = queue
            weak let weakCore = queue!.core
            weak let weakProvider = provider
            queue = nil
            // A `run` task that just returned may hold it a moment longer.
            guard await eventually(within: budget.bound("queue released"), { weakQueue == nil }) else {
                budget.ranOut("queue released")
                return abort("a dropped queue is released", "the queue outlived the test's last reference")
            }
            model.close()
            await settle()
            if let running { await complete(running, throwing: false) }
            guard !aborted else { return }
            if await log.finished.wait(atMost: budget.bound("stream")) {
                bindLateRuns()
                checkEvents(log.events, final: true)
            } else {
                budget.ranOut("stream")
                fail("a dropped queue finishes its event streams", "the stream did not finish once its members ended")
            }
            if let problem = providerProblem(provider!) {
                fail("assertions begin and end once per busy period", problem)
            }
            if periods(provider!) != model.periods {
                fail("busy periods as the model says", "\(periods(provider!)) assertions, \(model.periods) periods")
            }
            await mainActorDeliveries()
            // The period that ends after the queue is gone has no queue to tell its delegate.
            if let problem = delegateProblem(delegate.calls.all, periods: nil) {
                fail("delegate calls alternate and balance with the assertions", problem)
            }
            provider = nil
            let problem = await releaseProblem(report, isReleased: { weakCore == nil && weakProvider == nil }) {
                log.forget()
                probes = [:]
            }
            if let (check, message) = problem {
                let armed = model.units.values.contains { $0.rankAtStart != nil && $0.timeout == 5 }
                fail(check, "\(message) (\(armed ? "a" : "no") 5 s timeout started)")
            }
        }
    }
}
