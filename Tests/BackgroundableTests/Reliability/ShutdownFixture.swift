import Foundation

#if canImport(Glibc)
    import Glibc
#endif

// The child processes of the shutdown tests: `graceful-shutdown-fixture` and
// `service-lifecycle-fixture`, the same small server under `GracefulShutdown` and
// under a `ServiceGroup`.

/// The fixture binary, built by `swift build` / `swift test` next to the test bundle.
func fixtureURL(_ name: String) throws -> URL {
    var candidates: [URL] = []
    if let executable = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
        candidates.append(URL(fileURLWithPath: executable).deletingLastPathComponent())
    }
    for bundle in Bundle.allBundles where bundle.bundlePath.hasSuffix(".xctest") {
        candidates.append(bundle.bundleURL.deletingLastPathComponent())
    }
    candidates.append(URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent())
    for directory in candidates {
        let url = directory.appendingPathComponent(name)
        if FileManager.default.isExecutableFile(atPath: url.path) { return url }
    }
    struct FixtureMissing: Error, CustomStringConvertible {
        let name: String
        let searched: [URL]
        var description: String {
            "\(name) not found in \(searched.map(\.path)); build it with `swift build` (swift test builds it)"
        }
    }
    throw FixtureMissing(name: name, searched: candidates)
}

struct ChildResult {
    let status: Int32
    let standardError: String
    let files: [String]
    let events: String
    let manifest: String
}

/// Starts the fixture, waits for "ready" on its standard output, sends `signals`, and
/// waits for it to exit.
func runShutdownFixture(
    _ name: String, units: Int, unitMilliseconds: Int, graceMilliseconds: Int, signals: [Int32] = [SIGTERM]
) async throws -> ChildResult {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("graceful-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let process = Process()
    process.executableURL = try fixtureURL(name)
    process.arguments = [directory.path, "\(units)", "\(unitMilliseconds)", "\(graceMilliseconds)"]
    let output = Pipe()
    let errors = Pipe()
    process.standardOutput = output
    process.standardError = errors
    let terminated = Signal()
    process.terminationHandler = { _ in terminated.signal() }
    try process.run()

    // Read standard output off the cooperative pool (reads block): "ready" once
    // every unit started, "draining" once the child saw the request. A second
    // signal is sent only then: the kernel keeps one pending signal per number, so
    // two sent at once may arrive as one.
    let ready = Signal()
    let draining = Signal()
    let outputHandle = output.fileHandleForReading
    Thread.detachNewThread {
        var seen = Data()
        while true {
            let chunk = outputHandle.availableData
            if chunk.isEmpty { break }
            seen.append(chunk)
            let text = String(decoding: seen, as: UTF8.self)
            if text.contains("ready") { ready.signal() }
            if text.contains("draining") { draining.signal() }
        }
        ready.signal()
        draining.signal()
    }
    await ready.wait()
    for (index, signal) in signals.enumerated() {
        if index > 0 { await draining.wait() }
        kill(process.processIdentifier, signal)
    }
    await awaitTermination(of: process, terminated, killingAfter: .seconds(30))
    let standardError = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    func read(_ name: String) -> String {
        (try? String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)) ?? "missing"
    }
    return ChildResult(
        status: process.terminationStatus, standardError: standardError,
        files: (0..<units).map { read("unit-\($0)") }, events: read("events"), manifest: read("manifest"))
}

/// Waits until `process` ended (its termination handler signals `terminated`). A child
/// that does not end within `limit` is killed, so a hang fails the test with what the
/// child wrote instead of stalling the suite.
func awaitTermination(of process: Process, _ terminated: Signal, killingAfter limit: Duration) async {
    let pid = process.processIdentifier
    let watchdog = Task.detached {
        try await Task.sleep(for: limit)
        kill(pid, SIGKILL)
    }
    await terminated.wait()
    watchdog.cancel()
}
