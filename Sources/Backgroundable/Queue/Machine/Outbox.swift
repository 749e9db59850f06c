/// What a queue owes its observers, in order: the deliveries posted under the lock and
/// not yet handed out, and who hands them out. One caller at a time is the *deliverer*:
/// the one whose post found nobody delivering; it takes batches until none is left, so
/// observers hear everything in the order it was posted, never two at once.
struct Outbox<Member: AnyObject> {
    typealias Delivery = QueueStateMachine<Member>.Delivery

    /// What posting a delivery asks of the poster.
    enum Posting: Equatable {
        /// A deliverer is at work and will hand it out.
        case queued
        /// Nobody was delivering: the poster is the deliverer now (``QueueStateMachine/Action/deliver``).
        case becameDeliverer
    }

    private var pending: [Delivery] = []
    /// The deliverer's batch buffer between two deliveries, kept so that posting and
    /// delivering allocate nothing once the queue has run.
    private var spare: [Delivery] = []
    private(set) var isDelivering = false

    mutating func post(_ delivery: Delivery) -> Posting {
        pending.append(delivery)
        guard !isDelivering else { return .queued }
        isDelivering = true
        return .becameDeliverer
    }

    /// Swaps the deliveries posted so far into `batch` (whose previous, delivered
    /// contents are dropped); `false` when there are none left: the deliverer stops, and
    /// the next post makes a new one. The two buffers are reused, not reallocated.
    mutating func take(into batch: inout [Delivery]) -> Bool {
        batch.removeAll(keepingCapacity: true)
        guard !pending.isEmpty else {
            isDelivering = false
            if batch.capacity <= 64 { swap(&batch, &spare) }
            return false
        }
        if batch.capacity == 0 { swap(&batch, &spare) }
        swap(&pending, &batch)
        return true
    }

    /// The last event still pending about `member` now tells `outcome` (when the member
    /// had been `admitted`) or goes (it was never in the queue). O(pending deliveries).
    mutating func correctEvent(of member: Member, admitted: Bool, outcome: AsyncTask.Outcome?) {
        guard
            let index = pending.lastIndex(where: {
                if case .event(let event) = $0 { event.member === member } else { false }
            })
        else { return }
        if admitted, let outcome {
            pending[index] = .event(.ended(member, outcome))
        } else {
            pending.remove(at: index)
        }
    }
}

extension Outbox: Sendable where Member: Sendable {}
