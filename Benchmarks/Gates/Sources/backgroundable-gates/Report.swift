import Foundation
import GateShapes

/// Benchmarks/Gates/thresholds.txt: per shape, the most allocations and instructions
/// per unit it may cost; `-` for a value that is shown but not gated. `#` starts a
/// comment.
struct Thresholds {
    struct Limits {
        var allocations: Double?
        var instructions: Double?
    }

    var limits: [String: Limits] = [:]

    init(parsing text: String) {
        for line in text.split(separator: "\n") {
            let fields = line.prefix { $0 != "#" }.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count == 3 else { continue }
            limits[String(fields[0])] = Limits(allocations: Double(fields[1]), instructions: Double(fields[2]))
        }
    }
}

/// What the issue's targets compare: a shape's value against a peer's, `value ≤
/// factor × peer + offset`. Shown, not enforced (the thresholds are).
struct Target {
    enum Metric: String { case allocations, instructions }

    let metric: Metric
    let shape: String
    let peer: String
    let factor: Double
    let offset: Double
    let meaning: String
}

let targets: [Target] =
    ["e2e.BackgroundQueue.sync", "e2e.BackgroundQueue.timeout", "e2e.BackgroundQueue.limit1"].flatMap { shape in
        [
            Target(
                metric: .allocations, shape: shape, peer: "e2e.Task.detached", factor: 1,
                offset: 1, meaning: "at most one allocation more than a bare task"),
            Target(
                metric: .instructions, shape: shape, peer: "e2e.Task.detached",
                factor: 1.2, offset: 0, meaning: "at most 1.2 times a bare task's instructions"),
        ]
    } + [
        Target(
            metric: .allocations, shape: "e2e.BackgroundQueue.asyncBody.retry",
            peer: "e2e.BackgroundQueue.asyncBody", factor: 1, offset: 0.5,
            meaning: "a retry policy that is never used allocates nothing"),
        Target(
            metric: .allocations, shape: "e2e.BackgroundQueue.progress",
            peer: "e2e.BackgroundQueue.asyncBody", factor: 1, offset: 0.5,
            meaning: "progress reports nobody watches allocate nothing"),
    ]

let thresholdsHeader = [
    "# The most each shape may cost per unit, checked by .ci/run through",
    "# `swift run -c release --package-path Benchmarks/Gates backgroundable-gates`",
    "# (Benchmarks/Gates/Sources/GateShapes/Shapes.swift says what each shape does).",
    "#",
    "# allocations: measured + 0.5. Every Swift task runs on the measuring thread, so a shape",
    "#   allocates the same on every run; one more allocation per unit exceeds the threshold.",
    "# instructions: measured (callgrind) + 3 %.",
    "# -: shown, not gated. The shapes on Foundation's or Dispatch's threads move from run to",
    "#   run; the bridge's own paths are gated by add.BackgroundOperationQueue.AsyncOperation",
    "#   (allocations) and e2e.AsyncOperation.start. The peers are not the library's.",
    "#",
    "# A change that costs more on purpose updates this file in the same commit, saying why:",
    "# `backgroundable-gates --suggest-thresholds` prints it from a fresh measurement.",
    "",
]

/// The margins of `--suggest-thresholds`. On the measuring thread a shape allocates
/// the same on every run: half an allocation per unit absorbs the fraction a per-run
/// allocation leaves, and one more allocation per unit exceeds it. Instruction counts
/// move a little with the heap's state; the margin is 3 %.
let allocationMargin = 0.5
let instructionMargin = 1.03

struct Report {
    let shapes: [Shape]
    let allocations: [String: Double]
    let instructions: [String: Double]
    let thresholds: Thresholds
    let instructionsMeasured: Bool

    /// One line per shape over a threshold, or without one.
    func failures() -> [String] {
        var failures: [String] = []
        for shape in shapes {
            guard let limits = thresholds.limits[shape.id] else {
                failures.append("\(shape.id): no threshold; add a line for it to Benchmarks/Gates/thresholds.txt")
                continue
            }
            if let value = allocations[shape.id], let limit = limits.allocations, value > limit {
                failures.append(
                    "\(shape.id): \(format(value, 2)) allocations per unit, over its threshold \(format(limit, 2))"
                        + " (an allocation added on this shape's path?)")
            }
            if let value = instructions[shape.id], let limit = limits.instructions, value > limit {
                failures.append(
                    "\(shape.id): \(format(value, 0)) instructions per unit, over its threshold \(format(limit, 0))")
            }
        }
        return failures
    }

    func table() -> String {
        var lines = [
            pad("shape", 46) + padLeft("allocs", 8) + pad("  (threshold)", 18) + padLeft("instructions", 13)
                + pad("  (threshold)", 18) + "  what"
        ]
        lines.append(String(repeating: "-", count: 150))
        for shape in shapes {
            let limits = thresholds.limits[shape.id]
            lines.append(
                pad(shape.id, 46) + padLeft(value(allocations[shape.id], 2), 8)
                    + pad(verdict(allocations[shape.id], limits?.allocations, 2), 18)
                    + padLeft(value(instructions[shape.id], 0), 13)
                    + pad(verdict(instructions[shape.id], limits?.instructions, 0), 18) + "  " + shape.summary)
        }
        lines.append("")
        lines.append("targets (shown, not enforced):")
        for line in targetLines() { lines.append("  " + line) }
        return lines.joined(separator: "\n")
    }

    func markdown() -> String {
        var lines = [
            "| shape | what | allocations / unit | instructions / unit |",
            "| --- | --- | ---: | ---: |",
        ]
        for shape in shapes {
            lines.append(
                "| `\(shape.id)` | \(shape.summary) | \(value(allocations[shape.id], 2)) | "
                    + "\(value(instructions[shape.id], 0)) |")
        }
        lines.append("")
        for line in targetLines(code: true) { lines.append("- " + line) }
        return lines.joined(separator: "\n")
    }

    /// A thresholds file from these measurements; a value the current file does not gate
    /// (`-`) stays ungated.
    func suggestedThresholds() -> String {
        var lines = thresholdsHeader + [pad("# shape", 46) + padLeft("allocations", 12) + padLeft("instructions", 14)]
        for shape in shapes {
            let current = thresholds.limits[shape.id]
            let allocationLimit = allocations[shape.id].map { (($0 + allocationMargin) * 100).rounded(.up) / 100 }
            let instructionLimit = instructions[shape.id].map { ($0 * instructionMargin).rounded(.up) }
            let keepsAllocations = current == nil || current?.allocations != nil
            let keepsInstructions = current == nil || current?.instructions != nil
            lines.append(
                pad(shape.id, 46) + padLeft(keepsAllocations ? value(allocationLimit, 2) : "-", 12)
                    + padLeft(keepsInstructions ? value(instructionLimit, 0) : "-", 14))
        }
        return lines.joined(separator: "\n")
    }

    /// One line per target; `code` puts the shapes' ids in backquotes (Markdown).
    private func targetLines(code: Bool = false) -> [String] {
        let quote = code ? "`" : ""
        return targets.compactMap { target -> String? in
            let values = target.metric == .allocations ? allocations : instructions
            guard let value = values[target.shape], let peer = values[target.peer] else { return nil }
            let bound = target.factor * peer + target.offset
            let digits = target.metric == .allocations ? 2 : 0
            let verdict =
                value <= bound
                ? "met" : "MISSED by \(format(value - bound, digits)) (\(format(value / peer, 2))× the peer)"
            return "\(quote)\(target.shape)\(quote) \(target.metric.rawValue) \(format(value, digits)) <= "
                + "\(format(bound, digits)) (\(target.meaning), \(quote)\(target.peer)\(quote) \(format(peer, digits))): "
                + verdict
        }
    }

    private func value(_ value: Double?, _ digits: Int) -> String {
        value.map { format($0, digits) } ?? "-"
    }

    private func verdict(_ value: Double?, _ limit: Double?, _ digits: Int) -> String {
        guard let value else { return "" }
        guard let limit else { return "  (not gated)" }
        return "  (<= \(format(limit, digits)) \(value <= limit ? "ok" : "FAIL"))"
    }
}

func format(_ value: Double, _ digits: Int) -> String {
    String(format: "%.\(digits)f", value)
}

func pad(_ text: String, _ width: Int) -> String {
    text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
}

func padLeft(_ text: String, _ width: Int) -> String {
    text.count >= width ? text : String(repeating: " ", count: width - text.count) + text
}
