public import Foundation

/// The settings of a durable job: those of ``AsyncTask/Options``, in the forms a store
/// can keep.
///
/// A store outlives the process, so a job's start time is a wall-clock `Date` (not a
/// `ContinuousClock` instant), its lane a `String`, and its retry policy only the number
/// of attempts and the backoff: which errors are worth a retry is code, and is given
/// once per kind, to ``DurableQueue/register(_:retryingIf:handler:)``.
public struct DurableJobOptions: Sendable {
    /// The job's name. A store keeps at most one job of each name, across every process
    /// that shares it.
    public var name: String?
    /// What an add does when the store has a job of the same name:
    /// ``UniquenessPolicy/replace`` removes that job — and cancels it where it runs in
    /// this process, where the new one's handler starts only once the cancelled one
    /// returned — and stores the new one; every other policy (``UniquenessPolicy/drop``,
    /// the default) stores nothing and returns the live job's id. Jobs without a name
    /// never collide.
    public var uniquenessPolicy: UniquenessPolicy
    /// How long one attempt may run; `nil` (the default) for no limit. An attempt that
    /// times out counts as a failed attempt.
    public var timeout: Duration?
    /// The priority of the job's unit on the queue.
    public var priority: TaskPriority?
    /// The earliest time the job may start; `nil` for as soon as possible.
    public var notBefore: Date?
    /// Jobs with the same lane run one at a time, in the order they were stored, across
    /// every process that shares the store.
    public var lane: String?
    /// The most attempts and the wait between them. Its `shouldRetry` closure is not
    /// stored; the kind's `retryingIf` decides instead.
    public var retry: RetryPolicy

    /// Options with every setting at its default; a job is tried once unless `retry` says
    /// otherwise.
    public init(
        name: String? = nil,
        uniquenessPolicy: UniquenessPolicy = .drop,
        timeout: Duration? = nil,
        priority: TaskPriority? = nil,
        notBefore: Date? = nil,
        lane: String? = nil,
        retry: RetryPolicy = .never
    ) {
        self.name = name
        self.uniquenessPolicy = uniquenessPolicy
        self.timeout = timeout
        self.priority = priority
        self.notBefore = notBefore
        self.lane = lane
        self.retry = retry
    }
}
