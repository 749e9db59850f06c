import Backgroundable
import Foundation
import Synchronization

struct Note: Codable, Sendable, Hashable {
    var text: String
    var failures = 0
}

extension DurableJobKind where Payload == Note {
    static let note = DurableJobKind("note")
    static let otherNote = DurableJobKind("other-note")
}

/// A fresh directory under the temporary directory, removed by `remove()`.
struct ScratchDirectory {
    let url: URL
    init(_ label: String = "durable") {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("\(label)-\(UUID().uuidString)")
    }
    var path: String { url.path }
    func remove() { try? FileManager.default.removeItem(at: url) }
}

/// What handlers saw, in order.
final class Journal: Sendable {
    private let entries = Mutex<[String]>([])
    func record(_ entry: String) { entries.withLock { $0.append(entry) } }
    var all: [String] { entries.withLock { $0 } }
}

/// A file store in a fresh directory and a durable queue over it; `remove()` the
/// directory when done.
struct DurableSetup {
    let directory = ScratchDirectory()
    let store: FileJobStore
    let jobs: DurableQueue

    init(queue: BackgroundQueue = BackgroundQueue(), maxRunningJobs: Int = 16) async throws {
        store = try await FileJobStore(directory: directory.url)
        jobs = DurableQueue(store: store, queue: queue, maxRunningJobs: maxRunningJobs)
    }

    func remove() { directory.remove() }
}

extension DurableQueue {
    /// Registers a `.note` handler that runs until its unit is cancelled; returns a signal
    /// for its start.
    func registerUntilCancelled() -> Signal {
        let started = Signal()
        register(.note) { _, _ in
            started.signal()
            await suspendUntilCancelled()
        }
        return started
    }
}

/// Records of a store, opened fresh on `directory` (the previous store must be gone).
func storedJobs(in directory: ScratchDirectory) async throws -> [DurableJobRecord] {
    try await FileJobStore(directory: directory.url).jobs()
}

/// A child process whose standard output goes to a file, waited for without blocking a
/// thread (its termination handler resumes the waiters). A file, not a pipe: a pipe's
/// write end can leak into another child spawned at the same moment, and a read waiting
/// for its end would then wait for that other child too.
final class ChildProcess: Sendable {
    private let process: Process
    private let exited = Signal()

    init(_ executable: URL, _ arguments: [String], output: URL? = nil) throws {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.standardInput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        var outputHandle: FileHandle?
        if let output {
            _ = FileManager.default.createFile(atPath: output.path, contents: nil)
            outputHandle = try FileHandle(forWritingTo: output)
            process.standardOutput = outputHandle
        } else {
            process.standardOutput = FileHandle.nullDevice
        }
        process.terminationHandler = { [exited] _ in exited.signal() }
        try process.run()
        try outputHandle?.close()
        self.process = process
    }

    var processIdentifier: Int32 { process.processIdentifier }

    /// Waits until the process has ended; returns its status.
    func exitStatus() async -> Int32 {
        await exited.wait()
        return process.terminationStatus
    }

    /// Whether the process ends within `timeout`.
    func hasExited(within timeout: Duration) async -> Bool {
        await exited.wait(upTo: timeout)
    }
}
