/// Hears every per-member event of a queue — and the expiration of its background time
/// — in order, on the thread that delivers the queue's events, outside every lock
/// (the thread a unit ended on, or the one adding work: never a dedicated one).
///
/// The `Metrics` and `Tracing` traits observe queues this way: the queue's rules stay
/// in its state machine, and an observer only turns its events into measurements. A
/// queue gets its observers when it is created (a queue created before a metrics or
/// tracing backend was bootstrapped has none), and emits its per-member events while
/// it has any, as it does while someone listens to ``BackgroundQueue/events``.
protocol QueueObserver<Member>: Sendable {
    associatedtype Member
    /// The kinds of events it needs: the queue emits only those (and all while someone
    /// listens to its events).
    var events: ObservedEvents { get }
    /// Called once per event, in the order the queue's state machine decided them;
    /// `now` is ``ContinuousNanoseconds/now()`` read once per batch of events.
    func observe(_ event: QueueEvent<Member>, at now: Int64)
    /// Called after each batch of events, with the queue's levels when the batch was
    /// taken (a good time to record levels, once).
    func batchDelivered(enqueued: Int, executing: Int)
}
