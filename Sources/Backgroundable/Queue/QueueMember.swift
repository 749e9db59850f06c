/// Something a queue schedules: an ``AsyncTask``, or an `Operation` in the bridge.
protocol QueueMember: AnyObject, Sendable {
    /// Starts the member's work at `priority` (a raw `TaskPriority`: its own, or higher
    /// when it was escalated while it waited); the queue counts it as executing from now on.
    func startFromQueue(priority: UInt8)
    /// Ends the member from the queue's side (replaced, timed out, cancelled,
    /// dropped). Does nothing when it has already ended.
    func endFromQueue(_ outcome: AsyncTask.Outcome)
    /// The public event about this member for a queue's listeners, if members of this
    /// kind have one.
    func publicEvent(_ event: MemberEvent) -> BackgroundQueue.Event?
    /// The progress the member reported in its current attempt, from 0 to 1; `nil` for
    /// none. Read from any thread, outside every lock: a plain load.
    var reportedProgress: Double? { get }
    /// The member's name, for progress watchers that list the executing members.
    var memberName: String? { get }
    /// Under the queue's lock, in the transition that decided it: makes the queue's
    /// `decision` the member's own (its outcome, or the work it joins), so that nothing —
    /// the member ending by itself, another thread's cancellation — comes between the
    /// decision and the rest of that transition. Takes the member's own lock (always
    /// after the queue's) and calls no caller code: what remains is in the result. A
    /// replaced member whose body runs counts on `gate`, made on first use, which the
    /// newcomer that replaced it waits on; a member ended (``QueueDecision/end(_:)``)
    /// while its body runs hands out the gate that body opens, for later members of its
    /// name.
    func settle(_ decision: QueueDecision, gate: inout ReplacementGate?) -> SettledDecision
    /// Under the queue's lock: the member, just added, runs its work only once `gates`
    /// opened (see ``ReplacementGate``); a second call adds to the gates of the first.
    func waitBeforeRunning(for gates: [ReplacementGate])
}

/// A decision of a queue about one member, settled under the queue's lock (see
/// ``QueueMember/settle(_:gate:)``).
enum QueueDecision {
    /// End it with this outcome: rejected at its add, expired as it would start, or
    /// ended by the queue (a timeout, a cancellation) while it counted for its name.
    case end(AsyncTask.Outcome)
    /// It joins `primary`'s work (``UniquenessPolicy/join``). `inSequence`: it came in a
    /// sequential group, where it cannot be added again in its place, should `primary`'s
    /// work turn out to be cancelled (it then ends cancelled too).
    case join(primary: any QueueMember, inSequence: Bool)
    /// A newcomer replaced it (``UniquenessPolicy/replace``).
    case replace
}

/// What settling a ``QueueDecision`` did.
struct SettledDecision {
    /// The decision took effect; `false` when the member had reached an outcome before.
    var applied: Bool
    /// The outcome the member has now, if it has one.
    var outcome: AsyncTask.Outcome?
    /// What is left to do after unlocking.
    var remainder = Remainder.none

    /// Each case holds one reference at most: remainders are moved around cheaply.
    enum Remainder {
        case none
        /// Perform a unit's ending (resume its waiters, tell its queue).
        case ending(PendingEnding)
        /// Release the work of a unit that joined another one (a caller's closure, whose
        /// `deinit` may do anything).
        case release(AsyncTask.Work?)
        /// A front end's calls (the Operation bridge: Foundation is called after unlocking).
        case call(() -> Void)

        func perform() {
            switch self {
            case .none, .release: break
            case .ending(let pending): pending.ending.perform(for: pending.unit)
            case .call(let body): body()
            }
        }
    }
}

/// A unit's ending, settled under its queue's lock and performed after unlocking.
final class PendingEnding {
    let unit: AsyncTask
    let ending: UnitState.Ending

    init(_ unit: AsyncTask, _ ending: UnitState.Ending) {
        self.unit = unit
        self.ending = ending
    }
}

/// What is left of the decisions one transition settled, in order. Most settle at most
/// one: it is kept inline, so settling allocates nothing for it.
struct SettledRemainders {
    private var first = SettledDecision.Remainder.none
    private var more: [SettledDecision.Remainder] = []

    mutating func append(_ remainder: SettledDecision.Remainder) {
        if case .none = first { first = remainder } else { more.append(remainder) }
    }

    var isEmpty: Bool {
        if case .none = first { true } else { false }
    }

    /// Performs them all, in order, after unlocking.
    func perform() {
        first.perform()
        for remainder in more { remainder.perform() }
    }
}

/// The front end a storage tells about its busy periods (a delegate's two calls).
protocol QueueFront: AnyObject, Sendable {
    /// idle → busy, after the background time was begun and before any member starts.
    func queueWillStartWork()
    /// busy → idle, after the background time ended. Calls `delivered` once the
    /// notification was delivered (for a delegate on the main actor, after its call
    /// returned there), and not before: whoever waits for the queue to be idle is resumed
    /// then.
    func queueDidFinishWork(then delivered: @escaping @Sendable () -> Void)
}
