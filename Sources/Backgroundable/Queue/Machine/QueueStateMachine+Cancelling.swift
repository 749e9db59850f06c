/// The coordinator's cancellations: of one member (marked ending), of every member, of
/// those not executing, and of the members of one lane or one name. Each is one event
/// under the lock: every member it covers is marked ending before any has ended, so no
/// successor in a lane or a sequential group starts in between, and a member admitted
/// after it is untouched.
extension QueueStateMachine {
    /// Asks for a live member to end with `outcome`: it stops counting for
    /// deduplication and can no longer start; the storage ends it.
    mutating func markEnding(_ slot: Int32, _ outcome: AsyncTask.Outcome, actions: inout Actions<some MayEnd>) {
        guard let named = beginEnding(slot) else { return }
        actions.end(records[Int(slot)].member!, outcome, named: named)
    }

    /// ``markEnding(_:_:actions:)`` for a member the newcomer replaces.
    mutating func markReplaced(_ slot: Int32, by newcomer: Member, actions: inout Actions<some MayAdmit>) {
        guard beginEnding(slot) != nil else { return }
        actions.replace(records[Int(slot)].member!, by: newcomer)
    }

    /// A newcomer that was to join `primary` found that work cancelled (see
    /// ``UniquenessPolicy/join``): `primary`, which has ended but may not have left yet,
    /// no longer counts for its name, so the newcomer's admission does not meet it
    /// again. Only the newest member of the name can be it (a newcomer joins that one).
    mutating func forgetCancelled(_ primary: Member, named name: String) {
        guard let slot = names.last(named: name), records[Int(slot)].member === primary else { return }
        memberStopped(handle(of: slot))
    }

    /// Marks a live member ending; returns whether it counted for its name, or `nil`
    /// when it was ending already.
    private mutating func beginEnding(_ slot: Int32) -> Bool? {
        guard !records[Int(slot)].isEnding else { return nil }
        records[Int(slot)].isEnding = true
        return names.remove(slot)
    }

    /// Ends every live member (waiting and executing) with ``AsyncTask/Outcome/cancelled``.
    mutating func cancelAll(actions: inout Actions<some MayEnd>) {
        cancel(actions: &actions) { _ in true }
    }

    /// Ends the members that are not executing: waiting, delayed, or between two
    /// attempts.
    mutating func cancelPending(actions: inout Actions<some MayEnd>) {
        cancel(actions: &actions) { $0 != .executing }
    }

    /// Ends the live members whose place `matches`. O(n) in the records held, with no
    /// sort: they are marked in slot order, and all of them before any has ended, so no
    /// successor in a sequential group can start in between.
    private mutating func cancel(actions: inout Actions<some MayEnd>, where matches: (Place) -> Bool) {
        for slot in records.indices {
            guard records[slot].ticket != 0, !records[slot].isEnding, matches(records[slot].place) else { continue }
            markEnding(Int32(slot), .cancelled, actions: &actions)
        }
    }

    /// Ends every live member of `lane` (waiting, delayed, blocked in the lane, between
    /// two attempts, or executing) with ``AsyncTask/Outcome/cancelled``. Returns how many
    /// it ends. O(members of the lane): the lane's members are chained from its last one
    /// back to the first, which is the only one not blocked.
    mutating func cancel(lane: LaneKey, actions: inout Actions<some MayEnd>) -> Int {
        var cancelled = 0
        var cursor = lanes.tail(of: lane) ?? -1
        while cursor >= 0 {
            let slot = cursor
            cursor = records[Int(slot)].place.isBlocked ? records[Int(slot)].predecessor : -1
            guard !records[Int(slot)].isEnding else { continue }
            markEnding(slot, .cancelled, actions: &actions)
            cancelled += 1
        }
        return cancelled
    }

    /// Ends every live member named `name`, whatever its place, with
    /// ``AsyncTask/Outcome/cancelled``. Returns how many it ends. O(members of the name).
    mutating func cancel(named name: String, actions: inout Actions<some MayEnd>) -> Int {
        var cancelled = 0
        var cursor = names.first(named: name) ?? -1
        while cursor >= 0 {
            let next = names.next(after: cursor)
            markEnding(cursor, .cancelled, actions: &actions)
            cancelled += 1
            cursor = next
        }
        return cancelled
    }
}
