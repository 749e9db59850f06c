/// The 1.x `BackgroundQueueDelegate`, for a ``BackgroundOperationQueue`` (the 1.x
/// `BackgroundQueue` class): the same two notifications, with their 1.x names,
/// delivered on the main actor.
///
/// A main-actor type conforms as it is: no `nonisolated`, no hop. Both are called
/// exactly once per busy period and in order (will-start, then did-finish, then
/// will-start of the next period…), on the main actor, after the transition happened.
/// A delegate set while the queue is busy hears nothing of that period: its first
/// call is the next period's will-start.
/// They need a running main actor (an app's run loop, or an `async` `main` in a tool).
/// ``BackgroundOperationQueue/waitUntilIdle()`` returns only after did-finish has
/// returned.
@MainActor
public protocol BackgroundOperationQueueDelegate: AnyObject, Sendable {
    /// The queue went from idle to busy: operations were added.
    func backgroundQueueWillStartOperations(_ queue: BackgroundOperationQueue)
    /// The queue went from busy to idle: every operation it held has finished.
    func backgroundQueueDidFinishOperations(_ queue: BackgroundOperationQueue)
}
