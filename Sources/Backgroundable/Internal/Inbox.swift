import Synchronization

/// Unnamed units added from any thread and not yet seen by the queue: a lock-free
/// stack (newest first) threaded through ``QueueLinks/inboxNext``, so adding an unnamed
/// unit costs one compare-and-swap instead of the queue's lock.
///
/// Whoever next holds the queue's lock absorbs the whole stack, oldest first, before
/// doing anything else (``QueueState/absorb(_:core:_:)``): every observer sees the
/// queue as if the units had been added under the lock, in the order they were pushed.
///
/// Each unit in the stack holds the +1 its push took; the links between units are bare
/// addresses. A pusher never dereferences the unit it links to: by then the queue may
/// have taken it and released it, and its memory may hold a new unit. (When that new
/// unit is the head again, the compare-and-swap succeeds and the link is right anyway:
/// it names whatever the head is.)
struct Inbox: ~Copyable, Sendable {
    /// The newest unit's address; 0 when empty.
    private let head = Atomic<UInt>(0)

    /// Pushes a unit the caller has just moved to `enqueued`. Returns `true` when the
    /// inbox was empty: the caller must then make sure a drainer will absorb it.
    func push(_ unit: AsyncTask) -> Bool {
        let bits = UInt(bitPattern: Unmanaged.passRetained(unit).toOpaque())
        var old = head.load(ordering: .relaxed)
        while true {
            // The unit is not in any queue structure yet: nobody else touches its links.
            unit.links.inboxNext = old
            let (exchanged, current) = head.compareExchange(
                expected: old, desired: bits, successOrdering: .releasing, failureOrdering: .relaxed)
            if exchanged { return old == 0 }
            old = current
        }
    }

    var isEmpty: Bool { head.load(ordering: .acquiring) == 0 }

    /// Takes every unit, oldest first, with the +1 each push took.
    func takeAll() -> [AsyncTask] {
        var bits = head.exchange(0, ordering: .acquiring)
        var units: [AsyncTask] = []
        while bits != 0 {
            let unit = Unmanaged<AsyncTask>.fromOpaque(UnsafeRawPointer(bitPattern: bits)!).takeRetainedValue()
            bits = unit.links.inboxNext
            unit.links.inboxNext = 0
            units.append(unit)
        }
        units.reverse()
        return units
    }
}
