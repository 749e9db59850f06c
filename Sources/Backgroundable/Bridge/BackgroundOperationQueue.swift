public import Foundation
import Synchronization

/// An `OperationQueue` with the 1.x `BackgroundQueue` features: name-based
/// deduplication, a delegate told when the queue goes busy and idle, one
/// background-time assertion per busy period, and counted suspension.
///
/// Renamed from 1.x `BackgroundQueue`, which is now the ``BackgroundQueue`` actor.
/// `OperationQueue.background` is the shared instance.
///
/// ## Deduplication
/// Operations are indexed by `name` while they are *live*: added and not finished, and
/// not cancelled — except a plain `Operation` cancelled while it executes, whose
/// `main()` still runs: it counts until it finished. An ``AsyncOperation`` arriving with
/// - ``UniquenessPolicy/ignore`` (the default): the name is only a label;
/// - ``UniquenessPolicy/drop``: if a live operation has the same name, the newcomer's
///   unit ends ``AsyncTask/Outcome/dropped`` (so it is cancelled and its closure never
///   runs); it is still handed to the queue, which finishes it at once, so nothing that
///   depends on it (a sequence, `waitUntilFinished()`) is left waiting;
/// - ``UniquenessPolicy/replace``: every live operation with the same name — executing
///   ones included — is cancelled (an ``AsyncOperation`` with outcome
///   ``AsyncTask/Outcome/replaced``), then the newcomer is added. It starts only once
///   every replaced operation of its name reported `isFinished` — those it replaced,
///   and earlier ones still executing (a replaced operation that had not started is
///   cancelled, and Foundation starts a cancelled operation without waiting): it depends
///   on them (they show in its `dependencies` until it starts), so two operations of one
///   name never execute at once. A later ``UniquenessPolicy/drop`` or `replace`
///   newcomer that finds no live operation of the name waits for them the same way.
///
/// Any other named `Operation` behaves as ``UniquenessPolicy/ignore``: it never
/// deduplicates itself, but counts as live for later arrivals. The check and the add
/// are one step under one lock (two racing `.drop` arrivals never both survive), and
/// the lookup hashes the name: O(1) in the number of live operations, no scan of
/// `operations`. Within one `addOperations` call the policies apply in array order.
/// Unnamed operations never deduplicate. The name is read once, when the operation is
/// added.
///
/// ## Concurrency contract
/// Every member is thread-safe. Operations run as on any `OperationQueue`. The
/// delegate (see ``BackgroundOperationQueueDelegate``) and the background-time
/// assertion follow the queue's busy periods: idle → busy when operations are added to
/// an idle queue, busy → idle when its last operation finished; both transitions are
/// delivered in order, exactly once each, outside every lock. A barrier block
/// (`addBarrierBlock(_:)`) is work of the busy period too, until it ran. When the
/// background time expires, the queue cancels all its operations, as
/// ``cancelAllOperations()`` does, so they can save their state.
///
/// Suspension is counted, as in 1.x: n `isSuspended = true` need n
/// `isSuspended = false`; extra `false` are ignored.
///
/// ## Foundation's behaviour
/// Apart from those rules, the queue behaves as Foundation's `OperationQueue`:
/// - `progress` is Foundation's, opt-in: once you set its `totalUnitCount`, each
///   operation that runs `main()` through `Operation.start()` completes one unit (so an
///   ``AsyncOperation``, which overrides `start()`, does not count). To count every
///   operation of the busy period with no set-up, read ``busyPeriodProgress``.
/// - `addOperation { }` gives the `BlockOperation` it makes the queue's
///   `qualityOfService`, when one was set.
/// - Unnamed queues have names of their own, `"Backgroundable.BackgroundOperationQueue 1"`,
///   `"… 2"` and so on: numbered, where Foundation uses the queue's address, because the
///   name (also the label of the queue's background-time assertions) is fixed before the
///   queue has an address, and a number is never reused.
/// - ``cancelAllOperations()`` leaves barrier blocks to run (see there).
///
/// The queue's own state lives in a `Mutex`, and Foundation's `OperationQueue` is
/// thread-safe: that is why the class can be `@unchecked Sendable`. Subclasses must
/// guard their own state the same way.
open class BackgroundOperationQueue: OperationQueue, @unchecked Sendable {
    /// The provider of the background-time assertion the queue holds while busy.
    public let backgroundTaskProvider: any BackgroundTaskProvider

    /// The queue's rules — deduplication, busy periods, background time, counted
    /// suspension — are those of every ``BackgroundQueue``: the same state machine, in
    /// which Foundation starts the members (they are *external*).
    let storage: BridgeStorage
    private let delegateBox = Lock(DelegateSlot<any BackgroundOperationQueueDelegate>())
    /// Where the delegate's notifications wait for the main actor.
    private let mailbox = MainActorMailbox()
    /// ``busyPeriodProgress`` and its watch, made on first read.
    private let busyProgress = Lock<(progress: Progress, watch: UInt64?)?>(nil)
    /// Whether `qualityOfService` was set: only then does `addOperation { }` give it to
    /// the block operations it makes, as Foundation does.
    private let hasQualityOfService = Atomic(false)
    /// Numbers the unnamed queues, so that each has a name of its own.
    private static let unnamedQueues = Atomic<UInt64>(0)

    /// Creates a queue.
    ///
    /// - Parameters:
    ///   - name: The queue's `name`, also the name of its background-time assertions.
    ///   - backgroundTaskProvider: Supplies the assertion held while the queue is busy.
    public init(
        name: String? = nil,
        backgroundTaskProvider: any BackgroundTaskProvider = DefaultBackgroundTaskProvider.make()
    ) {
        let name =
            name ?? "Backgroundable.BackgroundOperationQueue \(Self.unnamedQueues.add(1, ordering: .relaxed).newValue)"
        self.backgroundTaskProvider = backgroundTaskProvider
        self.storage = QueueStorage(
            label: name, limit: .max, provider: backgroundTaskProvider, expirationPolicy: .cancelAll)
        super.init()
        self.name = name
        storage.front = self
    }

    deinit {
        if let watch = busyProgress.withLock({ $0?.watch }) { storage.unwatchProgress(watch) }
    }

    // MARK: Progress

    /// The queue's progress through its busy period as a Foundation `Progress`, fed by
    /// the queue's own counts: one unit per operation (or barrier block) added in the busy
    /// period (`totalUnitCount`), completed when it finished, whatever its outcome. A new
    /// busy period starts again from zero.
    ///
    /// Unlike Foundation's opt-in `progress` (which counts only operations that run `main()`
    /// through `Operation.start()`, so never an ``AsyncOperation``), it counts every
    /// operation, with no set-up. Made on first read; from then on the queue updates it on
    /// every change, on the thread that delivers the queue's notifications, outside the
    /// queue's locks (so `Progress` observers run there too). Counts whole operations: the
    /// partial progress an ``AsyncOperation`` reports shows in its own
    /// ``AsyncOperation/progress``.
    public var busyPeriodProgress: Progress {
        let (progress, isNew) = busyProgress.withLock { stored -> (Progress, Bool) in
            if let stored { return (stored.progress, false) }
            let progress = Progress.discreteProgress(totalUnitCount: 0)
            stored = (progress, nil)
            return (progress, true)
        }
        if isNew {
            // Registered outside the lock: the first update may run on this thread.
            let watch = storage.watchProgress(names: 0) { progress.follow($0.progress, unitsPerMember: 1) }
            busyProgress.withLock { $0?.watch = watch }
        }
        return progress
    }

    // MARK: Delegate

    /// Receives the two 1.x notifications. Held weakly. See
    /// ``BackgroundOperationQueueDelegate`` for the threading contract. A delegate set
    /// while the queue is busy hears nothing of that busy period: its first call is the
    /// next period's will-start, so it always hears the two in pairs.
    public var delegate: (any BackgroundOperationQueueDelegate)? {
        get { delegateBox.withLock { $0.delegate } }
        set { delegateBox.withLock { $0.delegate = newValue } }
    }

    // MARK: Adding

    /// Adds `operation`, applying its name's uniqueness policy atomically; see the type's
    /// documentation. A dropped ``AsyncOperation`` has ended ``AsyncTask/Outcome/dropped``
    /// when this returns.
    open override func addOperation(_ operation: Operation) {
        register(operation)
        super.addOperation(operation)
    }

    /// Adds `operations` in order, applying their uniqueness policies in that order.
    /// With `waitUntilFinished`, blocks the calling thread until all of them finished.
    open override func addOperations(_ operations: [Operation], waitUntilFinished wait: Bool) {
        add(operations, lastFirst: false, waitUntilFinished: wait)
    }

    /// For a sequence's members: their uniqueness policies apply first to last, as in
    /// ``addOperations(_:waitUntilFinished:)``, but Foundation receives them last first
    /// (see `OperationQueue.addSequentialOperations`).
    func addMembersLastFirst(_ operations: [Operation], waitUntilFinished wait: Bool) {
        add(operations, lastFirst: true, waitUntilFinished: wait)
    }

    private func add(_ operations: [Operation], lastFirst: Bool, waitUntilFinished wait: Bool) {
        register(operations)
        super.addOperations(lastFirst ? operations.reversed() : operations, waitUntilFinished: false)
        if wait {
            for operation in operations {
                operation.waitUntilFinished()
            }
        }
    }

    /// Adds a `BlockOperation` running `block` (unnamed: it never deduplicates). As in
    /// Foundation, the operation takes the queue's `qualityOfService` if one was set.
    open override func addOperation(_ block: @escaping @Sendable () -> Void) {
        let operation = BlockOperation(block: block)
        if hasQualityOfService.load(ordering: .relaxed) { operation.qualityOfService = qualityOfService }
        addOperation(operation)
    }

    /// Foundation's. Once set, the block operations that `addOperation { }` makes take it.
    open override var qualityOfService: QualityOfService {
        get { super.qualityOfService }
        set {
            super.qualityOfService = newValue
            hasQualityOfService.store(true, ordering: .relaxed)
        }
    }

    /// The queue's side of adding, before Foundation gets the operations: one
    /// transition admits them (counting them as live, applying their uniqueness
    /// policies in order), then the queue arranges to hear when each admitted one
    /// finished. An ``AsyncOperation`` reports its own end (no allocation on this path);
    /// any other operation is watched by the bridge. Names and policies are read
    /// before the lock is taken.
    ///
    /// A newcomer with a name that deduplicates learns, under the lock, which operations
    /// of its name may still run: those it replaced (the machine's `.replace(_, by:)`
    /// actions of its admission) and those replaced before that have not finished (see
    /// ``LingeringBodies``); it depends on them before Foundation gets it.
    private func register(_ operations: [Operation]) {
        guard !operations.isEmpty else { return }
        let admissions = operations.map(Self.admission)
        for name in Set(admissions.lazy.filter(Self.deduplicates).compactMap(\.name)) {
            forgetCancelledOperations(named: name)
        }
        var replacing: [AsyncOperation] = []
        var watching: [ReplacedOperation] = []
        let admitted = storage.admittingTransition { machine, actions, lingering in
            admissions.compactMap { admission in
                Self.admit(
                    admission, machine: &machine, actions: &actions, lingering: &lingering,
                    replacing: &replacing, watching: &watching
                ).map { (admission.member, $0) }
            }
        }
        prepare(replacing: replacing, watching: watching)
        for (operation, handle) in admitted { hearEnd(of: operation, handle) }
    }

    /// The batch `register(_:)` for one operation: the same rules, without the
    /// arrays of a batch (`addOperation` is the common way in).
    private func register(_ operation: Operation) {
        let admission = Self.admission(of: operation)
        if Self.deduplicates(admission), let name = admission.name { forgetCancelledOperations(named: name) }
        var replacing: [AsyncOperation] = []
        var watching: [ReplacedOperation] = []
        let handle = storage.admittingTransition { machine, actions, lingering in
            Self.admit(
                admission, machine: &machine, actions: &actions, lingering: &lingering,
                replacing: &replacing, watching: &watching)
        }
        prepare(replacing: replacing, watching: watching)
        if let handle { hearEnd(of: operation, handle) }
    }

    /// What the queue's rules need of an operation, read before the lock is taken.
    private static func admission(of operation: Operation) -> BridgeStorage.Machine.Admission {
        BridgeStorage.Machine.Admission(
            member: operation, name: operation.name,
            policy: (operation as? AsyncOperation)?.uniquenessPolicy ?? .ignore,
            priority: 0, timeout: nil)
    }

    /// Whether the operation's name meets the live ones (an ``AsyncOperation`` with a
    /// policy other than ``UniquenessPolicy/ignore``).
    private static func deduplicates(_ admission: BridgeStorage.Machine.Admission) -> Bool {
        admission.policy.kind != .ignore && admission.name != nil
    }

    /// Before a newcomer of `name` that deduplicates is admitted: the plain operations of
    /// that name that were cancelled before they executed no longer count (their `main()`
    /// will never run). Foundation tells nobody of a cancellation, and finishes a
    /// cancelled operation only once its queue gets to it (a serial or suspended queue
    /// may not for a long while), so they are read here, outside the queue's lock. (An
    /// ``AsyncOperation`` stops counting as it is cancelled.)
    private func forgetCancelledOperations(named name: String) {
        let plain = storage.read { $0.members(named: name) }.filter { !($0.member is AsyncOperation) }
        let cancelled = plain.filter { $0.member.isCancelled && !$0.member.isExecuting }
        guard !cancelled.isEmpty else { return }
        storage.transition { machine, _ in
            for (_, handle) in cancelled { machine.memberStopped(handle) }
        }
    }

    /// Under the lock: admits one operation. A newcomer that replaced operations of its
    /// name, or whose name's replaced ones still run, is added to `replacing`, and the
    /// operations it replaced to `watching`. `nil` when it was not admitted.
    private static func admit(
        _ admission: BridgeStorage.Machine.Admission, machine: inout BridgeStorage.Machine,
        actions: inout BridgeStorage.Machine.ActionList, lingering: inout LingeringBodies,
        replacing: inout [AsyncOperation], watching: inout [ReplacedOperation]
    ) -> BridgeStorage.Machine.Handle? {
        guard admission.policy.kind != .ignore, let name = admission.name,
            let newcomer = admission.member as? AsyncOperation
        else {
            return machine.addExternal(admission, actions: &actions)
        }
        var own = BridgeStorage.Machine.ActionList()
        let handle = machine.addExternal(admission, actions: &own)
        own.visit { action in
            if case .replace(let member, _) = action {
                let replaced = ReplacedOperation(member)
                lingering.add(replaced, named: name)
                watching.append(replaced)
            }
            actions.append(action)
        }
        guard let handle else { return nil }
        let awaited = lingering.running(named: name).compactMap { ($0 as? ReplacedOperation)?.operation }
        if !awaited.isEmpty {
            newcomer.awaitBeforeStarting(awaited)
            replacing.append(newcomer)
        }
        return handle
    }

    /// After unlocking: replaced operations are watched, and newcomers depend on those
    /// that may still run, before Foundation gets them.
    private func prepare(replacing: [AsyncOperation], watching: [ReplacedOperation]) {
        for replaced in watching { replaced.watch() }
        for newcomer in replacing { newcomer.addReplacedDependencies() }
    }

    /// Arranges for the queue to hear when an admitted operation finished.
    private func hearEnd(of operation: Operation, _ handle: BridgeStorage.Machine.Handle) {
        if (operation as? AsyncOperation)?.track(by: storage, handle: handle) != true {
            // Strong, as Foundation holds an operation's queue until the operation finished.
            let storage = storage
            BridgeQueue.whenFinished(operation) {
                storage.memberEnded(handle, operation.isCancelled ? .cancelled : .finished)
            }
        }
    }

    // MARK: Barriers

    /// Adds a barrier block, as Foundation does — it runs once every operation added
    /// before it finished, and operations added after it start once it ran — and counts
    /// it as work of the busy period: the queue stays busy (holding its background time)
    /// until the block ran, and ``waitUntilIdle()`` waits for it.
    open override func addBarrierBlock(_ barrier: @escaping @Sendable () -> Void) {
        // A token stands for the block in the queue's rules, live until the block ran.
        let admission = BridgeStorage.Machine.Admission(
            member: Operation(), name: nil, policy: .ignore, priority: 0, timeout: nil)
        guard let handle = storage.transition({ machine, actions in machine.addExternal(admission, actions: &actions) })
        else { return super.addBarrierBlock(barrier) }
        let storage = storage
        super.addBarrierBlock {
            barrier()
            storage.memberEnded(handle, .finished)
        }
    }

    /// Cancels every operation in `operations`, in order, as Foundation does — but not
    /// the barrier blocks: each still runs, once the operations ahead of it finished.
    ///
    /// swift-corelibs-foundation cancels barriers too, and a cancelled barrier (which never
    /// runs) leaves a dangling reference in each operation it waited for: the process
    /// crashes when one of them finishes after the barrier was released.
    open override func cancelAllOperations() {
        for operation in operations {
            operation.cancel()
        }
    }

    // MARK: Busy periods

    /// `true` while the queue holds operations or barrier blocks that have not finished
    /// (a busy period).
    public var isBusy: Bool {
        storage.read { $0.isBusy }
    }

    /// Waits until the queue is idle: every operation and barrier block finished, and
    /// every idle notification delivered — the end of its background time and the
    /// ``delegate``'s `backgroundQueueDidFinishOperations(_:)`, which runs on the main
    /// actor (with no delegate, this never waits for the main actor). Returns at once if
    /// it already is. Does not block a thread (unlike `waitUntilAllOperationsAreFinished()`).
    /// Cancellable: when the waiting task is cancelled it returns at once, whether or not
    /// the queue is idle; its operations are not affected.
    public func waitUntilIdle() async {
        await storage.waitUntilIdle()
    }

    // MARK: Suspension

    /// Counted suspension: each `true` adds one suspension, each `false` lifts one;
    /// extra `false` are ignored. The queue starts nothing while at least one
    /// suspension is in place; executing operations carry on. Reading returns `true`
    /// while any suspension is in place.
    open override var isSuspended: Bool {
        get { storage.read { $0.suspensions > 0 } }
        set {
            storage.transition { machine, actions in
                if newValue {
                    machine.suspend()
                } else {
                    machine.resume(actions: &actions)
                }
            }
            // Apply outside the lock (Foundation may notify observers), and converge:
            // every writer re-checks after writing, so the last write always matches
            // the count even when two threads race.
            while true {
                let desired = storage.read { $0.suspensions > 0 }
                super.isSuspended = desired
                if storage.read({ $0.suspensions > 0 }) == desired { return }
            }
        }
    }
}

extension BackgroundOperationQueue: QueueFront {
    func queueWillStartWork() {
        guard let delegate = delegateBox.withLock({ $0.takeWillStart() }) else { return }
        mailbox.post { delegate.backgroundQueueWillStartOperations(self) }
    }

    func queueDidFinishWork(then delivered: @escaping @Sendable () -> Void) {
        let notification = delegateBox.withLock { $0.takeDidFinish() }.map { delegate in
            { @MainActor @Sendable in delegate.backgroundQueueDidFinishOperations(self) }
        }
        mailbox.post(notification, then: delivered)
    }
}

extension OperationQueue {
    /// The shared ``BackgroundOperationQueue`` (1.x `OperationQueue.background`), with the
    /// platform's default ``BackgroundTaskProvider``.
    public static let background = BackgroundOperationQueue(name: "Backgroundable.background")
}

/// The storage of the bridge's queues: its members are all added under the lock.
typealias BridgeStorage = QueueStorage<Operation, NoInbox<Operation>>

extension Operation: QueueMember {
    /// Foundation starts the bridge's members.
    func startFromQueue(priority: UInt8) {}

    /// Replacement, a timeout or an expiry: an ``AsyncOperation`` ends its unit with
    /// the outcome; any other operation is cancelled.
    func endFromQueue(_ outcome: AsyncTask.Outcome) {
        if let operation = self as? AsyncOperation {
            operation.end(outcome)
        } else {
            cancel()
        }
    }

    /// Under the queue's lock: an ``AsyncOperation``'s unit takes its outcome there; any
    /// other operation is cancelled after unlocking (Foundation's calls never run under
    /// the lock). A joining operation joins after unlocking too.
    func settle(_ decision: QueueDecision, gate: inout ReplacementGate?) -> SettledDecision {
        switch decision {
        case .end(let outcome):
            settleEnding(outcome)
        case .replace:
            settleEnding(.replaced)
        case .join(let primary, _):
            SettledDecision(applied: true, outcome: nil, remainder: .call { self.join(primary) })
        }
    }

    private func settleEnding(_ outcome: AsyncTask.Outcome) -> SettledDecision {
        if let operation = self as? AsyncOperation { return operation.settleEnd(outcome) }
        return SettledDecision(applied: true, outcome: outcome, remainder: .call { self.cancel() })
    }

    /// The bridge's replacements wait through Foundation's dependencies instead.
    func waitBeforeRunning(for gates: [ReplacementGate]) {}

    /// ``UniquenessPolicy/join``: an ``AsyncOperation`` joins a live ``AsyncOperation``
    /// of its name (its closure never runs; it finishes with that one's outcome). A
    /// plain `Operation` has no outcome to share: beside one the newcomer is dropped, as
    /// is an operation whose unit a ``BackgroundQueue`` holds (`AsyncOperation(task:)`).
    private func join(_ primary: any QueueMember) {
        guard let operation = self as? AsyncOperation else { return }
        if let primary = primary as? AsyncOperation, operation.task.join(primary.task, claimed: false) { return }
        operation.end(.dropped)
    }

    func publicEvent(_ event: MemberEvent) -> BackgroundQueue.Event? { nil }

    /// The bridge's queues count their operations whole: none reports partial progress.
    var reportedProgress: Double? { nil }

    var memberName: String? { name }
}

/// An operation a bridge newcomer replaced, until Foundation finished it: later
/// operations of its name depend on it meanwhile (see ``LingeringBodies``). Foundation's
/// own `isFinished` is not read under the queue's lock: a watcher sets the flag (an
/// ``AsyncOperation``'s own lock may be taken there, after the queue's).
///
/// Held weakly: the table, swept under the queue's lock, must never hold the last
/// reference to an operation, whose `deinit` (a subclass's) would then run under it.
/// Foundation holds a running operation, and a newcomer its dependencies.
final class ReplacedOperation: LingeringBody {
    weak let operation: Operation?
    private let finished = Atomic<Bool>(false)

    init(_ operation: Operation) {
        self.operation = operation
    }

    /// Finished (or released: nothing can run it any more), or an ``AsyncOperation``
    /// whose closure will never run (it ended before it was started: Foundation
    /// finishes it at once).
    var hasReturned: Bool {
        if finished.load(ordering: .acquiring) { return true }
        guard let operation else { return true }
        return (operation as? AsyncOperation)?.cannotRunAnymore ?? false
    }

    /// After unlocking: sets the flag once Foundation finished the operation.
    func watch() {
        guard let operation else { return finished.store(true, ordering: .releasing) }
        BridgeQueue.whenFinished(operation) { self.finished.store(true, ordering: .releasing) }
    }
}
