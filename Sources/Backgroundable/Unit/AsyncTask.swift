import Synchronization

#if Tracing
    import Instrumentation
#endif

/// One unit of background work: a final class wrapping the `Task` that runs it.
///
/// A unit is written in one of two visibly different styles:
///
/// - **Callback style** (the 1.x `AsyncOperation` shape): ``init(_:_:)``.
///   The closure receives the unit and the unit is done only when something calls
///   ``finish()`` — from any thread, at any later time. The wrapping `Task` awaits a
///   continuation that ``finish()`` resumes.
/// - **Async style**: ``AsyncTaskHandle/init(_:_:)``. The unit is done when its async
///   body returns or throws; its value or error is awaited through the handle.
///
/// Either is made and added in one call by ``BackgroundQueue``'s `add(_:_:)`, or made
/// and awaited by ``BackgroundQueue/run(_:_:)``; every setting is in ``Options``.
///
/// ## Lifecycle and concurrency contract
/// created → enqueued (in exactly one queue) → executing → exactly one ``Outcome``.
/// Every state read and transition is guarded by the unit's own lock, so every member
/// is safe to use from any thread or task. The first terminal transition wins; every
/// later ``finish()``, ``cancel()`` or timeout is a no-op. Every party waiting on the
/// unit is resumed exactly once, after the queue has forgotten the unit (or, for an
/// awaiting task cancelled while others await shared work, at its cancellation).
///
/// - Cancellation before the unit starts ends it at once: the work never runs and the
///   queue frees its slot and its name.
/// - Cancellation while it executes cancels the wrapping `Task` (the body sees
///   `Task.isCancelled`, `Task.checkCancellation()` throws, child tasks are cancelled)
///   and ends the unit at once, so its queue moves on even if the body ignores it.
/// - The timeout is counted from the start of execution (default ``defaultTimeout``
///   for a callback-style unit, which could forget `finish()`; none for an async body;
///   `nil` for none). When it elapses the outcome becomes ``Outcome/timedOut``, the
///   wrapping `Task` is cancelled, and then `onTimeout` runs exactly once, in a task of
///   its own (off every actor, or on the one it is isolated to). A timeout of zero or
///   less expires as soon as the unit would start: the work never runs.
/// - ``Options/onEnd``, when set, runs exactly once per unit, whatever ended it and
///   whether or not its work started, before anything else its end does (its queue
///   forgetting it, its awaiting callers resuming).
/// - Where the work runs: like the operation of a `Task.detached`, off the caller's
///   actor, unless the closure is isolated to an actor (`{ @MainActor task in … }`),
///   where it then runs. Awaiting a cancelled unit's value throws `CancellationError`.
public final class AsyncTask: Sendable {
    /// The work of a unit, in one of its two styles. Not `Sendable`: like the operation
    /// of a `Task`, it is handed over once (`sending`), kept under the unit's lock, and
    /// taken out once by the unit's `Task`, which calls it on its own isolation.
    enum Work {
        case callback(@isolated(any) (AsyncTask) -> Void)
        case operation(@isolated(any) () async throws -> any Sendable)
        /// Run by the unit's front end (an ``AsyncOperation``'s closure): no queue runs it.
        case external
        /// The work of a unit that replaced others: it runs once their bodies returned
        /// (see ``ReplacementGate``).
        indirect case afterReplaced([ReplacementGate], Work)

        var isExternal: Bool {
            if case .external = self { true } else { false }
        }

        /// The timeout of a unit of this style when none is given: ``defaultTimeout``
        /// for a callback, which could forget ``finish()``; none for an async body, which
        /// cannot, or for work its front end times.
        var defaultTimeout: Duration? {
            if case .callback = self { AsyncTask.defaultTimeout } else { nil }
        }

        /// The work of an async body returning `Success`.
        static func body<Success: Sendable>(
            _ body: sending @escaping @isolated(any) () async throws -> Success
        ) -> Work {
            .operation { try await body() }
        }
    }

    /// The timeout a unit gets when none is given: 10 seconds, as in 1.x.
    public static let defaultTimeout: Duration = .seconds(10)

    /// The unit's name: a label for debuggers (the wrapping `Task` carries it) and the
    /// key of name-based deduplication.
    public let name: String?
    /// The priority of the wrapping `Task`; the queue starts higher priorities first.
    /// Immutable, so safe to read from any thread. A priority whose raw value is 0 (the
    /// runtime's "unspecified") reads back as `nil`, which it means to a `Task` too.
    public var priority: TaskPriority? {
        priorityRawValue == 0 ? nil : TaskPriority(rawValue: priorityRawValue)
    }
    /// How long the unit may execute before it times out; `nil` for never.
    public var timeout: Duration? {
        storedTimeout.duration
    }
    let storedTimeout: StoredTimeout

    /// The settings few units have (`onTimeout`, a start time, a lane, a retry policy,
    /// an end hook), boxed: inline they would take more than 60 bytes in every unit, and
    /// `memory.BackgroundQueue.pendingUnit` has 8 to spare.
    let extras: Extras?
    let state: Lock<UnitState>

    /// See ``extras``.
    final class Extras: Sendable {
        let onTimeout: (@Sendable @isolated(any) (AsyncTask) -> Void)?
        let notBefore: StartTime?
        let lane: LaneKey?
        let retry: RetryPolicy?
        /// See ``Options/onEnd``.
        let onEnd: (@Sendable (Outcome) -> Void)?

        /// `nil` when none is set.
        static func make(
            onTimeout: (@Sendable @isolated(any) (AsyncTask) -> Void)?, notBefore: StartTime?, lane: LaneKey?,
            retry: RetryPolicy?, onEnd: (@Sendable (Outcome) -> Void)?
        ) -> Extras? {
            guard onTimeout != nil || notBefore != nil || lane != nil || retry != nil || onEnd != nil else {
                return nil
            }
            return Extras(onTimeout: onTimeout, notBefore: notBefore, lane: lane, retry: retry, onEnd: onEnd)
        }

        private init(
            onTimeout: (@Sendable @isolated(any) (AsyncTask) -> Void)?, notBefore: StartTime?, lane: LaneKey?,
            retry: RetryPolicy?, onEnd: (@Sendable (Outcome) -> Void)?
        ) {
            self.onTimeout = onTimeout
            self.notBefore = notBefore
            self.lane = lane
            self.retry = retry
            self.onEnd = onEnd
        }
    }

    /// The earliest time the unit may start, once added; `nil` for as soon as possible.
    public var notBefore: StartTime? { extras?.notBefore }
    /// The unit's lane key (``AsyncTask/Options/lane``): units with the same lane run
    /// one at a time, in the order they were added; `nil` for none.
    public var laneKey: (any Hashable & Sendable)? { extras?.lane?.value }
    /// The unit's lane when its key is a `String`; `nil` for none or another type (see
    /// ``laneKey``).
    public var lane: String? { extras?.lane?.value as? String }
    /// The unit's own retry policy; `nil` when it takes its queue's default.
    public var retryPolicy: RetryPolicy? { extras?.retry }

    /// How many times the unit's work started: 0 until it starts (and for a unit that
    /// never ran), 1 for a unit that ran once, more for a retried one (see
    /// ``RetryPolicy``). Safe to read from any thread.
    public var attempts: Int { state.withLock { $0.attempts } }

    /// `true` between two attempts of a retried body.
    var isBetweenAttempts: Bool {
        state.withLock { if case .retrying = $0.phase { true } else { false } }
    }

    /// The error of the unit's last failed attempt: the error of a
    /// ``Outcome/failed(_:)`` outcome, or, for a retried unit stopped between or during
    /// later attempts, the last error it retried after. `nil` when no attempt failed.
    public var lastError: (any Error)? { state.withLock { $0.lastError } }

    /// What a queue does when a live unit already has this unit's name.
    public let uniquenessPolicy: UniquenessPolicy
    /// ``priority`` as its raw value, 0 for none (the runtime's "unspecified"): the
    /// `Optional` of the resilient `TaskPriority` is read through runtime calls, and the
    /// queue reads the priority of every unit it links.
    let priorityRawValue: UInt8
    /// The highest priority an awaiting caller escalated the unit to (raw, 0 for none):
    /// read when its queue admits it, so an escalation made while it waits in the
    /// queue's inbox, or before it is added (``BackgroundQueue/run(_:_:)``), is not lost.
    /// One byte of the padding before ``progressBits``.
    let escalation = Atomic<UInt8>(0)
    /// The progress the unit reported in its current attempt (see
    /// ``reportProgress(_:)``): 0 for none, else 1 + the fraction in billionths.
    /// Four bytes, declared here, where they fill the padding after the two bytes above:
    /// the instance keeps its size (a wider word or another place would add 16 bytes per
    /// unit with malloc's rounding, over `memory.BackgroundQueue.pendingUnit`'s target).
    let progressBits = Atomic<UInt32>(0)
    /// The unit pushed before this one onto its queue's ``UnitInbox`` (an unmanaged
    /// reference's bits; 0 for none). Written by the pusher before the push publishes
    /// the unit, read by the one transition that takes it out: never concurrently.
    nonisolated(unsafe) var inboxNext: UInt = 0
    #if Metrics
        /// When the unit was added — stamped by the adder before the queue publishes the
        /// unit; 0 when its queue has no metrics — and when its work started (0: never),
        /// stamped under the unit's lock as its `Task` takes the work. Its queue's metrics
        /// read both as the unit's end is performed: that end was decided under the same
        /// lock, after the start if there was one.
        nonisolated(unsafe) var metricsAddedAt: Int64 = 0
        nonisolated(unsafe) var metricsStartedAt: Int64 = 0
    #endif
    #if Tracing
        /// The instrumentation context of the code that added the unit (the `Tracing`
        /// trait): its span's parent. Written once, by the adder, before the queue
        /// publishes the unit.
        nonisolated(unsafe) var addedInContext: InstrumentationContext?
    #endif

    /// The initializer from separate settings (``AsyncOperation``'s). Takes the priority
    /// as ``priorityRawValue``: callers convert the public `TaskPriority?` once, where it
    /// arrives (every copy of that resilient optional on the way down is a runtime call).
    init(
        name: String?,
        timeout: Duration?,
        priorityRawValue: UInt8,
        uniquenessPolicy: UniquenessPolicy,
        extras: Extras?,
        work: consuming sending Work,
        claimedBy queue: QueueCore? = nil
    ) {
        self.name = name
        self.storedTimeout = StoredTimeout(timeout)
        self.priorityRawValue = priorityRawValue
        self.uniquenessPolicy = uniquenessPolicy
        self.extras = extras
        self.state = Lock(UnitState(work: work, claimedBy: queue))
    }

    /// A unit released before it ended was never added to a queue (nor started by a front
    /// end): its end hook runs now, with the outcome of work that never ran (see
    /// ``Options/onEnd``). Nothing else can end it any more.
    deinit {
        if let onEnd = extras?.onEnd, !state.withLock({ $0.hasEnded }) { onEnd(.cancelled) }
    }

    /// A unit with `options`; its timeout is its style's default unless they set one.
    convenience init(_ options: Options, work: consuming sending Work, claimedBy queue: QueueCore? = nil) {
        let styleTimeout = work.defaultTimeout
        self.init(options, styleTimeout: styleTimeout, work: work, claimedBy: queue)
    }

    /// A unit with `options`, whose style's timeout is `styleTimeout`.
    init(
        _ options: borrowing Options, styleTimeout: Duration?, work: consuming sending Work,
        claimedBy queue: QueueCore? = nil
    ) {
        self.name = options.name
        self.storedTimeout = StoredTimeout(options.usesStyleTimeout ? styleTimeout : options.timeout)
        self.priorityRawValue = options.priorityRawValue
        self.uniquenessPolicy = options.uniquenessPolicy
        self.extras = options.extras
        self.state = Lock(UnitState(work: work, claimedBy: queue))
    }

    /// Creates a callback-style unit, the 1.x `AsyncOperation` shape: `work` receives
    /// the unit and the unit is done only when ``finish()`` is called. (A unit whose
    /// work is an async body is made by ``AsyncTaskHandle/init(_:_:)``.)
    ///
    /// - Parameters:
    ///   - options: The unit's settings (see ``Options``); its timeout is
    ///     ``defaultTimeout`` unless they set one, since a callback could forget
    ///     ``finish()``.
    ///   - work: Runs once, inside the wrapping `Task`, when the unit starts. Like the
    ///     operation of a `Task.detached`, it runs off the caller's actor — this is a
    ///     background queue — unless it is isolated to an actor (`{ @MainActor task in … }`),
    ///     where it then runs. It is `sending`: it may capture non-`Sendable` state the
    ///     caller no longer uses.
    public convenience init(_ options: Options, _ work: sending @escaping @isolated(any) (AsyncTask) -> Void) {
        self.init(options, styleTimeout: AsyncTask.defaultTimeout, work: .callback(work))
    }

    /// Creates a callback-style unit with every setting at its default (a timeout of
    /// ``defaultTimeout``); see ``init(_:_:)``.
    public convenience init(_ work: sending @escaping @isolated(any) (AsyncTask) -> Void) {
        self.init(Options(), work)
    }

    /// Whole nanoseconds, clamped to what `Int64` holds (about 292 years). The default
    /// timeout, which most units have, is converted once (`components` divides 128-bit
    /// integers).
    static func nanoseconds(_ duration: Duration) -> Int64 {
        duration == defaultTimeout ? defaultTimeoutNanoseconds : convert(duration)
    }

    private static let defaultTimeoutNanoseconds = convert(defaultTimeout)

    private static func convert(_ duration: Duration) -> Int64 {
        // `components` traps when the seconds do not fit an `Int64`: clamp first.
        if duration >= .nanoseconds(Int64.max) { return .max }
        if duration <= .nanoseconds(Int64.min + 1) { return .min + 1 }
        let (seconds, attoseconds) = duration.components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !overflow else { return seconds < 0 ? .min + 1 : .max }
        let (total, overflowAgain) = scaled.addingReportingOverflow(attoseconds / 1_000_000_000)
        guard !overflowAgain else { return seconds < 0 ? .min + 1 : .max }
        return total == .min ? .min + 1 : total
    }

    // MARK: Ending

    /// Marks a callback-style unit done (outcome ``Outcome/finished``).
    ///
    /// Idempotent and thread-safe: only the first terminal transition counts. Called
    /// before the unit starts, it cancels the unit (as in 1.x). After the unit ended
    /// (a late call from a cancelled or timed-out body) it does nothing.
    public func finish() {
        finishReportingOutcome()
    }

    /// ``finish()``, returning the outcome when this call ended the unit (`nil` when it
    /// had already ended).
    @discardableResult
    func finishReportingOutcome() -> Outcome? {
        let ending = state.withLock { $0.finish() }
        ending?.perform(for: self)
        return ending?.outcome
    }

    /// Cancels the unit: before it starts, its work never runs; while it executes, the
    /// wrapping `Task` is cancelled and the unit ends at once with
    /// ``Outcome/cancelled``. After it ended, does nothing.
    public func cancel() {
        end(.cancelled)
    }

    /// The one way every outcome except queue-side ones is reached. Returns the outcome
    /// when this call ended the unit, `nil` when it had already ended (or `outcome` does
    /// not apply to its phase).
    @discardableResult
    func end(_ outcome: Outcome, value: Boxed<any Sendable>? = nil) -> Outcome? {
        let ending = state.withLock { $0.end(outcome, value: value) }
        ending?.perform(for: self)
        return ending?.outcome
    }

    // MARK: Reading the state

    /// `true` while the unit's work is running.
    public var isExecuting: Bool { state.withLock { $0.isExecuting } }

    /// `true` once the unit has reached its outcome, whatever it is.
    public var isFinished: Bool { state.withLock { $0.hasEnded } }

    /// `true` once the unit was stopped before its work completed: cancelled,
    /// replaced, dropped or timed out (see ``Outcome/isCancellation``).
    public var isCancelled: Bool { currentOutcome?.isCancellation ?? false }

    /// The outcome if the unit has ended, `nil` before. Never suspends.
    public var currentOutcome: Outcome? { state.withLock { $0.outcome } }

    /// Waits for the unit's outcome.
    ///
    /// Suspends until the unit ends; returns at once if it already has. When it returns,
    /// the unit's end hook (``Options/onEnd``) has returned and the ``BackgroundQueue``
    /// it was added to no longer holds it, even for a caller that comes while the end is
    /// still being performed on another thread (it waits for that, without blocking).
    ///
    /// Cancelling the awaiting task cancels the unit (which then ends with
    /// ``Outcome/cancelled`` unless it had already ended) — except when other tasks await
    /// the work it shares (``UniquenessPolicy/join``): then this await alone returns
    /// ``Outcome/cancelled``, and the work is cancelled with its last awaiting caller.
    ///
    /// Awaiting a unit from inside its own async body could never return — the unit
    /// ends only when the body does — so it is recognised: the unit is cancelled and
    /// the await returns ``Outcome/cancelled`` at once. So is awaiting, from a body, a
    /// unit that joined the work of that very body (``UniquenessPolicy/join`` on its own
    /// name, as a recursive refresh may do): that work is cancelled, and both units end
    /// ``Outcome/cancelled``. (Tasks the body creates are other tasks; they wait
    /// normally.)
    public var outcome: Outcome {
        get async { await outcome(awaitingBefore: {}) }
    }

    /// ``outcome``, with `action` run right after the awaiting task registered (before it
    /// suspends): ``BackgroundQueue/run(_:_:)`` adds its unit there.
    func outcome(awaitingBefore action: () -> Void) async -> Outcome {
        // Its own body: cancelled, unless another thread ended it first; then the await
        // below waits for that end to be performed (it returns at once once it was).
        if isAwaitedByItsOwnBody, let outcome = end(.cancelled) { return outcome }
        let taskID = Self.currentTaskID()
        return await withTaskCancellationHandler {
            // Resumed exactly once: either right here, when the unit has already ended,
            // or by whichever of the single `Ending` and the awaiter's cancellation takes
            // it out of `waiters`.
            await withContinuation { continuation in
                if let outcome = state.withLock({ $0.wait(.continuation(continuation, taskID: taskID)) }) {
                    continuation.resume(returning: outcome)
                } else if Task.isCancelled {
                    // Cancelled before it was registered: the handler found nothing. The
                    // unit ends cancelled, and `action` (an add) is not made: an ended
                    // unit changes nothing in a queue.
                    awaiterCancelled(taskID)
                } else {
                    let awaiting = Task.currentPriority
                    let escalates = Self.rank(awaiting.rawValue) > Self.rank(priorityRawValue)
                    // Noted before `action` adds the unit, so that its queue admits it at
                    // the awaiting priority; applied after, to whatever it then is.
                    if escalates { noteEscalation(awaiting.rawValue) }
                    action()
                    // The body of the unit running the work this one joined awaits it: that
                    // could never return either (see above), so the work is cancelled, as a
                    // unit awaited by its own body is, and this unit ends with it.
                    if uniquenessPolicy.kind == .join, let primary = state.withLock({ $0.sharedWork?.primary }),
                        primary !== self, primary.isAwaitedByItsOwnBody
                    {
                        primary.end(.cancelled)
                    }
                    if escalates {
                        escalate(to: awaiting)
                    } else if uniquenessPolicy.kind == .join {
                        escalateSharedWork(to: awaiting)
                    }
                }
            }
        } onCancel: {
            self.awaiterCancelled(taskID)
        }
    }

    /// The task `taskID` awaiting the outcome was cancelled: the unit is cancelled, unless
    /// other callers await the work it shares (``UniquenessPolicy/join``): then only this
    /// awaiter stops waiting, with ``Outcome/cancelled``, and the work is cancelled when
    /// it was the last one.
    private func awaiterCancelled(_ taskID: Int) {
        switch state.withLock({ $0.awaiterCancelled(taskID) }) {
        case .cancelUnit:
            cancel()
        case .stopWaiting(let continuation, let cancelsSharedWork):
            continuation.resume(returning: .cancelled)
            if cancelsSharedWork { cancel() }
        case .nothing:
            break
        }
    }

    /// A task of `priority` waits for the unit: its `Task` runs at least at `priority`
    /// (`Task.escalatePriority`), and while it waits in its queue it ranks at `priority`
    /// in the start order (listeners hear `escalated`). A unit that joined shared work
    /// escalates that work. Never lowers a priority.
    func escalate(to priority: TaskPriority) {
        noteEscalation(priority.rawValue)
        let (task, queue, handle, shared) = state.withLock { state in
            let admitted = state.owner.flatMap { $0.isAdmitted ? $0 : nil }
            return (state.runningTask, admitted?.queue, admitted?.handle, state.sharedWork)
        }
        if let task { Self.escalate(task, to: priority) }
        if let queue, let handle {
            queue.transition { machine, actions in
                machine.memberEscalated(handle, to: priority.rawValue, actions: &actions)
            }
        }
        if let primary = shared?.primary, primary !== self { primary.escalate(to: priority) }
    }

    /// A unit that joined shared work, awaited at `priority`: the work is escalated if it
    /// ranks lower, whatever this unit's own priority.
    private func escalateSharedWork(to priority: TaskPriority) {
        guard let primary = state.withLock({ $0.sharedWork?.primary }), primary !== self,
            Self.rank(priority.rawValue) > Self.rank(primary.priorityRawValue)
        else { return }
        primary.escalate(to: priority)
    }

    /// Raises ``escalation`` to `priority` if it ranks higher.
    private func noteEscalation(_ priority: UInt8) {
        var current = escalation.load(ordering: .relaxed)
        while current == 0 || Self.rank(priority) > Self.rank(current) {
            let (exchanged, original) = escalation.compareExchange(
                expected: current, desired: priority, ordering: .relaxed)
            if exchanged { return }
            current = original
        }
    }

    /// `Task.escalatePriority` where the platform has it (SE-0462; Linux, and Apple
    /// platforms from their 26 releases); before that, a unit's `Task` keeps its priority.
    static func escalate(_ task: Task<Void, Never>, to priority: TaskPriority) {
        if #available(macOS 26.0, iOS 26.0, watchOS 26.0, tvOS 26.0, visionOS 26.0, *) {
            task.escalatePriority(to: priority)
        }
    }

    /// The key a priority is ranked by: none ranks as `medium`, like a `Task`'s.
    static func rank(_ priority: UInt8) -> UInt8 {
        priority == 0 ? TaskPriority.medium.rawValue : priority
    }

    private var isAwaitedByItsOwnBody: Bool {
        let current = Self.currentTaskID()
        return current != 0 && state.withLock { $0.isRunningBody(in: current) }
    }

    /// The current task's hash with the low bit set; 0 outside any task.
    static func currentTaskID() -> Int {
        withUnsafeCurrentTask { $0.map { $0.hashValue | 1 } } ?? 0
    }

    /// Calls `callback` exactly once with the outcome: now if the unit has ended,
    /// otherwise on the thread that ends it. For bridges that cannot await. A waiter:
    /// unlike the end hook (``Options/onEnd``), it runs after the queue forgot the unit.
    func whenEnded(_ callback: @escaping @Sendable (Outcome) -> Void) {
        if let outcome = state.withLock({ $0.wait(.callback(callback)) }) {
            callback(outcome)
        }
    }

    /// Holds `observer` until the unit ends and tells it then, on the thread that ends
    /// it; or, when the unit has already ended, registers nothing and returns the outcome.
    func observe(_ observer: any UnitObserver) -> Outcome? {
        state.withLock { $0.wait(.observer(observer)) }
    }

    /// The value an async-style body returned, once the outcome is ``Outcome/finished``;
    /// `nil` when `finish()` ended the unit before its body returned.
    var returnedValue: Boxed<any Sendable>? {
        state.withLock {
            if case .ended(_, let value, _, _) = $0.phase { value } else { nil }
        }
    }
}
