/// The queue holding a unit, and the unit's handle in it: ``unadmitted`` until the queue
/// has admitted the unit (it may still wait in the queue's inbox). The unit holds its
/// queue from the claim until it ends. (An unretained reference until the admission
/// was measured against this plain one, `Benchmarks/compare-fast-paths.sh`: no
/// difference beyond the noise, so the plain one stays.)
struct Owner {
    let queue: QueueCore
    private(set) var handle = QueueCore.Machine.Handle.unadmitted

    init(claimedBy queue: QueueCore) {
        self.queue = queue
    }

    var isAdmitted: Bool { handle != .unadmitted }

    /// The queue admitted the unit as `handle`; under the unit's lock.
    mutating func admit(as handle: QueueCore.Machine.Handle) {
        self.handle = handle
    }
}

extension QueueStateMachine.Handle {
    /// Names no member: a unit its queue has not admitted yet.
    static var unadmitted: Self { .init(slot: -1, ticket: 0) }
}

/// A front end that must hear when its unit ends (the Operation bridge): held strongly
/// by the unit until then, with no closure to allocate.
protocol UnitObserver: AnyObject, Sendable {
    /// Called at most once, on the thread that ended the unit, outside every lock.
    func unitEnded(_ outcome: AsyncTask.Outcome)
}

/// The attempts of a retried unit so far: how many started, and the error of the last
/// one that failed. Immutable: each retry makes a new one.
final class AttemptRecord: Sendable {
    let count: Int
    let lastError: any Error
    /// Identifies the unit's `Task` (see ``UnitState/Body/operation(taskID:)``).
    let taskID: Int
    /// The wait before the next attempt (after the failed one).
    let delay: Duration

    init(count: Int, lastError: any Error, taskID: Int, delay: Duration) {
        self.count = count
        self.lastError = lastError
        self.taskID = taskID
        self.delay = delay
    }

    /// What listeners hear of the failed attempt.
    var note: RetryNote { RetryNote(attempt: count, error: lastError, delay: delay) }
}
