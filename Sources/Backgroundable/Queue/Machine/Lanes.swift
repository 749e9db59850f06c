/// The lanes: each lane's last live member, which a newcomer of the lane waits behind.
/// The members of a lane are linked in the machine's records (each blocked one names its
/// predecessor), so a lane is known by its tail alone.
struct Lanes {
    /// The last member of each lane, by lane; and the lane of each such member.
    private var tails: [LaneKey: Int32] = [:]
    private var lanesByTail: [Int32: LaneKey] = [:]

    /// Entries held: nothing once every lane is empty.
    var count: Int { tails.count + lanesByTail.count }

    /// The last live member of `lane`, if any.
    func tail(of lane: LaneKey) -> Int32? {
        tails[lane]
    }

    /// Makes `slot` the last member of `lane`: returns the member it waits behind (the
    /// lane's previous last one), or `nil` when the lane was empty.
    mutating func join(_ lane: LaneKey, _ slot: Int32) -> Int32? {
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

/// A lane's key: any `Hashable & Sendable` value (``AsyncTask/Options/lane``). Values of
/// one type share a lane when they are equal; values of different types never do (an
/// `Int` 1 and a `UInt8` 1, or a class and its subclass, are two lanes).
///
/// A `String`, the usual key, is held as itself: 16 bytes, hashed and compared as a
/// string. Any other value is boxed once, when its options are made.
struct LaneKey: Hashable, Sendable {
    private enum Storage: Hashable, Sendable {
        case string(String)
        case other(AnyLaneValue)
    }

    private let storage: Storage

    init<Value: Hashable & Sendable>(_ value: Value) {
        if Value.self == String.self {
            storage = .string(unsafeBitCast(value, to: String.self))
        } else {
            storage = .other(AnyLaneValue(value))
        }
    }

    /// The value the key was made from.
    var value: any Hashable & Sendable {
        switch storage {
        case .string(let string): string
        case .other(let other): other.value
        }
    }
}

/// A lane key of a type other than `String`: equal to another only when both are of the
/// same type and equal.
private final class AnyLaneValue: Hashable, Sendable {
    let value: any Hashable & Sendable

    init(_ value: any Hashable & Sendable) {
        self.value = value
    }

    static func == (lhs: AnyLaneValue, rhs: AnyLaneValue) -> Bool {
        type(of: lhs.value) == type(of: rhs.value) && lhs.value.isEqual(to: rhs.value)
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(ObjectIdentifier(type(of: value)))
        hasher.combine(value)
    }
}

extension Hashable {
    /// Whether `other` is a value of this type equal to this one.
    fileprivate func isEqual(to other: any Hashable) -> Bool {
        (other as? Self) == self
    }
}
