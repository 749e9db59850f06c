import Synchronization

/// The callers that share one unit's work (``UniquenessPolicy/join``): the unit that
/// runs it (`primary`) and the units that joined it. It counts the tasks that await any
/// of them: when a cancellation leaves none, the shared work is cancelled. Callers that
/// never await are not counted.
///
/// Lock order: a unit's lock, then the group's; the group never takes a unit's lock
/// (it ends its joiners after releasing its own).
final class JoinGroup: Sendable {
    private struct State {
        var joiners: [ObjectIdentifier: AsyncTask] = [:]
        var awaiting: Int
        /// The primary's outcome and value, once it ended.
        var shared: (outcome: AsyncTask.Outcome, value: Boxed<any Sendable>?)?
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
            return state.awaiting <= 0
        }
    }

    /// `joiner` joins, with `awaiting` tasks awaiting it. Returns the shared outcome
    /// and value instead when the primary has ended.
    func add(_ joiner: AsyncTask, awaiting: Int) -> (AsyncTask.Outcome, Boxed<any Sendable>?)? {
        state.withLock { state in
            if let shared = state.shared { return shared }
            state.joiners[ObjectIdentifier(joiner)] = joiner
            state.awaiting += awaiting
            return nil
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
