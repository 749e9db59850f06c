// A child process for the graceful-shutdown tests (GracefulShutdownTests.swift).
//
//     graceful-shutdown-fixture <directory> <units> <unit-ms> <grace-ms>
//
// Installs `GracefulShutdown`, then adds <units> units to a queue; unit i writes
// "<directory>/unit-i" as "partial", works for <unit-ms> milliseconds, then writes it
// again as "complete". Prints "ready" once every unit has started, then waits for
// SIGTERM / SIGINT. Output goes through write(2), unbuffered, so the parent sees it
// at once.
import Backgroundable
import Dispatch
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

let provider = GracefulShutdown.install(gracePeriod: .milliseconds(graceMilliseconds))
// The default provider is now the graceful-shutdown one.
let queue = BackgroundQueue(name: "fixture")
provider.monitor(queue)
guard queue.backgroundTaskProvider is GracefulShutdownBackgroundTaskProvider else {
    say("the queue did not get the installed provider", to: 2)
    exit(65)
}

let started = Atomic<Int>(0)
for index in 0..<units {
    let path = "\(directory)/unit-\(index)"
    queue.addTask(name: "unit-\(index)", timeout: nil) {
        writeFile(path, "partial")
        if started.add(1, ordering: .acquiringAndReleasing).newValue == units {
            say("ready")
        }
        try await Task.sleep(for: .milliseconds(unitMilliseconds))
        writeFile(path, "complete")
    }
}
if units == 0 { say("ready") }
dispatchMain()
