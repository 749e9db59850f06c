extension AsyncTask {
    /// How a unit ended. Every unit handed to a queue reaches exactly one outcome.
    public enum Outcome: Sendable, CustomStringConvertible {
        /// `finish()` was called, or the async body returned.
        case finished
        /// The async body threw; the error is kept.
        case failed(any Error)
        /// `cancel()` on the unit, `cancelAll()` on its queue, cancellation of a caller
        /// awaiting it, or a background-time expiry that cancels work.
        case cancelled
        /// A newer unit with the same name and the ``UniquenessPolicy/replace`` policy took its place.
        case replaced
        /// It never ran: a live unit with the same name existed and it had the ``UniquenessPolicy/drop`` policy.
        case dropped
        /// Its timeout elapsed while it was executing.
        case timedOut

        /// The outcome without its payload, convenient to compare and switch over.
        public var kind: Kind {
            switch self {
            case .finished: .finished
            case .failed: .failed
            case .cancelled: .cancelled
            case .replaced: .replaced
            case .dropped: .dropped
            case .timedOut: .timedOut
            }
        }

        /// The error of a ``failed(_:)`` outcome, `nil` for every other outcome.
        public var error: (any Error)? {
            if case .failed(let error) = self { error } else { nil }
        }

        /// `true` when the unit was stopped before its work completed: cancelled,
        /// replaced, dropped or timed out.
        public var isCancellation: Bool {
            switch kind {
            case .cancelled, .replaced, .dropped, .timedOut: true
            case .finished, .failed: false
            }
        }

        public var description: String {
            switch self {
            case .failed(let error): "failed(\(error))"
            default: "\(kind)"
            }
        }

        /// ``Outcome`` without payloads.
        public enum Kind: Sendable, Hashable, CaseIterable {
            case finished, failed, cancelled, replaced, dropped, timedOut
        }
    }
}
