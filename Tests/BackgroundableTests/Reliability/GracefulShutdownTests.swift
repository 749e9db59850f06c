import Foundation
import Synchronization
import Testing

@testable import Backgroundable

/// The graceful-shutdown provider: its logic in-process (signals simulated, `exit`
/// replaced), and for real in a child process (`graceful-shutdown-fixture`) sent SIGTERM.
@Suite("Graceful shutdown")
struct GracefulShutdownTests {
    /// A provider whose `exit` and standard-error line are recorded instead.
    private func makeProvider(grace: Duration) -> (
        GracefulShutdownBackgroundTaskProvider, Recorder<Int32>, Recorder<String>, Signal
    ) {
        let statuses = Recorder<Int32>()
        let lines = Recorder<String>()
        let exited = Signal()
        let provider = GracefulShutdownBackgroundTaskProvider(
            gracePeriod: grace, exitStatus: 75,
            terminate: { status in
                statuses.append(status)
                exited.signal()
            },
            report: { lines.append($0) })
        return (provider, statuses, lines, exited)
    }

    @Test func signalWithNothingHeldExitsAtOnceWithStatusZero() {
        let (provider, statuses, lines, _) = makeProvider(grace: .seconds(30))
        provider.shutdownRequested()
        #expect(statuses.all == [0])
        #expect(lines.all.isEmpty)
    }

    @Test func exitsWithStatusZeroWhenTheQueueGoesIdleWithinTheGracePeriod() async {
        let (provider, statuses, lines, exited) = makeProvider(grace: .seconds(30))
        let queue = BackgroundQueue(name: "uploads", backgroundTaskProvider: provider)
        let release = Signal()
        let started = Signal()
        let unit = queue.add(name: "upload") { task in
            started.signal()
            Task {
                await release.wait()
                task.finish()
            }
        }
        await started.wait()
        provider.shutdownRequested()
        #expect(statuses.all.isEmpty, "held assertions keep the process alive")
        release.signal()
        await exited.wait()
        #expect(statuses.all == [0])
        #expect(lines.all.isEmpty)
        #expect(unit.currentOutcome?.kind == .finished)
    }

    @Test func gracePeriodRunningOutRunsTheExpirationPathAndReportsUnfinishedUnits() async {
        let (provider, statuses, lines, exited) = makeProvider(grace: .milliseconds(20))
        let queue = BackgroundQueue(name: "uploads", backgroundTaskProvider: provider)
        provider.monitor(queue)
        let events = queue.events
        let started = Signal()
        let stuck = queue.addTask(name: "stuck", timeout: nil) {
            started.signal()
            await suspendUntilCancelled()
        }
        await started.wait()
        provider.shutdownRequested()
        await exited.wait()
        #expect(statuses.all == [75])
        #expect(lines.all.count == 1)
        #expect(lines.all.first?.contains("queue \"uploads\": [\"stuck\"]") == true, "\(lines.all)")
        // The queue's expiration policy (cancelAll) ran, and its event was emitted.
        #expect(stuck.task.currentOutcome?.kind == .cancelled)
        var sawExpiring = false
        for await event in events {
            if case .backgroundTimeExpiring = event { sawExpiring = true }
            if case .idle = event { break }
        }
        #expect(sawExpiring)
        #expect(provider.activeCount == 0)
    }

    @Test func secondSignalExpiresAtOnce() async {
        let (provider, statuses, lines, exited) = makeProvider(grace: .seconds(30))
        let assertion = BackgroundTimeAssertion.begin(named: "cli-work", provider: provider)
        provider.shutdownRequested()
        provider.shutdownRequested()
        await exited.wait()
        #expect(statuses.all == [75])
        #expect(lines.all.first?.contains("assertion \"cli-work\"") == true, "\(lines.all)")
        #expect(!assertion.isHeld)
    }

    // `GracefulShutdown.install` making the provider the default is checked in the
    // child process (the fixture exits with status 65 otherwise): setting the
    // process-wide default here would race with tests that read the platform default.

    // MARK: A real child process

    /// The fixture binary, built by `swift build` / `swift test` next to the test bundle.
    private static func fixtureURL() throws -> URL {
        var candidates: [URL] = []
        if let executable = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            candidates.append(URL(fileURLWithPath: executable).deletingLastPathComponent())
        }
        for bundle in Bundle.allBundles where bundle.bundlePath.hasSuffix(".xctest") {
            candidates.append(bundle.bundleURL.deletingLastPathComponent())
        }
        candidates.append(URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent())
        for directory in candidates {
            let url = directory.appendingPathComponent("graceful-shutdown-fixture")
            if FileManager.default.isExecutableFile(atPath: url.path) { return url }
        }
        struct FixtureMissing: Error, CustomStringConvertible {
            let searched: [URL]
            var description: String {
                "graceful-shutdown-fixture not found in \(searched.map(\.path)); build it with `swift build` (swift test builds it)"
            }
        }
        throw FixtureMissing(searched: candidates)
    }

    private struct ChildResult {
        let status: Int32
        let standardError: String
        let files: [String]
    }

    /// Starts the fixture, waits for "ready" on its standard output, sends SIGTERM, and
    /// waits for it to exit.
    private func runFixture(units: Int, unitMilliseconds: Int, graceMilliseconds: Int) async throws -> ChildResult {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("graceful-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let process = Process()
        process.executableURL = try Self.fixtureURL()
        process.arguments = [directory.path, "\(units)", "\(unitMilliseconds)", "\(graceMilliseconds)"]
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        let terminated = Signal()
        process.terminationHandler = { _ in terminated.signal() }
        try process.run()

        // Read standard output until "ready", off the cooperative pool (reads block).
        let ready = Signal()
        let readyHandle = output.fileHandleForReading
        Thread.detachNewThread {
            var seen = Data()
            while true {
                let chunk = readyHandle.availableData
                if chunk.isEmpty { break }
                seen.append(chunk)
                if String(decoding: seen, as: UTF8.self).contains("ready") { break }
            }
            ready.signal()
        }
        await ready.wait()
        kill(process.processIdentifier, SIGTERM)
        await terminated.wait()
        let standardError = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let files = (0..<units).map { index in
            (try? String(contentsOf: directory.appendingPathComponent("unit-\(index)"), encoding: .utf8)) ?? "missing"
        }
        return ChildResult(status: process.terminationStatus, standardError: standardError, files: files)
    }

    @Test(.timeLimit(.minutes(1)))
    func sigtermWaitsForInFlightUnitsWhenTheGracePeriodSuffices() async throws {
        let result = try await runFixture(units: 4, unitMilliseconds: 500, graceMilliseconds: 30_000)
        #expect(result.status == 0, "stderr: \(result.standardError)")
        #expect(result.files == Array(repeating: "complete", count: 4), "nothing lost")
        #expect(result.standardError.isEmpty)
    }

    @Test(.timeLimit(.minutes(1)))
    func sigtermRunsTheExpirationPathWhenTheGracePeriodRunsOut() async throws {
        let result = try await runFixture(units: 3, unitMilliseconds: 60_000, graceMilliseconds: 100)
        #expect(result.status == 75)
        #expect(result.standardError.contains("grace period"), "stderr: \(result.standardError)")
        for index in 0..<3 {
            #expect(result.standardError.contains("\"unit-\(index)\""), "stderr: \(result.standardError)")
        }
        #expect(result.files == Array(repeating: "partial", count: 3))
    }

    @Test(.timeLimit(.minutes(1)))
    func sigtermWithIdleQueuesExitsAtOnceWithStatusZero() async throws {
        let result = try await runFixture(units: 0, unitMilliseconds: 0, graceMilliseconds: 30_000)
        #expect(result.status == 0)
        #expect(result.standardError.isEmpty)
    }
}
