import Synchronization

/// Starting a unit at once, with no queue semantics of its own: the executor behind
/// the Operation bridge.
///
/// An `Operation` decides *when* it runs (its `OperationQueue`, its dependencies, or a
/// caller invoking `start()`); what it needs from the core is everything *else* a unit
/// gets — the wrapping `Task`, the timeout driven by the core's one sleeper per queue,
/// cancellation that reaches the `Task`, exactly-once outcomes and waiters. A direct
/// core is a shared, unbounded, never-suspended ``QueueCore`` that provides exactly
/// that, so an ``AsyncOperation`` obeys the same rules as any unit on a ``BackgroundQueue``.
///
/// Deduplication is deliberately skipped here: names are deduplicated by the front end
/// that owns the unit (a ``BackgroundOperationQueue``), never across unrelated queues.
extension QueueCore {
    /// The shared executors of bridged units: unbounded, never suspended, holding no
    /// background time of their own (the front-end queue holds it). Sixteen of them,
    /// each unit going to the one its address picks, so that operations starting and
    /// ending on different threads seldom wait for the same lock.
    private static let directCores = (0..<16).map { index in
        QueueCore(
            label: "Backgroundable.direct.\(index)",
            limit: .max,
            provider: NoopBackgroundTaskProvider(),
            expirationPolicy: .keepRunning,
            reportsBusyPeriods: false
        )
    }

    /// The direct core that runs `unit`: always the same one for the same unit.
    static func direct(for unit: AsyncTask) -> QueueCore {
        // Fibonacci hashing of the address: neighbouring allocations spread evenly.
        let address = UInt(bitPattern: ObjectIdentifier(unit))
        return directCores[Int(truncatingIfNeeded: (address &* 0x9E37_79B9_7F4A_7C15) >> 60)]
    }

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
            work = state.startAtOnce(unit, core: self, &effects)
        }
        if let work { unit.runHere(work) }
        return admitted
    }
}
