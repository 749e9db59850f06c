import Synchronization

/// Unnamed units added from any thread and not yet seen by the queue: a lock-free
/// stack (newest first) threaded through ``QueueLinks/next``, so adding an unnamed unit
/// costs one compare-and-swap instead of the queue's lock.
///
/// Whoever next holds the queue's lock absorbs the whole stack, oldest first, before
/// doing anything else (``QueueState/absorb(_:core:_:)``): every observer sees the
/// queue as if the units had been added under the lock, in the order they were pushed.
struct Inbox: ~Copyable, Sendable {
    /// The newest unit, retained, as a bit pattern; 0 when empty.
    private let head = Atomic<UInt>(0)

    /// Pushes a unit the caller has just moved to `enqueued`. Returns `true` when the
    /// inbox was empty: the caller must then make sure a drainer will absorb it.
    func push(_ unit: AsyncTask) -> Bool {
        let bits = UInt(bitPattern: Unmanaged.passRetained(unit).toOpaque())
        var old = head.load(ordering: .relaxed)
        while true {
            // The unit is not in any queue structure yet: nobody else touches its links.
            // `next` takes its own +1 on the older unit; the stack's +1 on it is dropped
            // below once this unit has taken its place.
            unit.links.next = Self.unit(old)
            let (exchanged, current) = head.compareExchange(
                expected: old, desired: bits, successOrdering: .releasing, failureOrdering: .relaxed)
            if exchanged { break }
            old = current
        }
        if old != 0 {
            Unmanaged<AsyncTask>.fromOpaque(UnsafeRawPointer(bitPattern: old)!).release()
        }
        return old == 0
    }

    var isEmpty: Bool { head.load(ordering: .acquiring) == 0 }

    /// Takes every unit, oldest first.
    func takeAll() -> [AsyncTask] {
        let bits = head.exchange(0, ordering: .acquiring)
        guard bits != 0 else { return [] }
        var units: [AsyncTask] = []
        var cursor: AsyncTask? = Unmanaged<AsyncTask>.fromOpaque(UnsafeRawPointer(bitPattern: bits)!).takeRetainedValue()
        while let unit = cursor {
            units.append(unit)
            cursor = unit.links.next
            unit.links.next = nil
        }
        units.reverse()
        return units
    }

    private static func unit(_ bits: UInt) -> AsyncTask? {
        guard bits != 0 else { return nil }
        return Unmanaged<AsyncTask>.fromOpaque(UnsafeRawPointer(bitPattern: bits)!).takeUnretainedValue()
    }
}
