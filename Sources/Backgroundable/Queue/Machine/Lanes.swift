/// The lanes: each lane's last live member, which a newcomer of the lane waits behind.
/// The members of a lane are linked in the machine's records (each blocked one names its
/// predecessor), so a lane is known by its tail alone.
struct Lanes {
    /// The last member of each lane, by lane; and the lane of each such member.
    private var tails: [String: Int32] = [:]
    private var lanesByTail: [Int32: String] = [:]

    /// Entries held: nothing once every lane is empty.
    var count: Int { tails.count + lanesByTail.count }

    /// The last live member of `lane`, if any.
    func tail(of lane: String) -> Int32? {
        tails[lane]
    }

    /// Makes `slot` the last member of `lane`: returns the member it waits behind (the
    /// lane's previous last one), or `nil` when the lane was empty.
    mutating func join(_ lane: String, _ slot: Int32) -> Int32? {
        lanesByTail[slot] = lane
        guard let tail = tails.updateValue(slot, forKey: lane) else { return nil }
        lanesByTail[tail] = nil
        return tail
    }

    /// `slot` leaves: if it was the last of its lane, `predecessor` (the member it was
    /// blocked behind; -1 for none) is the last now, or the lane is empty.
    mutating func leave(_ slot: Int32, predecessor: Int32) {
        guard !lanesByTail.isEmpty, let lane = lanesByTail.removeValue(forKey: slot) else { return }
        if predecessor >= 0 {
            tails[lane] = predecessor
            lanesByTail[predecessor] = lane
        } else {
            tails[lane] = nil
        }
    }

    mutating func removeAll() {
        tails = [:]
        lanesByTail = [:]
    }
}
