/// A value in an allocation of its own, behind one pointer: for what is rare, or large,
/// in a type every unit carries (its state is copied at each transition, and every
/// pending unit is one allocation that should stay small).
final class Boxed<Value: Sendable>: Sendable {
    let value: Value

    init(_ value: Value) {
        self.value = value
    }
}
