/// What a queue reports to its listeners.
enum QueueEvent<Member> {
    case enqueued(Member)
    case started(Member)
    case ended(Member, AsyncTask.Outcome)
    /// An attempt failed; another one follows.
    case retrying(Member, RetryNote)
    /// A member joined the live member `primary` instead of being added.
    case joined(Member, primary: Member)
    /// A member was escalated to `priority` (a raw `TaskPriority`).
    case escalated(Member, priority: UInt8)
    case backgroundTimeExpiring
}

/// What listeners hear of a failed attempt: its number, its error, and the wait before
/// the next one.
struct RetryNote: Sendable {
    let attempt: Int
    let error: any Error
    let delay: Duration
}

extension QueueEvent: Sendable where Member: Sendable {}

extension QueueEvent {
    /// The member the event is about.
    var member: Member? {
        switch self {
        case .enqueued(let member), .started(let member), .ended(let member, _), .retrying(let member, _),
            .joined(let member, _), .escalated(let member, _):
            member
        case .backgroundTimeExpiring: nil
        }
    }

    var kind: ObservedEvents {
        switch self {
        case .enqueued: .enqueued
        case .started: .started
        case .ended: .ended
        case .retrying: .retrying
        case .joined: .joined
        case .escalated: .escalated
        case .backgroundTimeExpiring: .backgroundTimeExpiring
        }
    }
}

/// Which kinds of ``QueueEvent`` a queue emits: every kind while someone listens to its
/// events, the kinds its observers need otherwise (see ``QueueObserver``), none at all
/// by default — an unobserved queue posts nothing.
struct ObservedEvents: OptionSet, Sendable {
    let rawValue: UInt8

    static let enqueued = Self(rawValue: 1 << 0)
    static let started = Self(rawValue: 1 << 1)
    static let ended = Self(rawValue: 1 << 2)
    static let backgroundTimeExpiring = Self(rawValue: 1 << 3)
    static let retrying = Self(rawValue: 1 << 4)
    static let joined = Self(rawValue: 1 << 5)
    static let escalated = Self(rawValue: 1 << 6)
    static let all: Self = [.enqueued, .started, .ended, .backgroundTimeExpiring, .retrying, .joined, .escalated]
}

/// What happened to one member, for ``QueueMember/publicEvent(_:)``.
enum MemberEvent: Sendable {
    case enqueued
    case started
    case ended(AsyncTask.Outcome)
    case retrying(RetryNote)
    case joined(primary: any QueueMember)
    case escalated(priority: UInt8)
}
