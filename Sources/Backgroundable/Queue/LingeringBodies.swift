/// The bodies that may still run although their member ended (replaced, or a unit
/// cancelled or timed out while its body ran), by name (`nil` for a unit without one): a
/// shutdown waits for all of them (``all()``); a member added later with
/// their name and a policy other than ``UniquenessPolicy/ignore`` waits for them,
/// whether or not it replaces anything — the newcomer that replaced them may itself have
/// ended before it ran — so bodies of one deduplicated name never overlap. A unit waits
/// on their ``ReplacementGate``s, an operation of the bridge depends on the replaced
/// ``AsyncOperation``s. Under the queue's lock; bodies that returned are dropped as they
/// are met, and all of them whenever the table has doubled since it was last swept
/// (counted in bodies, so one name cancelled again and again is swept too).
struct LingeringBodies {
    private var bodies: [String?: [any LingeringBody]] = [:]
    /// The bodies held, over every name.
    private(set) var count = 0
    private var sweepAt = 8

    var isEmpty: Bool { bodies.isEmpty }

    mutating func add(_ body: any LingeringBody, named name: String?) {
        bodies[name, default: []].append(body)
        count += 1
        if count >= sweepAt { sweep() }
    }

    /// Every body that may still run, of every name. O(bodies held), for a shutdown.
    mutating func all() -> [any LingeringBody] {
        sweep()
        return bodies.values.flatMap { $0 }
    }

    private mutating func sweep() {
        bodies = bodies.compactMapValues { bodies in
            let running = bodies.filter { !$0.hasReturned }
            return running.isEmpty ? nil : running
        }
        count = bodies.values.reduce(0) { $0 + $1.count }
        sweepAt = max(8, 2 * count)
    }

    /// The bodies of `name` that may still run.
    mutating func running(named name: String) -> [any LingeringBody] {
        guard let all = bodies[name] else { return [] }
        let running = all.filter { !$0.hasReturned }
        bodies[name] = running.isEmpty ? nil : running
        count -= all.count - running.count
        return running
    }
}

/// A body that may still run after its member ended (see ``LingeringBodies``).
protocol LingeringBody: AnyObject, Sendable {
    /// `true` once it returned, or when it can no longer run. Takes its own lock only.
    var hasReturned: Bool { get }
}
