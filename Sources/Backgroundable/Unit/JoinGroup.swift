import Synchronization

/// The callers that share one unit's work (``UniquenessPolicy/join``): the unit that
/// runs it (`primary`) and the units that joined it. It counts the tasks that await any
/// of them: when a cancellation leaves none, the shared work is cancelled, and a unit
/// arriving after that does not join (it runs work of its own). Callers that never
/// await are not counted.
///
/// Lock order: a unit's lock, then the group's; the group never takes a unit's lock
/// (it ends its joiners after releasing its own).
final class JoinGroup: Sendable {
    private struct State {
        var joiners: [ObjectIdentifier: AsyncTask] = [:]
        var awaiting: Int
        /// The primary's outcome and value, once it ended.
        var shared: (outcome: AsyncTask.Outcome, value: Boxed<any Sendable>?)?
        /// The last awaiting caller stopped awaiting: the work is being cancelled.
        var abandoned = false
    }

    /// `nil` only for ``ended``.
    let primary: AsyncTask?
    private let state: Lock<State>

    init(primary: AsyncTask?, awaiting: Int) {
        self.primary = primary
        self.state = Lock(State(awaiting: awaiting))
    }

    /// The group of a unit that joined work already ended.
    static let ended = JoinGroup(primary: nil, awaiting: 0)

    func addAwaiters(_ count: Int) {
        state.withLock { $0.awaiting += count }
    }

    /// `count` awaiting tasks stopped awaiting: `true` when that left none (while the
    /// work still runs): the caller cancels it.
    func withdraw(_ count: Int) -> Bool {
        state.withLock { state in
            guard count > 0, state.shared == nil else { return false }
            state.awaiting -= count
            if state.awaiting <= 0 { state.abandoned = true }
            return state.awaiting <= 0
        }
    }

    /// What ``add(_:awaiting:)`` did.
    enum Joining {
        case joined
        /// The primary has ended: the joiner ends with its outcome and value.
        case ended(AsyncTask.Outcome, value: Boxed<any Sendable>?)
        /// The work was cancelled (its callers abandoned it, or someone cancelled its
        /// unit): the joiner did not join; it runs work of its own instead.
        case abandoned
    }

    /// `joiner` joins, with `awaiting` tasks awaiting it, unless the work has ended or
    /// is being cancelled.
    func add(_ joiner: AsyncTask, awaiting: Int) -> Joining {
        state.withLock { state in
            if let (outcome, value) = state.shared {
                return outcome.kind == .cancelled ? .abandoned : .ended(outcome, value: value)
            }
            if state.abandoned { return .abandoned }
            state.joiners[ObjectIdentifier(joiner)] = joiner
            state.awaiting += awaiting
            return .joined
        }
    }

    /// `joiner` ended (by itself, or with the shared outcome) with `awaiting` tasks
    /// awaiting it: `true` when that left no awaiting caller: the caller cancels the
    /// shared work.
    func leave(_ joiner: AsyncTask, awaiting: Int) -> Bool {
        state.withLock { state in
            guard state.shared == nil, state.joiners.removeValue(forKey: ObjectIdentifier(joiner)) != nil,
                awaiting > 0
            else { return false }
            state.awaiting -= awaiting
            if state.awaiting <= 0 { state.abandoned = true }
            return state.awaiting <= 0
        }
    }

    /// The primary ended: every joiner ends with its outcome and value (outside the
    /// group's lock), and later joiners get them at once.
    func primaryEnded(_ outcome: AsyncTask.Outcome, value: Boxed<any Sendable>?) {
        let joiners = state.withLock { state in
            state.shared = (outcome, value)
            defer { state.joiners = [:] }
            return state.joiners.values
        }
        for joiner in joiners { joiner.endJoined(outcome, value: value) }
    }
}
