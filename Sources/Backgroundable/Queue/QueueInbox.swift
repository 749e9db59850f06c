import Synchronization

/// Members added to a queue without taking its lock, admitted by the queue's next
/// transition. The storage calls it only under its lock, except ``push``-style entry
/// points of the concrete inbox.
protocol QueueInbox<Member>: Sendable {
    associatedtype Member: QueueMember
    init()
    /// Under the queue's lock: the members pushed since the last call, oldest first.
    func takeAll() -> [QueueStateMachine<Member>.Admission]
    /// Under the queue's lock, after each transition: mirrors whether the machine has a
    /// drainer scheduled. `false` when members were pushed while the flag was being
    /// cleared: the caller admits them (``takeAll()``) and calls again.
    func mirror(drainerScheduled: Bool) -> Bool
    /// Under the queue's lock, in the transition that admitted it: `member`, taken by
    /// ``takeAll()``, was admitted as `handle` and learns it (see
    /// ``AsyncTask/attach(_:machine:actions:)``).
    func attach(
        _ member: Member, _ handle: QueueStateMachine<Member>.Handle, machine: inout QueueStateMachine<Member>,
        actions: inout QueueStateMachine<Member>.ActionList)
}

/// The inbox of a queue whose members are all added under its lock (the Operation
/// bridge): never holds anything.
struct NoInbox<Member: QueueMember>: QueueInbox {
    func takeAll() -> [QueueStateMachine<Member>.Admission] { [] }
    func mirror(drainerScheduled: Bool) -> Bool { true }
    func attach(
        _ member: Member, _ handle: QueueStateMachine<Member>.Handle, machine: inout QueueStateMachine<Member>,
        actions: inout QueueStateMachine<Member>.ActionList
    ) {}
}

/// The lock-free way into a busy ``BackgroundQueue``: while the queue has a drainer
/// scheduled, adding a unit is one compare-and-swap onto an intrusive stack instead of
/// a turn at the queue's lock, which the drainer and every ending unit also take.
///
/// Kept because it pays on adds to a busy queue: the adding thread no longer queues
/// behind the drainer and the units' ends for the lock. Built with
/// `-DBACKGROUNDABLE_PLAIN_INBOX`, every add takes the lock instead (``isEnabled``), so
/// the benchmark can compare both (`Benchmarks/compare-fast-paths.sh`).
///
/// One word holds the stack's top (a retained, unmanaged ``AsyncTask``, linked to the
/// one pushed before it through ``AsyncTask/inboxNext``) and, in bit 0, the *drainer
/// flag*: set (under the queue's lock) while the machine has a drainer scheduled.
/// - A push that finds the flag set leaves the unit to the drainer: every round of the
///   drainer is a transition, and every transition admits what was pushed, first.
/// - A push that finds it clear returns `true`: its caller runs a transition at once.
///   (Adders look at the flag first, and with it clear add under the lock directly.)
/// - The flag is cleared only by a compare-and-swap that expects an empty stack, under
///   the lock. A push lands either before it (the swap fails, and the units are
///   admitted right there) or after it (the push sees the flag clear). Stack and flag
///   are one word, so no ordering between two atomics is involved: a unit cannot be
///   left behind.
///
/// The stack is only ever pushed to and emptied whole (never popped one by one), and a
/// pusher never dereferences the top it links behind, so the ABA problem does not arise.
/// Units that could be rejected or could replace others (a name with the `drop` or
/// `replace` policy) never go through the inbox: their outcome is decided before `add`
/// returns.
final class UnitInbox: QueueInbox {
    typealias Member = AsyncTask

    private let word = Atomic<UInt>(0)

    /// `false` in a build with `-DBACKGROUNDABLE_PLAIN_INBOX`: adders never push.
    static var isEnabled: Bool {
        #if BACKGROUNDABLE_PLAIN_INBOX
            false
        #else
            true
        #endif
    }

    deinit {
        // A storage is released only once no pusher or drainer holds it, so the stack
        // is empty; this only balances the retains if that ever changed.
        _ = takeAll()
    }

    /// Whether a drainer is scheduled (a relaxed read: a hint for choosing the path; the
    /// push itself says whether it was right).
    var isDrainerScheduled: Bool {
        word.load(ordering: .relaxed) & 1 == 1
    }

    /// Pushes a claimed unit. `true` when no drainer is scheduled: the caller must run
    /// a transition, which admits it.
    func push(_ unit: AsyncTask) -> Bool {
        let node = UInt(bitPattern: Unmanaged.passRetained(unit).toOpaque())
        var old = word.load(ordering: .relaxed)
        while true {
            unit.inboxNext = old & ~1
            let (exchanged, current) = word.compareExchange(
                expected: old, desired: node | (old & 1),
                successOrdering: .releasing, failureOrdering: .relaxed)
            if exchanged { return old & 1 == 0 }
            old = current
        }
    }

    func takeAll() -> [QueueStateMachine<AsyncTask>.Admission] {
        var old = word.load(ordering: .relaxed)
        guard old > 1 else { return [] }
        while true {
            let (exchanged, current) = word.compareExchange(
                expected: old, desired: old & 1,
                successOrdering: .acquiring, failureOrdering: .relaxed)
            if exchanged { break }
            old = current
        }
        // Newest first on the stack: the units are reversed, then their admissions made
        // in one pass (reversing the admissions themselves moves far larger values).
        var units: [AsyncTask] = []
        var node = old & ~1
        while let pointer = UnsafeRawPointer(bitPattern: node) {
            let unit = Unmanaged<AsyncTask>.fromOpaque(pointer).takeRetainedValue()
            node = unit.inboxNext
            units.append(unit)
        }
        return units.reversed().map(\.admission)
    }

    func mirror(drainerScheduled: Bool) -> Bool {
        let current = word.load(ordering: .relaxed)
        if drainerScheduled {
            if current & 1 == 0 { word.bitwiseOr(1, ordering: .relaxed) }
            return true
        }
        guard current & 1 == 1 else { return true }
        return word.compareExchange(expected: 1, desired: 0, ordering: .relaxed).exchanged
    }

    func attach(
        _ unit: AsyncTask, _ handle: QueueStateMachine<AsyncTask>.Handle,
        machine: inout QueueStateMachine<AsyncTask>, actions: inout QueueStateMachine<AsyncTask>.ActionList
    ) {
        unit.attach(handle, machine: &machine, actions: &actions)
    }
}
