@testable import Backgroundable

extension FrontEnd {
    /// The public contract of a ``BackgroundQueue``, written plainly for one driver: which
    /// units are waiting, executing or ended with which outcome, which start next (a free
    /// slot, not suspended, the highest rank, then the earliest to become ready; a unit
    /// escalated while it waits becomes ready again at its new rank), which events each
    /// unit hears, how many busy periods there were. Only what SPEC.md and the docs promise.
    struct Reference {
        enum Style { case task, callback, run }

        enum Phase: Equatable {
            /// Not handed to the queue (yet), or never will be.
            case outside
            case waiting
            case executing
            /// Joined a live unit (``UniquenessPolicy/join``): ends with its outcome.
            case joined(primary: Int)
            case ended(AsyncTask.Outcome.Kind)
        }

        /// The events of a unit, escalations aside.
        enum Heard: Equatable, CustomStringConvertible {
            case enqueued
            case started
            case ended(AsyncTask.Outcome.Kind)
            case joined(Int)

            var description: String {
                switch self {
                case .enqueued: "enqueued"
                case .started: "started"
                case .ended(let kind): "ended(\(kind))"
                case .joined(let primary): "joined(\(primary))"
                }
            }
        }

        struct Unit {
            let id: Int
            let style: Style
            let name: String?
            let policy: UniquenessPolicy
            /// In seconds of the test clock; 0 expires as the unit would start.
            let timeout: Int?
            var rank: UInt8
            var phase = Phase.outside
            var admission = 0
            var readySequence = 0
            var startedAt: Int64 = 0
            /// The rank it started at; `nil` until it starts.
            var rankAtStart: UInt8?
            /// The least rank its body reads when it returns (escalations while it ran).
            var rankAtEnd: UInt8 = 0
            var heard: [Heard] = []
            /// A `run` whose caller was cancelled before it called: it touches nothing.
            var preCancelled = false
            /// The test let its body return through its gate.
            var released = false

            var isLive: Bool { phase == .waiting || phase == .executing }
            var isJoined: Bool {
                if case .joined = phase { true } else { false }
            }
            var outcome: AsyncTask.Outcome.Kind? {
                if case .ended(let kind) = phase { kind } else { nil }
            }
        }

        var units: [Int: Unit] = [:]
        let limit: Int
        var suspensions = 0
        /// Seconds of the test clock since the start.
        var now: Int64 = 0
        var periods = 0
        private var admissions = 0
        private var readySequences = 0

        /// What the steps made happen since the driver last looked, for it to wait for.
        private(set) var newStarts: [Int] = []
        private(set) var newEnds: [Int] = []
        /// Executing async units that ended: their bodies, cancelled, return.
        private(set) var newExits: [Int] = []

        init(limit: Int) {
            self.limit = limit
        }

        /// A priority's rank: none ranks as `medium`, like a `Task`'s.
        static func rank(_ raw: UInt8) -> UInt8 {
            raw == 0 ? TaskPriority.medium.rawValue : raw
        }

        var executingCount: Int { units.values.count { $0.phase == .executing } }
        var enqueuedCount: Int { units.values.count { $0.phase == .waiting } }
        var isBusy: Bool { units.values.contains { $0.isLive } }

        /// The live units of `name`, oldest first.
        func live(named name: String) -> [Unit] {
            units.values.filter { $0.name == name && $0.isLive }.sorted { $0.admission < $1.admission }
        }

        /// Unit `id` arrives: its policy applies against the live units of its name.
        mutating func arrive(_ id: Int) {
            let unit = units[id]!
            let live = unit.name.map { self.live(named: $0) } ?? []
            switch unit.policy {
            case .drop where !live.isEmpty:
                units[id]!.phase = .ended(.dropped)
                units[id]!.heard.append(.ended(.dropped))
                newEnds.append(id)
            case .join where !live.isEmpty:
                // The live unit of the name added last.
                units[id]!.phase = .joined(primary: live.last!.id)
                units[id]!.heard.append(.joined(live.last!.id))
            case .replace:
                // In one step with the add: no idle period in between.
                admit(id)
                for other in live { end(other.id, .replaced) }
            default:
                admit(id)
            }
        }

        private mutating func admit(_ id: Int) {
            if !isBusy { periods += 1 }
            admissions += 1
            readySequences += 1
            units[id]!.admission = admissions
            units[id]!.readySequence = readySequences
            units[id]!.phase = .waiting
            units[id]!.heard.append(.enqueued)
        }

        /// The unit that a caller awaiting `id` escalates: itself, or the work it joined.
        func escalationTarget(_ id: Int) -> Int? {
            switch units[id]?.phase {
            case .waiting?, .executing?: id
            case .joined(let primary)?: units[primary]!.isLive ? primary : nil
            default: nil
            }
        }

        /// A caller of rank `rank` awaits `id` (the queue confirmed it with an event).
        mutating func escalate(_ id: Int, to rank: UInt8) {
            guard let unit = units[id], unit.isLive, rank > unit.rank else { return }
            units[id]!.rank = rank
            if unit.phase == .waiting {
                readySequences += 1
                units[id]!.readySequence = readySequences
            } else {
                units[id]!.rankAtEnd = max(unit.rankAtEnd, rank)
            }
        }

        /// Unit `id` reached `kind`; the units that joined it end with it.
        mutating func end(_ id: Int, _ kind: AsyncTask.Outcome.Kind) {
            guard let unit = units[id], unit.outcome == nil else { return }
            units[id]!.phase = .ended(kind)
            newEnds.append(id)
            guard unit.isLive else { return }
            units[id]!.heard.append(.ended(kind))
            if unit.phase == .executing, unit.style != .callback { newExits.append(id) }
            for joiner in units.values.sorted(by: { $0.id < $1.id }) where joiner.phase == .joined(primary: id) {
                units[joiner.id]!.phase = .ended(kind)
                newEnds.append(joiner.id)
            }
        }

        /// Starts what may start: free slots, not suspended, highest rank first, then the
        /// earliest ready. A unit whose timeout is zero expires as it would start.
        mutating func startReady() {
            while suspensions == 0, executingCount < limit {
                let waiting = units.values.filter { $0.phase == .waiting }
                guard let next = waiting.max(by: { ($0.rank, -$0.readySequence) < ($1.rank, -$1.readySequence) })
                else { break }
                if next.timeout == 0 {
                    end(next.id, .timedOut)
                    continue
                }
                units[next.id]!.phase = .executing
                units[next.id]!.startedAt = now
                units[next.id]!.rankAtStart = next.rank
                units[next.id]!.rankAtEnd = next.rank
                units[next.id]!.heard.append(.started)
                newStarts.append(next.id)
            }
        }

        /// The clock moved by `seconds`: executing units whose timeout passed time out.
        mutating func advance(by seconds: Int64) {
            now += seconds
            for unit in units.values.sorted(by: { $0.id < $1.id }) where unit.phase == .executing {
                if let timeout = unit.timeout, timeout > 0, unit.startedAt + Int64(timeout) <= now {
                    end(unit.id, .timedOut)
                }
            }
        }

        mutating func cancelAll() {
            for unit in units.values.sorted(by: { $0.id < $1.id }) where unit.isLive {
                end(unit.id, .cancelled)
            }
        }

        /// The queue was dropped: the units not executing end cancelled.
        mutating func close() {
            for unit in units.values.sorted(by: { $0.id < $1.id }) where unit.phase == .waiting {
                end(unit.id, .cancelled)
            }
        }

        /// What happened since the last call.
        mutating func takeEffects() -> (starts: [Int], ends: [Int], exits: [Int]) {
            defer { (newStarts, newEnds, newExits) = ([], [], []) }
            return (newStarts, newEnds, newExits)
        }
    }
}
