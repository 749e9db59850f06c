// What the two shutdown fixtures share (graceful-shutdown-fixture and
// service-lifecycle-fixture): their arguments, unbuffered output, and the small server
// whose work they shut down.
public import Backgroundable
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Writes `line` to `descriptor` through write(2), unbuffered, so the parent sees it at once.
public func say(_ line: String, to descriptor: Int32 = 1) {
    var bytes = Array((line + "\n").utf8)
    _ = bytes.withUnsafeMutableBytes { write(descriptor, $0.baseAddress, $0.count) }
}

/// Writes `contents` to the file at `path`, replacing it.
public func writeFile(_ path: String, _ contents: String) {
    let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    guard descriptor >= 0 else { return say("cannot open \(path)", to: 2) }
    var bytes = Array(contents.utf8)
    _ = bytes.withUnsafeMutableBytes { write(descriptor, $0.baseAddress, $0.count) }
    close(descriptor)
}

/// `<directory> <units> <unit-ms> <grace-ms>`, or the usage line and exit status 64.
public struct FixtureArguments: Sendable {
    public let directory: String
    public let units: Int
    public let unitMilliseconds: Int
    public let graceMilliseconds: Int

    public init(program: String) {
        let arguments = CommandLine.arguments
        guard arguments.count == 5, let units = Int(arguments[2]), let unitMilliseconds = Int(arguments[3]),
            let graceMilliseconds = Int(arguments[4])
        else {
            say("usage: \(program) <directory> <units> <unit-ms> <grace-ms>", to: 2)
            exit(64)
        }
        (directory, self.units, self.unitMilliseconds, self.graceMilliseconds) =
            (arguments[1], units, unitMilliseconds, graceMilliseconds)
    }
}

/// The server's work: `arguments.units` units on `queue`; unit i writes
/// "<directory>/unit-i" as "partial", works for `unitMilliseconds`, then writes it as
/// "complete" — or, cancelled, as "saved" (the state it saves in the cancellation
/// period). `allStarted` runs once every unit started.
///
/// - Returns: A task whose value is every event the queue delivered, up to the idle
///   that follows the last unit's end (none when there are no units).
public func startWork(
    on queue: BackgroundQueue, _ arguments: FixtureArguments, allStarted: @escaping @Sendable () -> Void
) -> Task<[String], Never> {
    let events = queue.events
    let units = arguments.units
    let recorder = Task {
        var lines: [String] = []
        var ended = 0
        guard units > 0 else { return lines }
        for await event in events {
            lines.append("\(event)")
            if event.kind == .ended { ended += 1 }
            if event.kind == .idle, ended == units { break }
        }
        return lines
    }
    final class Count: Sendable {
        let value = Atomic<Int>(0)
    }
    let started = Count()
    for index in 0..<units {
        let path = "\(arguments.directory)/unit-\(index)"
        let milliseconds = arguments.unitMilliseconds
        queue.add(.init(name: "unit-\(index)")) {
            writeFile(path, "partial")
            if started.value.add(1, ordering: .acquiringAndReleasing).newValue == units { allStarted() }
            do {
                try await Task.sleep(for: .milliseconds(milliseconds))
                writeFile(path, "complete")
            } catch {
                writeFile(path, "saved")
            }
        }
    }
    if units == 0 { allStarted() }
    return recorder
}

/// `main`'s own code after the shutdown: writes "<directory>/events" and
/// "<directory>/manifest", prints the report to standard error unless the work
/// completed, and exits with the status the report suggests (70 without one).
public func finish(_ arguments: FixtureArguments, events: [String], report: ShutdownReport?) -> Never {
    writeFile("\(arguments.directory)/events", events.joined(separator: "\n"))
    writeFile("\(arguments.directory)/manifest", report.map { "\($0.ending)" } ?? "no report")
    if let report, !report.isComplete { say(report.description, to: 2) }
    exit(report?.exitStatus ?? 70)
}
