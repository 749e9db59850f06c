extension BackgroundQueue {
    /// What a queue reports through ``BackgroundQueue/events``: a ``kind``, and the
    /// payload of that kind (``unit``, ``outcome``, ``attempt``, ``error``, ``delay``,
    /// ``primary``, ``priority``).
    ///
    /// Events of one queue arrive in the order the queue made its decisions. An event
    /// about a unit always tells what really happened to it: ``Kind/ended`` carries the
    /// outcome the unit has (a unit that ended by itself, or was cancelled by another
    /// thread, just before the queue would have dropped or timed it out is reported with
    /// its own outcome), ``Kind/joined`` is heard only for a unit that did join, and a
    /// unit that had ended before its add (a `run` whose caller was already cancelled)
    /// is never reported at all.
    ///
    /// New kinds come in minor releases, so a switch over ``kind`` has a `default`:
    ///
    /// ```swift
    /// for await event in queue.events {
    ///     switch event.kind {
    ///     case .ended: print("\(event.unit!) ended: \(event.outcome!)")
    ///     case .idle: print("idle")
    ///     default: break
    ///     }
    /// }
    /// ```
    public struct Event: Sendable, CustomStringConvertible {
        /// What an event is about. Compare it, or switch over it with a `default`: new
        /// kinds come in minor releases.
        public struct Kind: Sendable, Hashable, CustomStringConvertible {
            enum Code: Sendable, Hashable {
                case busy, idle, enqueued, started, ended, retrying, joined, escalated, backgroundTimeExpiring
                #if BACKGROUNDABLE_EXTRA_KINDS_FOR_TESTING
                    case extraForTesting
                #endif
            }

            let code: Code

            /// The queue went from idle to busy (its first live unit arrived).
            public static let busy = Kind(code: .busy)
            /// The queue went from busy to idle (its last live unit ended).
            public static let idle = Kind(code: .idle)
            /// A unit (``BackgroundQueue/Event/unit``) was added and is waiting to start.
            public static let enqueued = Kind(code: .enqueued)
            /// The queue started a unit: it holds one of the queue's slots from now on.
            /// (Its work may begin a little later: a unit added with
            /// ``UniquenessPolicy/replace`` runs its work once the bodies it replaced
            /// returned.)
            public static let started = Kind(code: .started)
            /// A live unit reached its outcome (``BackgroundQueue/Event/outcome``), or an arriving unit
            /// was dropped.
            public static let ended = Kind(code: .ended)
            /// Attempt ``BackgroundQueue/Event/attempt`` of a unit with a ``RetryPolicy`` failed with
            /// ``BackgroundQueue/Event/error``; the unit waits ``BackgroundQueue/Event/delay`` (holding no slot), then
            /// starts again (a new ``started``).
            public static let retrying = Kind(code: .retrying)
            /// A unit added with ``UniquenessPolicy/join`` joined the live unit
            /// ``BackgroundQueue/Event/primary`` of its name instead of being added: it ends with the
            /// primary's outcome, when that one ends (no other event of the queue is
            /// about it).
            public static let joined = Kind(code: .joined)
            /// A task of higher priority awaits the unit: it was escalated to
            /// ``BackgroundQueue/Event/priority`` — its place in the start order while it waits, its
            /// `Task` once it runs.
            public static let escalated = Kind(code: .escalated)
            /// The background time the queue held expired; the expiration policy is
            /// applied next.
            public static let backgroundTimeExpiring = Kind(code: .backgroundTimeExpiring)
            #if BACKGROUNDABLE_EXTRA_KINDS_FOR_TESTING
                /// A kind that only a build with `-DBACKGROUNDABLE_EXTRA_KINDS_FOR_TESTING`
                /// has: `.ci/growing-kinds.sh` checks that a client compiles unchanged
                /// when a kind is added.
                public static let extraForTesting = Kind(code: .extraForTesting)
            #endif

            public var description: String { "\(code)" }
        }

        /// The payload beyond the unit, by kind.
        private enum Payload: Sendable {
            case none
            case outcome(AsyncTask.Outcome)
            case retry(attempt: Int, error: any Error, delay: Duration)
            case primary(AsyncTask)
            case priority(TaskPriority)
        }

        /// What the event is about.
        public let kind: Kind
        /// The unit the event is about; `nil` for ``Kind/busy``, ``Kind/idle`` and
        /// ``Kind/backgroundTimeExpiring``.
        public let unit: AsyncTask?
        private let payload: Payload

        private init(_ kind: Kind, _ unit: AsyncTask? = nil, _ payload: Payload = .none) {
            self.kind = kind
            self.unit = unit
            self.payload = payload
        }

        /// The unit's outcome, for ``Kind/ended``.
        public var outcome: AsyncTask.Outcome? {
            if case .outcome(let outcome) = payload { outcome } else { nil }
        }

        /// The failed attempt's number (1 for the first), for ``Kind/retrying``.
        public var attempt: Int? {
            if case .retry(let attempt, _, _) = payload { attempt } else { nil }
        }

        /// The error the event is about: the failed attempt's, for ``Kind/retrying``;
        /// the body's, for ``Kind/ended`` with a ``AsyncTask/Outcome/failed(_:)`` outcome.
        public var error: (any Error)? {
            switch payload {
            case .retry(_, let error, _): error
            case .outcome(let outcome): outcome.error
            default: nil
            }
        }

        /// How long the unit waits before its next attempt, for ``Kind/retrying``.
        public var delay: Duration? {
            if case .retry(_, _, let delay) = payload { delay } else { nil }
        }

        /// The live unit that ``unit`` joined, for ``Kind/joined``.
        public var primary: AsyncTask? {
            if case .primary(let primary) = payload { primary } else { nil }
        }

        /// The priority the unit was escalated to, for ``Kind/escalated``.
        public var priority: TaskPriority? {
            if case .priority(let priority) = payload { priority } else { nil }
        }

        public var description: String {
            let subject = unit.map { "\($0)" }
            let details: String? =
                switch payload {
                case .none: nil
                case .outcome(let outcome): "\(outcome)"
                case .retry(let attempt, let error, let delay): "attempt \(attempt), \(error), next in \(delay)"
                case .primary(let primary): "\(primary)"
                case .priority(let priority): "\(priority)"
                }
            let parts = [subject, details].compactMap { $0 }
            return parts.isEmpty ? "\(kind)" : "\(kind)(\(parts.joined(separator: ", ")))"
        }

        static let busy = Event(.busy)
        static let idle = Event(.idle)
        static let backgroundTimeExpiring = Event(.backgroundTimeExpiring)
        static func enqueued(_ unit: AsyncTask) -> Event { Event(.enqueued, unit) }
        static func started(_ unit: AsyncTask) -> Event { Event(.started, unit) }
        static func ended(_ unit: AsyncTask, _ outcome: AsyncTask.Outcome) -> Event {
            Event(.ended, unit, .outcome(outcome))
        }
        static func retrying(_ unit: AsyncTask, attempt: Int, error: any Error, delay: Duration) -> Event {
            Event(.retrying, unit, .retry(attempt: attempt, error: error, delay: delay))
        }
        static func joined(_ unit: AsyncTask, primary: AsyncTask) -> Event { Event(.joined, unit, .primary(primary)) }
        static func escalated(_ unit: AsyncTask, priority: TaskPriority) -> Event {
            Event(.escalated, unit, .priority(priority))
        }
    }

    /// What a queue does with its work when the system (or a grace period) takes its
    /// background time back. The assertion is always ended inside the expiration
    /// handler first.
    public struct ExpirationPolicy: Sendable, Hashable {
        enum Kind: Sendable, Hashable {
            case cancelAll, cancelPending, keepRunning
        }

        let kind: Kind

        /// Cancel executing and waiting units, so they can save state (the default).
        public static let cancelAll = ExpirationPolicy(kind: .cancelAll)
        /// Cancel the units that have not started; executing ones carry on.
        public static let cancelPending = ExpirationPolicy(kind: .cancelPending)
        /// Cancel nothing; the work runs on without background time.
        public static let keepRunning = ExpirationPolicy(kind: .keepRunning)
    }
}
