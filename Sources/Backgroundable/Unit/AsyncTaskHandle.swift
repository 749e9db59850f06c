/// A typed view of a unit whose work is an async body: its value or error can be
/// awaited.
///
/// A handle is a cheap value; copies refer to the same ``AsyncTask``.
public struct AsyncTaskHandle<Success: Sendable>: Sendable {
    /// The unit this handle reads.
    public let task: AsyncTask

    init(_ task: AsyncTask) {
        self.task = task
    }

    /// Creates a unit whose work is `body`, to add to a queue later (``BackgroundQueue``'s
    /// `add(_:_:)` makes and adds one in a call): it is done when `body` returns (outcome
    /// ``AsyncTask/Outcome/finished``) or throws (``AsyncTask/Outcome/failed(_:)``).
    ///
    /// - Parameters:
    ///   - options: The unit's settings (see ``AsyncTask/Options``); no timeout unless
    ///     they set one, since a body cannot forget to return.
    ///   - body: Runs as the operation of a `Task.detached` would: off the caller's
    ///     actor, or on the actor it is isolated to (`{ @MainActor in … }`).
    public init(_ options: AsyncTask.Options, _ body: sending @escaping @isolated(any) () async throws -> Success) {
        self.init(AsyncTask(options, work: .body(body)))
    }

    /// Creates a unit whose work is `body`, with every setting at its default (no
    /// timeout); see ``init(_:_:)``.
    public init(_ body: sending @escaping @isolated(any) () async throws -> Success) {
        self.init(AsyncTask.Options(), body)
    }

    /// The body's return value.
    ///
    /// Suspends until the unit ends. Throws the body's error when it failed;
    /// `CancellationError` when the unit was cancelled (by ``cancel()``, its queue's
    /// `cancelAll()`, or the awaiting task's cancellation, which cancels the unit — or,
    /// when others await the same shared work (``UniquenessPolicy/join``), ends only
    /// this wait); or
    /// an ``AsyncTaskError`` when it was replaced, dropped or timed out, or when
    /// ``AsyncTask/finish()`` ended it before its body returned.
    public var value: Success {
        get async throws {
            try await result.get()
        }
    }

    /// The body's return value or error, as a `Result`. Same contract as ``value``.
    public var result: Result<Success, any Error> {
        get async { await result(awaitingBefore: {}) }
    }

    /// ``result``, with `action` run right after the awaiting task registered with the
    /// unit (before it suspends).
    func result(awaitingBefore action: () -> Void) async -> Result<Success, any Error> {
        switch await task.outcome(awaitingBefore: action) {
        case .finished:
            // The body's value, unless `finish()` ended the unit before the body
            // returned. The unit was made from a body returning `Success`; a unit that
            // joined another one got that one's value, which may be of another type.
            if let returned = task.returnedValue {
                if let value = returned.value as? Success {
                    .success(value)
                } else {
                    .failure(AsyncTaskError.joinedAnotherValueType)
                }
            } else {
                .failure(AsyncTaskError.finishedWithoutValue)
            }
        case .failed(let error):
            .failure(error)
        case let outcome:
            .failure(AsyncTaskError.thrown(for: outcome)!)
        }
    }

    /// Waits for the outcome; see ``AsyncTask/outcome``.
    public var outcome: AsyncTask.Outcome {
        get async { await task.outcome }
    }

    /// Cancels the unit; see ``AsyncTask/cancel()``.
    public func cancel() {
        task.cancel()
    }
}
