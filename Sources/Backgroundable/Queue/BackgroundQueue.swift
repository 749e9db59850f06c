import Synchronization

/// A queue that runs ``AsyncTask`` units with Swift concurrency: FIFO among equal
/// priorities, an optional concurrency limit, name-based deduplication, counted
/// suspension, observation, and one background-time assertion per busy period.
///
/// ## Concurrency contract
/// `BackgroundQueue` is an actor, but every member is `nonisolated` and synchronous
/// unless it waits for something: the queue's state lives behind a lock, so adding a
/// unit costs at most a lock and a few pointer writes — no actor hop, no `Task`,
/// nothing that suspends. While a drainer task is at work, adding a unit with no
/// `drop` / `replace` name does not even take the lock: it is pushed with one atomic
/// compare-and-swap, and the queue's next transition admits it (every read, such as
/// ``enqueuedCount``, admits first, so a caller always sees its own adds). That is what
/// lets plain (non-async) code keep FIFO order: units added one after another from one
/// thread start in that order (see ``add(_:)-(AsyncTask)``).
///
/// A unit added to a queue with nothing running gets its wrapping `Task` from the
/// adding thread at once (as `Task.detached` would). Otherwise a drainer task moves
/// ready units to executing in batches and creates their `Task`s; when a unit ends,
/// the thread that ended it starts the next ones if slots are free. The scheduling
/// rules live in one state machine shared with the Operation bridge
/// (`QueueStateMachine`).
///
/// A queue that is deinitialised cancels the units that are not executing — waiting,
/// delayed, or between two attempts — (outcome ``AsyncTask/Outcome/cancelled``);
/// executing units run to their outcome, except that an attempt that fails then is not
/// retried: its unit ends cancelled.
public actor BackgroundQueue {
    /// The process-wide background queue (1.x `OperationQueue.background`): unbounded,
    /// with the platform's default ``BackgroundTaskProvider``.
    public static let shared = BackgroundQueue(name: "Backgroundable.shared")

    nonisolated let core: QueueCore
    private nonisolated let delegateBox = Lock(DelegateSlot<any BackgroundQueueDelegate>())
    /// Where the delegate's notifications wait for the main actor.
    private nonisolated let mailbox = MainActorMailbox()

    /// Creates a queue.
    ///
    /// - Parameters:
    ///   - name: Names the queue's background-time assertions.
    ///   - maxConcurrentTasks: How many units may execute at once; `nil` for no limit.
    ///     A value below 1 is treated as 1, so a queue always makes progress.
    ///   - backgroundTaskProvider: Supplies the background-time assertion the queue
    ///     holds while it is busy.
    ///   - expirationPolicy: What happens to the queue's work when that background time
    ///     expires.
    ///   - retryPolicy: The ``RetryPolicy`` of the units that have none of their own
    ///     (``AsyncTask/Options/retry``); `nil` for no retries.
    public init(
        name: String? = nil,
        maxConcurrentTasks: Int? = nil,
        backgroundTaskProvider: any BackgroundTaskProvider = DefaultBackgroundTaskProvider.make(),
        expirationPolicy: ExpirationPolicy = .cancelAll,
        retryPolicy: RetryPolicy? = nil
    ) {
        self.init(
            name: name, maxConcurrentTasks: maxConcurrentTasks, backgroundTaskProvider: backgroundTaskProvider,
            expirationPolicy: expirationPolicy, retryPolicy: retryPolicy, clock: .continuous)
    }

    /// The public initializer on another clock: BackgroundableTesting's `TestClock`
    /// builds its queues with it.
    package init(
        name: String?,
        maxConcurrentTasks: Int?,
        backgroundTaskProvider: any BackgroundTaskProvider,
        expirationPolicy: ExpirationPolicy,
        retryPolicy: RetryPolicy?,
        clock: QueueClock
    ) {
        let label = name ?? "Backgroundable.BackgroundQueue"
        self.init(
            label: label, maxConcurrentTasks: maxConcurrentTasks, backgroundTaskProvider: backgroundTaskProvider,
            expirationPolicy: expirationPolicy, observers: Self.observers(forQueueNamed: label),
            measurer: Self.measurer(forQueueNamed: label), clock: clock, retryPolicy: retryPolicy)
    }

    /// The one designated initializer: `observers` and `measurer` are the tracing and the
    /// metrics of the traits that are on (see ``QueueObserver`` and ``QueueMeasurer``);
    /// tests inject the `clock` of start times, timeouts and retries.
    init(
        label: String,
        maxConcurrentTasks: Int?,
        backgroundTaskProvider: any BackgroundTaskProvider,
        expirationPolicy: ExpirationPolicy,
        observers: [any QueueObserver<AsyncTask>],
        measurer: (any QueueMeasurer)?,
        clock: QueueClock = .continuous,
        retryPolicy: RetryPolicy? = nil
    ) {
        core = QueueCore(
            label: label,
            limit: Self.effectiveLimit(maxConcurrentTasks),
            provider: backgroundTaskProvider,
            expirationPolicy: expirationPolicy,
            observers: observers,
            measurer: measurer,
            clock: clock,
            defaultRetryPolicy: retryPolicy
        )
        core.front = self
    }

    deinit {
        core.transition { machine, actions in machine.close(actions: &actions) }
    }

    private static func effectiveLimit(_ limit: Int?) -> Int {
        guard let limit else { return .max }
        return Swift.max(1, limit)
    }

    /// The queue's name.
    public nonisolated var name: String { core.label }

    /// The background-task provider this queue's assertions come from.
    public nonisolated var backgroundTaskProvider: any BackgroundTaskProvider { core.provider }

    // MARK: Adding work

    /// Adds a unit. Synchronous, never suspends, callable from any thread or task.
    ///
    /// Units added one after another by one caller start in that order (among equal
    /// priorities; higher priorities start first). Name-based deduplication is applied
    /// atomically with the add: a ``UniquenessPolicy/drop`` unit whose name is live
    /// ends ``AsyncTask/Outcome/dropped`` before this returns.
    ///
    /// A unit belongs to one queue for its whole life. A unit that cannot be added —
    /// it was already added (here or to another queue), it has ended, or it is the unit
    /// of an ``AsyncOperation``, which runs it itself — is left exactly as it is (its
    /// owner still runs it, and awaiting it still reports its one outcome) and the add
    /// returns `false`.
    ///
    /// - Returns: `true` when this queue took the unit (it then ends cancelled at once if
    ///   the queue stopped accepting work, see ``stopAcceptingWork()``); `false` when it
    ///   could not.
    @discardableResult
    public nonisolated func add(_ task: AsyncTask) -> Bool {
        core.add(task)
    }

    /// Adds the unit of an async-style handle; see ``add(_:)-(AsyncTask)``.
    ///
    /// - Returns: `true` when this queue took the unit; `false` when it could not.
    @discardableResult
    public nonisolated func add<Success>(_ handle: AsyncTaskHandle<Success>) -> Bool {
        core.add(handle.task)
    }

    /// Adds several units at once, in order; deduplication policies apply in that order.
    /// The sequence is iterated before the queue's lock is taken, so its code may use
    /// the queue. Units that cannot be added (see ``add(_:)-(AsyncTask)``) are left as
    /// they are.
    ///
    /// - Returns: How many of the units this queue took.
    @discardableResult
    public nonisolated func add(contentsOf tasks: some Sequence<AsyncTask>) -> Int {
        core.add(tasks, sequential: false)
    }

    /// Adds a sequential group: each unit starts only after the previous one reached
    /// *any* outcome. A unit that is dropped, cancelled or times out is skipped, so a
    /// group never hangs. Units that cannot be added (see ``add(_:)-(AsyncTask)``) are
    /// left as they are and skipped. The sequence is iterated before the queue's lock is
    /// taken.
    ///
    /// - Returns: How many of the units this queue took.
    @discardableResult
    public nonisolated func addSequence(_ tasks: some Sequence<AsyncTask>) -> Int {
        core.add(tasks, sequential: true)
    }

    /// Creates and adds a callback-style unit (the 1.x `addAsyncOperation` shape): `work`
    /// receives the unit, which is done when ``AsyncTask/finish()`` is called.
    /// Synchronous like ``add(_:)-(AsyncTask)``.
    ///
    /// - Parameters:
    ///   - options: The unit's settings; its timeout is ``AsyncTask/defaultTimeout``
    ///     unless they set one (a callback could forget ``AsyncTask/finish()``).
    ///   - work: See ``AsyncTask/init(_:_:)``.
    /// - Returns: The unit, to await its outcome or cancel it.
    @discardableResult
    public nonisolated func add(
        _ options: AsyncTask.Options, _ work: sending @escaping @isolated(any) (AsyncTask) -> Void
    ) -> AsyncTask {
        let unit = AsyncTask(options, styleTimeout: AsyncTask.defaultTimeout, work: .callback(work), claimedBy: core)
        core.add(claimed: unit)
        return unit
    }

    /// Creates and adds a callback-style unit with every setting at its default (a
    /// timeout of ``AsyncTask/defaultTimeout``); see `add(_:_:)`.
    @discardableResult
    public nonisolated func add(_ work: sending @escaping @isolated(any) (AsyncTask) -> Void) -> AsyncTask {
        add(AsyncTask.Options(), work)
    }

    /// Creates and adds a unit whose work is an async `body`: done when `body` returns
    /// or throws. Synchronous like ``add(_:)-(AsyncTask)``; await the handle's value for
    /// the result. (The counterpart of `TaskGroup.addTask`.)
    ///
    /// - Parameters:
    ///   - options: The unit's settings; no timeout unless they set one (a body cannot
    ///     forget to return).
    ///   - body: Runs off the caller's actor unless it is isolated to one; see
    ///     ``AsyncTaskHandle/init(_:_:)``.
    /// - Returns: The unit's handle, to await its value or cancel it.
    @discardableResult
    public nonisolated func add<Success: Sendable>(
        _ options: AsyncTask.Options, _ body: sending @escaping @isolated(any) () async throws -> Success
    ) -> AsyncTaskHandle<Success> {
        let handle = AsyncTaskHandle<Success>(AsyncTask(options, work: .body(body), claimedBy: core))
        core.add(claimed: handle.task)
        return handle
    }

    /// Creates and adds a unit whose work is `body`, with every setting at its default
    /// (no timeout); see `add(_:_:)`.
    @discardableResult
    public nonisolated func add<Success: Sendable>(
        _ body: sending @escaping @isolated(any) () async throws -> Success
    ) -> AsyncTaskHandle<Success> {
        add(AsyncTask.Options(), body)
    }

    /// The async way to use the queue from async code: adds a unit whose work is `body`
    /// and waits for its value.
    ///
    /// Suspends until the unit ends. Throws the body's error; `CancellationError` when
    /// the unit was cancelled (cancelling the calling task cancels the unit, or only
    /// this caller's wait when others await the same shared work — see
    /// ``UniquenessPolicy/join``); or
    /// ``AsyncTaskError/replaced``, ``AsyncTaskError/dropped`` or
    /// ``AsyncTaskError/timedOut``. `options` and `body` are those of the `add` that
    /// takes a body: no timeout unless `options` set one, and `body` runs off the
    /// caller's actor unless it is isolated to one.
    ///
    /// Called from a task of higher priority than the options' priority, the unit is
    /// added at the caller's priority, as awaiting a `Task` escalates it (see
    /// <doc:PriorityEscalation>). A caller cancelled before the call adds nothing: it
    /// throws `CancellationError`.
    public nonisolated func run<Success: Sendable>(
        _ options: AsyncTask.Options, _ body: sending @escaping @isolated(any) () async throws -> Success
    ) async throws -> Success {
        try await run(AsyncTaskHandle(AsyncTask(options, work: .body(body), claimedBy: core)))
    }

    /// ``run(_:_:)`` with every setting at its default (no timeout).
    public nonisolated func run<Success: Sendable>(
        _ body: sending @escaping @isolated(any) () async throws -> Success
    ) async throws -> Success {
        try await run(AsyncTask.Options(), body)
    }

    /// Adds the claimed unit of `handle` once its caller awaits it, then waits for its
    /// value: a caller that joins shared work (``UniquenessPolicy/join``) counts as an
    /// awaiting caller from the moment its unit joins.
    private nonisolated func run<Success>(_ handle: AsyncTaskHandle<Success>) async throws -> Success {
        try await handle.result(awaitingBefore: { core.add(claimed: handle.task) }).get()
    }

    // MARK: Controlling

    /// How many units may execute at once; `nil` means no limit. Values below 1 are
    /// treated as 1. Raising the limit starts waiting units at once.
    public nonisolated var maxConcurrentTasks: Int? {
        let limit = core.read { $0.limit }
        return limit == .max ? nil : limit
    }

    /// Changes ``maxConcurrentTasks``. Executing units are never interrupted.
    public nonisolated func setMaxConcurrentTasks(_ limit: Int?) {
        core.transition { machine, actions in machine.setLimit(Self.effectiveLimit(limit), actions: &actions) }
    }

    /// Suspends the queue: nothing new starts until every `suspend()` is balanced by a
    /// ``resume()``. Executing units carry on.
    public nonisolated func suspend() {
        core.transition { machine, _ in machine.suspend() }
    }

    /// Balances one ``suspend()``. Extra calls are ignored. When the last suspension is
    /// lifted, waiting units start.
    public nonisolated func resume() {
        core.transition { machine, actions in machine.resume(actions: &actions) }
    }

    /// `true` while at least one ``suspend()`` is not balanced.
    public nonisolated var isSuspended: Bool {
        core.read { $0.suspensions > 0 }
    }

    /// Cancels every live unit — waiting and executing — with outcome
    /// ``AsyncTask/Outcome/cancelled``. Units added afterwards run normally. Every unit
    /// it cancels has ended, and left the queue, when this returns. A unit that reached
    /// another outcome on another thread just before (its `finish()`, say) is not
    /// cancelled: it leaves the queue when that thread has told the queue, which may be
    /// a moment after this returns.
    public nonisolated func cancelAll() {
        core.transition { machine, actions in machine.cancelAll(actions: &actions) }
    }

    /// Cancels every live unit of `lane` (``AsyncTask/Options/lane``) — waiting, waiting
    /// for its start time, blocked behind the lane's earlier units, between two attempts
    /// of a retry, or executing — with outcome ``AsyncTask/Outcome/cancelled``, as
    /// ``AsyncTask/cancel()`` does, and returns how many it cancelled.
    ///
    /// One step under the queue's lock: every unit whose add returned before the call is
    /// covered, every unit added after it returns is untouched (it runs normally, first
    /// of its lane), and no unit of the lane starts in between. Every unit it cancels
    /// has ended, and left the queue, when this returns. Does not suspend; callable from
    /// any thread or actor. Units of other lanes and of the same name elsewhere run on.
    /// As with ``cancelAll()``, a unit that reached another outcome on another thread
    /// just before keeps it and leaves when that thread has told the queue; the count
    /// includes it (the queue still held it).
    @discardableResult
    public nonisolated func cancelAll(inLane lane: any Hashable & Sendable) -> Int {
        let key = LaneKey(lane)
        return core.transition { machine, actions in machine.cancel(lane: key, actions: &actions) }
    }

    /// Cancels every live unit named `name` (``AsyncTask/Options/name``), whatever it is
    /// doing — waiting, delayed, blocked in a lane, between two attempts, or executing —
    /// with outcome ``AsyncTask/Outcome/cancelled``, as ``AsyncTask/cancel()`` does, and
    /// returns how many it cancelled. Units that joined one of them end with it.
    ///
    /// One step under the queue's lock, with the same contract as
    /// ``cancelAll(inLane:)``: units added after it returns are untouched.
    @discardableResult
    public nonisolated func cancelAll(named name: String) -> Int {
        core.transition { machine, actions in machine.cancel(named: name, actions: &actions) }
    }

    /// Stops accepting work, for a shutdown (``GracefulShutdown`` calls it): every unit
    /// added from now on ends ``AsyncTask/Outcome/cancelled`` as soon as the queue sees
    /// it — its work never runs, awaiting its value throws `CancellationError`, and
    /// listeners hear its end — while the units already added run as usual. For good:
    /// a queue that stopped accepting work does not start again.
    public nonisolated func stopAcceptingWork() {
        core.transition { machine, _ in machine.stopAcceptingWork() }
    }

    /// `false` once ``stopAcceptingWork()`` was called.
    public nonisolated var isAcceptingWork: Bool {
        core.read { $0.acceptsWork }
    }

    // MARK: Observing

    /// Units added and not started yet (waiting for a slot, the queue's resumption, or
    /// their predecessor in a sequential group).
    public nonisolated var enqueuedCount: Int {
        core.read { $0.enqueuedCount }
    }

    /// Units the queue has started and that have not ended (their work may not have
    /// begun running yet: see ``AsyncTask/isExecuting``).
    public nonisolated var executingCount: Int {
        core.read { $0.executingCount }
    }

    /// `true` while the queue has live units (its busy period).
    public nonisolated var isBusy: Bool {
        core.read { $0.isBusy }
    }

    /// Waits until the queue is idle: no live unit, and every idle notification of the
    /// busy period delivered — the end of its background time, the `idle` event, and the
    /// ``delegate``'s `backgroundQueueDidFinishTasks(_:)`, which runs on the main actor
    /// (so with a delegate, this returns once the main actor ran that call; without
    /// one, it never waits for the main actor). Returns at once if it already is idle.
    /// Does not block a thread. Cancellable: when the waiting task is cancelled it
    /// returns at once, whether or not the queue is idle (check ``isBusy`` or
    /// `Task.isCancelled`); the queue's work is not affected.
    public nonisolated func waitUntilIdle() async {
        await core.waitUntilIdle()
    }

    /// A new stream of the queue's events, from now on, in order.
    ///
    /// Per-unit events are produced only while at least one stream is alive, so a queue
    /// nobody observes pays nothing for them. The stream buffers without limit; it
    /// finishes when the queue has been deinitialised and is idle.
    public nonisolated var events: AsyncStream<Event> {
        core.makeEventStream()
    }

    /// How far the queue is through its current busy period, now: units done over
    /// units added, plus the progress its executing units reported (see
    /// ``QueueProgress``). Never suspends. Reading it takes the queue's lock once, then
    /// reads each executing unit's latest report: O(executing units).
    public nonisolated var progress: QueueProgress {
        core.progress()
    }

    /// A new stream of the queue's ``progress``: its current value at once, then each
    /// change — a unit added, started, retried or ended, the busy period beginning or
    /// ending — and, while units execute, their reports sampled ten times a second (a
    /// report is a plain store into the unit: it reaches watchers at the next sample).
    ///
    /// Coalesced: the stream keeps only the newest value, so a slow consumer sees the
    /// latest progress, never a backlog; consecutive equal values are sent once. Values
    /// are produced on the queue's delivering thread, in order with its other
    /// notifications (the last value of a busy period before its idle notification). A
    /// queue pays for progress only while a stream (or a ``BackgroundQueueActivity``) watches
    /// it: each change costs a read of its counts, each sample a read of its executing
    /// units. The stream finishes when the queue has been deinitialised and is idle;
    /// stopping the iteration (or cancelling its task) unregisters it.
    public nonisolated var progressUpdates: AsyncStream<QueueProgress> {
        core.makeProgressStream()
    }

    /// Receives the two 1.x notifications on the main actor: the queue went busy, the
    /// queue went idle. Held weakly. Calls are made in order, exactly once per busy
    /// period, after the transition (see ``BackgroundQueueDelegate``). A delegate set
    /// while the queue is busy hears nothing of that busy period: its first call is the
    /// next period's will-start, so it always hears the two in pairs.
    public nonisolated var delegate: (any BackgroundQueueDelegate)? {
        delegateBox.withLock { $0.delegate }
    }

    /// Sets ``delegate``.
    public nonisolated func setDelegate(_ delegate: (any BackgroundQueueDelegate)?) {
        delegateBox.withLock { $0.delegate = delegate }
    }
}

extension BackgroundQueue: QueueFront {
    nonisolated func queueWillStartWork() {
        guard let delegate = delegateBox.withLock({ $0.takeWillStart() }) else { return }
        mailbox.post { delegate.backgroundQueueWillStartTasks(self) }
    }

    nonisolated func queueDidFinishWork(then delivered: @escaping @Sendable () -> Void) {
        let notification = delegateBox.withLock { $0.takeDidFinish() }.map { delegate in
            { @MainActor @Sendable in delegate.backgroundQueueDidFinishTasks(self) }
        }
        mailbox.post(notification, then: delivered)
    }
}

/// The storage of a ``BackgroundQueue``.
typealias QueueCore = QueueStorage<AsyncTask, UnitInbox>

extension QueueStorage where Member == AsyncTask, Inbox == UnitInbox {
    /// Adds one unit: claims it (a unit belongs to one queue for its whole life), then
    /// pushes it onto the inbox, or applies the rules in one transition.
    ///
    /// While a drainer is scheduled, a unit whose add can neither be refused nor replace
    /// others (no `drop` / `replace` name) is pushed onto the inbox, and the drainer's
    /// next round admits it (see ``UnitInbox``). Otherwise the unit is admitted here,
    /// in one transition, after whatever the inbox holds: its outcome is decided before
    /// this returns.
    @discardableResult
    func add(_ unit: AsyncTask) -> Bool {
        guard unit.state.withLock({ $0.claim(by: self) }) else { return false }
        add(claimed: unit)
        return true
    }

    /// Adds a unit this queue has claimed (or created claimed: no one else has seen it).
    func add(claimed unit: AsyncTask) {
        #if Metrics || Tracing
            if measurer != nil || !observers.isEmpty { unit.observeAdding() }
        #endif
        if UnitInbox.isEnabled, inbox.isDrainerScheduled, unit.name == nil || unit.uniquenessPolicy.kind == .ignore {
            // The drainer may have stopped since: then the push says so, and this
            // transition admits the unit.
            if inbox.push(unit) { transition { _, _ in } }
            return
        }
        let admission = unit.admission
        admittingTransition { machine, actions, lingering in
            Self.admit(unit, admission, &machine, &actions, &lingering)
        }
        if unit.uniquenessPolicy.kind == .join { unit.forwardEscalationToSharedWork() }
    }

    /// A unit that was to join `primary` (``UniquenessPolicy/join``) found that work
    /// cancelled (its last awaiting caller stopped awaiting, or someone cancelled it):
    /// it is added again, as a new arrival, and joins a newer live unit of its name or
    /// runs its own work. `primary` is ended first (the caller that abandoned it may not
    /// have got to that yet). In the transition that admits the unit, `primary` stops
    /// counting for the name, and its body, if that still runs, counts as a lingering
    /// body of the name (its own end may not have told the queue yet): the unit and
    /// later units of the name wait for it.
    func add(claimed unit: AsyncTask, instead primary: AsyncTask) {
        primary.cancel()
        let body = primary.state.withLock { $0.lingeringBody }
        let admission = unit.admission
        admittingTransition { machine, actions, lingering in
            if let name = admission.name {
                machine.forgetCancelled(primary, named: name)
                if let body { lingering.add(body, named: name) }
            }
            Self.admit(unit, admission, &machine, &actions, &lingering)
        }
        unit.forwardEscalationToSharedWork()
    }

    /// Under the lock: admits one claimed unit and starts what that made startable.
    @inline(__always)
    private static func admit(
        _ unit: AsyncTask, _ admission: Machine.Admission, _ machine: inout Machine,
        _ actions: inout Machine.ActionList, _ lingering: inout LingeringBodies
    ) {
        guard mayReplace(unit), let handle = machine.enqueue(admission, actions: &actions) else { return }
        unit.attach(handle, machine: &machine, actions: &actions)
        waitForLingeringBodies(of: unit, in: &lingering)
        machine.startEnqueued(actions: &actions)
    }

    /// Under the lock, as `unit` is admitted: with a name that deduplicates, it waits for
    /// the replaced bodies of its name that still run (see ``LingeringBodies``).
    private static func waitForLingeringBodies(of unit: AsyncTask, in lingering: inout LingeringBodies) {
        guard !lingering.isEmpty, let name = unit.name, unit.uniquenessPolicy != .ignore else { return }
        let gates = lingering.running(named: name).compactMap { $0 as? ReplacementGate }
        if !gates.isEmpty { unit.waitBeforeRunning(for: gates) }
    }

    /// `false` for a unit that would replace others but has ended already (cancelled
    /// while it was being added): its add changes nothing. Under the queue's lock, so
    /// that a unit replaces others only if it had not ended when it did. (A unit that
    /// ends before its add is rejected or joins is told by settling, see
    /// ``QueueMember/settle(_:gate:)``; one with no such policy is admitted and leaves.)
    private static func mayReplace(_ unit: AsyncTask) -> Bool {
        unit.uniquenessPolicy.kind != .replace || unit.name == nil || !unit.isFinished
    }

    /// Adds units in order, each after the previous one when `sequential`. The
    /// caller's sequence is iterated here, before the lock: its code never runs under it.
    func add(_ units: some Sequence<AsyncTask>, sequential: Bool) -> Int {
        let claimed = units.filter { unit in unit.state.withLock { $0.claim(by: self) } }
        guard !claimed.isEmpty else { return 0 }
        #if Metrics || Tracing
            if measurer != nil || !observers.isEmpty { for unit in claimed { unit.observeAdding() } }
        #endif
        let admissions = claimed.map(\.admission)
        admittingTransition { machine, actions, lingering in
            let admitted = machine.add(
                contentsOf: admissions.filter { Self.mayReplace($0.member) }, sequential: sequential, actions: &actions)
            for (unit, handle) in admitted {
                unit.attach(handle, machine: &machine, actions: &actions)
                Self.waitForLingeringBodies(of: unit, in: &lingering)
            }
        }
        for unit in claimed where unit.uniquenessPolicy.kind == .join { unit.forwardEscalationToSharedWork() }
        return admissions.count
    }
}
