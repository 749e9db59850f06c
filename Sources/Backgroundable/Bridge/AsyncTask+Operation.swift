public import Foundation
import Synchronization

extension AsyncTask {
    /// Creates a unit that runs `operation` — a `BlockOperation`, a third-party
    /// subclass, an ``AsyncOperation`` — so that a ``BackgroundQueue`` can schedule it
    /// (the adapter from `Operation` to ``AsyncTask``).
    ///
    /// When the unit starts, the operation is handed to a private, unbounded
    /// `OperationQueue` (so a synchronous operation never blocks the cooperative thread
    /// pool, and dependencies and asynchronous operations work as usual). The unit ends
    /// when the operation finished: ``Outcome/finished``, or ``Outcome/cancelled`` if the
    /// operation was cancelled by someone else.
    ///
    /// Cancelling the unit — ``cancel()``, its queue's `cancelAll()`, replacement,
    /// timeout, a drop — cancels the operation. The unit ends at once, as any unit does;
    /// the operation's `main()` is its body, which may still run: as for an async body,
    /// a unit that replaced it runs after the operation finished, and a shutdown's
    /// cancellation period waits for it. If the unit ends before it started, the
    /// operation is still run to `isFinished` (without running its work), so code
    /// waiting on it is never left hanging.
    ///
    /// - Parameters:
    ///   - operation: Must not be in any queue or started yet.
    ///   - options: The unit's settings (see ``Options``). Its name is the operation's
    ///     `name` unless they name it; its timeout is ``defaultTimeout`` unless they set
    ///     one.
    public convenience init(operation: Operation, options: Options = Options()) {
        let adopted = AdoptedOperation(operation)
        var options = options
        if options.name == nil { options.name = operation.name }
        self.init(options, styleTimeout: AsyncTask.defaultTimeout, work: .operation { await adopted.run() })
        whenEnded { outcome in adopted.unitEnded(outcome) }
    }
}

extension BackgroundQueue {
    /// Adds a unit that runs `operation`; see ``AsyncTask/init(operation:options:)``.
    /// Synchronous and FIFO like ``add(_:)-(AsyncTask)``.
    ///
    /// - Returns: The unit, to await its outcome or cancel it (which cancels the operation).
    @discardableResult
    public nonisolated func add(_ operation: Operation, options: AsyncTask.Options = AsyncTask.Options()) -> AsyncTask {
        let unit = AsyncTask(operation: operation, options: options)
        add(unit)
        return unit
    }
}

// The labelled spellings of 2.0's first releases; see BackgroundQueue+Deprecated.swift.
extension AsyncTask {
    @available(
        *, deprecated,
        message:
            "Use init(operation:options:) with AsyncTask.Options(name:timeout:priority:uniquenessPolicy:onTimeout:)"
    )
    @_disfavoredOverload
    public convenience init(
        operation: Operation,
        name: String? = nil,
        timeout: Duration? = AsyncTask.defaultTimeout,
        priority: TaskPriority? = nil,
        uniquenessPolicy: UniquenessPolicy = .ignore,
        onTimeout: (@Sendable @isolated(any) (AsyncTask) -> Void)? = nil
    ) {
        self.init(
            operation: operation,
            options: Options(
                name: name, timeout: timeout, priority: priority, uniquenessPolicy: uniquenessPolicy,
                onTimeout: onTimeout))
    }
}

extension BackgroundQueue {
    @available(
        *, deprecated,
        message: "Use add(_:options:) with AsyncTask.Options(timeout:priority:uniquenessPolicy:onTimeout:)"
    )
    @_disfavoredOverload
    @discardableResult
    public nonisolated func add(
        _ operation: Operation,
        timeout: Duration? = AsyncTask.defaultTimeout,
        priority: TaskPriority? = nil,
        uniquenessPolicy: UniquenessPolicy = .ignore,
        onTimeout: (@Sendable @isolated(any) (AsyncTask) -> Void)? = nil
    ) -> AsyncTask {
        add(
            operation,
            options: AsyncTask.Options(
                timeout: timeout, priority: priority, uniquenessPolicy: uniquenessPolicy, onTimeout: onTimeout))
    }
}

/// An `Operation` run by a unit. The operation is handed to the bridge queue exactly
/// once — when the unit starts, or when the unit ended first — guarded by a `Mutex`.
private final class AdoptedOperation: Sendable {
    let operation: Operation
    private let handedOver = Lock(false)

    init(_ operation: Operation) {
        self.operation = operation
    }

    /// `true` for the one caller that may hand the operation over.
    private func claim() -> Bool {
        handedOver.withLock { handed in
            defer { handed = true }
            return !handed
        }
    }

    /// The unit's body: runs the operation and returns once it finished, so the unit's
    /// `Task` lasts as long as the operation's work (what a replacing unit and a
    /// shutdown wait for). An operation cancelled by someone else cancels the unit.
    func run() async {
        guard claim() else { return }
        let operation = operation
        await withContinuation { (finished: Continuation<Void>) in
            BridgeQueue.whenFinished(operation) { finished.resume() }
            if !operation.isFinished && !operation.isExecuting {
                BridgeQueue.shared.addOperation(operation)
            }
        }
        if operation.isCancelled { AsyncTask.current?.cancel() }
    }

    /// The unit ended: a cancellation of any kind reaches the operation. An operation the
    /// unit never ran (it ended first, or joined another unit's work) is cancelled and
    /// still brought to `isFinished`, whatever the outcome.
    func unitEnded(_ outcome: AsyncTask.Outcome) {
        if claim() {
            operation.cancel()
            if !operation.isFinished && !operation.isExecuting { BridgeQueue.shared.addOperation(operation) }
        } else if outcome.isCancellation {
            operation.cancel()
        }
    }
}
