extension BackgroundQueue {
    /// What a queue reports through ``BackgroundQueue/events``.
    ///
    /// Events of one queue arrive in the order the queue made its decisions. An event
    /// about a unit always tells what really happened to it: `ended` carries the
    /// outcome the unit has (a unit that ended by itself, or was cancelled by another
    /// thread, just before the queue would have dropped or timed it out is reported with
    /// its own outcome), `joined` is heard only for a unit that did join, and a unit
    /// that had ended before its add (a `run` whose caller was already cancelled) is
    /// never reported at all.
    public enum Event: Sendable {
        /// The queue went from idle to busy (its first live unit arrived).
        case busy
        /// The queue went from busy to idle (its last live unit ended).
        case idle
        /// A unit was added and is waiting to start.
        case enqueued(AsyncTask)
        /// The queue started a unit: it holds one of the queue's slots from now on. (Its
        /// work may begin a little later: a unit added with ``UniquenessPolicy/replace``
        /// runs its work once the bodies it replaced returned.)
        case started(AsyncTask)
        /// A live unit reached its outcome, or an arriving unit was dropped.
        case ended(AsyncTask, AsyncTask.Outcome)
        /// Attempt `attempt` of a unit with a ``RetryPolicy`` failed with `error`; the
        /// unit waits `delay` (holding no slot), then starts again (a new `started`).
        case retrying(AsyncTask, attempt: Int, error: any Error, delay: Duration)
        /// A unit added with ``UniquenessPolicy/join`` joined the live unit `primary` of
        /// its name instead of being added: it ends with `primary`'s outcome, when
        /// `primary` ends (no other event of the queue is about it).
        case joined(AsyncTask, primary: AsyncTask)
        /// A task of higher priority awaits the unit: it was escalated to `priority` —
        /// its place in the start order while it waits, its `Task` once it runs.
        case escalated(AsyncTask, priority: TaskPriority)
        /// The background time the queue held expired; the expiration policy is applied next.
        case backgroundTimeExpiring
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
