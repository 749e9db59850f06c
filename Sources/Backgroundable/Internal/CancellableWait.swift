import Synchronization

/// Suspends until a registered continuation is resumed, or returns early when the
/// calling task is cancelled: the one shape of every cancellable wait in the package
/// (``QueueStorage/waitUntilIdle()``, ``Latch/wait()``).
///
/// - `register` hands the continuation to whoever resumes it and returns its
///   registration, or `nil` when there is nothing to wait for (it is then resumed here).
/// - `unregister` takes the registration back after a cancellation and resumes the
///   continuation if it still held it; if the resumer took it first, it does nothing.
///
/// Exactly one of the resumer and `unregister` resumes the continuation, whichever
/// takes it out of its registry first; the cancellation that races with `register` is
/// handled by whichever of the two sides comes second.
package func waitCancellably(
    register: (Continuation<Void>) -> UInt64?,
    unregister: @escaping @Sendable (UInt64) -> Void
) async {
    let registration = Lock(Registration.pending)
    await withTaskCancellationHandler {
        await withContinuation { (continuation: Continuation<Void>) in
            guard let id = register(continuation) else { return continuation.resume() }
            let cancelled = registration.withLock { state in
                if case .cancelled = state { return true }
                state = .registered(id)
                return false
            }
            if cancelled { unregister(id) }
        }
    } onCancel: {
        let id = registration.withLock { state -> UInt64? in
            if case .registered(let id) = state { return id }
            state = .cancelled
            return nil
        }
        if let id { unregister(id) }
    }
}

private enum Registration {
    case pending
    case registered(UInt64)
    case cancelled
}
