public import Foundation
import Synchronization

#if ServiceLifecycle
    public import ServiceLifecycle

    /// With the `ServiceLifecycle` trait, a durable queue is a `Service`: ``DurableQueue/run()``
    /// claims jobs until the group shuts down gracefully, then lets the jobs it holds end.
    /// List it after the `BackgroundQueueService` of its queue: a group shuts its services
    /// down in reverse order, so the jobs end before the queue drains.
    extension DurableQueue: Service {}
#endif

/// Jobs that outlive the process: each is stored before ``add(_:_:options:)`` returns,
/// runs as a unit on a ``BackgroundQueue``, and leaves its store only when its outcome
/// is final — in the next launch of the app, or on another server replica, if this
/// process dies first.
///
/// ```swift
/// let store = try await FileJobStore(directory: folder)
/// let jobs = DurableQueue(store: store, queue: BackgroundQueue(name: "uploads", maxConcurrentTasks: 2))
/// jobs.register(.upload) { upload, job in
///     try await api.upload(upload.path, idempotencyKey: job.id.description)
/// }
/// try await jobs.add(.upload, Upload(photoID: photo.id, path: path), options: .init(name: "upload-\(photo.id)"))
///
/// // Somewhere long-lived (a task started at launch, or a server's service):
/// await jobs.run()
/// ```
///
/// ## Delivery
/// At least once. A job's handler runs until the job finishes, or fails with no
/// attempts left; a process that dies mid-run leaves the job to run again once its
/// store's lease runs out (for ``FileJobStore``, when the next process opens the
/// directory). Handlers get a stable ``DurableJobContext/id`` and the
/// ``DurableJobContext/attempt`` number to make their effects idempotent.
///
/// ## How a job ends
/// - The handler returns: the job is over and leaves the store.
/// - The handler throws, or its attempt times out: the job is given back to the store,
///   due after its backoff, while it has attempts left and its kind's `retryingIf` (if
///   any) accepts the error; otherwise it is over and leaves the store.
/// - Its unit is cancelled — ``BackgroundQueue/cancelAll()``, the app's background time
///   running out, ``run()``'s task cancelled: the job is not over. It goes back to the
///   store, due at once, and the interrupted attempt is not counted.
/// - ``cancel(_:)``, or a later add of its name with ``UniquenessPolicy/replace``: it
///   leaves the store, and its unit, if it runs here, is cancelled.
///
/// ## Events and metrics
/// Jobs run as ordinary units on ``queue``, named after the job (and serial in its lane),
/// so its ``BackgroundQueue/events``, progress, metrics and traces show them like any
/// other unit; a handler reports progress through ``AsyncTask/current``.
public final class DurableQueue: Sendable {
    /// The queue the jobs run on.
    public let queue: BackgroundQueue
    /// Where the jobs are kept.
    public let store: any DurableJobStore

    private struct Handler: Sendable {
        var run: @Sendable (DurableJobRecord, DurableJobContext) async throws -> Void
        var shouldRetry: (@Sendable (any Error) -> Bool)?
    }

    /// A job this queue holds: claimed, and not yet given back or ended in the store.
    private struct Held {
        /// The unit running the job here, until its outcome is known.
        var unit: AsyncTask?
        /// A claim of the job that came after its unit ended, before the store had the
        /// outcome: it runs once the store has it, unless the job has ended there.
        var reclaim: DurableJobRecord?
        /// ``cancel(_:)`` or a replace removed the job from the store.
        var isRemoved = false
    }

    private struct State {
        var handlers: [String: Handler] = [:]
        var kinds: Set<String> = []
        var held: [DurableJobID: Held] = [:]
        /// A graceful shutdown began (`ServiceLifecycle` trait): claim nothing more.
        var isDraining = false
        /// A background launch is ending early (``DurableLaunches``): claim nothing, and
        /// give back what a claim on its way hands out, until ``resumeClaims()``.
        var claimsPaused = false
        /// Claims on their way from the store, and the jobs removed meanwhile that this
        /// queue did not hold: such a claim may hand one out, and it must not start.
        /// Emptied whenever no claim is on its way, so it stays as small as they are few.
        var claimsInFlight = 0
        var removedDuringClaims: Set<DurableJobID> = []

        mutating func claimEnded() {
            claimsInFlight -= 1
            if claimsInFlight == 0 { removedDuringClaims = [] }
        }
    }

    private let state = Lock(State())
    private let doorbell = Doorbell()
    private let maxRunningJobs: Int
    private let lease: Duration
    private let pollInterval: Duration
    private let onStoreError: (@Sendable (any Error) -> Void)?

    /// A durable queue over `store`, running its jobs on `queue`.
    ///
    /// - Parameters:
    ///   - store: Where the jobs are kept.
    ///   - queue: The queue the jobs run on, as units; its settings (concurrency, background
    ///     time, metrics) apply to them.
    ///   - maxRunningJobs: how many jobs this process holds at once (running, or waiting
    ///     in `queue` for a slot); at least 1.
    ///   - lease: how long a claim holds a job before another claimer may take it, renewed
    ///     every third of it while the job runs; it bounds how long a job that a dead
    ///     process held waits in a shared store.
    ///   - pollInterval: how often ``run()`` asks the store for work it was not told of —
    ///     jobs other processes added. Jobs added through this queue start at once.
    ///   - onStoreError: called with each error of the store while running jobs (a
    ///     dropped connection, a full disk); the queue tries again at the next poll. Runs
    ///     on the queue's loop task, outside every lock.
    public init(
        store: some DurableJobStore,
        queue: BackgroundQueue,
        maxRunningJobs: Int = 16,
        lease: Duration = .seconds(60),
        pollInterval: Duration = .seconds(5),
        onStoreError: (@Sendable (any Error) -> Void)? = nil
    ) {
        self.store = store
        self.queue = queue
        self.maxRunningJobs = max(1, maxRunningJobs)
        self.lease = lease
        self.pollInterval = pollInterval
        self.onStoreError = onStoreError
    }

    /// Runs `handler` for every job of `kind` this queue claims, on ``queue``.
    ///
    /// Register every kind before ``run()``: only registered kinds are claimed, and a
    /// store keeps jobs of other kinds (a newer app version's, say) untouched for a queue
    /// that knows them. Registering a kind again replaces its handler.
    ///
    /// - Parameters:
    ///   - kind: The kind the handler runs.
    ///   - shouldRetry: which errors are worth another attempt (when the job has attempts
    ///     left); `nil` retries every error. An attempt that timed out is offered as
    ///     ``AsyncTaskError/timedOut``. A payload that no longer decodes is never retried.
    ///   - handler: the job's work, given its decoded payload and its context. It runs as
    ///     the async body of a unit: off the caller's actor unless it names one, cancelled
    ///     when the unit is.
    public func register<Payload>(
        _ kind: DurableJobKind<Payload>,
        retryingIf shouldRetry: (@Sendable (any Error) -> Bool)? = nil,
        handler: @escaping @Sendable (Payload, DurableJobContext) async throws -> Void
    ) {
        let run: @Sendable (DurableJobRecord, DurableJobContext) async throws -> Void = { job, context in
            let payload: Payload
            do {
                payload = try JSONDecoder().decode(Payload.self, from: job.payload)
            } catch {
                throw DurableStoreError(
                    .undecodablePayload, "job \(job.id) of kind \(job.kind): the payload does not decode: \(error)")
            }
            try await handler(payload, context)
        }
        state.withLock { state in
            state.handlers[kind.name] = Handler(run: run, shouldRetry: shouldRetry)
            state.kinds.insert(kind.name)
        }
        doorbell.ring()
    }

    /// Stores a job of `kind`; returns once the store has it.
    ///
    /// A process that only adds jobs needs no handler for their kind. A job added here
    /// starts at once if ``run()`` is running in this process (and its `notBefore` has
    /// come); other processes sharing the store find it at their next poll.
    ///
    /// - Throws: ``DurableStoreError`` when the payload does not encode
    ///   (``DurableStoreError/Code/encoding``) or the store cannot keep the job; nothing is
    ///   stored then.
    @discardableResult
    public func add<Payload>(
        _ kind: DurableJobKind<Payload>, _ payload: Payload, options: DurableJobOptions = .init()
    ) async throws -> DurableJobReceipt {
        let data: Data
        do {
            data = try JSONEncoder().encode(payload)
        } catch {
            throw DurableStoreError(.encoding, "a payload of kind \(kind.name) does not encode: \(error)")
        }
        let now = Date()
        let job = DurableJobRecord(
            id: DurableJobID(), kind: kind.name, payload: data, name: options.name, lane: options.lane,
            priority: options.priority?.rawValue ?? 0, timeout: options.timeout,
            maxAttempts: options.retry.maxAttempts, backoff: options.retry.backoff,
            runAt: options.notBefore ?? now, enqueuedAt: now, traceContext: DurableTraceContext.capture())
        let receipt = try await store.enqueue(job, replacing: options.uniquenessPolicy == .replace)
        if let replaced = receipt.replaced { cancelRunning(replaced) }
        if !receipt.wasDropped { doorbell.ring() }
        return receipt
    }

    /// Removes a job from the store and cancels it if it runs in this process; returns
    /// whether the store had it. A job running in another process runs on until it ends
    /// there (its end then finds nothing to remove).
    @discardableResult
    public func cancel(_ id: DurableJobID) async throws -> Bool {
        let removed = try await store.remove(id)
        cancelRunning(id)
        return removed
    }

    /// Claims jobs from the store and runs them, until the calling task is cancelled or
    /// the queue shuts down.
    ///
    /// Jobs start as they fall due: at once when added through this queue, at their
    /// `notBefore` or retry time, or at the next poll when another process added them.
    ///
    /// - When the calling task is cancelled, the jobs this call holds are cancelled and
    ///   given back to the store (their attempt not counted), and the call returns once
    ///   the store has them back.
    /// - When ``queue`` stops accepting work (``BackgroundQueue/stopAcceptingWork()``, a
    ///   ``GracefulShutdown``, a `BackgroundQueueService` draining) — or, with the
    ///   `ServiceLifecycle` trait, when the `ServiceGroup` running this queue as a
    ///   `Service` shuts down gracefully — it claims nothing more, and returns once the
    ///   jobs it holds have ended: the rest wait in the store for the next process.
    public func run() async {
        #if ServiceLifecycle
            await withGracefulShutdownHandler {
                await loop(untilIdle: false)
            } onGracefulShutdown: {
                self.state.withLock { $0.isDraining = true }
                self.doorbell.ring()
            }
        #else
            await loop(untilIdle: false)
        #endif
    }

    /// Claims and runs jobs until none is due and none runs, then returns — for an iOS
    /// background task's handler, a command-line tool, or a test. Jobs due later stay in
    /// the store. Cancellation works as for ``run()``.
    public func runUntilIdle() async {
        await loop(untilIdle: true)
    }

    /// When the next job of a registered kind that nobody holds falls due: now, if one
    /// is due; `nil` if the store has none. Suspends while the store is read.
    public func nextDueDate() async throws -> Date? {
        let kinds = state.withLock { $0.kinds }
        return kinds.isEmpty ? nil : try await store.nextDueDate(kinds: kinds)
    }

    /// Whether a graceful shutdown stopped the claims (tests wait for it).
    var isDraining: Bool { state.withLock { $0.isDraining } }

    /// How many jobs this queue holds now (for tests).
    var heldCount: Int { state.withLock { $0.held.count } }

    // MARK: - The end of a background launch

    /// The system is ending a background launch early: every loop (``run()`` and
    /// ``runUntilIdle()`` alike) claims nothing more until ``resumeClaims()``, and a
    /// claim on its way gives back what it hands out. Synchronous: call it from the
    /// expiration handler, before anything is given back, so no loop claims it again.
    func pauseClaims() {
        state.withLock { $0.claimsPaused = true }
    }

    /// After ``pauseClaims()``: cancels the jobs this queue holds, whichever loop claimed
    /// them, and returns once the store has every one back (their attempt not counted)
    /// and no claim is on its way.
    func giveBackHeldJobs() async {
        let units = state.withLock { $0.held.values.compactMap(\.unit) }
        for unit in units { unit.cancel() }
        // Each held job's end (and each given-back claim) rings the doorbell.
        while state.withLock({ !$0.held.isEmpty || $0.claimsInFlight > 0 }) {
            await doorbell.wait(upTo: .milliseconds(100))
        }
    }

    /// Ends ``pauseClaims()``: the loops claim again.
    func resumeClaims() {
        state.withLock { $0.claimsPaused = false }
        doorbell.ring()
    }

    // MARK: - The loop

    private func loop(untilIdle: Bool) async {
        await withDiscardingTaskGroup { group in
            group.addTask { await self.renewLeases() }
            while !Task.isCancelled {
                let (kinds, running, isDraining, isPaused) = state.withLock {
                    ($0.kinds, $0.held.count, $0.isDraining, $0.claimsPaused)
                }
                if isPaused {
                    if untilIdle, running == 0 { break }
                    await doorbell.wait(upTo: pollInterval)
                    continue
                }
                if isDraining || !queue.isAcceptingWork {
                    // Shutting down: let the jobs held end, claim no more.
                    if running == 0 { break }
                    await doorbell.wait(upTo: pollInterval)
                    continue
                }
                let free = maxRunningJobs - running
                var claimed: [DurableJobRecord] = []
                var nextDue: Date?
                do {
                    if free > 0, !kinds.isEmpty {
                        claimed = try await claimAndStart(kinds: kinds, limit: free, in: &group)
                    }
                    if free > 0, claimed.count == free { continue }  // more may be due
                    nextDue = kinds.isEmpty ? nil : try await store.nextDueDate(kinds: kinds)
                } catch {
                    if Task.isCancelled { break }  // run() was cancelled, not the store
                    onStoreError?(error)
                }
                let isRunning = state.withLock { !$0.held.isEmpty }
                if untilIdle, !isRunning, claimed.isEmpty, nextDue.map({ $0 > Date() }) ?? true { break }
                var wait = pollInterval
                if let nextDue, free > claimed.count {
                    wait = min(wait, .seconds(max(0, nextDue.timeIntervalSinceNow)))
                }
                await doorbell.wait(upTo: wait)
            }
            group.cancelAll()
        }
    }

    /// Claims up to `limit` jobs and starts them. A job removed (``cancel(_:)``, a
    /// replace) while the claim was on its way found nothing to cancel here: the claim
    /// may still hand it out, and it is not started.
    private func claimAndStart(
        kinds: Set<String>, limit: Int, in group: inout DiscardingTaskGroup
    ) async throws -> [DurableJobRecord] {
        state.withLock { $0.claimsInFlight += 1 }
        defer { state.withLock { $0.claimEnded() } }
        let claimed = try await store.claim(kinds: kinds, limit: limit, lease: lease)
        for job in claimed { start(job, in: &group) }
        return claimed
    }

    private func start(_ job: DurableJobRecord, in group: inout DiscardingTaskGroup) {
        enum Decision {
            case run(Handler)
            case skip
            case giveBack
            /// Claims are paused (``pauseClaims()``): held until the store has it back.
            case giveBackHeld
        }
        let decision: Decision = state.withLock { state in
            // Removed from the store while its claim was on its way (it is gone there).
            if state.removedDuringClaims.remove(job.id) != nil { return .skip }
            if let held = state.held[job.id] {
                // Claimed again while this queue holds it: its lease ran out while its unit
                // ran (the renewals failed), and the run here goes on under the new lease;
                // or a retry fell due before the unit's end was told, and it runs next.
                if held.unit == nil { state.held[job.id]?.reclaim = job }
                return .skip
            }
            if state.claimsPaused {
                state.held[job.id] = Held()
                return .giveBackHeld
            }
            // Claimed by kind, so registered (kinds are never unregistered); else give it back.
            guard let handler = state.handlers[job.kind] else { return .giveBack }
            state.held[job.id] = Held()
            return .run(handler)
        }
        switch decision {
        case .skip:
            break
        case .giveBack:
            group.addTask { try? await self.store.release(job.id) }
        case .giveBackHeld:
            group.addTask {
                try? await self.store.release(job.id)
                self.state.withLock { $0.held[job.id] = nil }
                self.doorbell.ring()
            }
        case .run(let handler):
            let unit = runUnit(job, handler)
            group.addTask { await self.hold(job, unit, handler) }
        }
    }

    /// Adds `job`'s unit to the queue, and cancels it if the job was removed meanwhile.
    private func runUnit(_ job: DurableJobRecord, _ handler: Handler) -> AsyncTaskHandle<Void> {
        let context = DurableJobContext(
            id: job.id, kind: job.kind, name: job.name, attempt: job.attempt, maxAttempts: job.maxAttempts,
            enqueuedAt: job.enqueuedAt)
        let options = AsyncTask.Options(
            name: job.name, timeout: job.timeout,
            priority: job.priority == 0 ? nil : TaskPriority(rawValue: job.priority),
            // The store keeps names unique; on the queue, a job claimed while another of
            // its name still runs here takes its place, and the bodies of one name never
            // overlap (a job a replace removed is cancelled: its body may still run).
            uniquenessPolicy: job.name == nil ? .ignore : .replace, lane: job.lane,
            // One attempt per claim, whatever the queue's default: the store counts them.
            retry: .never)
        let unit = DurableTraceContext.restore(job.traceContext) {
            queue.add(options) { try await handler.run(job, context) }
        }
        let isRemoved = state.withLock { state in
            state.held[job.id]?.unit = unit.task
            return state.held[job.id]?.isRemoved ?? false
        }
        if isRemoved { unit.task.cancel() }
        return unit
    }

    /// Waits for `unit`'s outcome and tells the store; runs the job again if a claim
    /// handed it out anew meanwhile. Cancelling this task (``run()`` cancelled) cancels
    /// the unit; the store hears of the outcome in a task of its own, which that
    /// cancellation does not reach.
    private func hold(_ job: DurableJobRecord, _ unit: AsyncTaskHandle<Void>, _ handler: Handler) async {
        var (job, unit) = (job, unit)
        while true {
            let outcome = await unit.outcome
            state.withLock { $0.held[job.id]?.unit = nil }
            let hasEnded = await Task { [job] in await self.settle(job, outcome, handler) }.value
            let reclaim: DurableJobRecord? = state.withLock { state in
                // While claims are paused, the job went back to the store: it is not run again.
                guard !hasEnded, !state.claimsPaused, let reclaim = state.held[job.id]?.reclaim else {
                    state.held[job.id] = nil
                    return nil
                }
                state.held[job.id]?.reclaim = nil
                return reclaim
            }
            guard let reclaim else { break }
            (job, unit) = (reclaim, runUnit(reclaim, handler))
        }
        doorbell.ring()
    }

    /// Tells the store how `job`'s attempt ended; returns whether the job has left the
    /// store. A store that fails is asked again, a few times; after that the job stays
    /// claimed, and runs again once its lease runs out (at least once).
    private func settle(_ job: DurableJobRecord, _ outcome: AsyncTask.Outcome, _ handler: Handler) async -> Bool {
        let store = self.store
        let step: @Sendable () async throws -> Void
        var hasEnded = false
        switch outcome {
        case .finished:
            step = { try await store.complete(job.id) }
            hasEnded = true
        case .failed, .timedOut:
            let error: any Error = outcome.error ?? AsyncTaskError.timedOut
            let message = outcome.kind == .timedOut ? "timed out after \(job.timeout ?? .zero)" : "\(error)"
            let isRetryable =
                job.attempt < job.maxAttempts
                && (error as? DurableStoreError)?.code != .undecodablePayload
                && (handler.shouldRetry?(error) ?? true)
            if isRetryable {
                let delay = RetryPolicy(maxAttempts: job.maxAttempts, backoff: job.backoff)
                    .delay(beforeAttempt: job.attempt + 1)
                let due = Date().addingTimeInterval(delay / .seconds(1))
                step = { try await store.retry(job.id, at: due, error: message) }
            } else {
                step = { try await store.complete(job.id) }
                hasEnded = true
            }
        case .cancelled, .replaced, .dropped:
            // Not over: back to the store (a no-op for a job cancel(_:) or a replace removed).
            step = { try await store.release(job.id) }
        }
        for attempt in 1...5 {
            do {
                try await step()
                return hasEnded
            } catch {
                onStoreError?(error)
                if attempt < 5 { try? await Task.sleep(for: .milliseconds(100 << attempt)) }
            }
        }
        return false
    }

    private func renewLeases() async {
        let every = lease / 3
        while (try? await Task.sleep(for: every)) != nil {
            let ids = state.withLock { Array($0.held.keys) }
            guard !ids.isEmpty else { continue }
            do {
                try await store.renew(ids, lease: lease)
            } catch {
                onStoreError?(error)
            }
        }
    }

    private func cancelRunning(_ id: DurableJobID) {
        let unit = state.withLock { state -> AsyncTask? in
            guard state.held[id] != nil else {
                if state.claimsInFlight > 0 { state.removedDuringClaims.insert(id) }
                return nil
            }
            state.held[id]?.isRemoved = true
            state.held[id]?.reclaim = nil
            return state.held[id]?.unit
        }
        unit?.cancel()
    }
}
