/// How a ``GracefulShutdown/drain(_:)-(BackgroundQueue...)`` ended, for the program to
/// report and to choose its exit status.
public struct ShutdownReport: Sendable, CustomStringConvertible {
    /// Why the expiration came. New reasons come in minor releases: compare it, or
    /// switch over it with a `default`.
    public struct Expiration: Sendable, Hashable, CustomStringConvertible {
        fileprivate enum Reason: Sendable, Hashable {
            case gracePeriodEnded
            case secondRequest(GracefulShutdown.Request)
        }

        fileprivate let reason: Reason

        /// The grace period ran out with work still running.
        public static let gracePeriodEnded = Expiration(reason: .gracePeriodEnded)
        /// A second request came before the grace period ran out.
        public static func secondRequest(_ request: GracefulShutdown.Request) -> Expiration {
            Expiration(reason: .secondRequest(request))
        }

        /// The second request, for ``secondRequest(_:)``.
        public var secondRequest: GracefulShutdown.Request? {
            if case .secondRequest(let request) = reason { request } else { nil }
        }

        public var description: String {
            switch reason {
            case .gracePeriodEnded: "gracePeriodEnded"
            case .secondRequest(let request): "secondRequest(\(request))"
            }
        }
    }

    /// How the drain ended. New endings come in minor releases: compare it, or switch
    /// over it with a `default`.
    public struct Ending: Sendable, Hashable, CustomStringConvertible {
        fileprivate enum Kind: Sendable, Hashable {
            case idle, drained
            case expired(Expiration)
        }

        fileprivate let kind: Kind

        /// No shutdown was requested; the queues went idle (or the task awaiting the
        /// drain was cancelled first: see ``ShutdownReport/unfinishedUnits``).
        public static let idle = Ending(kind: .idle)
        /// Shutdown was requested; the queues finished their work within the grace period
        /// (or the task awaiting the drain was cancelled first: see
        /// ``ShutdownReport/unfinishedUnits``).
        public static let drained = Ending(kind: .drained)
        /// Shutdown was requested and the work still running expired (see ``Expiration``).
        public static func expired(_ expiration: Expiration) -> Ending { Ending(kind: .expired(expiration)) }

        /// Why the work expired, for ``expired(_:)``.
        public var expiration: Expiration? {
            if case .expired(let expiration) = kind { expiration } else { nil }
        }

        public var description: String {
            switch kind {
            case .idle: "idle"
            case .drained: "drained"
            case .expired(let expiration): "expired(\(expiration))"
            }
        }
    }

    /// How the drain ended.
    public let ending: Ending
    /// What asked for the shutdown; `nil` for ``Ending/idle``.
    public let request: GracefulShutdown.Request?
    /// The units that had not finished when the work expired, queue by queue, each in
    /// the order it was added: what was left to do, for the program to log, count or
    /// hand back. A unit that finished after all, within the cancellation period (the
    /// expiration policy let it run on), is not listed; each entry's state is the one it
    /// had when the work expired. Empty when the queues drained, unless the task awaiting
    /// the drain was cancelled first: then it lists the units still live.
    public let unfinishedUnits: [UnfinishedUnit]

    /// The unfinished units as text, one entry per queue: `queue "name": ["unit", <unnamed>]`.
    @available(
        *, deprecated,
        message: "use unfinishedUnits: each unit's queue, name and state as values (its description formats them)"
    )
    public var unfinished: [String] {
        unfinishedByQueue.map { queue, units in
            "queue \"\(queue)\": [\(units.map(\.quotedName).joined(separator: ", "))]"
        }
    }

    /// `true` when the work completed: none expired, and none was left running by a
    /// drain whose task was cancelled.
    public var isComplete: Bool { ending.expiration == nil && unfinishedUnits.isEmpty }

    /// A suggested exit status: 0 when the work completed, 75 (`EX_TEMPFAIL`, "try again
    /// later") when it did not.
    public var exitStatus: Int32 { isComplete ? 0 : 75 }

    /// One line for a log: how the drain ended, and when work was left unfinished (it
    /// expired, or the drain's task was cancelled), the unfinished units by queue with
    /// their states (`queue "jobs": ["import" (executing), <unnamed> (waiting)]`).
    public var description: String {
        let source = request.map { "\($0)" } ?? "shutdown"
        switch ending.kind {
        case .idle where unfinishedUnits.isEmpty:
            return "Backgroundable: the queues are idle"
        case .drained where unfinishedUnits.isEmpty:
            return "Backgroundable: \(source): the queues drained"
        case .idle, .drained:
            return
                "Backgroundable: \(request == nil ? "" : "\(source): ")the drain was cancelled; unfinished: \(unfinishedText)"
        case .expired(let expiration):
            let cause =
                switch expiration.reason {
                case .gracePeriodEnded: "the grace period ran out"
                case .secondRequest(let second): "a second request (\(second)) cut the grace period short"
                }
            return "Backgroundable: \(source): \(cause); unfinished: \(unfinishedText)"
        }
    }

    private var unfinishedText: String {
        let unfinished = unfinishedByQueue.map { queue, units in
            "queue \"\(queue)\": [\(units.map { "\($0.quotedName) (\($0.state))" }.joined(separator: ", "))]"
        }
        return unfinished.isEmpty ? "none" : unfinished.joined(separator: ", ")
    }

    /// ``unfinishedUnits`` grouped by queue, in order (the units of one queue are adjacent).
    private var unfinishedByQueue: [(queue: String, units: ArraySlice<UnfinishedUnit>)] {
        var groups: [(queue: String, units: ArraySlice<UnfinishedUnit>)] = []
        var start = unfinishedUnits.startIndex
        while start < unfinishedUnits.endIndex {
            let queue = unfinishedUnits[start].queue
            let end = unfinishedUnits[start...].firstIndex { $0.queue != queue } ?? unfinishedUnits.endIndex
            groups.append((queue, unfinishedUnits[start..<end]))
            start = end
        }
        return groups
    }
}

extension ShutdownReport {
    /// A unit that had not finished: its queue, its name and what it was doing.
    public struct UnfinishedUnit: Sendable, Hashable, CustomStringConvertible {
        /// The name of its queue (``BackgroundQueue/name``).
        public let queue: String
        /// The unit's name (``AsyncTask/name``); `nil` for an unnamed unit.
        public let name: String?
        /// What it was doing when the work expired.
        public let state: State

        /// `queue "jobs": "import" (executing)`.
        public var description: String { "queue \"\(queue)\": \(quotedName) (\(state))" }

        fileprivate var quotedName: String { name.map { "\"\($0)\"" } ?? "<unnamed>" }
    }
}

extension ShutdownReport.UnfinishedUnit {
    /// What an unfinished unit was doing. A struct with static members rather than an
    /// enum, so that new states can be added without breaking a `switch` over them:
    /// compare with `==`, or switch with a `default`.
    public struct State: Sendable, Hashable, CustomStringConvertible {
        enum Kind: Sendable, Hashable {
            case waiting, delayed, executing, retrying
        }

        let kind: Kind

        /// Added and not started yet: waiting for a free slot, for its lane or sequence,
        /// or for its queue to resume.
        public static let waiting = State(kind: .waiting)
        /// Added and waiting for its start time (``AsyncTask/Options/notBefore``).
        public static let delayed = State(kind: .delayed)
        /// Its work was running.
        public static let executing = State(kind: .executing)
        /// Between two attempts of a retried body (``RetryPolicy``), waiting for the next.
        public static let retrying = State(kind: .retrying)

        public var description: String { "\(kind)" }
    }
}
