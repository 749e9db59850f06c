public import Foundation

// The 1.x `BackgroundQueue` was an `OperationQueue` subclass; that class is now
// `BackgroundOperationQueue`, and `BackgroundQueue` is the actor that runs units. 1.x
// code that calls `OperationQueue` API on a `BackgroundQueue` gets a compiler message
// naming the replacement instead of "no member". (Unavailable: the bodies never run.)
extension BackgroundQueue {
    @available(
        *, unavailable, renamed: "add(_:)",
        message: "an Operation runs as a unit; the 1.x BackgroundQueue class is BackgroundOperationQueue"
    )
    public nonisolated func addOperation(_ operation: Operation) {
        add(operation)
    }

    @available(
        *, unavailable,
        message: "add(_:) each; the 1.x BackgroundQueue class is BackgroundOperationQueue"
    )
    public nonisolated func addOperations(_ operations: [Operation], waitUntilFinished: Bool) {
        for operation in operations { add(operation) }
    }

    @available(*, unavailable, renamed: "cancelAll()")
    public nonisolated func cancelAllOperations() {
        cancelAll()
    }

    @available(
        *, unavailable,
        message: "await waitUntilIdle(); the 1.x BackgroundQueue class is BackgroundOperationQueue"
    )
    public nonisolated func waitUntilAllOperationsAreFinished() {}

    @available(*, unavailable, message: "enqueuedCount + executingCount")
    public nonisolated var operationCount: Int { enqueuedCount + executingCount }

    @available(*, unavailable, renamed: "maxConcurrentTasks")
    public nonisolated var maxConcurrentOperationCount: Int { maxConcurrentTasks ?? .max }
}
