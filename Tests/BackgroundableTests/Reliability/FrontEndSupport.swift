import BackgroundableTesting
import Dispatch
import Foundation
import Synchronization
import Testing

@testable import Backgroundable

/// The pieces of the front-end model-based tests (``FrontEndModelTests``).
enum FrontEnd {
    /// The seed of this run, one for both tests: `BACKGROUNDABLE_FRONTEND_SEED`, else a
    /// random one.
    static let baseSeed =
        ProcessInfo.processInfo.environment["BACKGROUNDABLE_FRONTEND_SEED"].flatMap { UInt64($0) }
        ?? UInt64.random(in: 1..<(UInt64.max / 2))

    static func count(_ variable: String, default value: Int) -> Int {
        ProcessInfo.processInfo.environment[variable].flatMap { Int($0) } ?? value
    }

    static let traces = ProcessInfo.processInfo.environment["BACKGROUNDABLE_FRONTEND_TRACE"] != nil
}

// MARK: - Failures and bounds

extension FrontEnd {
    /// The failures of one test, by check: each check is reported once, with the first
    /// seed and step that broke it and how often it broke.
    final class Report: Sendable {
        private let variable: String
        private let entries = Lock<[(check: String, first: String, count: Int)]>([])

        /// `variable`: the environment variable that runs one sequence or round.
        init(variable: String) {
            self.variable = variable
        }

        func fail(_ check: String, seed: UInt64, step: String, _ message: String) {
            let first = "seed \(seed), \(step): \(message) (replay: BACKGROUNDABLE_FRONTEND_SEED=\(seed) \(variable)=1)"
            entries.withLock { entries in
                if let index = entries.firstIndex(where: { $0.check == check }) {
                    entries[index].count += 1
                } else {
                    entries.append((check, first, 1))
                }
            }
        }

        func hasFailed(_ check: String) -> Bool {
            entries.withLock { $0.contains { $0.check == check } }
        }

        func recordIssues() {
            for entry in entries.withLock({ $0 }) {
                let message = "[\(entry.check)] failed \(entry.count) time(s); first: \(entry.first)"
                print("FrontEndModelTests: \(message)")
                Issue.record(Comment(rawValue: message))
            }
        }
    }

    /// How long a wait may take before it counts as a hang. A kind of wait that ran out
    /// once gets a short bound from then on: its failure is reported once, and a broken
    /// build does not spend the long bound again and again.
    final class Budget: Sendable {
        static let generous: Duration = .seconds(20)
        static let short: Duration = .milliseconds(300)

        private let exhausted = Lock<Set<String>>([])

        /// The bound of a wait of `kind`. An `escalation` event follows the await that
        /// causes it at once: its bound is shorter, since a broken build waits for it often.
        func bound(_ kind: String) -> Duration {
            isExhausted(kind) ? Self.short : kind == "escalation" ? .seconds(15) : Self.generous
        }

        func isExhausted(_ kind: String) -> Bool {
            exhausted.withLock { $0.contains(kind) }
        }

        func ranOut(_ kind: String) {
            _ = exhausted.withLock { $0.insert(kind) }
        }

        /// `queue.waitUntilIdle()`, within the bound of an "idle" wait: `false` (the wait
        /// cancelled, the bound shortened) when it did not return in time.
        func waitUntilIdle(_ queue: BackgroundQueue) async -> Bool {
            let idle = Flag()
            let waiter = Task {
                await queue.waitUntilIdle()
                idle.raise()
            }
            guard await idle.wait(atMost: bound("idle")) else {
                waiter.cancel()
                ranOut("idle")
                return false
            }
            return true
        }
    }
}

// MARK: - Waiting

extension FrontEnd {
    /// A flag raised once, awaited with a bound: a flag never raised is a failure of the
    /// test, not a hang.
    final class Flag: Sendable {
        private struct State {
            var raised = false
            var waiters: [UInt64: Continuation<Void>] = [:]
            var registrations: UInt64 = 0
        }

        private let state = Lock(State())

        var isRaised: Bool { state.withLock { $0.raised } }

        func raise() {
            let waiters = state.withLock { state -> [Continuation<Void>] in
                state.raised = true
                defer { state.waiters = [:] }
                return Array(state.waiters.values)
            }
            for waiter in waiters { waiter.resume() }
        }

        /// Waits until the flag is raised or the waiting task is cancelled.
        func wait() async {
            await waitCancellably(
                register: { continuation in
                    state.withLock { state in
                        if state.raised { return nil }
                        state.registrations += 1
                        state.waiters[state.registrations] = continuation
                        return state.registrations
                    }
                },
                unregister: { id in self.state.withLock { $0.waiters.removeValue(forKey: id) }?.resume() })
        }

        /// `true` when the flag was raised within `bound`. Only for the test's own tasks: a
        /// timer in a task that is escalated while it waits may fire very late.
        func wait(atMost bound: Duration) async -> Bool {
            if isRaised { return true }
            return await withTaskGroup(of: Void.self) { group in
                group.addTask { await self.wait() }
                group.addTask { try? await Task.sleep(for: bound) }
                await group.next()
                group.cancelAll()
                return isRaised
            }
        }
    }

    /// Polls `condition` (yielding in between) for at most `bound`: for releases, which
    /// have no event to await.
    static func eventually(within bound: Duration, _ condition: () -> Bool) async -> Bool {
        let clock = ContinuousClock()
        let deadline = clock.now + bound
        while !condition() {
            if clock.now > deadline { return false }
            await Task.yield()
        }
        return true
    }

    static let heldUnitsCheck = "an ended unit does not keep its dropped queue alive"
    static let releaseCheck = "nothing of a dropped queue survives its members"

    /// Once a dropped queue's members all ended, its storage (`isReleased`) is released:
    /// even while the test still holds ended units, then (`forget` let go of them) in any
    /// case. Returns the check that broke and what was seen; a check already reported in
    /// `report` is not waited for again.
    static func releaseProblem(
        _ report: Report, isReleased: () -> Bool, forget: () -> Void
    ) async -> (check: String, message: String)? {
        if report.hasFailed(releaseCheck) { return nil }
        if !report.hasFailed(heldUnitsCheck), await eventually(within: Budget.generous, isReleased) { return nil }
        forget()
        if await eventually(within: Budget.generous, isReleased) {
            if report.hasFailed(heldUnitsCheck) { return nil }
            return (heldUnitsCheck, "the storage was released only once the test let go of the ended units")
        }
        return (releaseCheck, "the storage is alive after every member ended and the test let go of them")
    }

    /// `true` once `group` is empty, `false` after `bound`.
    static func wait(for group: DispatchGroup, atMost bound: Duration) async -> Bool {
        let done = Flag()
        group.notify(queue: .global()) { done.raise() }
        return await done.wait(atMost: bound)
    }
}

// MARK: - Events

extension FrontEnd {
    /// Every event of a queue, collected by a task of its own, with the waits the drivers
    /// need: the first event about the unit of a lane, an escalation, the n-th idle, the
    /// end of the stream.
    final class EventLog: Sendable {
        private struct State {
            var events: [BackgroundQueue.Event] = []
            var idles = 0
            var byLane: [String: AsyncTask] = [:]
            var escalations: [ObjectIdentifier: UInt8] = [:]
            var laneWatchers: [String: [Flag]] = [:]
            var escalationWatchers: [ObjectIdentifier: [(rank: UInt8, flag: Flag)]] = [:]
            var idleWatchers: [(count: Int, flag: Flag)] = []
        }

        private let state = Lock(State())
        /// Raised when the stream finished.
        let finished = Flag()

        private init() {}

        /// Starts collecting `events`.
        static func collecting(_ events: AsyncStream<BackgroundQueue.Event>) -> EventLog {
            let log = EventLog()
            Task {
                for await event in events { log.append(event) }
                log.finished.raise()
            }
            return log
        }

        var events: [BackgroundQueue.Event] { state.withLock { $0.events } }
        var idleCount: Int { state.withLock { $0.idles } }

        /// Lets go of the units the events name.
        func forget() {
            state.withLock { state in
                state.events = []
                state.byLane = [:]
            }
        }

        private func append(_ event: BackgroundQueue.Event) {
            var raise: [Flag] = []
            state.withLock { state in
                state.events.append(event)
                switch event.kind {
                case .idle:
                    state.idles += 1
                    let idles = state.idles
                    raise += state.idleWatchers.filter { $0.count <= idles }.map(\.flag)
                    state.idleWatchers.removeAll { $0.count <= idles }
                case .escalated:
                    guard let unit = event.unit, let priority = event.priority else { break }
                    let key = ObjectIdentifier(unit)
                    let rank = max(state.escalations[key] ?? 0, Reference.rank(priority.rawValue))
                    state.escalations[key] = rank
                    let watchers = state.escalationWatchers[key] ?? []
                    raise += watchers.filter { $0.rank <= rank }.map(\.flag)
                    state.escalationWatchers[key] = watchers.filter { $0.rank > rank }
                default: break
                }
                if let unit = event.unit, let lane = unit.lane, state.byLane[lane] == nil {
                    state.byLane[lane] = unit
                    raise += state.laneWatchers.removeValue(forKey: lane) ?? []
                }
            }
            for flag in raise { flag.raise() }
        }

        /// The unit of `lane`, once an event named it.
        func unit(ofLane lane: String) -> AsyncTask? { state.withLock { $0.byLane[lane] } }

        /// Raised once an event names the unit of `lane`.
        func laneFlag(_ lane: String) -> Flag {
            watch { state, flag in
                if state.byLane[lane] != nil { return true }
                state.laneWatchers[lane, default: []].append(flag)
                return false
            }
        }

        /// Raised once `unit` was escalated to a rank of at least `rank`.
        func escalationFlag(_ unit: AsyncTask, rank: UInt8) -> Flag {
            let key = ObjectIdentifier(unit)
            return watch { state, flag in
                if (state.escalations[key] ?? 0) >= rank { return true }
                state.escalationWatchers[key, default: []].append((rank, flag))
                return false
            }
        }

        /// Raised once `count` idle events arrived.
        func idleFlag(count: Int) -> Flag {
            watch { state, flag in
                if state.idles >= count { return true }
                state.idleWatchers.append((count, flag))
                return false
            }
        }

        /// A new flag, raised at once when `register` says so (`true`), else registered.
        private func watch(_ register: (inout State, Flag) -> Bool) -> Flag {
            let flag = Flag()
            if state.withLock({ register(&$0, flag) }) { flag.raise() }
            return flag
        }
    }

    /// Checks that hold for any queue's events, whoever drove it: every `ended` event
    /// reports the outcome its unit really has, a unit ends at most once and hears nothing
    /// after its end, a joined unit hears nothing else, busy and idle alternate.
    static func universalEventProblems(_ events: [BackgroundQueue.Event]) -> [(check: String, message: String)] {
        var problems: [(check: String, message: String)] = []
        var terminal: Set<ObjectIdentifier> = []
        var joined: Set<ObjectIdentifier> = []
        var other: Set<ObjectIdentifier> = []
        var busy = false
        for event in events {
            switch event.kind {
            case .busy:
                if busy { problems.append(("busy and idle events alternate", "two busy events in a row")) }
                busy = true
            case .idle:
                if !busy { problems.append(("busy and idle events alternate", "idle without busy")) }
                busy = false
            case .ended:
                guard let unit = event.unit, let outcome = event.outcome else { break }
                if unit.currentOutcome?.kind != outcome.kind {
                    let actual = unit.currentOutcome.map { "\($0)" } ?? "none"
                    problems.append(
                        (
                            "ended events report the unit's outcome",
                            "ended(\(unit), \(outcome)) but the unit's outcome is \(actual)"
                        ))
                }
                if !terminal.insert(ObjectIdentifier(unit)).inserted {
                    problems.append(("one ended event per unit", "\(unit) ended twice in the events"))
                }
            case .joined:
                guard let unit = event.unit else { break }
                if !terminal.insert(ObjectIdentifier(unit)).inserted {
                    problems.append(("one ended event per unit", "\(unit) joined after its end"))
                }
                joined.insert(ObjectIdentifier(unit))
            default:
                // Every other event about a unit: enqueued, started, retrying, escalated.
                guard let unit = event.unit else { break }
                if terminal.contains(ObjectIdentifier(unit)) {
                    problems.append(("no event after a unit's end", "\(event) after the unit's end"))
                }
                other.insert(ObjectIdentifier(unit))
            }
        }
        if !joined.isDisjoint(with: other) {
            problems.append(("a joined unit hears nothing else", "a unit that joined had other events"))
        }
        return problems
    }
}

// MARK: - Delegate and background time

extension FrontEnd {
    /// Delegate calls alternate `willStart`, `didFinish`, …, one pair per busy period
    /// (`periods`, when given, all of them over: the calls end with `didFinish`). `nil`
    /// when they do, else what is wrong.
    static func delegateProblem(_ calls: [String], periods: Int?) -> String? {
        for (index, call) in calls.enumerated() where call != (index.isMultiple(of: 2) ? "willStart" : "didFinish") {
            return "calls do not alternate: \(calls)"
        }
        guard let periods else { return nil }
        return calls.count == 2 * periods ? nil : "\(calls.count) delegate calls for \(periods) busy periods: \(calls)"
    }

    /// The provider's log: begin, end of the same identifier, begin, …, nothing held, no
    /// stray end. `nil` when it is so, else what is wrong.
    static func providerProblem(_ provider: RecordingBackgroundTaskProvider) -> String? {
        let log = provider.log
        var held: BackgroundTaskIdentifier?
        for entry in log {
            switch entry {
            case .began(let identifier, _):
                if held != nil { return "began while another assertion was held: \(log)" }
                held = identifier
            case .ended(let identifier):
                if held != identifier { return "ended an assertion that was not the one held: \(log)" }
                held = nil
            }
        }
        if !provider.activeIdentifiers.isEmpty { return "assertions still held: \(provider.activeIdentifiers)" }
        if provider.unbalancedEndCount != 0 { return "\(provider.unbalancedEndCount) unbalanced ends" }
        return nil
    }

    /// Busy periods so far: assertions begun.
    static func periods(_ provider: RecordingBackgroundTaskProvider) -> Int {
        provider.log.count { if case .began = $0 { true } else { false } }
    }
}

// MARK: - Probes

extension FrontEnd {
    /// What the test sees of one unit: its body's runs, the priorities it read, its end;
    /// and the gate its body waits behind.
    final class Probe: Sendable {
        struct State {
            var unit: AsyncTask?
            var bodyRuns = 0
            var startPriority: TaskPriority?
            var endPriority: TaskPriority?
            var throwsOnRelease = false
            var runResult: Result<Int, any Error>?
            /// How often the unit told its end to a waiter (once).
            var endings = 0
        }

        let id: Int
        /// The replace-name whose bodies are counted (`nil`: not counted).
        let countedName: String?
        let started = Flag()
        let exited = Flag()
        let ended = Flag()
        let gate = Flag()
        let runReturned = Flag()
        /// Signalled when the body starts and when the unit ends: for a driver's own
        /// thread, which may block.
        let startedOrEnded = DispatchSemaphore(value: 0)
        let state = Lock(State())

        init(id: Int = 0, countedName: String? = nil) {
            self.id = id
            self.countedName = countedName
        }

        var unit: AsyncTask? { state.withLock { $0.unit } }
        var snapshot: State { state.withLock { $0 } }

        /// Binds the unit, and raises ``ended`` when it ends (through a callback, which
        /// neither awaits nor escalates the unit).
        func bind(_ unit: AsyncTask) {
            let first = state.withLock { state -> Bool in
                guard state.unit == nil else { return false }
                state.unit = unit
                return true
            }
            guard first else { return }
            unit.whenEnded { [self] _ in
                state.withLock { $0.endings += 1 }
                ended.raise()
                startedOrEnded.signal()
            }
        }

        /// Called first thing in a body: records its run and the priority it runs at.
        func bodyStarted(_ unit: AsyncTask?) {
            let priority = Task.currentPriority
            state.withLock { state in
                state.bodyRuns += 1
                state.startPriority = priority
            }
            if let unit { bind(unit) }
            started.raise()
            startedOrEnded.signal()
        }

        /// An async body: counted under its replace-name while it runs, it waits for its
        /// gate (or its cancellation), reads its priority, then returns its id or throws.
        func body(_ overlap: NameOverlap) -> @Sendable () async throws -> Int {
            { [self] in
                bodyStarted(AsyncTask.current)
                overlap.enter(self)
                defer {
                    overlap.leave(self)
                    exited.raise()
                }
                await gate.wait()
                let priority = Task.currentPriority
                let throwing = state.withLock { state in
                    state.endPriority = priority
                    return state.throwsOnRelease
                }
                if throwing { throw TestError(code: id) }
                return id
            }
        }

        /// Lets an async body return (or throw).
        func release(throwing: Bool) {
            state.withLock { $0.throwsOnRelease = throwing }
            gate.raise()
        }

        /// A `run` returned `result`.
        func runReturned(_ result: Result<Int, any Error>) {
            state.withLock { $0.runResult = result }
            runReturned.raise()
        }
    }

    /// The bodies of each replace-name running now. A body may not start while the body
    /// of a unit it displaced (`replaced`), or of a live unit of its name, still runs; the
    /// body of a unit ended otherwise (cancelled) may still be winding down.
    final class NameOverlap: Sendable {
        private let running = Lock<[String: [ObjectIdentifier: Probe]]>([:])
        /// Each body that started while others of its name ran, with those others.
        private let overlaps = Lock<[(entering: Probe, running: [Probe])]>([])

        func enter(_ probe: Probe) {
            guard let name = probe.countedName else { return }
            let others = running.withLock { running in
                defer { running[name, default: [:]][ObjectIdentifier(probe)] = probe }
                return Array((running[name] ?? [:]).values)
            }
            if !others.isEmpty { overlaps.withLock { $0.append((probe, others)) } }
        }

        func leave(_ probe: Probe) {
            guard let name = probe.countedName else { return }
            _ = running.withLock { $0[name]?.removeValue(forKey: ObjectIdentifier(probe)) }
        }

        /// The overlaps so far that break the rule; then forgets them. Read once the
        /// units involved ended (or are known to be live).
        func takeProblems() -> [String] {
            let overlaps = overlaps.withLock { overlaps in
                defer { overlaps = [] }
                return overlaps
            }
            return overlaps.compactMap { overlap in
                let displaced = overlap.running.first { other in
                    guard let outcome = other.unit?.currentOutcome else { return true }
                    return outcome.kind == .replaced
                }
                guard let displaced else { return nil }
                let name = overlap.entering.countedName ?? ""
                let other = displaced.unit.map { "\($0)" } ?? "another unit"
                return "a body of \"\(name)\" started while the body of \(other) still ran"
            }
        }
    }
}

extension Result where Failure == any Error {
    init(catching body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}
