import Synchronization

/// A child process's measurement: for each shape of `ids` (comma-separated; every
/// shape when `nil`), a warm-up run of `2 × units` units (the heap reaches the size the
/// measured runs need), then `repetitions` pairs of runs of `units` and `2 × units` units. Their difference is
/// the cost of `units` units with everything that does not grow with the units (the
/// queue, its drain, a first use) cancelled out. Prints one line per shape: its id and
/// the cost per unit of each repetition.
public func measureShapes(units: Int, repetitions: Int, ids: String?, meter: some Meter) {
    JobPump.install()
    let chosen = ids.map { Set($0.split(separator: ",").map(String.init)) }
    for shape in allShapes where chosen?.contains(shape.id) ?? true {
        shape.run(2 * units, NoMeter())
        var samples: [String] = []
        for _ in 0..<repetitions {
            let single = count(shape, units: units, meter: meter)
            let double = count(shape, units: 2 * units, meter: meter)
            samples.append(String(Double(double - single) / Double(units)))
        }
        print(([shape.id] + samples).joined(separator: " "))
    }
}

/// Runs `shape` once and returns what `meter` counted between its start and stop.
private func count(_ shape: Shape, units: Int, meter: some Meter) -> Int {
    let recorder = Recorder(meter)
    shape.run(units, recorder)
    return recorder.value.withLock { $0 }
}

private struct NoMeter: Meter {
    func start() {}
    func stop() -> Int { 0 }
}

private final class Recorder<Wrapped: Meter>: Meter {
    let wrapped: Wrapped
    let value = Mutex(0)

    init(_ wrapped: Wrapped) { self.wrapped = wrapped }

    func start() { wrapped.start() }

    func stop() -> Int {
        let counted = wrapped.stop()
        value.withLock { $0 = counted }
        return counted
    }
}
