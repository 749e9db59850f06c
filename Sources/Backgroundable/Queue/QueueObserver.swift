/// Hears every per-member event of a queue — and the expiration of its background time
/// — in order, on the thread that delivers the queue's events, outside every lock
/// (the thread a unit ended on or the one adding work, or a task that took over from
/// it when other threads kept posting: never a dedicated thread).
///
/// The `Tracing` trait observes queues this way: the queue's rules stay in its state
/// machine, and an observer only turns its events into spans. A queue gets its
/// observers when it is created (a queue created before a tracer was bootstrapped has
/// none), and emits the per-member events they need while it has any, as it emits
/// every event while someone listens to ``BackgroundQueue/events``.
protocol QueueObserver<Member>: Sendable {
    associatedtype Member
    /// The kinds of events it needs: the queue emits only those (and all while someone
    /// listens to its events).
    var events: ObservedEvents { get }
    /// Called once per event, in the order the queue's state machine decided them.
    func observe(_ event: QueueEvent<Member>)
}

/// Measures a queue's units as they end, and its levels as they change, on the threads
/// that end them and change them, outside every lock: the `Metrics` trait. Cheaper than
/// a ``QueueObserver``, whose events go through the queue's deliverer, and enough for
/// counts and durations, which need no order between units.
protocol QueueMeasurer: AnyObject, Sendable {
    /// `unit`, which this queue claimed, reached `outcome`. Once per unit, on the thread
    /// that ended it, just before the queue forgets it (so an idle queue has every outcome counted).
    func unitEnded(_ unit: AsyncTask, _ outcome: AsyncTask.Outcome)
    /// The queue's levels after a transition; a higher `version` is a later transition
    /// (calls from several threads may arrive out of order).
    func levelsChanged(enqueued: Int, executing: Int, version: UInt64)
}
