public import Foundation

/// A kind of durable job: the name a store records with each job, and the type of its
/// payload.
///
/// Declare each kind once, as a constant, and register a handler for it on every
/// ``DurableQueue`` that runs it:
///
/// ```swift
/// nonisolated struct Upload: Codable, Sendable {  // nonisolated: encoded off the main actor
///     var photoID: UUID
///     var path: String
/// }
///
/// extension DurableJobKind where Payload == Upload {
///     static let upload = DurableJobKind("upload")
/// }
/// ```
///
/// The name is what outlives the process: keep it stable across app versions, and give
/// a payload that changes shape a new kind (`"upload.v2"`) rather than a new layout
/// under the old name. A store keeps a job whose kind no running queue knows; see
/// <doc:DurableWork>.
public struct DurableJobKind<Payload: Codable & Sendable>: Sendable, Hashable, CustomStringConvertible {
    /// The name recorded with each job of this kind.
    public let name: String

    /// A kind named `name`. An empty name is valid but hard to read in a store.
    public init(_ name: String) {
        self.name = name
    }

    public var description: String { name }
}

/// A durable job's identity: made when the job is first stored, the same on every
/// attempt, in every process. Handlers use it to make their effects idempotent.
public struct DurableJobID: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The identifier's value.
    public let uuid: UUID

    /// A new, unique identifier.
    public init() {
        self.uuid = UUID()
    }

    /// The identifier with this value (as a store reads it back).
    public init(uuid: UUID) {
        self.uuid = uuid
    }

    public var description: String { uuid.uuidString }
}

/// What a handler knows about the job it runs.
public struct DurableJobContext: Sendable {
    /// The job's identity, the same on every attempt.
    public let id: DurableJobID
    /// The job's kind.
    public let kind: String
    /// The job's name, if it has one.
    public let name: String?
    /// This attempt's number: 1 for the first. An attempt that a crash or a shutdown
    /// interrupted counts only if the process died during it (the store cannot tell a
    /// crash from a long run).
    public let attempt: Int
    /// The most attempts the job makes.
    public let maxAttempts: Int
    /// When the job was first stored.
    public let enqueuedAt: Date

    /// `true` on the job's last attempt: if this one fails, the job ends failed.
    public var isLastAttempt: Bool { attempt >= maxAttempts }
}

/// What ``DurableQueue/add(_:_:options:)`` did, once the store has it.
public struct DurableJobReceipt: Sendable, Hashable {
    /// The job that will run for this add: the new job, or, when the add was dropped,
    /// the live job of the same name.
    public let id: DurableJobID
    /// `true` when a live job of the same name turned this one away: nothing was stored.
    public let wasDropped: Bool
    /// The job this one replaced (``UniquenessPolicy/replace``), if there was one.
    public let replaced: DurableJobID?

    /// A receipt; stores make them.
    public init(id: DurableJobID, wasDropped: Bool = false, replaced: DurableJobID? = nil) {
        self.id = id
        self.wasDropped = wasDropped
        self.replaced = replaced
    }
}
