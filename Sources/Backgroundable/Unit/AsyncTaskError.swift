/// Thrown by ``AsyncTaskHandle/value`` when a unit ended without producing a value
/// and without an error of its own: it was replaced, dropped or timed out, or
/// `finish()` ended it before its body returned. (A cancelled unit throws
/// `CancellationError`, as a cancelled `Task` does.)
///
/// Match it like an enum's cases — `catch AsyncTaskError.dropped { … }` — or compare
/// with `==`. A struct with static members rather than an enum, so new cases can be
/// added without breaking callers who switch over it.
public struct AsyncTaskError: Error, Hashable, Sendable, CustomStringConvertible {
    private enum Code: Hashable, Sendable {
        case cancelled, replaced, dropped, timedOut, finishedWithoutValue, joinedAnotherValueType
    }

    private let code: Code

    private init(_ code: Code) { self.code = code }

    /// The unit was cancelled. Never thrown: a cancelled unit throws `CancellationError`.
    @available(*, deprecated, message: "a cancelled unit throws CancellationError: catch is CancellationError")
    public static let cancelled = AsyncTaskError(Code.cancelled)
    /// A newer unit with the same name replaced it.
    public static let replaced = AsyncTaskError(Code.replaced)
    /// It was dropped because a live unit had the same name.
    public static let dropped = AsyncTaskError(Code.dropped)
    /// Its timeout elapsed.
    public static let timedOut = AsyncTaskError(Code.timedOut)
    /// ``AsyncTask/finish()`` ended it while its async body was still running: the
    /// outcome is ``AsyncTask/Outcome/finished``, but there is no value to return.
    public static let finishedWithoutValue = AsyncTaskError(Code.finishedWithoutValue)
    /// It joined a live unit of its name (``UniquenessPolicy/join``) whose body returned
    /// a value of another type than its own: one name, two value types. The shared
    /// outcome is ``AsyncTask/Outcome/finished``; the value cannot be handed over.
    public static let joinedAnotherValueType = AsyncTaskError(Code.joinedAnotherValueType)

    /// What awaiting the value of a unit that reached `outcome` throws, if it ended
    /// without a value: `CancellationError` for a cancelled unit.
    static func thrown(for outcome: AsyncTask.Outcome) -> (any Error)? {
        switch outcome {
        case .cancelled: CancellationError()
        case .replaced: AsyncTaskError.replaced
        case .dropped: AsyncTaskError.dropped
        case .timedOut: AsyncTaskError.timedOut
        case .finished, .failed: nil
        }
    }

    /// Lets `catch AsyncTaskError.dropped` (and `case AsyncTaskError.timedOut` in a
    /// `switch` over an error) match: `true` when `error` is this error.
    public static func ~= (pattern: AsyncTaskError, error: any Error) -> Bool {
        (error as? AsyncTaskError) == pattern
    }

    public var description: String {
        switch code {
        case .cancelled: "the unit was cancelled"
        case .replaced: "the unit was replaced by a newer unit with the same name"
        case .dropped: "the unit was dropped because a live unit had the same name"
        case .timedOut: "the unit timed out"
        case .finishedWithoutValue: "finish() ended the unit before its body returned a value"
        case .joinedAnotherValueType:
            "the unit joined a unit of the same name whose body returned a value of another type"
        }
    }
}
