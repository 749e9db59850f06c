import Foundation

/// `--runs K`: the benchmark K times, each in a process of its own (same arguments, with
/// `--json`), one after another. Within a process the repetitions share its heap and its
/// threads; between processes a ratio moves further, and only several processes show
/// how far. Prints, per scenario, the median of the K runs'
/// medians and their spread (lowest to highest), and the ratio to the baseline with its
/// spread over the runs.
func runInSeparateProcesses(_ runs: Int, arguments: [String], scenarios: [Scenario], header: String, json: Bool) {
    let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
    var medians: [String: [Double]] = [:]
    var units: [String: String] = [:]
    for run in 1...runs {
        FileHandle.standardError.write(Data("run \(run)/\(runs)\n".utf8))
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments + ["--json"]
        let output = Pipe()
        process.standardOutput = output
        do { try process.run() } catch {
            FileHandle.standardError.write(Data("cannot run \(executable.path): \(error)\n".utf8))
            exit(1)
        }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0,
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            let results = object["scenarios"] as? [String: [String: Any]]
        else {
            FileHandle.standardError.write(Data("run \(run) failed (status \(process.terminationStatus))\n".utf8))
            exit(1)
        }
        for (id, result) in results {
            guard let median = result["median"] as? Double else { continue }
            medians[id, default: []].append(median)
            units[id] = result["unit"] as? String
        }
    }

    let summaries = scenarios.compactMap { scenario -> RunsSummary? in
        guard let values = medians[scenario.id] else { return nil }
        var ratios: [Double]?
        if let baseline = scenario.baseline, let base = medians[baseline.id], base.count == values.count {
            ratios = zip(values, base).map { $1 > 0 ? $0 / $1 : 0 }
        }
        return RunsSummary(
            scenario: scenario, unit: units[scenario.id] ?? scenario.unit, medians: values, ratios: ratios)
    }
    if json {
        let entries = summaries.map { summary in
            "\"\(summary.scenario.id)\": {\"unit\": \"\(summary.unit)\", \"median\": \(middle(summary.medians)), "
                + "\"min\": \(summary.medians.min() ?? 0), \"max\": \(summary.medians.max() ?? 0), "
                + "\"runMedians\": [\(summary.medians.map { "\($0)" }.joined(separator: ", "))]}"
        }
        print("{\"runs\": \(runs), \"scenarios\": {\(entries.joined(separator: ", "))}}")
        return
    }
    print("\(header), \(runs) runs (each in a process of its own): the median of the runs' medians and their spread")
    print("")
    let tableHeader =
        pad("scenario", 48) + padLeft("median", 10) + padLeft("spread", 22) + "  " + pad("unit", 11)
        + "ratio [spread] (target) vs"
    print(tableHeader)
    print(String(repeating: "-", count: tableHeader.count + 40))
    for summary in summaries {
        var ratio = ""
        if let ratios = summary.ratios, let baseline = summary.scenario.baseline {
            let value = middle(ratios)
            let spread = String(format: "%.2f [%.2f–%.2f]", value, ratios.min() ?? 0, ratios.max() ?? 0)
            if let target = baseline.target {
                ratio =
                    "\(spread) (<= \(String(format: "%.2f", target)) \(value <= target ? "ok" : "MISS")) vs \(baseline.id)"
            } else {
                ratio = "\(spread) (no target) vs \(baseline.id)"
            }
        }
        let spread = String(format: "%.1f–%.1f", summary.medians.min() ?? 0, summary.medians.max() ?? 0)
        print(
            pad(summary.scenario.id, 48) + padLeft(String(format: "%.1f", middle(summary.medians)), 10)
                + padLeft(spread, 22) + "  " + pad(summary.unit, 11) + ratio)
    }
}

private struct RunsSummary {
    let scenario: Scenario
    let unit: String
    let medians: [Double]
    let ratios: [Double]?
}

private func middle(_ values: [Double]) -> Double {
    Measurement(id: "", unit: "", samples: values).median
}

private func pad(_ text: String, _ width: Int) -> String {
    text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
}

private func padLeft(_ text: String, _ width: Int) -> String {
    text.count >= width ? text : String(repeating: " ", count: width - text.count) + text
}
