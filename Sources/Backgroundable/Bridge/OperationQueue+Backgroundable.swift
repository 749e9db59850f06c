public import Foundation

extension OperationQueue {
    /// Adds `operations` so that each one starts only after the previous one finished
    /// (1.x `addSequentialOperations`). Works with any `Operation` and any queue.
    ///
    /// A member that finishes early because it was cancelled, dropped by a
    /// ``BackgroundOperationQueue`` or timed out never hangs the rest, and never lets a
    /// later member run before the earlier ones finished: the order is kept through
    /// small internal gate operations (each member depends on the gate behind the
    /// previous member, visible in its `dependencies`), run on a private queue.
    /// `cancelAllOperations()` cancels the rest of the sequence: cancelled members
    /// finish without running. (It cancels a queue's operations one at a time, in the
    /// order the queue received them, so the queue receives the members last first:
    /// every later member is cancelled before the running one, whose end could otherwise
    /// let the next one start in between. That order shows in the queue's `operations`;
    /// a ``BackgroundOperationQueue`` still applies the members' uniqueness policies
    /// first to last.)
    ///
    /// - Parameters:
    ///   - operations: The members, in order. They must not be in a queue yet.
    ///   - waitUntilFinished: Blocks the calling thread until every member finished.
    ///     Never do that on the cooperative thread pool; from async code use
    ///     ``addSequentialOperations(_:)``.
    @available(*, noasync, message: "Blocks a thread; from async code use 'await addSequentialOperations(_:)'")
    public func addSequentialOperations(_ operations: [Operation], waitUntilFinished: Bool = false) {
        _ = Self.chain(operations)
        addMembers(operations, waitUntilFinished: waitUntilFinished)
    }

    /// Adds `operations` one after the other, like
    /// ``addSequentialOperations(_:waitUntilFinished:)``, and suspends until every member
    /// finished, without blocking a thread.
    ///
    /// Cancelling the calling task cancels every member (those not started never run);
    /// the call still returns only once they all finished, which then happens at once.
    public func addSequentialOperations(_ operations: [Operation]) async {
        let last = Self.chain(operations)
        await withTaskCancellationHandler {
            addMembers(operations, waitUntilFinished: false)
            if let last {
                await BridgeQueue.finished(last)
            }
        } onCancel: {
            // Last member first: a member cancelled before the one ahead of it ends can
            // never start in between.
            for operation in operations.reversed() { operation.cancel() }
        }
    }

    /// Hands the members to the queue last first (see
    /// ``addSequentialOperations(_:waitUntilFinished:)``).
    private func addMembers(_ operations: [Operation], waitUntilFinished: Bool) {
        if let queue = self as? BackgroundOperationQueue {
            queue.addMembersLastFirst(operations, waitUntilFinished: waitUntilFinished)
        } else {
            addOperations(operations.reversed(), waitUntilFinished: waitUntilFinished)
        }
    }

    /// Makes each member wait for everything before it. Returns the gate behind the
    /// last member, which finishes once every member has finished.
    ///
    /// gate₀ depends on op₀; opᵢ depends on gateᵢ₋₁; gateᵢ depends on opᵢ and gateᵢ₋₁.
    /// Gates are never cancelled, so opᵢ can start its work only once op₀…opᵢ₋₁ all
    /// finished, even when some of them finished early.
    private static func chain(_ operations: [Operation]) -> Operation? {
        var gates: [Operation] = []
        gates.reserveCapacity(operations.count)
        var previous: Operation?
        for operation in operations {
            if let previous { operation.addDependency(previous) }
            let gate = BlockOperation {}
            gate.addDependency(operation)
            if let previous { gate.addDependency(previous) }
            gates.append(gate)
            previous = gate
        }
        BridgeQueue.shared.addOperations(gates, waitUntilFinished: false)
        return previous
    }

    /// Creates an ``AsyncOperation`` with the 1.x initializer and adds it (1.x
    /// `addAsyncOperation`). On a ``BackgroundOperationQueue`` its uniqueness policy
    /// applies; a dropped operation has ended ``AsyncTask/Outcome/dropped`` when this
    /// returns.
    ///
    /// Parameters are those of ``AsyncOperation/init(name:timeout:onTimeoutCallback:uniquenessPolicy:_:)``.
    /// - Returns: The operation, to cancel it, finish it or await its outcome.
    @discardableResult
    public func addAsyncOperation(
        name: String? = nil,
        timeout: TimeInterval = 10,
        onTimeoutCallback: (@Sendable (AsyncOperation) -> Void)? = nil,
        uniquenessPolicy: UniquenessPolicy = .ignore,
        _ closure: @escaping @Sendable (AsyncOperation) -> Void
    ) -> AsyncOperation {
        let operation = AsyncOperation(
            name: name, timeout: timeout, onTimeoutCallback: onTimeoutCallback,
            uniquenessPolicy: uniquenessPolicy, closure)
        addOperation(operation)
        return operation
    }

    /// Runs an ``AsyncTask`` on this queue, as an ``AsyncOperation`` (see
    /// ``AsyncOperation/init(task:)``): the unit starts when the queue starts the
    /// operation, and the operation finishes when the unit reached its outcome.
    /// Cancelling either cancels both.
    ///
    /// - Returns: The operation wrapping `task`.
    @discardableResult
    public func addTask(_ task: AsyncTask) -> AsyncOperation {
        let operation = AsyncOperation(task: task)
        addOperation(operation)
        return operation
    }
}
