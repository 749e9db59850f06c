import Synchronization

/// Starting a unit at once, with no queue semantics of its own: the executor behind
/// the Operation bridge.
///
/// An `Operation` decides *when* it runs (its `OperationQueue`, its dependencies, or a
/// caller invoking `start()`); what it needs from the core is everything *else* a unit
/// gets — the wrapping `Task`, the timeout driven by the core's one sleeper per queue,
/// cancellation that reaches the `Task`, exactly-once outcomes and waiters. The direct
/// core is one shared, unbounded, never-suspended ``QueueCore`` that provides exactly
/// that, so an ``AsyncOperation`` obeys the same rules as any unit on a ``BackgroundQueue``.
///
/// Deduplication is deliberately skipped here: names are deduplicated by the front end
/// that owns the unit (a ``BackgroundOperationQueue``), never across unrelated queues.
extension QueueCore {
    /// The shared executor of bridged units: unbounded, never suspended, holding no
    /// background time of its own (the front-end queue holds it).
    static let direct = QueueCore(
        label: "Backgroundable.direct",
        limit: .max,
        provider: NoopBackgroundTaskProvider(),
        expirationPolicy: .keepRunning,
        reportsBusyPeriods: false
    )

    /// Admits `unit` and moves it to executing in the same locked transition, then
    /// runs it on this thread: a callback-style body is called right here (as 1.x ran
    /// an `AsyncOperation`'s closure on its `OperationQueue`'s thread — no `Task` to
    /// create, no thread hop); an async body gets its wrapping `Task`.
    ///
    /// No uniqueness policy is applied and no name is indexed. Returns `false` when
    /// the unit was already handed to a queue or has ended (then nothing happens).
    @discardableResult
    func startNow(_ unit: AsyncTask) -> Bool {
        var admitted = false
        var work: AsyncTask.Work?
        transition { state, effects in
            guard unit.state.withLock({ $0.enqueue(in: self) }) else { return }
            admitted = true
            unit.links.location = .arriving
            state.enqueuedCount += 1
            state.link(unit, behind: nil, &effects)
            // Unbounded and never suspended: this starts every ready unit, `unit` included.
            _ = state.popStartable(max: .max, core: self, &effects)
            if let index = effects.launches.firstIndex(where: { $0.0 === unit }) {
                work = effects.launches.remove(at: index).1
            }
        }
        if let work { unit.runHere(work) }
        return admitted
    }
}
