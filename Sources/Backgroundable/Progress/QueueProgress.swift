/// How far a queue is through its current busy period: a value, read from
/// ``BackgroundQueue/progress`` or received from ``BackgroundQueue/progressUpdates``.
///
/// A busy period runs from the first unit added to an idle queue until its last unit
/// ended. Every unit added in it counts once in ``totalUnitCount``, and once more in
/// ``completedUnitCount`` when it reaches its outcome — any outcome: a cancelled or
/// failed unit is done too. A unit that executes counts for the progress it reported
/// (see ``AsyncTask/reportProgress(_:)``), or for nothing until it ends if it reports
/// none. Dropped and joined units were never added: they do not count.
///
/// Between busy periods the value keeps the last one's counts (its
/// ``fractionCompleted`` is 1); the first unit of the next busy period starts again
/// from zero.
public struct QueueProgress: Sendable, Hashable, CustomStringConvertible {
    /// `true` while the queue has units that have not ended.
    public var isBusy: Bool
    /// Units added in the busy period.
    public var totalUnitCount: Int
    /// Units of the busy period that reached their outcome.
    public var completedUnitCount: Int
    /// Units waiting to start (delayed and retrying ones included).
    public var enqueuedCount: Int
    /// Units executing.
    public var executingCount: Int
    /// The progress of the executing units that reported some, summed: each counts for
    /// its latest report, from 0 to 1.
    public var executingProgress: Double

    /// Creates a value (for previews and tests; a queue makes its own).
    public init(
        isBusy: Bool = false, totalUnitCount: Int = 0, completedUnitCount: Int = 0, enqueuedCount: Int = 0,
        executingCount: Int = 0, executingProgress: Double = 0
    ) {
        self.isBusy = isBusy
        self.totalUnitCount = totalUnitCount
        self.completedUnitCount = completedUnitCount
        self.enqueuedCount = enqueuedCount
        self.executingCount = executingCount
        self.executingProgress = executingProgress
    }

    /// The fraction of the busy period's work done, from 0 to 1: completed units plus
    /// the executing units' progress, over all units. 0 for a queue that never ran.
    public var fractionCompleted: Double {
        guard totalUnitCount > 0 else { return 0 }
        return Swift.min(1, (Double(completedUnitCount) + executingProgress) / Double(totalUnitCount))
    }

    /// "3 of 10 (42 %), busy": the counts, the fraction, and whether the queue is busy.
    public var description: String {
        let percent = (fractionCompleted * 100).rounded(.down)
        return "\(completedUnitCount) of \(totalUnitCount) (\(Int(percent)) %)\(isBusy ? ", busy" : "")"
    }
}

/// What progress watchers hear: the progress, and the names of the first executing
/// units (in the order they started) for those that list them.
struct QueueActivity: Sendable, Hashable {
    var progress: QueueProgress
    var executingNames: [String]

    init(progress: QueueProgress, executingNames: [String]) {
        self.progress = progress
        self.executingNames = executingNames
    }

    /// What the deliverer read; the listed members' names are read from them, outside
    /// the queue's lock.
    init<Member: QueueMember>(_ reading: QueueStateMachine<Member>.ProgressReading) {
        progress = QueueProgress(
            isBusy: reading.isBusy, totalUnitCount: reading.admitted, completedUnitCount: reading.ended,
            enqueuedCount: reading.enqueued, executingCount: reading.executing,
            executingProgress: reading.executingProgress)
        executingNames = reading.executingMembers.compactMap(\.memberName)
    }
}
