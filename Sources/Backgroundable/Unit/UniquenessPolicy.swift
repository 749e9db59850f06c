/// What a queue does when a unit arrives whose name is already used by a *live*
/// unit (enqueued or executing) in the same queue.
///
/// The check and the add are one atomic step under the queue's lock, so two racing
/// adds can never both survive ``drop``. Lookup is a hash of the name, O(1) in the
/// number of live units. A unit without a name never deduplicates.
///
/// Policies come in minor releases: compare a policy (`policy == .drop`), or switch over
/// it with a `default`.
public struct UniquenessPolicy: Sendable, Hashable, CaseIterable, CustomStringConvertible {
    enum Kind: Sendable, Hashable {
        case ignore, drop, replace, join
    }

    let kind: Kind

    /// The name is only a label (the default). It still counts as live for later
    /// ``drop``, ``replace`` and ``join`` arrivals.
    public static let ignore = UniquenessPolicy(kind: .ignore)
    /// If a live unit has the same name, the new unit is not added: its outcome is
    /// ``AsyncTask/Outcome/dropped`` at once and its work never runs.
    public static let drop = UniquenessPolicy(kind: .drop)
    /// Every live unit with the same name — executing ones included — ends with
    /// ``AsyncTask/Outcome/replaced`` (its `Task` is cancelled) and the new unit is added,
    /// in one step: the outcomes are set before the add returns. A replaced body that is
    /// still running when its cancellation arrives keeps running until it returns, and
    /// the new unit's work starts only after that (the queue may have started the new
    /// unit — its `started` event, its slot, its timeout — while it waits). Units added
    /// later with the name and any policy but ``ignore`` wait for that body too, even when
    /// the unit that replaced it ended before it ran: two bodies of one name never run at
    /// the same time. The same holds for the body of a named unit that was cancelled or
    /// timed out while it ran.
    public static let replace = UniquenessPolicy(kind: .replace)
    /// Single flight: if a live unit has the same name, the new unit is not added and
    /// its work never runs: it *joins* the live unit, and ends with the live unit's
    /// outcome and value, when that one ends. With no live unit of the name, it is
    /// added and runs, and later arrivals can join it. (With several live units of the
    /// name — labels — it joins the one added last.) See <doc:SingleFlight>.
    ///
    /// The joined unit is a unit of its own for its caller: awaiting it returns the
    /// shared outcome and value; cancelling it (or the task awaiting it) ends it
    /// ``AsyncTask/Outcome/cancelled``, and the shared work goes on for the other
    /// callers. It is cancelled when no task awaits it any more — the live unit's
    /// awaiters and every joined unit's are counted together, and a joined unit's
    /// awaiters stop counting when that unit is cancelled. A unit that arrives as the
    /// live unit is being cancelled does not join it: it is added, and runs its own work
    /// (in a sequential group, which it cannot join again in its place, it ends cancelled).
    public static let join = UniquenessPolicy(kind: .join)

    #if BACKGROUNDABLE_EXTRA_KINDS_FOR_TESTING
        /// A policy that only a build with `-DBACKGROUNDABLE_EXTRA_KINDS_FOR_TESTING` has:
        /// `.ci/growing-kinds.sh` checks that a client compiles unchanged when a policy is
        /// added. (What a client sees of a new policy is a new static member; it acts as
        /// ``ignore``.)
        public static let extraForTesting = UniquenessPolicy(kind: .ignore)
    #endif

    /// Every policy, in the order they were introduced.
    public static let allCases: [UniquenessPolicy] = [.ignore, .drop, .replace, .join]

    public var description: String { "\(kind)" }
}
