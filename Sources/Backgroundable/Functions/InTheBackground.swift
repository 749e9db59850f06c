import Dispatch

/// Runs `work` on ``BackgroundQueue/shared``, off the main thread (1.x `inTheBackground`).
///
/// Synchronous: returns at once with the unit, which ends ``AsyncTask/Outcome/finished``
/// when `work` returns. No timeout, as in 1.x. Calls from one thread start in order.
@discardableResult
public func inTheBackground(_ work: @escaping @Sendable () -> Void) -> AsyncTask {
    BackgroundQueue.shared.add(timeout: nil) { task in
        work()
        task.finish()
    }
}

/// Runs `work` on ``BackgroundQueue/shared`` and returns its value.
///
/// Suspends until `work` finishes; rethrows its error. Cancelling the caller cancels
/// the unit (then `CancellationError` is thrown unless `work` already ended).
public func inTheBackground<Success: Sendable>(
    _ work: @escaping @Sendable () async throws -> Success
) async throws -> Success {
    try await BackgroundQueue.shared.run(timeout: nil, work)
}

/// Runs `work` on the main thread, asynchronously (1.x `onTheMainThread`).
///
/// Returns at once. Calls from one thread run in order. Needs a running main queue
/// (an app's run loop, or `dispatchMain()` in a command-line tool).
public func onTheMainThread(_ work: @escaping @MainActor @Sendable () -> Void) {
    DispatchQueue.main.async {
        MainActor.assumeIsolated(work)
    }
}

/// Runs `work` on the main actor and returns its value. Suspends until it is done.
public func onTheMainThread<Success: Sendable>(
    _ work: @MainActor @Sendable () throws -> Success
) async rethrows -> Success {
    try await MainActor.run(body: work)
}
