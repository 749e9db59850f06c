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
/// Operations are indexed by `name` while they are *live* (added and not finished,
/// not cancelled). An ``AsyncOperation`` arriving with
/// - ``UniquenessPolicy/ignore`` (the default): the name is only a label;
/// - ``UniquenessPolicy/drop``: if a live operation has the same name, the newcomer's
///   unit ends ``AsyncTask/Outcome/dropped`` (so it is cancelled and its closure never
///   runs); it is still handed to the queue, which finishes it at once, so nothing that
///   depends on it (a sequence, `waitUntilFinished()`) is left waiting;
/// - ``UniquenessPolicy/replace``: every live operation with the same name — executing
///   ones included — is cancelled (an ``AsyncOperation`` with outcome
///   ``AsyncTask/Outcome/replaced``), then the newcomer is added.
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
/// delivered in order, exactly once each, outside every lock. When the background time
/// expires, the queue cancels all its operations (`cancelAllOperations()`) so they can
/// save their state.
///
/// Suspension is counted, as in 1.x: n `isSuspended = true` need n
/// `isSuspended = false`; extra `false` are ignored.
///
/// The queue's own state lives in a `Mutex`, and Foundation's `OperationQueue` is
/// thread-safe: that is why the class can be `@unchecked Sendable`. Subclasses must
/// guard their own state the same way.
open class BackgroundOperationQueue: OperationQueue, @unchecked Sendable {
    /// The provider of the background-time assertion the queue holds while busy.
    public let backgroundTaskProvider: any BackgroundTaskProvider

    private let registry = Lock(Registry())

    /// Creates a queue.
    ///
    /// - Parameters:
    ///   - name: The queue's `name`, also the name of its background-time assertions.
    ///   - backgroundTaskProvider: Supplies the assertion held while the queue is busy.
    public init(
        name: String? = nil,
        backgroundTaskProvider: any BackgroundTaskProvider = DefaultBackgroundTaskProvider.make()
    ) {
        self.backgroundTaskProvider = backgroundTaskProvider
        super.init()
        self.name = name ?? "Backgroundable.BackgroundOperationQueue"
    }

    // MARK: Delegate

    /// Receives the two 1.x notifications. Held weakly. See
    /// ``BackgroundOperationQueueDelegate`` for the threading contract.
    public var delegate: (any BackgroundOperationQueueDelegate)? {
        get { registry.withLock { $0.delegate } }
        set { registry.withLock { $0.delegate = newValue } }
    }

    // MARK: Adding

    /// Adds `operation`, applying its name's uniqueness policy atomically; see the type's
    /// documentation. A dropped ``AsyncOperation`` has ended ``AsyncTask/Outcome/dropped``
    /// when this returns.
    open override func addOperation(_ operation: Operation) {
        register(CollectionOfOne(operation))
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

    /// Adds a `BlockOperation` running `block` (unnamed: it never deduplicates).
    open override func addOperation(_ block: @escaping @Sendable () -> Void) {
        addOperation(BlockOperation(block: block))
    }

    /// The queue's side of adding: counts the operations as live, applies their
    /// uniqueness policies and arranges to hear when each finished, before Foundation
    /// gets them. An ``AsyncOperation`` reports its own end to the queue (no allocation
    /// on this path); any other operation is watched by the bridge.
    private func register(_ operations: some Collection<Operation>) {
        guard !operations.isEmpty else { return }
        var dropped: [AsyncOperation] = []
        var replaced: [Operation] = []
        // Operations whose end reaches the queue through a watcher (not `AsyncOperation`s,
        // or ones that had already finished).
        var watched: [(Operation, String?)] = []
        let deliver = registry.withLock { registry in
            for operation in operations {
                registry.liveCount += 1
                let asyncOperation = operation as? AsyncOperation
                // The name the operation is indexed under: none when unnamed or dropped.
                var indexedName = operation.name
                if let name = indexedName {
                    switch asyncOperation?.uniquenessPolicy ?? .ignore {
                    case .ignore:
                        break
                    case .drop:
                        if registry.hasLiveOperation(named: name) {
                            dropped.append(asyncOperation!)
                            indexedName = nil
                        }
                    case .replace:
                        replaced += registry.removeLiveOperations(named: name)
                    }
                    if let indexedName {
                        registry.names[indexedName, default: []].append(operation)
                    }
                }
                // Lock order: the queue's lock, then the operation's.
                if asyncOperation?.track(by: self, name: indexedName) != true {
                    watched.append((operation, indexedName))
                }
            }
            return registry.becomeBusyIfIdle()
        }
        // Ends outside the lock: they run the operations' own bookkeeping.
        for operation in dropped {
            operation.end(.dropped)
        }
        for operation in replaced {
            Self.replace(operation)
        }
        if deliver { deliverTransitions() }
        // Strong, as Foundation holds an operation's queue until the operation finished.
        for (operation, name) in watched {
            BridgeQueue.whenFinished(operation) {
                self.operationFinished(operation, name: name)
            }
        }
    }

    /// Cancels a live operation that a `.replace` newcomer displaces.
    private static func replace(_ operation: Operation) {
        guard let operation = operation as? AsyncOperation else {
            return operation.cancel()
        }
        operation.end(.replaced)
    }

    /// `operation`, added under `name`, finished: it stops counting as live.
    func operationFinished(_ operation: Operation, name: String?) {
        let deliver = registry.withLock { registry in
            if let name { registry.remove(operation, named: name) }
            registry.liveCount -= 1
            return registry.becomeIdleIfDone()
        }
        if deliver { deliverTransitions() }
    }

    // MARK: Busy / idle delivery

    /// Delivers busy / idle transitions in order. Only one thread delivers at a time
    /// (the one that found `isDelivering` false), so begin / end of background time and
    /// the delegate's two calls can never be reordered.
    private func deliverTransitions() {
        while true {
            let batch = registry.withLock { registry -> ([Registry.Transition], (any BackgroundOperationQueueDelegate)?)? in
                guard !registry.outbox.isEmpty else {
                    registry.isDelivering = false
                    return nil
                }
                defer { registry.outbox.removeAll(keepingCapacity: true) }
                return (registry.outbox, registry.delegate)
            }
            guard let (transitions, delegate) = batch else { return }
            for transition in transitions {
                switch transition {
                case .busy:
                    // Strong on purpose: a weak reference would give the queue a side
                    // table and slow every retain of it (Foundation retains a queue
                    // several times per operation). The cycle through the stored
                    // assertion ends when the busy period does.
                    let assertion = BackgroundTimeAssertion.begin(
                        named: name ?? "Backgroundable.BackgroundOperationQueue",
                        provider: backgroundTaskProvider
                    ) {
                        self.cancelAllOperations()
                    }
                    registry.withLock { $0.assertion = assertion }
                    delegate?.backgroundQueueWillStartOperations(self)
                case .idle(let period):
                    registry.withLock { registry in
                        defer { registry.assertion = nil }
                        return registry.assertion
                    }?.end()
                    delegate?.backgroundQueueDidFinishOperations(self)
                    for waiter in registry.withLock({ $0.busyPeriods.idleDelivered(period: period) }) {
                        waiter.resume()
                    }
                }
            }
        }
    }

    /// `true` while the queue holds operations that have not finished (a busy period).
    public var isBusy: Bool {
        registry.withLock { $0.isBusy }
    }

    /// Waits until the queue is idle: every operation finished, and the idle
    /// notification (delegate, end of background time) delivered. Returns at once if it
    /// already is. Does not block a thread (unlike `waitUntilAllOperationsAreFinished()`);
    /// not cancellable.
    public func waitUntilIdle() async {
        // Resumed exactly once: here, or by the single idle delivery whose busy period
        // covers it (`idleDelivered` takes it out of the list).
        await withContinuation { (continuation: Continuation<Void>) in
            if registry.withLock({ $0.busyPeriods.wait(continuation) }) {
                continuation.resume()
            }
        }
    }

    // MARK: Suspension

    /// Counted suspension: each `true` adds one suspension, each `false` lifts one;
    /// extra `false` are ignored. The queue starts nothing while at least one
    /// suspension is in place; executing operations carry on. Reading returns `true`
    /// while any suspension is in place.
    open override var isSuspended: Bool {
        get { registry.withLock { $0.suspensions > 0 } }
        set {
            registry.withLock { registry in
                if newValue {
                    registry.suspensions += 1
                } else if registry.suspensions > 0 {
                    registry.suspensions -= 1
                }
            }
            // Apply outside the lock (Foundation may notify observers), and converge:
            // every writer re-checks after writing, so the last write always matches
            // the count even when two threads race.
            while true {
                let desired = registry.withLock { $0.suspensions > 0 }
                super.isSuspended = desired
                if registry.withLock({ $0.suspensions > 0 }) == desired { return }
            }
        }
    }
}

extension OperationQueue {
    /// The shared ``BackgroundOperationQueue`` (1.x `OperationQueue.background`), with the
    /// platform's default ``BackgroundTaskProvider``.
    public static let background = BackgroundOperationQueue(name: "Backgroundable.background")
}

/// The queue-side state of a ``BackgroundOperationQueue``, guarded by its `Mutex`.
private struct Registry {
    enum Transition {
        case busy
        /// The end of busy period `period`.
        case idle(period: UInt64)
    }

    /// Live named operations; nearly always one per name.
    var names: [String: [Operation]] = [:]
    /// Operations added and not finished yet (dropped ones included until the queue
    /// finished them).
    var liveCount = 0
    var busyPeriods = BusyPeriods()
    var isBusy: Bool { busyPeriods.isBusy }
    var suspensions = 0
    var outbox: [Transition] = []
    var isDelivering = false
    weak var delegate: (any BackgroundOperationQueueDelegate)?
    var assertion: BackgroundTimeAssertion?

    /// Whether `operation` still counts for deduplication. Reads the operation's state,
    /// which for an ``AsyncOperation`` takes its unit's lock (lock order: the queue's
    /// lock, then an operation's; never the other way round).
    private static func isLive(_ operation: Operation) -> Bool {
        if let operation = operation as? AsyncOperation {
            return operation.currentOutcome == nil
        }
        return !operation.isFinished && !operation.isCancelled
    }

    /// Forgets the operations of `name` that are no longer live, then says whether any is left.
    mutating func hasLiveOperation(named name: String) -> Bool {
        guard var operations = names[name] else { return false }
        operations.removeAll { !Self.isLive($0) }
        names[name] = operations.isEmpty ? nil : operations
        return !operations.isEmpty
    }

    /// Takes the live operations of `name` out of the index.
    mutating func removeLiveOperations(named name: String) -> [Operation] {
        guard let operations = names.removeValue(forKey: name) else { return [] }
        return operations.filter(Self.isLive)
    }

    mutating func remove(_ operation: Operation, named name: String) {
        guard var operations = names[name] else { return }
        operations.removeAll { $0 === operation }
        names[name] = operations.isEmpty ? nil : operations
    }

    mutating func becomeBusyIfIdle() -> Bool {
        guard !isBusy, liveCount > 0 else { return false }
        _ = busyPeriods.begin()
        return post(.busy)
    }

    mutating func becomeIdleIfDone() -> Bool {
        guard isBusy, liveCount == 0 else { return false }
        return post(.idle(period: busyPeriods.end()))
    }

    /// Queues a transition; `true` when the caller became the deliverer.
    private mutating func post(_ transition: Transition) -> Bool {
        outbox.append(transition)
        guard !isDelivering else { return false }
        isDelivering = true
        return true
    }
}
