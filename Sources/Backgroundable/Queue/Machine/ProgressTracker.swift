/// What watchers hear of a queue's progress: the members admitted and ended in the busy
/// period, and the partial progress of executing members as last sampled. (The order in
/// which those started, for watchers that show their names, is a list through the
/// coordinator's records.)
///
/// Reporting progress is a plain store in the member, so the queue samples it rather
/// than being told: while someone watches and a member executes, a sample is due every
/// ``sampleInterval`` (``nextSample``), which the queue's sleeper serves. Changes are
/// posted as one ``QueueStateMachine/Delivery/progress`` until the deliverer takes it.
struct ProgressTracker {
    /// How often watchers hear the partial progress of executing members, in nanoseconds.
    let sampleInterval: Int64

    /// Members admitted in the current busy period (the last one while idle), and how
    /// many of them reached their outcome: the queue's progress in whole members.
    private(set) var admitted = 0
    private(set) var ended = 0
    /// The partial progress of executing members as last sampled (non-zero values only),
    /// by slot (a member leaving its slot leaves this too), and their sum: what watchers
    /// hear between two samples.
    private var sampled: [Int32: Double] = [:]
    private(set) var sampledSum = 0.0
    /// Who watches (streams, models, providers); how many of them want the executing
    /// members' names too.
    private var watchers = 0
    private(set) var namesWatchers = 0
    /// A ``QueueStateMachine/Delivery/progress`` is in the outbox.
    private var posted = false
    /// When the next sample is due: set while someone watches and a member executes.
    private(set) var nextSample: Int64?

    init(sampleInterval: Int64) {
        self.sampleInterval = sampleInterval
    }

    /// A busy period began: its counts start from zero.
    mutating func periodBegan() {
        admitted = 0
        ended = 0
    }

    mutating func memberAdmitted() {
        admitted += 1
    }

    mutating func memberEnded() {
        ended += 1
    }

    mutating func watch(names: Bool) {
        watchers += 1
        if names { namesWatchers += 1 }
    }

    mutating func unwatch(names: Bool) {
        watchers -= 1
        if names { namesWatchers -= 1 }
        if watchers == 0 { nextSample = nil }
    }

    /// The progress changed: `true` when watchers must be told (post a
    /// ``QueueStateMachine/Delivery/progress``). Once until ``deliveriesTaken()``,
    /// however many changes come before; never while nobody watches.
    mutating func changed() -> Bool {
        guard watchers > 0, !posted else { return false }
        posted = true
        return true
    }

    /// The deliverer took the posted deliveries: the next change is posted again.
    mutating func deliveriesTaken() {
        posted = false
    }

    /// A member started executing: `true` when someone watches (they hear it, and a
    /// sample may be due).
    func memberStarted() -> Bool {
        watchers > 0
    }

    /// Whether a sample must be scheduled (``scheduleSample(now:)``): someone watches,
    /// a member executes, and none is scheduled.
    func needsSample(executing: Int) -> Bool {
        watchers > 0 && executing > 0 && nextSample == nil
    }

    /// Schedules the next sample one interval after `now`: returns when it is due.
    mutating func scheduleSample(now: Int64) -> Int64 {
        let (sample, overflow) = now.addingReportingOverflow(sampleInterval)
        nextSample = overflow ? .max : sample
        return nextSample!
    }

    /// `true` when a sample is due by `now` (it is taken: the next one is not scheduled).
    mutating func takeSample(dueBy now: Int64) -> Bool {
        guard let sample = nextSample, sample <= now else { return false }
        nextSample = nil
        return true
    }

    /// The executing member at `slot` was sampled at `value`: it replaces its earlier one.
    mutating func record(_ value: Double, for slot: Int32) {
        forget(slot)
        guard value > 0 else { return }
        sampled[slot] = value
        sampledSum += value
    }

    /// A member stopped executing: its sampled progress no longer counts.
    mutating func forget(_ slot: Int32) {
        guard !sampled.isEmpty, let old = sampled.removeValue(forKey: slot) else { return }
        sampledSum = sampled.isEmpty ? 0 : Swift.max(0, sampledSum - old)
    }

    /// No member is left: forgets the samples (the period's counts stay: watchers read
    /// them while idle).
    mutating func removeAll() {
        sampled = [:]
        sampledSum = 0
    }
}

extension QueueStateMachine {
    /// What the deliverer reads of the queue's progress, under the lock: its counts, the
    /// executing members' progress as last sampled, and, when names are watched, up to
    /// `names` executing members in the order they started.
    struct ProgressReading {
        var isBusy: Bool
        var admitted: Int
        var ended: Int
        var enqueued: Int
        var executing: Int
        var executingProgress: Double
        var executingMembers: [Member] = []
    }
}

extension QueueStateMachine.ProgressReading: Sendable where Member: Sendable {}
