public import Foundation

/// Where durable jobs live between processes: a ``FileJobStore`` on one device, a
/// PostgreSQL database (the `Postgres` trait's `PostgresJobStore`) for several server
/// replicas, or a store of your own.
///
/// A ``DurableQueue`` drives its store through these calls; a store's job is to make
/// each one atomic and durable before it returns, and to keep these rules across every
/// process that shares it:
/// - **Names are unique.** ``enqueue(_:replacing:)`` stores a named job only when no job
///   of that name is stored, unless it replaces that job.
/// - **A claim is a lease.** ``claim(kinds:limit:lease:)`` hands each due job to one
///   claimer at a time, adds one to its ``DurableJobRecord/attempt``, and holds it for
///   `lease` (renewed by ``renew(_:lease:)``); a claimer that dies leaves its jobs to be
///   claimed again once the lease runs out.
/// - **Lanes are serial.** Of the jobs of one lane, only the one stored first can be
///   claimed, and only while no job of that lane is claimed.
/// - **A job leaves only when it is over**: ``complete(_:)`` or ``remove(_:)``.
///
/// Every call may suspend; none may block a thread of Swift's cooperative pool (do file
/// or socket I/O elsewhere, as ``FileJobStore`` does). Errors are ``DurableStoreError``s
/// where the store can say what went wrong; a failed call changes nothing.
public protocol DurableJobStore: Sendable {
    /// Stores `job`, durably, before returning. When a job of the same name is stored,
    /// removes it and stores `job` if `replacing` is `true`; otherwise stores nothing and
    /// returns the stored job's id with ``DurableJobReceipt/wasDropped`` set. Sets the
    /// job's ``DurableJobRecord/sequence``. A record whose id is stored already is not
    /// stored again: the call throws ``DurableStoreError/Code/duplicateID``.
    func enqueue(_ job: DurableJobRecord, replacing: Bool) async throws -> DurableJobReceipt

    /// Claims up to `limit` due jobs (``DurableJobRecord/runAt`` not in the future) of the
    /// given kinds that nobody holds, for `lease`: highest priority first, then in order of
    /// arrival. Returns them with their attempt counted.
    func claim(kinds: Set<String>, limit: Int, lease: Duration) async throws -> [DurableJobRecord]

    /// The earliest time a job of the given kinds that nobody holds falls due, or `nil`
    /// when there is none: a queue sleeps until then, or until it is told of new work.
    func nextDueDate(kinds: Set<String>) async throws -> Date?

    /// Extends the lease of jobs this store's claimer holds.
    func renew(_ ids: [DurableJobID], lease: Duration) async throws

    /// Removes a job whose outcome is final. A job no longer stored is a no-op.
    func complete(_ id: DurableJobID) async throws

    /// Gives back a job whose attempt failed, due again at `date`, keeping its attempt
    /// count and recording `error`. A job no longer stored is a no-op.
    func retry(_ id: DurableJobID, at date: Date, error: String) async throws

    /// Gives back a job whose attempt was interrupted (a shutdown, the app's background
    /// time running out), due at once, and takes back the attempt its claim counted. A
    /// job no longer stored is a no-op.
    func release(_ id: DurableJobID) async throws

    /// Removes a job, whether or not it is claimed; returns whether it was stored.
    func remove(_ id: DurableJobID) async throws -> Bool

    /// Every stored job, claimed or not, in order of arrival.
    func jobs() async throws -> [DurableJobRecord]
}

/// An error of a durable-job store, or of a ``DurableQueue`` about its jobs.
///
/// Compare it with its static members (`error.code == .directoryInUse`); new codes come
/// in minor releases.
public struct DurableStoreError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }

        /// Another store in this or another process has the directory open.
        public static let directoryInUse = Code("directoryInUse")
        /// The file system refused a read or a write (a full disk, a read-only
        /// directory, a missing permission); the `errno` is in the message.
        public static let io = Code("io")
        /// A record could not be encoded or decoded.
        public static let encoding = Code("encoding")
        /// The connection to a database failed or dropped.
        public static let connection = Code("connection")
        /// ``DurableJobStore/enqueue(_:replacing:)`` was given a record whose id is stored
        /// already (say, the same record again, after a call that timed out had in fact
        /// stored it); nothing was stored, and the stored job is unchanged.
        public static let duplicateID = Code("duplicateID")
        /// The kind has no registered handler in this queue.
        public static let unknownKind = Code("unknownKind")
        /// A stored payload no longer decodes as the kind's payload type.
        public static let undecodablePayload = Code("undecodablePayload")
    }

    /// What went wrong.
    public let code: Code
    /// A description for people.
    public let message: String

    /// An error with this code and message.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }
}
