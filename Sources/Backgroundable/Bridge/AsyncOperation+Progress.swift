public import Foundation

extension AsyncOperation: ProgressReporting {
    /// The operation's progress as a Foundation `Progress`, for code that composes
    /// `ProgressReporting` objects (`parent.addChild(operation.progress, withPendingUnitCount: 1)`).
    ///
    /// Made on first read (an operation nobody asks pays nothing), with 100 units, or
    /// the `total` of the latest ``reportProgress(completed:of:)``. It follows the
    /// operation's reports, and it is complete once the operation finished — or
    /// cancelled when it was cancelled, replaced, dropped or timed out. Cancelling the
    /// `Progress` cancels the operation. Not an implicit child of a current `Progress`.
    public var progress: Progress {
        let (progress, isNew, finished) = progressMadeIfNeeded()
        if isNew {
            if let fraction = unit.fractionCompleted { Self.update(progress, fraction: fraction) }
            if finished { Self.complete(progress, unit.currentOutcome) }
        }
        return progress
    }

    /// Reports how far the operation got, from 0 to 1: its unit's
    /// ``AsyncTask/reportProgress(_:)`` (what the queue's progress counts), and its
    /// Foundation ``progress`` once someone read it. Any thread.
    public func reportProgress(_ fractionCompleted: Double) {
        unit.reportProgress(fractionCompleted)
        guard let progress = existingProgress, let fraction = unit.fractionCompleted else { return }
        Self.update(progress, fraction: fraction)
    }

    /// Reports progress as `completed` of `total` units of the operation's own; see
    /// ``AsyncTask/reportProgress(completed:of:)``. The Foundation ``progress`` takes
    /// these units. A `total` of 0 or less is ignored.
    public func reportProgress(completed: Int, of total: Int) {
        guard total > 0 else { return }
        unit.reportProgress(completed: completed, of: total)
        guard let progress = existingProgress else { return }
        progress.totalUnitCount = Int64(total)
        progress.completedUnitCount = Int64(Swift.min(Swift.max(completed, 0), total))
    }

    private static func update(_ progress: Progress, fraction: Double) {
        let completed = Int64((fraction * Double(progress.totalUnitCount)).rounded(.down))
        if progress.completedUnitCount != completed { progress.completedUnitCount = completed }
    }

    /// The operation reported `isFinished` with `outcome`.
    static func complete(_ progress: Progress, _ outcome: AsyncTask.Outcome?) {
        if outcome?.isCancellation ?? false {
            progress.cancel()
        } else if progress.completedUnitCount != progress.totalUnitCount {
            progress.completedUnitCount = progress.totalUnitCount
        }
    }
}

extension Progress {
    /// Takes a queue's counts: `unitsPerMember` progress units for each unit (or
    /// operation) of its busy period, the executing ones' reported progress included.
    /// Never shows more completed than total, not even for a moment (a new busy period
    /// starts from fewer units).
    func follow(_ queue: QueueProgress, unitsPerMember: Int64) {
        let total = Int64(queue.totalUnitCount) * unitsPerMember
        let done = Double(queue.completedUnitCount) + queue.executingProgress
        let completed = Swift.min(total, Int64((done * Double(unitsPerMember)).rounded(.down)))
        if completed < completedUnitCount { completedUnitCount = completed }
        if total != totalUnitCount { totalUnitCount = total }
        if completed != completedUnitCount { completedUnitCount = completed }
    }
}
