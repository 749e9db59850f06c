// A child process for the graceful-shutdown tests (GracefulShutdownTests.swift): a
// small server written the way the README shows.
//
//     graceful-shutdown-fixture <directory> <units> <unit-ms> <grace-ms>
//
// Installs `GracefulShutdown`, then adds <units> units to a queue; unit i writes
// "<directory>/unit-i" as "partial", works for <unit-ms> milliseconds, then writes it
// again as "complete" — or, cancelled, as "saved" (the state it saves in the
// cancellation period). Prints "ready" once every unit has started, then waits for the
// shutdown request (SIGTERM / SIGINT), prints "draining", drains the queue, and then —
// `main`'s own code, after the wait — writes "<directory>/events" (every event the
// queue delivered) and "<directory>/manifest", prints the report to standard error
// unless the work completed, and exits with the status the report suggests. Output goes through
// write(2), unbuffered, so the parent sees it at once.
import Backgroundable
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

func say(_ line: String, to descriptor: Int32 = 1) {
    var bytes = Array((line + "\n").utf8)
    _ = bytes.withUnsafeMutableBytes { write(descriptor, $0.baseAddress, $0.count) }
}

func writeFile(_ path: String, _ contents: String) {
    let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    guard descriptor >= 0 else { return say("cannot open \(path)", to: 2) }
    var bytes = Array(contents.utf8)
    _ = bytes.withUnsafeMutableBytes { write(descriptor, $0.baseAddress, $0.count) }
    close(descriptor)
}

let arguments = CommandLine.arguments
guard arguments.count == 5, let units = Int(arguments[2]), let unitMilliseconds = Int(arguments[3]),
    let graceMilliseconds = Int(arguments[4])
else {
    say("usage: graceful-shutdown-fixture <directory> <units> <unit-ms> <grace-ms>", to: 2)
    exit(64)
}
let directory = arguments[1]

let shutdown = GracefulShutdown.install(gracePeriod: .milliseconds(graceMilliseconds))
// The default provider is now the graceful-shutdown one.
let queue = BackgroundQueue(name: "fixture")
guard queue.backgroundTaskProvider is GracefulShutdown else {
    say("the queue did not get the installed provider", to: 2)
    exit(65)
}

// Every event, until the queue is idle after every unit ended.
let events = queue.events
let recorder = Task {
    var lines: [String] = []
    var ended = 0
    guard units > 0 else { return lines }
    for await event in events {
        lines.append("\(event)")
        if case .ended = event { ended += 1 }
        if case .idle = event, ended == units { break }
    }
    return lines
}

let started = Atomic<Int>(0)
for index in 0..<units {
    let path = "\(directory)/unit-\(index)"
    queue.addTask(name: "unit-\(index)") {
        writeFile(path, "partial")
        if started.add(1, ordering: .acquiringAndReleasing).newValue == units {
            say("ready")
        }
        do {
            try await Task.sleep(for: .milliseconds(unitMilliseconds))
            writeFile(path, "complete")
        } catch {
            writeFile(path, "saved")
        }
    }
}
if units == 0 { say("ready") }

await shutdown.waitForShutdownRequest()
say("draining")
let report = await shutdown.drain(queue)
writeFile("\(directory)/events", (await recorder.value).joined(separator: "\n"))
writeFile("\(directory)/manifest", "\(report.ending)")
if !report.isComplete { say(report.description, to: 2) }
exit(report.exitStatus)
