import Dispatch

/// Runs `work` on ``BackgroundQueue/shared``, off the main thread (1.x `inTheBackground`).
///
/// Synchronous: returns at once with the unit, which ends ``AsyncTask/Outcome/finished``
/// when `work` returns. No timeout, as in 1.x. Calls from one thread start in order.
/// `work` runs off every actor, like the operation of a `Task.detached`.
///
/// There is deliberately no `async` form: from async code, `try await
/// BackgroundQueue.shared.run { … }` waits for a value.
@discardableResult
public func inTheBackground(_ work: sending @escaping () -> Void) -> AsyncTask {
    BackgroundQueue.shared.add(AsyncTask.Options(timeout: nil)) { task in
        work()
        task.finish()
    }
}

/// Runs `work` on the main thread, asynchronously (1.x `onTheMainThread`).
///
/// Returns at once, from sync and async code alike. Calls from one thread run in order.
/// Needs a running main queue (an app's run loop, or `dispatchMain()` / an `async` `main`
/// in a command-line tool). There is deliberately no waiting form: from async code,
/// `await MainActor.run { … }` waits for a value.
public func onTheMainThread(_ work: @escaping @MainActor @Sendable () -> Void) {
    DispatchQueue.main.async {
        MainActor.assumeIsolated(work)
    }
}
