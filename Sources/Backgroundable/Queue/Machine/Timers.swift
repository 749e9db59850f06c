/// When the queue must next wake up: the deadlines of executing members, the start
/// times of delayed ones, and the one sleeper that serves them both (and the progress
/// samples).
///
/// Heap entries may go stale (their member ended, or a retry started a new attempt):
/// the machine, which holds the records, skips them as it takes due entries, and counts
/// the timed and delayed members in and out itself (``timedCount``, ``delayedCount``).
struct Timers {
    /// Arm a sleeper that wakes the queue at `deadline` and says `generation`
    /// (``QueueStateMachine/Action/armSleeper(deadline:generation:)``).
    struct Wake: Equatable {
        let deadline: Int64
        let generation: UInt64
    }

    private var deadlines = DeadlineHeap()
    /// Executing members with a deadline.
    private(set) var timedCount = 0
    /// The start times of delayed members, earliest first (ties in admission order).
    private var startTimes = DeadlineHeap()
    /// Members waiting for their start time.
    private(set) var delayedCount = 0
    /// The sleeper armed last: when it wakes, and its generation.
    private var sleeper: (deadline: Int64, generation: UInt64)?
    private var generations: UInt64 = 0

    /// Entries held, stale ones included.
    var entryCount: Int { deadlines.count + startTimes.count }

    /// An executing member must end by `entry.deadline`.
    mutating func armDeadline(_ entry: DeadlineHeap.Entry) -> Wake? {
        deadlines.insert(entry)
        timedCount += 1
        return wake(at: entry.deadline)
    }

    /// A timed member stopped executing: its deadline entry is stale from now on.
    mutating func deadlineLeft() {
        timedCount -= 1
    }

    /// A delayed member may start at `entry.deadline`.
    mutating func waitForStartTime(_ entry: DeadlineHeap.Entry) -> Wake? {
        startTimes.insert(entry)
        delayedCount += 1
        return wake(at: entry.deadline)
    }

    /// A delayed member stopped waiting (its time came, or it left): its entry, if
    /// still here, is stale from now on.
    mutating func startTimeLeft() {
        delayedCount -= 1
    }

    /// Makes sure the sleeper wakes up at `time`: a new sleeper is armed when it is
    /// earlier than the current one's.
    mutating func wake(at time: Int64) -> Wake? {
        guard sleeper.map({ time < $0.deadline }) ?? true else { return nil }
        generations += 1
        sleeper = (time, generations)
        return Wake(deadline: time, generation: generations)
    }

    /// Whether the sleeper of `generation` is the current one (an older one may stop).
    func isCurrent(_ generation: UInt64) -> Bool {
        sleeper?.generation == generation
    }

    /// The earliest deadline, stale or not.
    var firstDeadline: DeadlineHeap.Entry? { deadlines.first }
    /// The earliest start time, stale or not.
    var firstStartTime: DeadlineHeap.Entry? { startTimes.first }

    /// Takes out the earliest deadline if it is due by `now`.
    mutating func popDeadline(dueBy now: Int64) -> DeadlineHeap.Entry? {
        guard let entry = deadlines.first, entry.deadline <= now else { return nil }
        deadlines.removeFirst()
        return entry
    }

    /// Takes out the earliest start time if it is due by `now`.
    mutating func popStartTime(dueBy now: Int64) -> DeadlineHeap.Entry? {
        guard let entry = startTimes.first, entry.deadline <= now else { return nil }
        startTimes.removeFirst()
        return entry
    }

    mutating func removeFirstDeadline() {
        deadlines.removeFirst()
    }

    mutating func removeFirstStartTime() {
        startTimes.removeFirst()
    }

    /// The current sleeper (of `generation`) goes back to sleep until the earliest entry
    /// left or `other` (the next progress sample): returns that time, or `nil` when
    /// nothing is left and it stops.
    mutating func sleep(_ generation: UInt64, orUntil other: Int64?) -> Int64? {
        let next = [deadlines.first?.deadline, startTimes.first?.deadline, other].lazy.compactMap { $0 }.min()
        guard let next else {
            sleeper = nil
            return nil
        }
        sleeper = (next, generation)
        return next
    }

    /// Stale entries outnumber the live ones: time to compact (so memory follows the
    /// live members, not the members ever added).
    var deadlinesAreMostlyStale: Bool { deadlines.count > 64 + 2 * timedCount }
    var startTimesAreMostlyStale: Bool { startTimes.count > 64 + 2 * delayedCount }

    /// Keeps only the deadlines `isLive` accepts.
    mutating func compactDeadlines(_ isLive: (DeadlineHeap.Entry) -> Bool) {
        deadlines.compact(isLive)
    }

    /// Keeps only the start times `isLive` accepts.
    mutating func compactStartTimes(_ isLive: (DeadlineHeap.Entry) -> Bool) {
        startTimes.compact(isLive)
    }

    /// Forgets every entry (no member is left); the sleeper runs out by itself.
    mutating func removeAll() {
        deadlines.removeAll()
        startTimes.removeAll()
    }
}
