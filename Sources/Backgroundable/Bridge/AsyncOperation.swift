public import Foundation
import Synchronization

/// An `Operation` that is done when ``finish()`` is called: the 1.x `AsyncOperation`,
/// now a front end over an ``AsyncTask``.
///
/// Underneath every `AsyncOperation` is one ``AsyncTask`` (``task``): one state machine,
/// two front ends. Outcomes, the timeout, exactly-once finishing and cancellation are
/// the unit's rules; the operation only translates them into `Operation`'s
/// `isExecuting` / `isFinished` / `isCancelled` with their change notifications, so any
/// `OperationQueue` (and `waitUntilFinished()`, dependencies, `completionBlock`) sees
/// it finish, on Linux and on Darwin.
///
/// ```swift
/// OperationQueue.background.addOperation(AsyncOperation(name: "sync") { operation in
///     api.fetch { _ in operation.finish() }
/// })
/// ```
///
/// ## Concurrency contract
/// - ``start()`` (called by a queue, or by you) runs the closure once, on the calling
///   thread — the `OperationQueue`'s thread, as in 1.x; no `Task` is created for it —
///   and returns when the closure does. The closure may call ``finish()`` from any
///   thread, at any later time. (A unit wrapped with ``init(task:)`` whose work is
///   async runs in its own `Task` instead.)
/// - The operation reports `isFinished` exactly once, after its unit reached its
///   ``AsyncTask/Outcome``: finished, cancelled, replaced, dropped or timed out. A
///   replaced operation reports it only once its closure (or its wrapped unit's body)
///   has returned too, so that the newcomer's never runs beside its own.
/// - ``finish()`` is idempotent and thread-safe. Called before the operation starts it
///   cancels it (as in 1.x); called after it ended (a late call from a timed-out body)
///   it does nothing.
/// - ``cancel()`` before the start: the closure never runs, and the queue still starts
///   the operation so that it finishes at once (dependants are never left waiting).
///   While executing: the operation finishes at once, even if the closure never looks
///   at `isCancelled` (an async unit's `Task` is cancelled).
/// - The timeout is counted from the start, driven by the same timer machinery as
///   every ``BackgroundQueue``: it fires whether or not a run loop is spinning. On expiry
///   the outcome is ``AsyncTask/Outcome/timedOut``, the operation reports `isFinished`,
///   and then `onTimeoutCallback` runs exactly once, on a global dispatch queue (it may
///   block that thread without delaying any other timeout).
/// - `isCancelled` is `true` for every outcome that stopped the work: cancelled,
///   replaced, dropped and timed out.
///
/// All mutable state is guarded by a `Mutex`; that is why the class can be
/// `@unchecked Sendable` (Foundation's `Operation` itself is `@unchecked Sendable`).
/// Subclasses must guard their own state the same way.
open class AsyncOperation: Operation, @unchecked Sendable {
    /// The unit underneath: await its ``AsyncTask/outcome``, read its
    /// ``AsyncTask/currentOutcome``, or cancel it (which cancels the operation).
    ///
    /// The unit of an operation made from a closure belongs to that operation: it runs
    /// when the operation starts, and handing it to a ``BackgroundQueue`` (or wrapping it
    /// in another operation) does not run it a second time — those only wait for its
    /// outcome, as for any unit already in a queue.
    public var task: AsyncTask {
        listenBeforeStart()
        return unit
    }

    /// What a ``BackgroundOperationQueue`` does when a live operation already has this
    /// operation's name. Plain `OperationQueue`s ignore it.
    public let uniquenessPolicy: UniquenessPolicy

    /// How long the operation may execute, in seconds, counted from its start.
    /// `TimeInterval.infinity` means no timeout.
    public let timeout: TimeInterval

    let unit: AsyncTask
    /// The 1.x closure, run by ``start()``; `nil` for an operation wrapping an existing unit.
    private let closure: (@Sendable (AsyncOperation) -> Void)?
    private let onTimeoutCallback: (@Sendable (AsyncOperation) -> Void)?
    private let bridge = Lock(BridgeState())

    /// Creates an operation with the 1.x initializer.
    ///
    /// - Parameters:
    ///   - name: The operation's `name`, its unit's name and the deduplication key in a
    ///     ``BackgroundOperationQueue``;
    ///     `nil` never deduplicates.
    ///   - timeout: Seconds from the start until the operation times out; default 10,
    ///     as in 1.x. `TimeInterval.infinity` for none; zero or less expires as soon as
    ///     it starts (the closure never runs).
    ///   - onTimeoutCallback: Runs exactly once, on a global dispatch queue, after the
    ///     operation timed out and reported `isFinished`.
    ///   - uniquenessPolicy: See ``uniquenessPolicy``; default ``UniquenessPolicy/ignore``
    ///     (1.x dropped same-named operations by default; that defect is fixed).
    ///   - closure: The work. Runs once, off the main thread, when the operation starts;
    ///     the operation is done when something calls ``finish()``.
    public init(
        name: String? = nil,
        timeout: TimeInterval = 10,
        onTimeoutCallback: (@Sendable (AsyncOperation) -> Void)? = nil,
        uniquenessPolicy: UniquenessPolicy = .ignore,
        _ closure: @escaping @Sendable (AsyncOperation) -> Void
    ) {
        // The unit holds no reference to the operation (no cycle, no weak reference): its
        // work is external, run by the operation's `start()`.
        self.unit = AsyncTask(
            name: name,
            timeout: Self.duration(timeout),
            priorityRawValue: 0,
            uniquenessPolicy: uniquenessPolicy,
            extras: nil,
            work: .external
        )
        self.closure = closure
        self.onTimeoutCallback = onTimeoutCallback
        self.uniquenessPolicy = uniquenessPolicy
        self.timeout = timeout
        super.init()
        if let name { self.name = name }
    }

    /// Wraps an existing unit, so that any `OperationQueue` can run it (the adapter
    /// from ``AsyncTask`` to `Operation`; see also `OperationQueue.addTask(_:)`).
    ///
    /// The operation takes the unit's name, uniqueness policy and timeout. When it
    /// starts, the unit starts executing (with its own timeout); the operation finishes
    /// when the unit reaches its outcome. If the unit was already added to a
    /// ``BackgroundQueue``, starting the operation does not run it a second time: the
    /// operation just finishes when that queue's run of it ends. Cancelling either
    /// cancels both.
    public init(task: AsyncTask) {
        self.unit = task
        self.closure = nil
        self.onTimeoutCallback = nil
        self.uniquenessPolicy = task.uniquenessPolicy
        self.timeout =
            task.timeout.map { Double($0.components.seconds) + Double($0.components.attoseconds) * 1e-18 } ?? .infinity
        super.init()
        self.name = task.name
        // The unit is someone else's: it may end at any time.
        listenBeforeStart()
    }

    /// Code outside the operation may end the unit before the operation starts (once it
    /// has the unit); from the first call on, the operation listens, so that Foundation
    /// sees such a cancellation at once (see `unitEnded`). Weakly: an operation nobody
    /// starts may still be released. Once started, the operation observes its unit anyway.
    private func listenBeforeStart() {
        guard bridge.withLock({ $0.startListening() }) else { return }
        unit.whenEnded { [weak self] outcome in self?.unitEnded(outcome) }
    }

    /// `timeout` as the unit's: infinity and NaN mean none (NaN as in `DispatchTime + .nan`,
    /// which waits forever); zero or less, minus infinity included, is zero (the operation
    /// times out as it starts); longer than about 292 years saturates, where
    /// `Duration.seconds(_:)` would trap.
    static func duration(_ timeout: TimeInterval) -> Duration? {
        guard timeout < .infinity else { return nil }
        guard timeout > 0 else { return .zero }
        return timeout < 9_223_372_036 ? .seconds(timeout) : .longestWait
    }

    // MARK: Ending

    /// Marks the operation done (outcome ``AsyncTask/Outcome/finished``).
    ///
    /// Idempotent and thread-safe: only the first terminal transition counts. Before the
    /// operation starts it cancels it (as in 1.x); after it ended it does nothing.
    public func finish() {
        endedFromHere(unit.finishReportingOutcome())
    }

    /// Cancels the operation: the unit ends ``AsyncTask/Outcome/cancelled`` (its `Task`
    /// is cancelled if it runs) and the operation reports `isFinished` at once when it
    /// was executing, or as soon as its queue starts it when it was pending.
    /// Does nothing after it ended.
    open override func cancel() {
        end(.cancelled)
    }

    /// Ends the unit with `outcome` from the bridge's side (cancelled, dropped, replaced).
    func end(_ outcome: AsyncTask.Outcome) {
        endedFromHere(unit.end(outcome))
    }

    /// ``end(_:)`` under its queue's lock: the unit's outcome is set there, the rest is
    /// done after unlocking (see ``QueueMember/settle(_:gate:)``).
    ///
    /// A replaced unit's body that is still running (a wrapped unit's: `start()` awaits a
    /// closure's return itself) is counted by a gate, and the operation reports
    /// `isFinished` only once it returned.
    func settleEnd(_ outcome: AsyncTask.Outcome) -> SettledDecision {
        let countsBody = outcome.kind == .replaced && closure == nil
        let result = unit.state.withLock { state in
            var gate: ReplacementGate?
            let ending = countsBody ? state.replace(gate: &gate) : state.end(outcome)
            return (ending: ending, outcome: state.outcome, gate: ending != nil ? gate : nil)
        }
        guard let ending = result.ending else { return SettledDecision(applied: false, outcome: result.outcome) }
        return SettledDecision(
            applied: true, outcome: result.outcome,
            remainder: .call {
                if let gate = result.gate { self.holdFinish(until: gate) }
                ending.perform(for: self.unit)
                self.endedFromHere(ending.outcome)
            })
    }

    /// Before the operation hears that its unit was replaced: `isFinished` waits until
    /// the unit's body, which still runs, returned.
    private func holdFinish(until gate: ReplacementGate) {
        bridge.withLock { $0.bodyRuns = true }
        gate.whenOpen {
            self.bridge.withLock { $0.bodyRuns = false }
            self.reportFinishedIfDue()
        }
    }

    /// The unit was ended by a call made through the operation (`outcome` is `nil` when
    /// it had already ended). Before the start nothing may observe the unit, so a
    /// cancellation is passed on here; after it, the observer has heard already and
    /// this does nothing.
    private func endedFromHere(_ outcome: AsyncTask.Outcome?) {
        if let outcome, outcome.isCancellation { unitEnded(outcome) }
    }

    /// The outcome of the operation's unit; see ``AsyncTask/outcome``. Cancelling the
    /// awaiting task cancels the operation.
    ///
    /// The outcome is set just before the operation reports `isFinished`.
    public var outcome: AsyncTask.Outcome {
        get async { await task.outcome }
    }

    /// The outcome if the operation's unit has ended, `nil` before. Never suspends.
    public var currentOutcome: AsyncTask.Outcome? { unit.currentOutcome }

    // MARK: Operation state

    /// `true` from ``start()`` until the operation reports `isFinished`.
    public final override var isExecuting: Bool {
        bridge.withLock { $0.reportsExecuting && !$0.reportsFinished }
    }

    /// `true` once the operation's unit reached its outcome and the operation reported it.
    public final override var isFinished: Bool {
        bridge.withLock { $0.reportsFinished }
    }

    /// `true` when the unit was stopped before its work completed: cancelled, replaced,
    /// dropped or timed out (see ``AsyncTask/Outcome/isCancellation``).
    public final override var isCancelled: Bool {
        unit.isCancelled
    }

    /// Always `true`: the operation is done when ``finish()`` is called, not when
    /// ``start()`` returns.
    public final override var isAsynchronous: Bool { true }

    /// Starts the unit and returns at once; see the type's concurrency contract.
    ///
    /// If the operation was cancelled (or dropped, replaced, finished early) before,
    /// it reports `isFinished` without running the closure. A second call does nothing.
    public final override func start() {
        guard let awaited = bridge.withLock({ $0.requestStart() }) else { return }
        // From here the unit holds the operation until it ends: an executing operation
        // stays alive until it finished, like any running work.
        if let outcome = unit.observe(self) {
            bridge.withLock { $0.skipExecuting() }
            unitEnded(outcome)  // Does nothing if the operation heard of it before.
            return reportFinishedIfDue()
        }
        // The operations it replaced have finished: dropping the links lets them go (a
        // storm of replacements would otherwise keep a chain of them alive).
        for operation in awaited { removeDependency(operation) }
        willChangeValue(forKey: "isExecuting")
        bridge.withLock { $0.reportExecuting(runsClosure: closure != nil) }
        didChangeValue(forKey: "isExecuting")
        // Only now may another thread (a racing `cancel()`) report `isFinished`: its
        // notifications never come before this did-change.
        bridge.withLock { $0.executingReported() }
        if let closure {
            // Does nothing if the unit ended meanwhile (a timeout of zero ends it here).
            if unit.startHere(byItsFrontEnd: true, beforeRunning: keepDeadline), !unit.isFinished {
                closure(self)
            }
        } else {
            // Does nothing if the unit ended meanwhile, or was added to a queue before.
            unit.startHere(beforeRunning: keepDeadline)
        }
        reportFinishedIfDue(closureReturned: true)
    }

    /// The queues that keep the deadlines of operations no ``BackgroundOperationQueue``
    /// tracks: no busy periods, no background time, only the rules of timeouts.
    private static let deadlineKeeper = BridgeStorage(
        label: "Backgroundable.deadlines", limit: .max, provider: NoopBackgroundTaskProvider(),
        expirationPolicy: .keepRunning, reportsBusyPeriods: false)

    /// The unit has just started: its timeout is kept by the queue that tracks the
    /// operation (its ``BackgroundOperationQueue``, or the shared deadline keeper), with
    /// the same rules and the same one sleeper per queue as every unit.
    private func keepDeadline() {
        guard let timeout = unit.storedTimeout.nanoseconds else { return }
        if let tracking = bridge.withLock({ $0.tracking }) {
            // A stale handle (the operation's end overtook its start) is ignored.
            tracking.queue.transition { machine, actions in
                machine.externalStarted(tracking.handle, member: self, timeout: timeout, actions: &actions)
            }
            return
        }
        let keeper = Self.deadlineKeeper
        guard
            let handle = keeper.transition({ machine, actions in
                machine.externalStarted(nil, member: self, timeout: timeout, actions: &actions)
            })
        else { return }
        // If the operation reported `isFinished` meanwhile, nobody told the keeper:
        // this does.
        let tracked = bridge.withLock { state -> Bool in
            guard !state.reportsFinished else { return false }
            state.tracking = Tracking(queue: keeper, handle: handle)
            return true
        }
        if !tracked { keeper.memberEnded(handle, unit.currentOutcome ?? .cancelled) }
    }

    /// Reports `isFinished` exactly once: when `start()` has reported (or skipped)
    /// `isExecuting` and the unit has ended. Whichever of the two comes last does it;
    /// the claim under the lock makes it exactly once.
    private func reportFinishedIfDue(closureReturned: Bool = false) {
        guard let wasExecuting = bridge.withLock({ $0.claimFinish(closureReturned: closureReturned) }) else { return }
        if wasExecuting { willChangeValue(forKey: "isExecuting") }
        willChangeValue(forKey: "isFinished")
        let (observers, tracking, progress) = bridge.withLock { $0.reportFinished() }
        if wasExecuting { didChangeValue(forKey: "isExecuting") }
        didChangeValue(forKey: "isFinished")
        if let tracking { tracking.queue.memberEnded(tracking.handle, unit.currentOutcome ?? .finished) }
        if let progress { Self.complete(progress, unit.currentOutcome) }
        for observer in observers { observer() }
        if let onTimeoutCallback, unit.currentOutcome?.kind == .timedOut {
            // Not on this thread, which may be the one that keeps every deadline of the
            // queue: a callback that blocks must hold back no other timeout.
            DispatchQueue.global(qos: .userInitiated).async { onTimeoutCallback(self) }
        }
    }

    /// The operation's Foundation `Progress`, if someone read ``progress``.
    var existingProgress: Progress? { bridge.withLock { $0.progress } }

    /// ``progress``, made now if nobody read it before (`isNew`), with 100 units and a
    /// cancellation handler that cancels the operation. Not an implicit child of a
    /// current `Progress`. `finished`: the operation reported
    /// `isFinished` before.
    func progressMadeIfNeeded() -> (progress: Progress, isNew: Bool, finished: Bool) {
        bridge.withLock { state in
            if let progress = state.progress { return (progress, false, state.reportsFinished) }
            // A new `Progress` has no observers yet: configuring it runs no caller code.
            let progress = Progress.discreteProgress(totalUnitCount: 100)
            progress.cancellationHandler = { [weak self] in self?.cancel() }
            state.progress = progress
            return (progress, true, state.reportsFinished)
        }
    }

    /// Registers the ``BackgroundOperationQueue`` that tracks this operation: it is told
    /// exactly once, after the operation reported `isFinished`, on the thread that
    /// reports it. Costs no allocation (the queue's hot path). Returns `false`, and
    /// registers nothing, when the operation has already reported `isFinished`: the
    /// caller then does its bookkeeping itself. An operation whose unit has ended already
    /// (cancelled before it was added, say) stops counting for its name at once, as it
    /// would have when it ended (see ``unitEnded(_:)``).
    func track(by queue: BridgeStorage, handle: BridgeStorage.Machine.Handle) -> Bool {
        let (tracked, ended) = bridge.withLock { state in
            guard !state.reportsFinished, state.tracking == nil else { return (false, false) }
            state.tracking = Tracking(queue: queue, handle: handle)
            return (true, state.unitEnded)
        }
        if ended, unit.name != nil { queue.memberStopped(handle) }
        return tracked
    }

    // MARK: Replacing

    /// Under the lock of the ``BackgroundOperationQueue`` that admits this operation: the
    /// operations of its name that may still run (those it replaced, and earlier replaced
    /// ones that have not finished: see ``LingeringBodies``). A replaced operation that
    /// had not started is cancelled, and Foundation starts a cancelled operation without
    /// waiting for its dependencies: the table, not a chain of dependencies, keeps them.
    func awaitBeforeStarting(_ operations: [Operation]) {
        bridge.withLock { $0.awaited = operations }
    }

    /// Finished, or ended before it was started, so its closure never runs.
    var cannotRunAnymore: Bool { bridge.withLock { $0.cannotRunAnymore } }

    /// Outside the queue's lock, before the queue hands the operation to Foundation: it
    /// depends on what ``awaitReplaced(_:)`` found, so it starts only after those
    /// reported `isFinished` (two operations of one name never execute at once).
    ///
    /// Each of them keeps this operation alive until Foundation finished it:
    /// swift-corelibs-foundation holds a dependant unretained, and a cancelled dependant
    /// finishes without waiting (this one, when it is replaced in turn); released before
    /// its dependency finished, it would leave that one a dangling reference to crash on.
    func addReplacedDependencies() {
        for operation in bridge.withLock({ $0.awaited }) {
            addDependency(operation)
            BridgeQueue.afterFoundationFinished(operation) { withExtendedLifetime(self) {} }
        }
    }

    /// Calls `body` exactly once, after the operation reported `isFinished`: now if it
    /// already has, otherwise on the thread that reports it. For the bridge's queues.
    func whenFinished(_ body: @escaping @Sendable () -> Void) {
        let now = bridge.withLock { state -> Bool in
            if state.reportsFinished { return true }
            state.finishObservers.append(body)
            return false
        }
        if now { body() }
    }

    open override var description: String {
        "AsyncOperation(\(name.map { "\"\($0)\"" } ?? "unnamed"), \(currentOutcome.map { "\($0)" } ?? (isExecuting ? "executing" : "pending")))"
    }
}

extension AsyncOperation: UnitObserver {
    /// The unit reached its outcome, on the thread that ended it; at most once. Keeps
    /// Foundation's own bookkeeping in step — a cancelled operation is ready at once, so
    /// its queue starts it and it finishes even with unfinished dependencies — and
    /// reports `isFinished` if `start()` is already past reporting `isExecuting`.
    func unitEnded(_ outcome: AsyncTask.Outcome) {
        guard let tracking = bridge.withLock({ $0.noteUnitEnded(outcome) }) else { return }
        // Its outcome is reached: it no longer counts for its queue's deduplication,
        // though the queue holds it (busy) until it reports `isFinished`.
        if unit.name != nil, let tracking { tracking.queue.memberStopped(tracking.handle) }
        if outcome.isCancellation { super.cancel() }
        reportFinishedIfDue()
    }
}

/// The operation-side half of the bridge, guarded by the operation's `Mutex`.
struct BridgeState {
    /// The operation's Foundation `Progress` (see ``AsyncOperation/progress``), made on
    /// first read; kept here so that finishing reads it under the lock it takes anyway.
    var progress: Progress?
    /// `start()` was called.
    var startRequested = false
    /// Something may end the unit before the start: the operation listens to it.
    var listens = false
    /// `start()` reported `isExecuting` (set between its will/did notifications).
    var reportsExecuting = false
    /// `start()` is past reporting `isExecuting`, its did-change sent (or it skipped it:
    /// the unit had ended).
    var startReported = false
    /// `start()` is calling the closure (set with ``reportsExecuting``).
    var closureRuns = false
    /// The body of a replaced wrapped unit still runs (see ``AsyncOperation/settleEnd(_:)``).
    var bodyRuns = false
    /// The operation heard that its unit reached its outcome.
    var unitEnded = false
    /// That outcome is ``AsyncTask/Outcome/replaced``: `isFinished` waits for the closure
    /// (or the wrapped unit's body) to return, so that the newcomer's, which depends on
    /// this operation, never runs beside it.
    var replaced = false
    /// One caller won the right to report `isFinished`.
    var finishClaimed = false
    /// `isFinished` is `true` (set between its will/did notifications).
    var reportsFinished = false
    var finishObservers: [@Sendable () -> Void] = []
    /// The queue to tell once `isFinished` is reported.
    var tracking: Tracking?
    /// What the operation waits for, as a ``UniquenessPolicy/replace`` newcomer (see
    /// ``AsyncOperation/awaitReplaced(_:)``); its dependencies until it starts.
    var awaited: [Operation] = []

    /// Its start will not run its work: it reported `isFinished`, or it ended before.
    var cannotRunAnymore: Bool { reportsFinished || (unitEnded && !startRequested) }

    /// The operations awaited, the first time only (`nil` after); from then on the unit
    /// holds the operation.
    mutating func requestStart() -> [Operation]? {
        guard !startRequested else { return nil }
        startRequested = true
        listens = true
        defer { awaited = [] }
        return awaited
    }

    /// `true` when the caller must start listening: nothing listens yet.
    mutating func startListening() -> Bool {
        guard !listens else { return false }
        listens = true
        return true
    }

    mutating func skipExecuting() {
        startReported = true
    }

    /// Between `isExecuting`'s will-change and did-change notifications.
    mutating func reportExecuting(runsClosure: Bool) {
        reportsExecuting = true
        closureRuns = runsClosure
    }

    /// After `isExecuting`'s did-change notification: from now on `isFinished` may be
    /// reported.
    mutating func executingReported() {
        startReported = true
    }

    /// The queue tracking the operation, the first time only; `nil` after.
    mutating func noteUnitEnded(_ outcome: AsyncTask.Outcome) -> Tracking?? {
        guard !unitEnded else { return nil }
        unitEnded = true
        replaced = outcome.kind == .replaced
        return .some(tracking)
    }

    /// Claims the report of `isFinished` once both halves are done; returns whether
    /// `isExecuting` was reported, or `nil` when it is not (or no longer) this caller's.
    /// `closureReturned`: `start()` calls it once its closure returned.
    mutating func claimFinish(closureReturned: Bool) -> Bool? {
        if closureReturned { closureRuns = false }
        guard startReported, unitEnded, !finishClaimed, !(replaced && (closureRuns || bodyRuns)) else { return nil }
        finishClaimed = true
        return reportsExecuting
    }

    /// `isFinished` becomes `true`; hands out who must hear it.
    mutating func reportFinished() -> ([@Sendable () -> Void], Tracking?, Progress?) {
        reportsFinished = true
        defer {
            finishObservers = []
            tracking = nil
        }
        return (finishObservers, tracking, progress)
    }
}

/// The queue that tracks an operation (its ``BackgroundOperationQueue``, or the shared
/// deadline keeper), and the operation's handle there.
struct Tracking {
    let queue: BridgeStorage
    let handle: BridgeStorage.Machine.Handle
}

/// The 1.x name of ``UniquenessPolicy``.
@available(*, deprecated, renamed: "UniquenessPolicy")
public typealias AsyncOperationUniquenessPolicy = UniquenessPolicy
