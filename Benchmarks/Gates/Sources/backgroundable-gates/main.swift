import Foundation
import GateShapes
import MallocInterposerSwift

// backgroundable-gates: allocations and instructions per unit for the library's main
// shapes and their peers, checked against Benchmarks/Gates/thresholds.txt.
//
//     swift run -c release --package-path Benchmarks/Gates backgroundable-gates
//         [--allocations-only] [--filter SUBSTRING[,SUBSTRING...]] [--markdown]
//         [--suggest-thresholds] [--thresholds PATH]
//
// Allocations are counted in a child process (this executable again), through
// malloc-interposer; instructions in `backgroundable-gates-instructions` under
// valgrind's callgrind. Exits 1, with one line per shape, when a shape costs more than
// its threshold.

struct Options {
    var allocationsOnly = false
    var filter: String?
    var markdown = false
    var suggest = false
    // Sources/backgroundable-gates/main.swift → Benchmarks/Gates/thresholds.txt
    var thresholds = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("thresholds.txt").path

    static func parse(_ arguments: [String]) -> Options {
        var options = Options()
        var iterator = arguments.makeIterator()
        while let argument = iterator.next() {
            switch argument {
            case "--allocations-only": options.allocationsOnly = true
            case "--filter": options.filter = iterator.next()
            case "--markdown": options.markdown = true
            case "--suggest-thresholds": options.suggest = true
            case "--thresholds": options.thresholds = iterator.next() ?? options.thresholds
            case "--help", "-h":
                print(
                    "usage: backgroundable-gates [--allocations-only] [--filter SUBSTRING[,SUBSTRING...]] [--markdown]"
                        + " [--suggest-thresholds] [--thresholds PATH]")
                exit(0)
            default: fail("unknown argument \(argument)", status: 2)
            }
        }
        return options
    }
}

/// Units per measured run and repetitions: every run of a shape on the measuring thread
/// counts the same, so a few suffice; callgrind runs much slower, on fewer units.
let allocationRuns = (units: 2_000, repetitions: 3)
let instructionRuns = (units: 1_000, repetitions: 3)

func fail(_ message: String, status: Int32 = 1) -> Never {
    FileHandle.standardError.write(Data("backgroundable-gates: \(message)\n".utf8))
    exit(status)
}

// MARK: Child: counting allocations

struct AllocationMeter: Meter {
    func start() {
        MallocInterposerSwift.reset()
        MallocInterposerSwift.hook()
    }

    func stop() -> Int {
        MallocInterposerSwift.unhook()
        return MallocInterposerSwift.getStatistics().mallocCount
    }
}

if CommandLine.arguments.dropFirst().first == "--measure-allocations" {
    let arguments = Array(CommandLine.arguments.dropFirst(2))
    guard arguments.count >= 2, let units = Int(arguments[0]), let repetitions = Int(arguments[1]) else {
        fail("usage: backgroundable-gates --measure-allocations UNITS REPETITIONS [SHAPE,...]", status: 2)
    }
    // libMallocInterposerSwift is linked ahead of the C library, so its malloc is the
    // process's: no LD_PRELOAD needed. Check that it counts.
    MallocInterposerSwift.initialize()
    let meter = AllocationMeter()
    meter.start()
    let probe = [Int](repeating: 1, count: 100)
    guard meter.stop() > 0, probe.count == 100 else { fail("malloc is not interposed: nothing was counted") }
    measureShapes(units: units, repetitions: repetitions, ids: arguments.dropFirst(2).first, meter: meter)
    exit(0)
}

// MARK: Parent: running the children

let options = Options.parse(Array(CommandLine.arguments.dropFirst()))
let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
let instructionsExecutable = executable.deletingLastPathComponent().appendingPathComponent(
    "backgroundable-gates-instructions")

/// Runs a child and returns its standard output; its standard error goes to `log` and
/// is printed when it fails.
func runChild(_ path: String, _ arguments: [String], log: URL) -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    // Swift's hashing is seeded per process unless told not to; the library's dictionaries
    // then cost a different number of instructions on every run.
    process.environment = ProcessInfo.processInfo.environment.merging(["SWIFT_DETERMINISTIC_HASHING": "1"]) { $1 }
    let output = Pipe()
    process.standardOutput = output
    _ = FileManager.default.createFile(atPath: log.path, contents: nil)
    process.standardError = try? FileHandle(forWritingTo: log)
    do { try process.run() } catch { fail("cannot run \(path): \(error)") }
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
        let errors = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        fail("\(path) \(arguments.joined(separator: " ")) exited with \(process.terminationStatus):\n\(errors)")
    }
    return String(decoding: data, as: UTF8.self)
}

/// The median per-unit value of each shape, from a child's lines (`id sample...`).
func medians(_ output: String) -> [String: Double] {
    var result: [String: Double] = [:]
    for line in output.split(separator: "\n") {
        let fields = line.split(separator: " ")
        let samples = fields.dropFirst().compactMap { Double($0) }.sorted()
        guard let id = fields.first, !samples.isEmpty else { continue }
        result[String(id)] = samples[samples.count / 2]
    }
    return result
}

func which(_ command: String) -> String? {
    let paths = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
    return paths.map { "\($0)/\(command)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
}

let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("backgroundable-gates-\(getpid())")
try? FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
let filters = options.filter?.split(separator: ",").map(String.init)
let chosen = allShapes.map(\.id).filter { id in filters.map { $0.contains { id.contains($0) } } ?? true }
guard !chosen.isEmpty else { fail("no shape matches \(options.filter ?? "")") }

FileHandle.standardError.write(Data("counting allocations...\n".utf8))
let allocations = medians(
    runChild(
        executable.path,
        [
            "--measure-allocations", "\(allocationRuns.units)", "\(allocationRuns.repetitions)",
            chosen.joined(separator: ","),
        ],
        log: scratch.appendingPathComponent("allocations.log")))

// Each shape in a process of its own: what ran before (the heap's state, threads
// that Foundation's shapes leave running) moves instruction counts.
var instructions: [String: Double] = [:]
if !options.allocationsOnly {
    guard let valgrind = which("valgrind") else {
        fail("valgrind is not installed (apt-get install -y valgrind), or pass --allocations-only")
    }
    guard FileManager.default.isExecutableFile(atPath: instructionsExecutable.path) else {
        fail("\(instructionsExecutable.path) is missing: build the package (swift build -c release)")
    }
    for (index, id) in chosen.enumerated() {
        FileHandle.standardError.write(
            Data("counting instructions under callgrind (\(index + 1)/\(chosen.count)): \(id)\n".utf8))
        let out = scratch.appendingPathComponent("callgrind.out").path
        let counted = medians(
            runChild(
                valgrind,
                [
                    "--tool=callgrind", "--callgrind-out-file=\(out)", "--dump-line=no",
                    instructionsExecutable.path, out, "\(instructionRuns.units)", "\(instructionRuns.repetitions)", id,
                ],
                log: scratch.appendingPathComponent("callgrind.log")))
        instructions.merge(counted) { $1 }
    }
}
try? FileManager.default.removeItem(at: scratch)

// MARK: Thresholds and the verdict

let thresholdsText: String
do { thresholdsText = try String(contentsOfFile: options.thresholds, encoding: .utf8) } catch {
    fail("cannot read the thresholds \(options.thresholds): \(error)")
}
let thresholds = Thresholds(parsing: thresholdsText)
let shapes = allShapes.filter { allocations[$0.id] != nil }
let report = Report(
    shapes: shapes, allocations: allocations, instructions: instructions, thresholds: thresholds,
    instructionsMeasured: !options.allocationsOnly)

if options.suggest {
    print(report.suggestedThresholds())
} else if options.markdown {
    print(report.markdown())
} else {
    print(report.table())
}
let failures = report.failures()
for failure in failures { print("FAIL \(failure)") }
if !failures.isEmpty { exit(1) }
