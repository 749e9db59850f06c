import Synchronization

/// Starting a unit at once, with no queue semantics of its own: the executor behind
/// the Operation bridge.
///
/// An `Operation` decides *when* it runs (its `OperationQueue`, its dependencies, or a
/// caller invoking `start()`); what it needs from the core is everything *else* a unit
/// gets — the timeout driven by the core's one sleeper per queue, the wrapping `Task` of
/// an async body, cancellation that reaches it, exactly-once outcomes and waiters. Most of
/// that lives in the unit itself; a direct core only keeps deadlines. It is a shared,
/// unbounded, never-suspended ``QueueCore`` that holds a unit while it executes with a
/// timeout, so an ``AsyncOperation`` obeys the same rules as any unit on a
/// ``BackgroundQueue``. A unit without a timeout needs no core at all: it moves to
/// executing under its own lock only, and no core hears of its end.
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

    /// The direct core that keeps `unit`'s deadline: always the same one for the same unit.
    static func direct(for unit: AsyncTask) -> QueueCore {
        // Fibonacci hashing of the address: neighbouring allocations spread evenly.
        let address = UInt(bitPattern: ObjectIdentifier(unit))
        return directCores[Int(truncatingIfNeeded: (address &* 0x9E37_79B9_7F4A_7C15) >> 60)]
    }

    /// Moves a new unit straight to executing and runs it on this thread: a
    /// callback-style body is called right here (as 1.x ran an `AsyncOperation`'s
    /// closure on its `OperationQueue`'s thread — no `Task` to create, no thread hop);
    /// an async body gets its wrapping `Task`.
    ///
    /// No uniqueness policy is applied and no name is indexed. Returns `false` when
    /// the unit was already handed to a queue or has ended (then nothing happens).
    @discardableResult
    static func startNow(_ unit: AsyncTask) -> Bool {
        guard let work = start(unit, { $0.startAtOnce(owner: $1) }) else { return false }
        unit.runHere(work)
        return true
    }

    /// Moves a unit created reserved (see ``UnitState/Phase/reserved``) to executing, for
    /// the front end that reserved it to run its work on this thread. `false` when the
    /// unit has ended (before, or right here: a timeout of zero or less).
    static func startReserved(_ unit: AsyncTask) -> Bool {
        start(unit) { $0.startReserved(owner: $1) ? () : nil } != nil
    }

    /// Moves `unit` to executing with `begin`, which is given the core that keeps the
    /// unit's deadline (`nil` without a timeout: then no core lock is taken). Returns
    /// what `begin` returned, or `nil` when it failed or a timeout of zero or less ended
    /// the unit at once.
    private static func start<Started>(
        _ unit: AsyncTask,
        _ begin: (inout UnitState, QueueCore?) -> Started?
    ) -> Started? {
        guard unit.hasTimeout else {
            return unit.state.withLock { begin(&$0, nil) }
        }
        let core = direct(for: unit)
        return core.transition { state, effects in
            guard let started = unit.state.withLock({ begin(&$0, core) }) else { return nil }
            return state.keepDeadline(of: unit, core: core, &effects) ? started : nil
        }
    }
}
