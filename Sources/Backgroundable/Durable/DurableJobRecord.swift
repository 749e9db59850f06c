public import Foundation

/// A durable job as a store keeps it: its identity, its kind and encoded payload, its
/// settings, and where it stands.
///
/// Stores read and write records; a ``DurableQueue`` makes them from a kind, a payload
/// and ``DurableJobOptions``, and turns the ones it claims into units.
public struct DurableJobRecord: Sendable, Hashable, Codable {
    /// The job's identity, the same on every attempt.
    public var id: DurableJobID
    /// The kind's name (``DurableJobKind/name``).
    public var kind: String
    /// The payload, as the queue encoded it (JSON).
    public var payload: Data
    /// The job's name, if any.
    public var name: String?
    /// The job's lane, if any.
    public var lane: String?
    /// The raw value of the unit's `TaskPriority`; 0 for none.
    public var priority: UInt8
    /// How long one attempt may run; `nil` for no limit.
    public var timeout: Duration?
    /// The most attempts the job makes.
    public var maxAttempts: Int
    /// The wait before each retry.
    public var backoff: RetryPolicy.Backoff
    /// When the job is due: first its `notBefore` (or the time it was stored), then the
    /// time of its next retry.
    public var runAt: Date
    /// How many attempts have been claimed so far; a claim adds one, giving an
    /// interrupted attempt back takes it away.
    public var attempt: Int
    /// When the job was first stored.
    public var enqueuedAt: Date
    /// The store's order of arrival: lanes run in this order, and so do jobs of equal
    /// priority that are due together. Set by the store.
    public var sequence: Int64
    /// The error of the last failed attempt, as text.
    public var lastError: String?
    /// The trace context of the code that added the job, as propagation headers (with
    /// the `Tracing` trait and a tracer bootstrapped; `nil` otherwise): the job's unit
    /// is traced as a child of it, wherever it runs.
    public var traceContext: [String: String]?

    /// A record; a ``DurableQueue`` makes them.
    public init(
        id: DurableJobID, kind: String, payload: Data, name: String?, lane: String?, priority: UInt8,
        timeout: Duration?, maxAttempts: Int, backoff: RetryPolicy.Backoff, runAt: Date, attempt: Int = 0,
        enqueuedAt: Date, sequence: Int64 = 0, lastError: String? = nil, traceContext: [String: String]? = nil
    ) {
        self.id = id
        self.kind = kind
        self.payload = payload
        self.name = name
        self.lane = lane
        self.priority = priority
        self.timeout = timeout
        self.maxAttempts = maxAttempts
        self.backoff = backoff
        self.runAt = runAt
        self.attempt = attempt
        self.enqueuedAt = enqueuedAt
        self.sequence = sequence
        self.lastError = lastError
        self.traceContext = traceContext
    }
}
