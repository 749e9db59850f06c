import Foundation
import Synchronization
import Testing

@testable import Backgroundable

/// A member of the model-based test: the machine only needs an object.
final class ModelMember: Sendable {
    let id: Int

    init(_ id: Int) {
        self.id = id
    }
}

/// A clock the test moves by hand.
final class ManualClock: Sendable {
    private let value = Mutex<Int64>(1_000)

    var now: Int64 { value.withLock { $0 } }

    func advance(by nanoseconds: Int64) {
        value.withLock { $0 += nanoseconds }
    }
}

/// The queue's rules written as plainly as possible (dictionaries, linear scans), to
/// check the machine against. It does not pick which member starts: it checks that
/// every start the machine decides is the one the rules allow (a free slot, not
/// suspended, the highest priority, then the earliest to become ready), and, once the
/// machine is quiet, that nothing startable was left waiting.
struct ReferenceQueue {
    enum Place { case ready, blocked, executing, delayed }

    struct Unit {
        let id: Int
        let name: String?
        /// Its priority's rank; an escalation raises it.
        var rank: UInt8
        let timeout: Int64?
        /// Its lane (`nil` for none, and for members of a sequential batch).
        let lane: String?
        /// Its start time; `.min` for none. A retry sets a new one.
        var startTime: Int64
        /// `blocked` while its predecessor is live, whatever its start time; `delayed`
        /// while it has none and its start time is to come.
        var place: Place
        var readySequence = 0
        var deadline = Int64.max
        var predecessor: Int?
        var successor: Int?
        /// The queue decided its outcome; it has not left yet.
        var ending = false
    }

    var units: [Int: Unit] = [:]
    /// Outcomes the queue owes (decided, not yet delivered as `.end`).
    var owed: [Int: AsyncTask.Outcome.Kind] = [:]
    /// Members the queue must turn away at once (`.reject`).
    var owedRejections: [Int: AsyncTask.Outcome.Kind] = [:]
    /// Members that must join a live member (`.join`): the one they join.
    var owedJoins: [Int: Int] = [:]
    var outcomes: [Int: AsyncTask.Outcome.Kind] = [:]
    var limit = Int.max
    var acceptsWork = true
    /// The clock, as the machine's reads it.
    var now: Int64 = 1_000
    var suspensions = 0
    var periods: UInt64 = 0
    /// Members admitted in the current (or last) busy period, and those of them that left.
    var periodAdmitted = 0
    var periodEnded = 0
    var readySequences = 0
    var problems: [String] = []

    var enqueuedCount: Int { units.values.count { $0.place != .executing } }
    var executingCount: Int { units.values.count { $0.place == .executing } }

    func hasLive(named name: String) -> Bool {
        units.values.contains { $0.name == name && !$0.ending }
    }

    static func rank(_ priority: UInt8) -> UInt8 {
        priority == 0 ? TaskPriority.medium.rawValue : priority
    }

    // MARK: Events

    /// Applies the policy and admits the member; `false` when it is dropped. A member
    /// of a lane waits behind the lane's last live member (the one nobody follows).
    mutating func admit(
        id: Int, name: String?, policy: UniquenessPolicy, priority: UInt8, timeout: Int64?, behind: Int?,
        lane: String? = nil, delay: Int64 = 0
    ) -> Bool {
        guard acceptsWork else {
            owedRejections[id] = .cancelled
            return false
        }
        if let name, hasLive(named: name) {
            switch policy.kind {
            case .ignore: break
            case .drop:
                owedRejections[id] = .dropped
                return false
            case .join:
                // The live member of the name added last.
                owedJoins[id] = units.values.filter { $0.name == name && !$0.ending }.map(\.id).max()!
                return false
            case .replace:
                for (other, unit) in units where unit.name == name && !unit.ending {
                    markEnding(other, .replaced)
                }
            }
        }
        if units.isEmpty {
            periods += 1
            (periodAdmitted, periodEnded) = (0, 0)
        }
        periodAdmitted += 1
        let behind =
            behind ?? lane.flatMap { lane in units.values.first { $0.lane == lane && $0.successor == nil }?.id }
        let unit = Unit(
            id: id, name: name, rank: Self.rank(priority), timeout: timeout, lane: lane,
            startTime: delay > 0 ? now + delay : .min, place: .blocked)
        units[id] = unit
        if let behind {
            units[id]!.predecessor = behind
            units[behind]!.successor = id
        } else {
            unblock(id)
        }
        return true
    }

    /// `id` has no predecessor (any more): ready, or delayed until its start time.
    mutating func unblock(_ id: Int) {
        units[id]!.predecessor = nil
        if units[id]!.startTime > now {
            units[id]!.place = .delayed
        } else {
            units[id]!.place = .ready
            readySequences += 1
            units[id]!.readySequence = readySequences
        }
    }

    /// Executing `id` failed an attempt and retries `delay` from now: it waits like a
    /// delayed member (or is ready at once), its slot free.
    mutating func retry(_ id: Int, delay: Int64) {
        units[id]!.deadline = .max
        units[id]!.startTime = delay > 0 ? now + delay : .min
        unblock(id)
    }

    /// A caller of `priority` waits for `id`: it ranks at least there; a ready member
    /// becomes ready again at its new rank (behind the ones there). `false` when nothing
    /// changes.
    mutating func escalate(_ id: Int, to priority: UInt8) -> Bool {
        guard let unit = units[id], !unit.ending, Self.rank(priority) > unit.rank else { return false }
        units[id]!.rank = Self.rank(priority)
        if unit.place == .ready {
            readySequences += 1
            units[id]!.readySequence = readySequences
        }
        return true
    }

    /// The clock moved: delayed members whose start time came are ready, earliest
    /// first (ties in admission order).
    mutating func startDue() {
        let due = units.values.filter { $0.place == .delayed && $0.startTime <= now }
        for unit in due.sorted(by: { ($0.startTime, $0.id) < ($1.startTime, $1.id) }) {
            unblock(unit.id)
        }
    }

    mutating func markEnding(_ id: Int, _ kind: AsyncTask.Outcome.Kind) {
        guard units[id]?.ending == false else { return }
        units[id]!.ending = true
        owed[id] = kind
    }

    mutating func cancel(where matches: (Unit) -> Bool) {
        for unit in units.values where matches(unit) && !unit.ending {
            markEnding(unit.id, .cancelled)
        }
    }

    mutating func timeOut(now: Int64) {
        for unit in units.values where unit.place == .executing && unit.deadline <= now {
            markEnding(unit.id, .timedOut)
        }
    }

    // MARK: What the machine decided

    /// Whether the machine may start `id` now.
    private func checkStartable(_ id: Int, what: String) -> [String] {
        guard let unit = units[id] else { return ["\(what) \(id): not live"] }
        var problems: [String] = []
        if unit.place != .ready || unit.ending {
            problems.append("\(what) \(id): not ready (\(unit.place), ending \(unit.ending))")
        }
        if suspensions > 0 { problems.append("\(what) \(id) while suspended") }
        if executingCount >= limit { problems.append("\(what) \(id) beyond the limit \(limit)") }
        let better = units.values.filter { other in
            other.place == .ready && !other.ending && other.id != id
                && (other.rank > unit.rank || (other.rank == unit.rank && other.readySequence < unit.readySequence))
        }
        if let first = better.first { problems.append("\(what) \(id) before \(first.id)") }
        return problems
    }

    mutating func started(_ id: Int, now: Int64) {
        problems += checkStartable(id, what: "started")
        guard units[id] != nil else { return }
        units[id]!.place = .executing
        if let timeout = units[id]!.timeout {
            if timeout <= 0 { problems.append("started \(id) with timeout \(timeout)") }
            units[id]!.deadline = now + timeout
        }
    }

    mutating func rejected(_ id: Int, _ kind: AsyncTask.Outcome.Kind) {
        if let owed = owedRejections.removeValue(forKey: id) {
            if owed != kind { problems.append("rejected \(id) \(kind), owed \(owed)") }
            outcomes[id] = kind
            return
        }
        // Expired as it would start.
        problems += checkStartable(id, what: "expired at start")
        if kind != .timedOut || (units[id]?.timeout ?? 1) > 0 {
            problems.append("rejected \(id) with \(kind) unexpectedly")
        }
        leave(id, kind)
    }

    /// The machine asked for `id` to end with `kind`.
    mutating func endRequested(_ id: Int, _ kind: AsyncTask.Outcome.Kind) {
        guard let owed = owed.removeValue(forKey: id) else {
            return problems.append("ended \(id) with \(kind), nothing owed")
        }
        if owed != kind { problems.append("ended \(id) with \(kind), owed \(owed)") }
    }

    /// `id` reached its outcome and leaves.
    mutating func leave(_ id: Int, _ kind: AsyncTask.Outcome.Kind) {
        guard let unit = units.removeValue(forKey: id) else {
            return problems.append("\(id) left twice or was never admitted")
        }
        periodEnded += 1
        outcomes[id] = kind
        if unit.place == .blocked {
            units[unit.predecessor!]!.successor = unit.successor
            if let successor = unit.successor { units[successor]!.predecessor = unit.predecessor }
        } else if let successor = unit.successor {
            unblock(successor)
        }
    }

    /// Once the machine is quiet: nothing owed, nothing startable left waiting.
    func quietProblems() -> [String] {
        var problems: [String] = []
        if !owed.isEmpty { problems.append("outcomes never delivered: \(owed)") }
        if !owedRejections.isEmpty { problems.append("rejections never delivered: \(owedRejections)") }
        if !owedJoins.isEmpty { problems.append("joins never delivered: \(owedJoins)") }
        if suspensions == 0, executingCount < limit,
            let waiting = units.values.first(where: { $0.place == .ready && !$0.ending })
        {
            problems.append("\(waiting.id) is ready with a free slot and nobody starts it")
        }
        return problems
    }
}

/// Drives a ``QueueStateMachine`` as its storage would (actions performed after each
/// transition, transitions they cause performed at once, the drainer later, deliveries
/// in order) and tells the reference what the machine decided.
struct MachineHarness {
    typealias Machine = QueueStateMachine<ModelMember>

    let clock = ManualClock()
    var machine: Machine
    var reference = ReferenceQueue()
    var members: [Int: ModelMember] = [:]
    /// The handle of every admitted member (members carry theirs, as units do).
    var handles: [Int: QueueStateMachine<ModelMember>.Handle] = [:]
    var endedBeforeAttached: [Int: AsyncTask.Outcome] = [:]
    var outcomes: [Int: AsyncTask.Outcome.Kind] = [:]
    var executing: Set<Int> = []
    var drainerPending = false
    var sleeper: (deadline: Int64, generation: UInt64)?
    /// "busy 1", "idle 1", … in delivery order.
    var deliveries: [String] = []
    /// Whether the sequence watches the queue's progress (then it is sampled every 10
    /// ticks of the clock).
    var watched = false
    /// When each member last started (a count of starts), and the progress each
    /// executing member was last sampled at.
    var lastStarts: [Int: Int] = [:]
    var starts = 0
    var sampledProgress: [Int: Double] = [:]

    init() {
        let clock = clock
        machine = Machine(limit: .max, progressSampleInterval: 10, now: { clock.now })
    }

    /// What a member reports when sampled: a fixed function of its number.
    static func reportedProgress(_ id: Int) -> Double { Double(id % 3) / 2 }

    mutating func member(_ id: Int) -> ModelMember {
        if let member = members[id] { return member }
        let member = ModelMember(id)
        members[id] = member
        return member
    }

    mutating func transition(_ body: (inout Machine, inout Machine.ActionList) -> Void) {
        var actions: Machine.ActionList = []
        body(&machine, &actions)
        perform(actions)
    }

    /// Decisions first, in the order the machine made them; then the ends and
    /// deliveries, whose transitions are performed at once (as the storage does).
    mutating func perform(_ actions: Machine.ActionList) {
        for action in actions {
            switch action {
            case .start(let member, let priority):
                if ReferenceQueue.rank(priority) != reference.units[member.id]?.rank {
                    reference.problems.append("started \(member.id) at \(priority)")
                }
                reference.started(member.id, now: clock.now)
                executing.insert(member.id)
                starts += 1
                lastStarts[member.id] = starts
            case .reject(let member, let outcome, _):
                if outcomes[member.id] != nil { reference.problems.append("rejected \(member.id) after its end") }
                outcomes[member.id] = outcome.kind
                reference.rejected(member.id, outcome.kind)
            case .armSleeper(let deadline, let generation):
                if sleeper.map({ generation > $0.generation }) ?? true { sleeper = (deadline, generation) }
            case .sampleProgress(let members):
                let listed = members.map { $0.1.id }
                if Set(listed) != executing || listed.count != executing.count
                    || listed != listed.sorted(by: { lastStarts[$0]! < lastStarts[$1]! })
                {
                    reference.problems.append("sampled \(listed), executing \(executing.sorted())")
                }
                for (_, member) in members { sampledProgress[member.id] = Self.reportedProgress(member.id) }
                let samples = members.map { ($0.0, Self.reportedProgress($0.1.id)) }
                transition { machine, actions in machine.progressSampled(samples, actions: &actions) }
            case .spawnDrainer:
                if drainerPending { reference.problems.append("two drainers") }
                drainerPending = true
            case .end(let member, let outcome, _):
                reference.endRequested(member.id, outcome.kind)
            case .replace(let member, _):
                reference.endRequested(member.id, .replaced)
            case .join(let member, let primary, _, _):
                let owed = reference.owedJoins.removeValue(forKey: member.id)
                if owed != primary.id {
                    reference.problems.append("\(member.id) joined \(primary.id), owed \(String(describing: owed))")
                }
            case .deliver:
                break
            }
        }
        for action in actions {
            switch action {
            case .end(let member, let outcome, _):
                end(member.id, outcome)
            case .replace(let member, _):
                end(member.id, .replaced)
            case .deliver:
                deliver()
            default:
                break
            }
        }
    }

    /// The member reached `outcome` (first terminal transition wins, as in a unit) and
    /// tells the queue, as a unit tells its owner; one that ended during its own add has
    /// no handle yet and tells the queue once it has (``attach(_:_:)``).
    mutating func end(_ id: Int, _ outcome: AsyncTask.Outcome) {
        guard outcomes[id] == nil else { return }
        outcomes[id] = outcome.kind
        executing.remove(id)
        sampledProgress[id] = nil
        guard let handle = handles[id] else {
            endedBeforeAttached[id] = outcome
            return
        }
        reference.leave(id, outcome.kind)
        transition { machine, actions in machine.memberEnded(handle, outcome, actions: &actions) }
    }

    /// Executing `id` failed an attempt and retries after `delay`, as a unit's `Task`
    /// tells its queue.
    mutating func retry(_ id: Int, delay: Int64) {
        executing.remove(id)
        sampledProgress[id] = nil
        reference.retry(id, delay: delay)
        let note = RetryNote(attempt: 1, error: TestError(code: id), delay: .nanoseconds(delay))
        var retried = false
        let handle = handles[id]!
        transition { machine, actions in
            retried = machine.memberRetrying(handle, after: delay, note, actions: &actions)
        }
        if !retried { reference.problems.append("retry of executing \(id) refused") }
    }

    /// The add returned `handle` for `id`, as the storage attaches a unit's owner.
    mutating func attach(_ id: Int, _ handle: QueueStateMachine<ModelMember>.Handle) {
        handles[id] = handle
        guard let outcome = endedBeforeAttached.removeValue(forKey: id) else { return }
        reference.leave(id, outcome.kind)
        transition { machine, actions in machine.memberEnded(handle, outcome, actions: &actions) }
    }

    mutating func deliver() {
        var batch: [QueueStateMachine<ModelMember>.Delivery] = []
        while machine.takeDeliveries(into: &batch) {
            for delivery in batch {
                switch delivery {
                case .busy(let period):
                    deliveries.append("busy \(period)")
                    transition { machine, actions in machine.backgroundTimeBegun(period: period, actions: &actions) }
                case .idle(let period):
                    deliveries.append("idle \(period)")
                    _ = machine.idleDelivered(period: period)
                case .event, .closed, .progress:
                    break
                }
            }
        }
    }

    /// Runs due sleepers and the drainer until the machine is quiet. The sleeper goes
    /// first: the reference lets start times and timeouts pass as the clock moves.
    mutating func settle() {
        while true {
            if let due = sleeper, due.deadline <= clock.now {
                var actions: Machine.ActionList = []
                let next = machine.deadlineReached(generation: due.generation, actions: &actions)
                if sleeper?.generation == due.generation {
                    sleeper = next.map { ($0, due.generation) }
                }
                perform(actions)
                continue
            }
            if drainerPending {
                var actions: Machine.ActionList = []
                if !machine.drain(actions: &actions) { drainerPending = false }
                perform(actions)
                continue
            }
            return
        }
    }

    /// Everything the machine says, compared with the reference.
    func problems(names: [String]) -> [String] {
        var problems = reference.problems + reference.quietProblems()
        if machine.enqueuedCount != reference.enqueuedCount {
            problems.append("enqueued \(machine.enqueuedCount), expected \(reference.enqueuedCount)")
        }
        if machine.executingCount != reference.executingCount {
            problems.append("executing \(machine.executingCount), expected \(reference.executingCount)")
        }
        let expectedExecuting = Set(reference.units.values.filter { $0.place == .executing }.map(\.id))
        if executing != expectedExecuting {
            problems.append("executing \(executing.sorted()), expected \(expectedExecuting.sorted())")
        }
        if let drift = machine.countDrift { problems.append(drift) }
        if machine.isBusy != !reference.units.isEmpty { problems.append("busy \(machine.isBusy)") }
        if machine.period != reference.periods {
            problems.append("period \(machine.period), expected \(reference.periods)")
        }
        if watched {
            let reading = machine.readProgress(names: .max)
            let expected = sampledProgress.values.reduce(0, +)
            if abs(reading.executingProgress - expected) > 1e-9 {
                problems.append("executing progress \(reading.executingProgress), sampled \(expected)")
            }
            let listed = reading.executingMembers.map(\.id)
            if Set(listed) != executing || listed.count != executing.count {
                problems.append("executing members \(listed), expected \(executing.sorted())")
            }
            if listed != listed.sorted(by: { lastStarts[$0]! < lastStarts[$1]! }) {
                problems.append("executing members \(listed) not in the order of their latest starts")
            }
        }
        if (machine.periodAdmitted, machine.periodEnded) != (reference.periodAdmitted, reference.periodEnded) {
            problems.append(
                "progress \(machine.periodEnded) of \(machine.periodAdmitted), expected \(reference.periodEnded) of \(reference.periodAdmitted)"
            )
        }
        if outcomes != reference.outcomes { problems.append("outcomes differ: \(outcomes) vs \(reference.outcomes)") }
        for name in names where machine.hasLiveMember(named: name) != reference.hasLive(named: name) {
            problems.append("live name \(name): \(machine.hasLiveMember(named: name))")
        }
        // Busy and idle alternate, one each per period, in order.
        for (index, delivery) in deliveries.enumerated() {
            let expected = "\(index % 2 == 0 ? "busy" : "idle") \(index / 2 + 1)"
            if delivery != expected {
                problems.append("delivery \(index) is \(delivery), expected \(expected)")
                break
            }
        }
        let expectedDeliveries = 2 * Int(reference.periods) - (reference.units.isEmpty ? 0 : 1)
        if deliveries.count != expectedDeliveries {
            problems.append("\(deliveries.count) deliveries, expected \(expectedDeliveries)")
        }
        if !machine.isBusy {
            let footprint = machine.footprint
            if footprint.readyEntries + footprint.deadlineEntries + footprint.names + footprint.lanes > 0 {
                problems.append("an idle machine holds \(footprint)")
            }
        }
        return problems
    }
}

@Suite("Queue state machine: model-based")
struct QueueStateMachineModelTests {
    static let names = ["a", "b", "c"]
    static let lanes = ["x", "y"]

    /// Random sequences of events applied to the machine and the reference; every
    /// step compares outcomes, start decisions, counts, names, busy / idle and what an
    /// idle machine holds. Seeded: `BACKGROUNDABLE_MODEL_SEED` replays one sequence.
    @Test func randomSequencesMatchTheReference() async {
        let sequences = 3_000
        let steps = 60
        let base =
            ProcessInfo.processInfo.environment["BACKGROUNDABLE_MODEL_SEED"].flatMap { UInt64($0) }
            ?? UInt64.random(in: 0...UInt64.max)
        print("model-based test: \(sequences) sequences of \(steps) events, seeds from \(base)")
        let single = ProcessInfo.processInfo.environment["BACKGROUNDABLE_MODEL_SEED"].flatMap { UInt64($0) } != nil
        for index in 0..<(single ? 1 : sequences) {
            // A pure, long loop: it gives its thread back now and then, so the suite's
            // other tests (some with real-clock timeouts) are not starved of the pool.
            if index % 50 == 0 { await Task.yield() }
            let seed = base &+ UInt64(index)
            if let failure = Self.run(seed: seed, steps: steps) {
                Issue.record("model seed \(seed) (replay: BACKGROUNDABLE_MODEL_SEED=\(seed)): \(failure)")
                return
            }
        }
    }

    /// One sequence; the first step whose comparison fails, described.
    static func run(seed: UInt64, steps: Int) -> String? {
        var rng = SplitMix64(seed: seed)
        var harness = MachineHarness()
        var nextID = 0
        var log: [String] = []
        if rng.chance(50) {
            log.append("watch progress")
            harness.watched = true
            harness.transition { machine, actions in machine.watchProgress(names: true, actions: &actions) }
        }
        for _ in 0..<steps {
            let event = Int.random(in: 0..<100, using: &rng)
            switch event {
            case 0..<30:
                let count = rng.chance(70) ? 1 : Int.random(in: 1...4, using: &rng)
                let sequential = rng.chance(50)
                var admissions: [QueueStateMachine<ModelMember>.Admission] = []
                var previous: Int?
                var description: [String] = []
                for _ in 0..<count {
                    nextID += 1
                    let name = rng.chance(60) ? rng.pick(names) : nil
                    let policy = rng.pick([UniquenessPolicy.ignore, .drop, .replace, .join])
                    let priority = rng.pick([UInt8(0), 9, 17, 21, 25])
                    let timeout: Int64? =
                        rng.chance(40)
                        ? nil : rng.chance(10) ? rng.pick([0, -5]) : Int64.random(in: 1...50, using: &rng)
                    let lane = rng.chance(30) ? rng.pick(lanes) : nil
                    let delay = rng.chance(25) ? Int64.random(in: -5...40, using: &rng) : 0
                    description.append(
                        "\(nextID)(\(name ?? "-"),\(policy),p\(priority),t\(timeout.map(String.init) ?? "-"),"
                            + "l\(lane ?? "-"),d\(delay))")
                    let inSequence = count > 1 && sequential
                    let admitted = harness.reference.admit(
                        id: nextID, name: name, policy: policy, priority: priority, timeout: timeout,
                        behind: inSequence ? previous : nil, lane: inSequence ? nil : lane, delay: delay)
                    if admitted { previous = nextID }
                    admissions.append(
                        .init(
                            member: harness.member(nextID), name: name, policy: policy, priority: priority,
                            timeout: timeout, delay: delay, lane: lane))
                }
                if count == 1 {
                    log.append("add \(description[0])")
                    var handle: QueueStateMachine<ModelMember>.Handle?
                    harness.transition { machine, actions in handle = machine.add(admissions[0], actions: &actions) }
                    if let handle { harness.attach(nextID, handle) }
                } else {
                    log.append("add\(sequential ? " sequence" : "") \(description)")
                    var admitted: [(member: ModelMember, handle: QueueStateMachine<ModelMember>.Handle)] = []
                    harness.transition { machine, actions in
                        admitted = machine.add(contentsOf: admissions, sequential: sequential, actions: &actions)
                    }
                    for (member, handle) in admitted { harness.attach(member.id, handle) }
                }
            case 30..<38:
                // An executing member fails an attempt and retries.
                guard
                    let unit = harness.reference.units.values.sorted(by: { $0.id < $1.id })
                        .filter({ $0.place == .executing && !$0.ending }).randomElement(using: &rng)
                else { continue }
                let delay = rng.chance(30) ? 0 : Int64.random(in: 1...40, using: &rng)
                log.append("\(unit.id) retries after \(delay)")
                harness.retry(unit.id, delay: delay)
            case 38..<41:
                // A caller of higher priority waits for a live member.
                guard
                    let unit = harness.reference.units.values.sorted(by: { $0.id < $1.id }).filter({ !$0.ending })
                        .randomElement(using: &rng)
                else { continue }
                let priority = rng.pick([UInt8(9), 17, 21, 25, 33])
                log.append("\(unit.id) escalated to p\(priority)")
                let expected = harness.reference.escalate(unit.id, to: priority)
                let handle = harness.handles[unit.id]!
                var escalated = false
                harness.transition { machine, actions in
                    escalated = machine.memberEscalated(handle, to: priority, actions: &actions)
                }
                if escalated != expected {
                    harness.reference.problems.append("escalating \(unit.id): \(escalated), expected \(expected)")
                }
            case 41..<45:
                // A member ends by itself: an executing one finishes, fails or is
                // cancelled; a waiting one is cancelled.
                guard
                    let unit = harness.reference.units.values.sorted(by: { $0.id < $1.id }).filter({ !$0.ending })
                        .randomElement(using: &rng)
                else { continue }
                let outcome: AsyncTask.Outcome =
                    unit.place == .executing
                    ? rng.pick([.finished, .failed(TestError(code: 1)), .cancelled]) : .cancelled
                log.append("\(unit.id) ends \(outcome.kind)")
                harness.end(unit.id, outcome)
            case 45..<60:
                let step = Int64.random(in: 0...30, using: &rng)
                log.append("clock +\(step)")
                harness.clock.advance(by: step)
                harness.reference.now = harness.clock.now
                harness.reference.timeOut(now: harness.clock.now)
                harness.reference.startDue()
            case 60..<65:
                log.append("cancelAll")
                harness.reference.cancel { _ in true }
                harness.transition { machine, actions in machine.cancelAll(actions: &actions) }
            case 65..<72:
                log.append("suspend")
                harness.reference.suspensions += 1
                harness.transition { machine, _ in machine.suspend() }
            case 72..<84:
                log.append("resume")
                harness.reference.suspensions = max(0, harness.reference.suspensions - 1)
                harness.transition { machine, actions in machine.resume(actions: &actions) }
            case 84..<92:
                let limit = rng.chance(20) ? Int.max : Int.random(in: 1...3, using: &rng)
                log.append("limit \(limit)")
                harness.reference.limit = limit
                harness.transition { machine, actions in machine.setLimit(limit, actions: &actions) }
            case 92..<99:
                let policy = rng.pick([BackgroundQueue.ExpirationPolicy.cancelAll, .cancelPending, .keepRunning])
                log.append("expire \(policy)")
                if policy == .cancelAll {
                    harness.reference.cancel { _ in true }
                } else if policy == .cancelPending {
                    harness.reference.cancel { $0.place != .executing }
                }
                harness.transition { machine, actions in
                    machine.backgroundTimeExpired(period: nil, policy: policy, actions: &actions)
                }
            default:
                // Rare: after it, every add of the sequence is turned away.
                guard rng.chance(25) else { continue }
                log.append("stop accepting work")
                harness.reference.acceptsWork = false
                harness.transition { machine, _ in machine.stopAcceptingWork() }
            }
            harness.settle()
            let problems = harness.problems(names: names)
            if !problems.isEmpty {
                return "\(problems.joined(separator: "; ")) after: \(log.joined(separator: " | "))"
            }
        }
        return nil
    }
}
