/// The two notifications of the 1.x `BackgroundQueueDelegate`, for a ``BackgroundQueue``,
/// delivered on the main actor.
///
/// A main-actor type (a view model, in an app module that is main-actor by default or
/// with `@MainActor` written out) conforms as it is: no `nonisolated`, no hop.
///
/// Both are called exactly once per busy period and in order (will-start, then
/// did-finish, then will-start of the next period…), on the main actor, after the
/// transition happened: by the time will-start arrives, units of the period may have
/// started (or even ended). They need a running main actor (an app's run loop, or an
/// `async` `main` in a tool); to observe a queue from elsewhere, iterate
/// ``BackgroundQueue/events``. ``BackgroundQueue/waitUntilIdle()`` returns only after
/// did-finish has returned.
@MainActor
public protocol BackgroundQueueDelegate: AnyObject, Sendable {
    /// The queue went from idle to busy.
    func backgroundQueueWillStartTasks(_ queue: BackgroundQueue)
    /// The queue went from busy to idle: all the work it held reached an outcome.
    func backgroundQueueDidFinishTasks(_ queue: BackgroundQueue)
}
