/// What a queue does when a unit arrives whose name is already used by a *live*
/// unit (enqueued or executing) in the same queue.
///
/// The check and the add are one atomic step under the queue's lock, so two racing
/// adds can never both survive ``drop``. Lookup is a hash of the name, O(1) in the
/// number of live units. A unit without a name never deduplicates.
public enum UniquenessPolicy: Sendable, Hashable, CaseIterable {
    /// The name is only a label (the default). It still counts as live for later
    /// ``drop``, ``replace`` and ``join`` arrivals.
    case ignore
    /// If a live unit has the same name, the new unit is not added: its outcome is
    /// ``AsyncTask/Outcome/dropped`` at once and its work never runs.
    case drop
    /// Every live unit with the same name — executing ones included — ends with
    /// ``AsyncTask/Outcome/replaced`` (its `Task` is cancelled) and the new unit is added,
    /// in one step: the outcomes are set before the add returns. A replaced body that is
    /// still running when its cancellation arrives keeps running until it returns, and
    /// the new unit's work starts only after that (the queue may have started the new
    /// unit — its `started` event, its slot, its timeout — while it waits). Units added
    /// later with the name and any policy but ``ignore`` wait for that body too, even when
    /// the unit that replaced it ended before it ran: two bodies of one name never run at
    /// the same time.
    case replace
    /// Single flight: if a live unit has the same name, the new unit is not added and
    /// its work never runs: it *joins* the live unit, and ends with the live unit's
    /// outcome and value, when that one ends. With no live unit of the name, it is
    /// added and runs, and later arrivals can join it. (With several live units of the
    /// name — labels — it joins the one added last.) See <doc:SingleFlight>.
    ///
    /// The joined unit is a unit of its own for its caller: awaiting it returns the
    /// shared outcome and value; cancelling it ends it ``AsyncTask/Outcome/cancelled``
    /// without touching the shared work — which is cancelled only when every caller
    /// that awaits it (the live unit's awaiters and every joined unit's) has cancelled.
    case join
}
