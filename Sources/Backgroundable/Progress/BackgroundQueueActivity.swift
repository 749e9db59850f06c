public import Observation
import Synchronization

/// An `@Observable` model of a ``BackgroundQueue`` for SwiftUI: whether it is busy, its
/// counts, its ``QueueProgress`` and the names of the units it is executing.
///
/// ```swift
/// struct SyncStatus: View {
///     @State private var activity = BackgroundQueueActivity(AppQueues.sync)
///
///     var body: some View {
///         if activity.isBusy {
///             ProgressView(value: activity.progress.fractionCompleted) {
///                 Text(activity.executingNames.first ?? "Syncing")
///             }
///         }
///     }
/// }
/// ```
///
/// ## Concurrency contract
/// The model lives on the main actor, and so do its updates: the queue's changes are
/// coalesced into at most one pending main-actor update, which applies the newest
/// state and sets only the properties that changed (so views redraw only for what they
/// read). The model watches its queue from its creation until it is deinitialised; the
/// queue pays for progress only while someone watches it. It does not keep the queue
/// alive.
@MainActor
@Observable
public final class BackgroundQueueActivity {
    /// `true` while the queue has units that have not ended.
    public private(set) var isBusy = false
    /// Units waiting to start.
    public private(set) var enqueuedCount = 0
    /// Units executing.
    public private(set) var executingCount = 0
    /// The queue's progress through its busy period.
    public private(set) var progress = QueueProgress()
    /// The names of the first executing units (unnamed ones are left out), in the order
    /// they started; at most the `nameLimit` given at creation.
    public private(set) var executingNames: [String] = []

    @ObservationIgnored private let relay: ActivityRelay

    /// Starts watching `queue`. The model reads the queue's current state at once, on
    /// its first update.
    ///
    /// - Parameters:
    ///   - queue: The queue to watch.
    ///   - nameLimit: How many executing units' names ``executingNames`` lists, at most
    ///     (the queue copies them on every update: keep it to what a view shows). 0 for
    ///     none; negative values count as 0.
    public init(_ queue: BackgroundQueue, nameLimit: Int = 8) {
        relay = ActivityRelay(storage: queue.core, nameLimit: Swift.max(0, nameLimit))
        relay.model = self
        relay.start()
    }

    /// Applies the newest state the queue delivered.
    func apply(_ activity: QueueActivity) {
        let progress = activity.progress
        if isBusy != progress.isBusy { isBusy = progress.isBusy }
        if enqueuedCount != progress.enqueuedCount { enqueuedCount = progress.enqueuedCount }
        if executingCount != progress.executingCount { executingCount = progress.executingCount }
        if self.progress != progress { self.progress = progress }
        if executingNames != activity.executingNames { executingNames = activity.executingNames }
    }
}

/// Carries a queue's progress to a ``BackgroundQueueActivity``: keeps the newest state,
/// and schedules one main-actor update at a time. Owned by the model; the queue holds it
/// weakly, and it stops watching the queue when the model lets it go.
final class ActivityRelay: Sendable {
    private let storage: QueueCore
    private let nameLimit: Int
    private let pending = Lock<(latest: QueueActivity?, scheduled: Bool)>((nil, false))
    private let registration = Lock<UInt64?>(nil)
    /// Set once, on the main actor, before the relay starts; read on the main actor only.
    @MainActor weak var model: BackgroundQueueActivity?

    init(storage: QueueCore, nameLimit: Int) {
        self.storage = storage
        self.nameLimit = nameLimit
    }

    func start() {
        let id = storage.watchProgress(names: nameLimit) { [weak self] activity in self?.offer(activity) }
        registration.withLock { $0 = id }
    }

    deinit {
        if let id = registration.withLock({ $0 }) { storage.unwatchProgress(id) }
    }

    private func offer(_ activity: QueueActivity) {
        let schedule = pending.withLock { pending -> Bool in
            pending.latest = activity
            defer { pending.scheduled = true }
            return !pending.scheduled
        }
        guard schedule else { return }
        Task { @MainActor [weak self] in
            guard let self,
                let latest = pending.withLock({ pending -> QueueActivity? in
                    pending.scheduled = false
                    defer { pending.latest = nil }
                    return pending.latest
                })
            else { return }
            model?.apply(latest)
        }
    }
}
