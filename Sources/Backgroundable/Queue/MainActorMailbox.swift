import Synchronization

/// Hands a queue's busy / idle notifications to the main actor, in the order they were
/// posted, so that a main-actor delegate hears them there with no hop of its own.
///
/// Posting never blocks and never runs the notification on the posting thread: the
/// first post schedules one main-actor task, which delivers everything posted until
/// the mailbox is empty again. The notifications run outside the lock.
final class MainActorMailbox: Sendable {
    private let state = Lock<(pending: [@MainActor @Sendable () -> Void], scheduled: Bool)>(([], false))

    func post(_ notification: @escaping @MainActor @Sendable () -> Void) {
        let schedule = state.withLock { state -> Bool in
            state.pending.append(notification)
            defer { state.scheduled = true }
            return !state.scheduled
        }
        if schedule {
            Task { @MainActor in self.deliver() }
        }
    }

    /// Posts `notification`, if any, then calls `delivered` once it — and everything
    /// posted before it — ran on the main actor. With nothing to deliver (no
    /// notification, nothing pending), `delivered` runs at once, on this thread: a queue
    /// with no delegate never waits for the main actor.
    func post(
        _ notification: (@MainActor @Sendable () -> Void)?, then delivered: @escaping @Sendable () -> Void
    ) {
        let deliverNow = notification == nil && state.withLock { !$0.scheduled }
        if deliverNow { return delivered() }
        post {
            notification?()
            delivered()
        }
    }

    @MainActor private func deliver() {
        while true {
            let batch = state.withLock { state -> [@MainActor @Sendable () -> Void] in
                if state.pending.isEmpty { state.scheduled = false }
                defer { state.pending = [] }
                return state.pending
            }
            guard !batch.isEmpty else { return }
            for notification in batch { notification() }
        }
    }
}
