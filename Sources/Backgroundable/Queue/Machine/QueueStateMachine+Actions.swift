/// What the machine takes in (``Admission``), names (``Handle``) and hands back to the
/// storage (``Action``, ``Actions``, ``Delivery``): the contract between
/// ``QueueStateMachine`` and ``QueueStorage``.
extension QueueStateMachine {
    /// A member arriving, with the attributes the rules need.
    struct Admission {
        let member: Member
        let name: String?
        let policy: UniquenessPolicy
        /// The raw `TaskPriority`, 0 for none (ranks as `medium`).
        let priority: UInt8
        /// Nanoseconds from the start until the member times out; `nil` for never.
        let timeout: Int64?
        /// Nanoseconds from the admission before which the member may not start; 0 or
        /// less for none.
        var delay: Int64 = 0
        /// The member's lane: members of one lane run one at a time, in admission
        /// order. Ignored in a sequential batch (the batch is a lane of its own).
        var lane: LaneKey? = nil
        /// `priority` is higher than the member's own: a caller awaiting it escalated it
        /// before it was admitted (listeners hear `escalated` after `enqueued`).
        var escalated = false
    }

    /// What the storage must do once the lock is released, in order.
    enum Action {
        /// Start the member's work (it is counted as executing), at `priority` (its own,
        /// or higher when it was escalated while it waited).
        case start(Member, priority: UInt8)
        /// End the member with this outcome; its ``memberEnded(_:_:actions:)`` follows
        /// (with this outcome, or the one it reached first). A member that counted for its
        /// name (`named`) is settled under the lock: the name is free for newcomers from
        /// this transition on, so a body it leaves running must be known to them in the
        /// same step (see ``LingeringBodies``).
        case end(Member, AsyncTask.Outcome, named: Bool)
        /// The newcomer `by` replaced the member (``UniquenessPolicy/replace``): end it
        /// ``AsyncTask/Outcome/replaced``, atomically with the newcomer's add (the storage
        /// settles it under the lock), and start the newcomer's work only once the
        /// member's body returned. Its ``memberEnded(_:_:actions:)`` follows.
        case replace(Member, by: Member)
        /// The member was not admitted (dropped, or the queue is closed or stopped
        /// accepting work) or, with ``AsyncTask/Outcome/timedOut``, it expired as it would
        /// start and left: end it with this outcome. Nothing follows. When an event
        /// `reported` it, the storage settles it under the lock, so that the event tells
        /// the outcome the member has (see ``correctEvent(of:admitted:outcome:)``).
        case reject(Member, AsyncTask.Outcome, reported: Bool)
        /// The member was not admitted: it joins the live member `primary` of its name
        /// and ends with its outcome (``UniquenessPolicy/join``). Nothing follows. Settled
        /// under the lock when an event `reported` it. `inSequence`: it came in a
        /// sequential group (see ``QueueDecision/join(primary:inSequence:)``).
        case join(Member, primary: Member, reported: Bool, inSequence: Bool)
        /// Read the progress of these executing members (outside the lock), then send
        /// ``progressSampled(_:actions:)``.
        case sampleProgress([(Handle, Member)])
        /// Make sure a sleeper wakes the queue at `deadline` (the queue's clock, in
        /// nanoseconds) and sends ``deadlineReached(generation:actions:)`` with
        /// `generation`; a sleeper of an older generation may stop.
        case armSleeper(deadline: Int64, generation: UInt64)
        /// Run ``drain(actions:)`` from a new task until it returns `false`.
        case spawnDrainer
        /// The caller became the deliverer: after the other actions, take
        /// ``takeDeliveries()`` until it returns `nil`.
        case deliver
    }

    /// The actions of one locked step (see ``QueueActions``), of these kinds.
    typealias Actions<Kinds: ActionKinds> = QueueActions<Member, Kinds>
    /// The list of a whole locked step: it takes every kind of action, and the storage
    /// (and the front ends' glue that runs under its lock) may append any of them.
    typealias ActionList = QueueActions<Member, AllActionKinds>

    /// What the deliverer hands to observers, in order, one delivery at a time.
    enum Delivery {
        /// idle → busy: begin background time, then send
        /// ``backgroundTimeBegun(period:actions:)``, then tell the delegate.
        case busy(period: UInt64)
        /// busy → idle: end background time, tell the delegate, then send
        /// ``idleDelivered(period:)`` and resume the waiters it returns.
        case idle(period: UInt64)
        case event(QueueEvent<Member>)
        /// The queue's progress changed (or is due for a sample): the deliverer reads it
        /// (``readProgress(names:)``) and hands it to the progress watchers. Posted only
        /// while someone watches, at most once until it is taken.
        case progress
        /// The queue was closed and is idle: nothing more will be delivered.
        case closed
    }

    /// How a front end names a member it admitted, in later events: its slot and the
    /// ticket of its admission. A handle whose member has left (its slot free, or
    /// reused by a later admission with another ticket) names nothing, so an event that
    /// arrives late is ignored instead of touching another member. Members carry their
    /// handle; the machine keeps no map from members to slots.
    struct Handle: Sendable, Hashable {
        let slot: Int32
        let ticket: UInt64
    }
}

extension QueueStateMachine.Admission: Sendable where Member: Sendable {}
extension QueueStateMachine.Action: Sendable where Member: Sendable {}
extension QueueStateMachine.Delivery: Sendable where Member: Sendable {}

extension QueueStateMachine.Admission {
    /// An admission whose lane, if any, is a string.
    init(
        member: Member, name: String?, policy: UniquenessPolicy, priority: UInt8, timeout: Int64?,
        delay: Int64 = 0, lane: String?, escalated: Bool = false
    ) {
        self.init(
            member: member, name: name, policy: policy, priority: priority, timeout: timeout, delay: delay,
            lane: lane.map(LaneKey.init), escalated: escalated)
    }
}

/// The actions of one locked step, in order: those of the event, and of the inbox's
/// admissions the storage runs in the same step.
///
/// `Kinds` says which actions may be appended: each event takes
/// `inout Actions<some MayStart & MayEnd>` (say), so its signature states what it can
/// ask of the storage, and the compiler holds its code to that (a transition that
/// only ends members cannot start one). The storage holds one
/// ``QueueStateMachine/ActionList``, which
/// takes every kind, for the whole step; the kinds cost nothing at run time.
///
/// Most steps have one or two actions: those are kept inline, so a step allocates
/// nothing for them (this pays on the idle queue's path, where each add and end is a
/// few transitions).
struct QueueActions<Member: AnyObject, Kinds: ActionKinds>: Sequence {
    typealias Action = QueueStateMachine<Member>.Action
    typealias Handle = QueueStateMachine<Member>.Handle

    private var inline: (Action?, Action?) = (nil, nil)
    private var more: [Action] = []
    /// Whether the transition made its caller the deliverer (``QueueStateMachine/Action/deliver``).
    private(set) var delivers = false
    /// Whether an action must be settled under the lock (``QueueStateMachine/Action/replace(_:by:)``, a
    /// named ``QueueStateMachine/Action/end(_:_:named:)``, ``QueueStateMachine/Action/reject(_:_:reported:)``,
    /// ``QueueStateMachine/Action/join(_:primary:reported:)``).
    private(set) var needsSettling = false

    init() {}

    var isEmpty: Bool { inline.0 == nil }

    /// Empties the list (releasing what its actions hold), keeping the storage of its
    /// overflow: the drainer, whose rounds start up to 64 members each, reuses one
    /// list for all its rounds instead of growing a new one every time.
    mutating func removeAll() {
        inline = (nil, nil)
        more.removeAll(keepingCapacity: true)
        delivers = false
        needsSettling = false
    }

    // MARK: Appending, by kind

    mutating func deliver() where Kinds: MayDeliver { insert(.deliver) }

    mutating func armSleeper(deadline: Int64, generation: UInt64) where Kinds: MayArmSleeper {
        insert(.armSleeper(deadline: deadline, generation: generation))
    }

    mutating func start(_ member: Member, priority: UInt8) where Kinds: MayStart {
        insert(.start(member, priority: priority))
    }

    /// The member expired as it would start (see
    /// ``QueueStateMachine/Action/reject(_:_:reported:)``).
    mutating func expire(_ member: Member, reported: Bool) where Kinds: MayStart {
        insert(.reject(member, .timedOut, reported: reported))
    }

    mutating func spawnDrainer() where Kinds: MayStart { insert(.spawnDrainer) }

    mutating func end(_ member: Member, _ outcome: AsyncTask.Outcome, named: Bool) where Kinds: MayEnd {
        insert(.end(member, outcome, named: named))
    }

    mutating func reject(_ member: Member, _ outcome: AsyncTask.Outcome, reported: Bool) where Kinds: MayAdmit {
        insert(.reject(member, outcome, reported: reported))
    }

    mutating func join(_ member: Member, primary: Member, reported: Bool, inSequence: Bool) where Kinds: MayAdmit {
        insert(.join(member, primary: primary, reported: reported, inSequence: inSequence))
    }

    mutating func replace(_ member: Member, by newcomer: Member) where Kinds: MayAdmit {
        insert(.replace(member, by: newcomer))
    }

    mutating func sampleProgress(_ members: [(Handle, Member)]) where Kinds: MaySample {
        insert(.sampleProgress(members))
    }

    /// Any action: for the storage and the glue of front ends, which hold the list of a
    /// whole step (``QueueStateMachine/ActionList``).
    mutating func append(_ action: Action) where Kinds == AllActionKinds { insert(action) }

    /// The one way in.
    private mutating func insert(_ action: Action) {
        switch action {
        case .deliver: delivers = true
        case .replace, .end(_, _, named: true), .reject(_, _, reported: true), .join(_, _, reported: true, _):
            needsSettling = true
        default: break
        }
        if inline.0 == nil {
            inline.0 = action
        } else if inline.1 == nil {
            inline.1 = action
        } else {
            more.append(action)
        }
    }

    struct Iterator: IteratorProtocol {
        fileprivate let actions: QueueActions
        fileprivate var index = 0

        mutating func next() -> Action? {
            defer { index += 1 }
            switch index {
            case 0: return actions.inline.0
            case 1: return actions.inline.1
            default: return index - 2 < actions.more.count ? actions.more[index - 2] : nil
            }
        }
    }

    func makeIterator() -> Iterator { Iterator(actions: self) }

    /// Calls `body` with each action, in order, without the iterator's copy of the
    /// whole list (which retains every member it names): the storage's way.
    func visit(_ body: (Action) -> Void) {
        guard let first = inline.0 else { return }
        body(first)
        guard let second = inline.1 else { return }
        body(second)
        for action in more { body(action) }
    }
}

extension QueueActions: Sendable where Member: Sendable {}

extension QueueActions: ExpressibleByArrayLiteral where Kinds == AllActionKinds {
    init(arrayLiteral actions: Action...) {
        self.init()
        for action in actions { append(action) }
    }
}

// MARK: Kinds of actions

/// What a list of ``QueueActions`` may carry; see the protocols below.
/// Only phantom types conform: a kind is never made.
protocol ActionKinds {}
/// The caller may become the deliverer (``QueueStateMachine/Action/deliver``): events,
/// busy and idle notifications, progress.
protocol MayDeliver: ActionKinds {}
/// A sleeper may be armed (``QueueStateMachine/Action/armSleeper(deadline:generation:)``).
protocol MayArmSleeper: ActionKinds {}
/// Members may start (``QueueStateMachine/Action/start(_:priority:)``), or expire as
/// they would start, and a drainer may be asked for; starting arms deadlines and tells
/// observers.
protocol MayStart: MayDeliver, MayArmSleeper {}
/// Live members may be asked to end (``QueueStateMachine/Action/end(_:_:named:)``).
protocol MayEnd: ActionKinds {}
/// A newcomer may be turned away, join a live member or replace live members
/// (``QueueStateMachine/Action/reject(_:_:reported:)``,
/// ``QueueStateMachine/Action/join(_:primary:reported:)``,
/// ``QueueStateMachine/Action/replace(_:by:)``); an admission tells observers.
protocol MayAdmit: MayDeliver {}
/// The executing members' progress may be sampled
/// (``QueueStateMachine/Action/sampleProgress(_:)``).
protocol MaySample: ActionKinds {}

/// Every kind: the list of a whole locked step (``QueueStateMachine/ActionList``).
enum AllActionKinds: MayStart, MayEnd, MayAdmit, MaySample {}
