import Foundation

// backgroundable-bench: what a unit costs on BackgroundQueue, side by side with
// DispatchQueue, OperationQueue and bare Task, in one run. Timed with DispatchTime.
//
//   swift run -c release backgroundable-bench [--quick] [--json] [--units N]
//                                            [--repetitions N] [--filter SUBSTRING[,SUBSTRING...]]
//                                            [--runs K]

struct Options {
    var quick = false
    var json = false
    var units: Int?
    var repetitions: Int?
    var filter: String?
    var runs = 1

    static func parse(_ arguments: [String]) -> Options {
        var options = Options()
        var iterator = arguments.makeIterator()
        while let argument = iterator.next() {
            switch argument {
            case "--quick": options.quick = true
            case "--json": options.json = true
            case "--units": options.units = iterator.next().flatMap(Int.init)
            case "--repetitions": options.repetitions = iterator.next().flatMap(Int.init)
            case "--filter": options.filter = iterator.next()
            case "--runs": options.runs = iterator.next().flatMap(Int.init) ?? 1
            case "--help", "-h":
                print(
                    "usage: backgroundable-bench [--quick] [--json] [--units N] [--repetitions N] [--filter SUBSTRING[,SUBSTRING...]]"
                        + " [--runs K]"
                )
                exit(0)
            default:
                FileHandle.standardError.write(Data("unknown argument \(argument)\n".utf8))
                exit(2)
            }
        }
        return options
    }
}

let options = Options.parse(Array(CommandLine.arguments.dropFirst()))
let units = max(1, options.units ?? (options.quick ? 20_000 : 100_000))
let repetitions = max(1, options.repetitions ?? (options.quick ? 3 : 9))
let memoryUnits = options.quick ? 100_000 : 1_000_000
let allOfThem =
    allScenarios(memoryUnits: memoryUnits) + metricsScenarios() + latencyScenarios(count: options.quick ? 500 : 2_000)
    + scalingScenarios(small: 10_000, large: 160_000) + durableScenarios(jobs: options.quick ? 200 : 1_000)
    + postgresScenarios(jobs: options.quick ? 200 : 1_000)
let scenarios = allOfThem.filter { scenario in
    options.filter.map { filter in
        filter.split(separator: ",").contains { scenario.id.contains($0) }
    } ?? true
}

let header = "backgroundable-bench: \(units) units x \(repetitions) repetitions (memory: \(memoryUnits) pending units)"
if options.runs > 1 {
    // The same arguments for every run, without `--runs` (and `--json`, which each run gets).
    var childArguments: [String] = []
    var arguments = CommandLine.arguments.dropFirst().makeIterator()
    while let argument = arguments.next() {
        if argument == "--runs" {
            _ = arguments.next()
        } else if argument != "--json" {
            childArguments.append(argument)
        }
    }
    runInSeparateProcesses(
        options.runs, arguments: childArguments, scenarios: scenarios, header: header, json: options.json)
    exit(0)
}

/// A progress line on standard error: rewritten in place on a terminal, one line per
/// step otherwise (CI logs).
let stderrIsTerminal = isatty(2) == 1
func progress(_ text: String) {
    if stderrIsTerminal {
        FileHandle.standardError.write(Data("\r\u{1B}[K\(text)".utf8))
    } else if !text.isEmpty {
        FileHandle.standardError.write(Data("\(text)\n".utf8))
    }
}

// Memory first, on the cleanest heap. Then the timed scenarios in rounds: a warm-up
// round, then one round per repetition, each running every timed scenario once. This
// machine has slow stretches lasting seconds; run back to back, a scenario's whole series
// could fall into one while its baseline's misses it. Interleaved, both see the same
// stretches, and the ratio of their medians compares like with like.
let measuringThread = MeasuringThread()
var samples = Array(repeating: [Double](), count: scenarios.count)
let memoryIndices = scenarios.indices.filter { scenarios[$0].unit == "bytes/unit" }
let timedIndices = scenarios.indices.filter { scenarios[$0].unit != "bytes/unit" }
for index in memoryIndices {
    progress("measuring \(scenarios[index].id)")
    samples[index].append(measuringThread.run { scenarios[index].run(units) })
}
for round in 0...repetitions where !timedIndices.isEmpty {
    let roundName = round == 0 ? "warm-up" : "round \(round)/\(repetitions)"
    if !stderrIsTerminal { progress(roundName) }
    for index in timedIndices {
        if stderrIsTerminal { progress("\(roundName): \(scenarios[index].id)") }
        let sample = measuringThread.run { scenarios[index].run(units) }
        if round > 0 { samples[index].append(sample) }
    }
}
let results = scenarios.indices.map { index in
    Measurement(id: scenarios[index].id, unit: scenarios[index].unit, samples: samples[index])
}
progress("")

let byID = Dictionary(uniqueKeysWithValues: results.map { ($0.id, $0) })

if options.json {
    var entries: [String] = []
    for result in results {
        entries.append(
            "\"\(result.id)\": {\"unit\": \"\(result.unit)\", \"median\": \(result.median), \"min\": \(result.min), \"max\": \(result.max)}"
        )
    }
    print("{\"scenarios\": {\(entries.joined(separator: ", "))}}")
} else {
    func format(_ value: Double) -> String { String(format: "%.1f", value) }
    func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
    }
    func padLeft(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : String(repeating: " ", count: width - text.count) + text
    }
    print(header)
    print("")
    let header =
        pad("scenario", 48) + padLeft("median", 10) + padLeft("min", 10) + padLeft("max", 10) + "  " + pad("unit", 11)
        + "ratio (target) vs"
    print(header)
    print(String(repeating: "-", count: header.count + 30))
    for result in results {
        var ratio = ""
        if let scenario = scenarios.first(where: { $0.id == result.id }), let baseline = scenario.baseline,
            let base = byID[baseline.id], base.median > 0
        {
            let value = result.median / base.median
            if let target = baseline.target {
                let verdict = value <= target ? "ok" : "MISS"
                ratio = String(format: "%.2f (<= %.2f %@) vs %@", value, target, verdict, baseline.id)
            } else {
                ratio = String(format: "%.2f (no target) vs %@", value, baseline.id)
            }
        } else if result.unit == "bytes/unit" {
            ratio = result.median <= 256 ? "(<= 256 ok)" : "(<= 256 MISS)"
        }
        print(
            pad(result.id, 48) + padLeft(format(result.median), 10) + padLeft(format(result.min), 10)
                + padLeft(format(result.max), 10) + "  " + pad(result.unit, 11) + ratio)
    }
}
