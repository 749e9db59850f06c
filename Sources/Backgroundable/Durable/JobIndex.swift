import Foundation

/// The stored jobs of a single-owner store, indexed so that every store call costs
/// O(log n) or less however many jobs are stored: names, lanes, and the jobs that can
/// be claimed, by due time and then by priority and arrival. A pure value: the store
/// holds it under its lock and does the I/O its answers call for.
///
/// A job can be claimed ("eligible") when nobody holds it and it has no lane or is the
/// first job of its lane, and no other job of its lane is held: only the first job of a
/// lane can be held, so that is "first, and not held". Eligible jobs wait, in the line
/// of their kind, in `notDue` until their `runAt`, then in `due`: a claim looks only at
/// the lines of the kinds it asks for, so jobs of other kinds (those of another queue on
/// the same store, those a newer version of the app stored) cost it nothing. Entries
/// carry the job's version and are skipped once it has changed, instead of being
/// searched for and removed.
struct JobIndex {
    private struct Entry {
        var record: DurableJobRecord
        var isClaimed = false
        /// Its current entry waits in its kind's line.
        var isQueued = false
        var version: UInt64
    }

    /// An entry of a line: which job, at which version.
    private protocol LineEntry: Comparable {
        var id: DurableJobID { get }
        var version: UInt64 { get }
    }

    private struct NotDue: LineEntry {
        var runAt: Date
        var sequence: Int64
        var id: DurableJobID
        var version: UInt64
        static func < (a: Self, b: Self) -> Bool { (a.runAt, a.sequence) < (b.runAt, b.sequence) }
        static func == (a: Self, b: Self) -> Bool { a.id == b.id && a.version == b.version }
    }

    private struct Due: LineEntry {
        var priority: UInt8
        var sequence: Int64
        var id: DurableJobID
        var version: UInt64
        // Highest priority first, then first come, first served.
        static func < (a: Self, b: Self) -> Bool {
            a.priority != b.priority ? a.priority > b.priority : a.sequence < b.sequence
        }
        static func == (a: Self, b: Self) -> Bool { a.id == b.id && a.version == b.version }
    }

    /// A lane's jobs in order of arrival; ids of jobs no longer stored are skipped.
    private struct Lane {
        var ids: [DurableJobID] = []
        var head = 0
    }

    /// The eligible jobs of one kind.
    private struct Line {
        var notDue = BinaryHeap<NotDue>()
        var due = BinaryHeap<Due>()
        /// Entries of jobs removed or changed since they were queued, still in the heaps.
        var stale = 0
    }

    private var entries: [DurableJobID: Entry] = [:]
    private var names: [String: DurableJobID] = [:]
    private var lanes: [String: Lane] = [:]
    private var lines: [String: Line] = [:]
    private var nextVersion: UInt64 = 0
    private(set) var nextSequence: Int64 = 1

    var count: Int { entries.count }

    func record(_ id: DurableJobID) -> DurableJobRecord? { entries[id]?.record }

    func job(named name: String) -> DurableJobID? { names[name] }

    /// Every job, in order of arrival.
    var records: [DurableJobRecord] {
        entries.values.map(\.record).sorted { $0.sequence < $1.sequence }
    }

    /// Adds a job that is not stored, unclaimed; its sequence must be set (see
    /// ``takeSequence()``). Jobs read back from disk are added in order of arrival.
    mutating func insert(_ record: DurableJobRecord) {
        precondition(entries[record.id] == nil, "JobIndex: job \(record.id) is stored already")
        nextSequence = max(nextSequence, record.sequence + 1)
        entries[record.id] = Entry(record: record, version: bumpVersion())
        if let name = record.name { names[name] = record.id }
        if let lane = record.lane {
            lanes[lane, default: Lane()].ids.append(record.id)
        }
        makeEligibleIfFirst(record.id)
    }

    mutating func takeSequence() -> Int64 {
        defer { nextSequence += 1 }
        return nextSequence
    }

    /// Removes a job, claimed or not; the next job of its lane becomes eligible.
    @discardableResult
    mutating func remove(_ id: DurableJobID) -> DurableJobRecord? {
        guard let entry = entries.removeValue(forKey: id) else { return nil }
        if entry.isQueued { markStale(in: entry.record.kind) }
        if let name = entry.record.name, names[name] == id { names[name] = nil }
        if let laneName = entry.record.lane, var lane = lanes[laneName] {
            skipRemoved(&lane)
            if lane.head == lane.ids.count {
                lanes[laneName] = nil
            } else {
                lanes[laneName] = lane
                makeEligibleIfFirst(lane.ids[lane.head])
            }
        }
        return entry.record
    }

    /// Claims up to `limit` eligible jobs due by `now` whose kind is in `kinds`, counting
    /// an attempt on each; returns them, highest priority first, then in order of arrival.
    mutating func claim(kinds: Set<String>, limit: Int, now: Date) -> [DurableJobRecord] {
        let kinds = kinds.filter { lines[$0] != nil }
        for kind in kinds { moveDue(of: kind, by: now) }
        var claimed: [DurableJobRecord] = []
        while claimed.count < limit {
            var best: (kind: String, top: Due)?
            for kind in kinds {
                guard let top = currentDue(of: kind) else { continue }
                if best.map({ top < $0.top }) ?? true { best = (kind, top) }
            }
            guard let best else { break }
            lines[best.kind]?.due.removeMin()
            var entry = entries[best.top.id]!
            entry.isClaimed = true
            entry.isQueued = false
            entry.record.attempt += 1
            entry.version = bumpVersion()
            entries[best.top.id] = entry
            claimed.append(entry.record)
        }
        return claimed
    }

    /// The earliest `runAt` of an eligible job of one of `kinds`, or `nil`; `now` when one
    /// is due.
    mutating func nextDueDate(kinds: Set<String>, now: Date) -> Date? {
        var earliest: Date?
        for kind in kinds where lines[kind] != nil {
            moveDue(of: kind, by: now)
            if currentDue(of: kind) != nil { return now }
            if let top = currentNotDue(of: kind) { earliest = min(earliest ?? top.runAt, top.runAt) }
        }
        return earliest
    }

    /// Replaces a stored job's record (after a claim's write, a retry or a release),
    /// unclaiming it when `claimed` is `false`. Returns `false` for a job not stored.
    @discardableResult
    mutating func update(_ record: DurableJobRecord, claimed: Bool) -> Bool {
        guard var entry = entries[record.id] else { return false }
        let wasQueued = entry.isQueued
        entry.record = record
        entry.isClaimed = claimed
        entry.isQueued = false
        entry.version = bumpVersion()
        entries[record.id] = entry
        if wasQueued { markStale(in: record.kind) }
        if !claimed { makeEligibleIfFirst(record.id) }
        return true
    }

    func isClaimed(_ id: DurableJobID) -> Bool { entries[id]?.isClaimed ?? false }

    /// How many entries the line of `kind` holds, current or not (for tests: a claim of
    /// other kinds leaves them where they are).
    func lineEntries(of kind: String) -> (notDue: Int, due: Int) {
        (lines[kind]?.notDue.count ?? 0, lines[kind]?.due.count ?? 0)
    }

    // MARK: - Eligibility

    private mutating func bumpVersion() -> UInt64 {
        nextVersion += 1
        return nextVersion
    }

    private func isCurrent(_ id: DurableJobID, _ version: UInt64) -> Bool {
        entries[id]?.version == version
    }

    private mutating func skipRemoved(_ lane: inout Lane) {
        while lane.head < lane.ids.count, entries[lane.ids[lane.head]] == nil { lane.head += 1 }
        if lane.head > 64, lane.head * 2 > lane.ids.count {
            lane.ids.removeFirst(lane.head)
            lane.head = 0
        }
    }

    /// Queues `id` to be claimed if it is unclaimed and first in its lane.
    private mutating func makeEligibleIfFirst(_ id: DurableJobID) {
        guard var entry = entries[id], !entry.isClaimed, !entry.isQueued else { return }
        if let laneName = entry.record.lane, var lane = lanes[laneName] {
            skipRemoved(&lane)
            lanes[laneName] = lane
            guard lane.ids[lane.head] == id else { return }
        }
        entry.isQueued = true
        entries[id] = entry
        let record = entry.record
        lines[record.kind, default: Line()].notDue.insert(
            NotDue(runAt: record.runAt, sequence: record.sequence, id: id, version: entry.version))
    }

    private mutating func moveDue(of kind: String, by now: Date) {
        while let top = lines[kind]?.notDue.min, top.runAt <= now {
            lines[kind]?.notDue.removeMin()
            guard let entry = entries[top.id], entry.version == top.version else {
                lines[kind]?.stale -= 1
                continue
            }
            lines[kind]?.due.insert(
                Due(priority: entry.record.priority, sequence: top.sequence, id: top.id, version: top.version))
        }
    }

    /// The first due job of `kind` that is still current, dropping those that are not.
    private mutating func currentDue(of kind: String) -> Due? { currentTop(\.due, of: kind) }

    /// The first job of `kind` not yet due that is still current, dropping those that
    /// are not.
    private mutating func currentNotDue(of kind: String) -> NotDue? { currentTop(\.notDue, of: kind) }

    /// The first still-current entry of one of `kind`'s heaps, dropping the stale ones
    /// in front of it (each one found stale is taken off the line's `stale` count).
    private mutating func currentTop<Waiting: LineEntry>(
        _ heap: WritableKeyPath<Line, BinaryHeap<Waiting>>, of kind: String
    ) -> Waiting? {
        while let top = lines[kind]?[keyPath: heap].min {
            if isCurrent(top.id, top.version) { return top }
            lines[kind]?[keyPath: heap].removeMin()
            lines[kind]?.stale -= 1
        }
        return nil
    }

    /// One more entry of `kind`'s line is stale. Once most of a line is, it is swept (in
    /// O(n), paid for by the changes that made the entries stale), so that a kind no
    /// claim asks for keeps no more entries than it has jobs, give or take a few.
    private mutating func markStale(in kind: String) {
        guard var line = lines.removeValue(forKey: kind) else { return }
        line.stale += 1
        if line.stale > 64, line.stale * 2 > line.notDue.count + line.due.count {
            line.notDue.removeAll { !isCurrent($0.id, $0.version) }
            line.due.removeAll { !isCurrent($0.id, $0.version) }
            line.stale = 0
        }
        if !line.notDue.isEmpty || !line.due.isEmpty { lines[kind] = line }
    }
}
