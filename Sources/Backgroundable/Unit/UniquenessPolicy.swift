/// What a queue does when a unit arrives whose name is already used by a *live*
/// unit (enqueued or executing) in the same queue.
///
/// The check and the add are one atomic step under the queue's lock, so two racing
/// adds can never both survive ``drop``. Lookup is a hash of the name, O(1) in the
/// number of live units. A unit without a name never deduplicates.
public enum UniquenessPolicy: Sendable, Hashable, CaseIterable {
    /// The name is only a label (the default). It still counts as live for later
    /// ``drop`` and ``replace`` arrivals.
    case ignore
    /// If a live unit has the same name, the new unit is not added: its outcome is
    /// ``AsyncTask/Outcome/dropped`` at once and its work never runs.
    case drop
    /// Every live unit with the same name — executing ones included — ends with
    /// ``AsyncTask/Outcome/replaced`` (its `Task` is cancelled) and the new unit is added.
    case replace
}
