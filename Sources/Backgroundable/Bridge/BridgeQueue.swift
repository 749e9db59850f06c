import Foundation
import Synchronization

/// The bridge's own machinery for watching arbitrary `Operation`s without KVO (which
/// swift-corelibs-foundation does not offer): a private, unbounded `OperationQueue`
/// that runs *watchers* — tiny `BlockOperation`s that depend on the operations being
/// watched, so Foundation itself runs them once those have finished, whatever queue (if
/// any) runs them and whatever their outcome — and that runs operations adopted as
/// units by ``BackgroundQueue/add(_:options:)``.
enum BridgeQueue {
    /// Unbounded; its watchers are never cancelled, so every watcher runs exactly once.
    static let shared: OperationQueue = {
        let queue = OperationQueue()
        queue.name = "Backgroundable.bridge"
        return queue
    }()

    /// Calls `body` exactly once, after `operation` finished (reported `isFinished`),
    /// on a background thread or on the thread that finished it.
    ///
    /// An ``AsyncOperation`` is watched through its own hook (no extra operation);
    /// any other operation through a watcher on ``shared``.
    static func whenFinished(_ operation: Operation, _ body: @escaping @Sendable () -> Void) {
        if let operation = operation as? AsyncOperation {
            operation.whenFinished(body)
        } else {
            afterFoundationFinished(operation, body)
        }
    }

    /// Calls `body` exactly once, through a watcher, once Foundation itself is done
    /// finishing `operation`, its dependants included — which an ``AsyncOperation``'s own
    /// hook does not wait for when it is registered while the operation finishes.
    static func afterFoundationFinished(_ operation: Operation, _ body: @escaping @Sendable () -> Void) {
        let watcher = BlockOperation(block: body)
        watcher.addDependency(operation)
        shared.addOperation(watcher)
    }

    /// Calls `body` exactly once, after every operation in `operations` finished.
    static func whenAllFinished(_ operations: [Operation], _ body: @escaping @Sendable () -> Void) {
        guard !operations.isEmpty else { return body() }
        let remaining = Countdown(operations.count)
        for operation in operations {
            whenFinished(operation) {
                if remaining.decrement() { body() }
            }
        }
    }

    /// Waits, without blocking a thread, until `operation` finished. Not cancellable.
    static func finished(_ operation: Operation) async {
        // Resumed exactly once: `whenFinished` calls its body exactly once.
        await withContinuation { (continuation: Continuation<Void>) in
            whenFinished(operation) { continuation.resume() }
        }
    }
}

/// Counts down from `count`; exactly one `decrement()` returns `true` (the last one).
final class Countdown: Sendable {
    private let remaining: Atomic<Int>

    init(_ count: Int) {
        remaining = Atomic(count)
    }

    func decrement() -> Bool {
        remaining.subtract(1, ordering: .acquiringAndReleasing).newValue == 0
    }
}
