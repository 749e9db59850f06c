import CallgrindClient
import Foundation
import GateShapes

// The instruction counter of `backgroundable-gates`, which runs it under callgrind:
// every instruction of the process, on any thread, between a shape's start and stop
// (callgrind's client requests zero its counters, then dump them to a file whose
// `totals:` line this reads back). It does not link the allocation interposer, so the
// C library's malloc is counted, as an app has it.
//
//     valgrind --tool=callgrind --callgrind-out-file=OUT \
//         backgroundable-gates-instructions OUT UNITS REPETITIONS [SHAPE,...]
//
// With GATES_KEEP_DUMPS=1 the dumps stay (OUT.1, OUT.2, ...) for `callgrind_annotate`.

final class InstructionMeter: Meter, @unchecked Sendable {
    // @unchecked: `dumps` is used by one shape at a time, from `start()` to `stop()`,
    // which the shape calls in order (never concurrently).
    private let outFile: String
    private var dumps = 0

    init(outFile: String) { self.outFile = outFile }

    func start() { callgrind_client_zero() }

    func stop() -> Int {
        callgrind_client_dump("backgroundable-gates")
        // Callgrind writes the dump before the request returns, as OUT.1, OUT.2, ...
        dumps += 1
        let path = "\(outFile).\(dumps)"
        guard let dump = try? String(contentsOfFile: path, encoding: .utf8),
            let totals = dump.split(separator: "\n").last(where: { $0.hasPrefix("totals:") }),
            let count = Int(totals.dropFirst("totals:".count).trimmingCharacters(in: .whitespaces))
        else {
            FileHandle.standardError.write(Data("error: no totals in callgrind dump \(path)\n".utf8))
            exit(1)
        }
        // GATES_KEEP_DUMPS=1 keeps the dumps, for callgrind_annotate to profile a shape.
        if ProcessInfo.processInfo.environment["GATES_KEEP_DUMPS"] == nil {
            try? FileManager.default.removeItem(atPath: path)
        }
        return count
    }
}

let arguments = Array(CommandLine.arguments.dropFirst())
guard arguments.count >= 3, let units = Int(arguments[1]), let repetitions = Int(arguments[2]) else {
    print("usage: backgroundable-gates-instructions OUT UNITS REPETITIONS [SHAPE,...]")
    exit(2)
}
guard callgrind_client_available() == 1, callgrind_client_running_on_valgrind() == 1 else {
    print("error: not running under valgrind, or built without valgrind's headers (valgrind/callgrind.h)")
    exit(1)
}
measureShapes(
    units: units, repetitions: repetitions, ids: arguments.count > 3 ? arguments[3] : nil,
    meter: InstructionMeter(outFile: arguments[0]))
