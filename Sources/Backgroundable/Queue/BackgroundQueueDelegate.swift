/// The two notifications of the 1.x `BackgroundQueueDelegate`, for a ``BackgroundQueue``,
/// delivered on the main actor.
///
/// A main-actor type (a view model, in an app module that is main-actor by default or
/// with `@MainActor` written out) conforms as it is: no `nonisolated`, no hop.
///
/// Both are called exactly once per busy period and in order (will-start, then
/// did-finish, then will-start of the next period…), on the main actor, after the
/// transition happened: by the time will-start arrives, units of the period may have
/// started (or even ended). A delegate set while the queue is busy hears nothing of
/// that period: its first call is the next period's will-start. They need a running
/// main actor (an app's run loop, or an `async` `main` in a tool); to observe a queue
/// from elsewhere, iterate ``BackgroundQueue/events``. ``BackgroundQueue/waitUntilIdle()`` returns only after
/// did-finish has returned.
@MainActor
public protocol BackgroundQueueDelegate: AnyObject, Sendable {
    /// The queue went from idle to busy.
    func backgroundQueueWillStartTasks(_ queue: BackgroundQueue)
    /// The queue went from busy to idle: all the work it held reached an outcome.
    func backgroundQueueDidFinishTasks(_ queue: BackgroundQueue)
}

/// A front end's delegate, held weakly, and the delegate told that the current busy
/// period began. Calls come in pairs: a delegate hears did-finish only for a period
/// whose will-start it heard, so one set (or replaced) in the middle of a busy period
/// hears nothing of that period, and its first call is the next period's will-start.
/// Read only by the queue's deliverer, one notification at a time.
struct DelegateSlot<Delegate> {
    /// A delegate protocol's existential is not `AnyObject` to a generic: the object is
    /// kept as one, and read back as `Delegate`.
    private weak var object: AnyObject?
    private weak var toldStart: AnyObject?

    var delegate: Delegate? {
        get { object as? Delegate }
        set { object = newValue.map { $0 as AnyObject } }
    }

    /// The delegate to tell that a busy period began, noted as told.
    mutating func takeWillStart() -> Delegate? {
        toldStart = object
        return delegate
    }

    /// The delegate to tell that the busy period ended: the current one, if it heard
    /// the period's will-start.
    mutating func takeDidFinish() -> Delegate? {
        defer { toldStart = nil }
        guard let object, object === toldStart else { return nil }
        return object as? Delegate
    }
}
