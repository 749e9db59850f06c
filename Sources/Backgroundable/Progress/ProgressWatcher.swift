/// One progress watcher of a ``QueueStorage``.
final class ProgressWatcher: Sendable {
    /// How many executing members' names it wants.
    let names: Int
    private let deliver: @Sendable (QueueActivity) -> Void
    private let onFinish: @Sendable () -> Void
    /// What it was last told. Touched by the deliverer only: one thread at a time, each
    /// taking over from the previous one through the queue's lock.
    private nonisolated(unsafe) var last: QueueActivity?

    init(names: Int, deliver: @escaping @Sendable (QueueActivity) -> Void, finish: @escaping @Sendable () -> Void) {
        self.names = names
        self.deliver = deliver
        self.onFinish = finish
    }

    /// Tells the watcher `activity` (its names cut to what it wants) unless it equals the
    /// last one it heard.
    func offer(_ activity: QueueActivity) {
        var activity = activity
        if activity.executingNames.count > names {
            activity.executingNames.removeLast(activity.executingNames.count - names)
        }
        guard activity != last else { return }
        last = activity
        deliver(activity)
    }

    func finish() {
        onFinish()
    }
}
