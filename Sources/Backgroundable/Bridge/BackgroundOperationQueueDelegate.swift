/// The 1.x `BackgroundQueueDelegate`, for a ``BackgroundOperationQueue`` (the 1.x
/// `BackgroundQueue` class). The same two notifications, with their 1.x names.
///
/// Both are called exactly once per busy period and in order (will-start, then
/// did-finish, then will-start of the next period…), never concurrently and never
/// reordered, on the thread that caused the transition (the one adding the first
/// operation, or the one that saw the last operation finish) or on a thread that was
/// delivering earlier notifications. Keep them short; hop to the main actor for UI work.
public protocol BackgroundOperationQueueDelegate: AnyObject, Sendable {
    /// The queue went from idle to busy: operations were added and are about to start.
    /// Called before those operations are handed to `OperationQueue`.
    func backgroundQueueWillStartOperations(_ queue: BackgroundOperationQueue)
    /// The queue went from busy to idle: every operation it held has finished.
    func backgroundQueueDidFinishOperations(_ queue: BackgroundOperationQueue)
}
