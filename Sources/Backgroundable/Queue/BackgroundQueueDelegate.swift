/// The two notifications of the 1.x `BackgroundQueueDelegate`, for a ``BackgroundQueue``.
///
/// Both are called exactly once per busy period and in order (will-start, then
/// did-finish, then will-start of the next period…), never concurrently, on the
/// thread that caused the transition or that was delivering earlier notifications.
/// Keep them short; hop to the main actor for UI work.
public protocol BackgroundQueueDelegate: AnyObject, Sendable {
    /// The queue went from idle to busy: it is about to start work.
    func backgroundQueueWillStartTasks(_ queue: BackgroundQueue)
    /// The queue went from busy to idle: all its work reached an outcome.
    func backgroundQueueDidFinishTasks(_ queue: BackgroundQueue)
}
