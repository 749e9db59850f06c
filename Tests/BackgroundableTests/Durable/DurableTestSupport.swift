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

/// Records of a store, opened fresh on `directory` (the previous store must be gone).
func storedJobs(in directory: ScratchDirectory) async throws -> [DurableJobRecord] {
    try await FileJobStore(directory: directory.url).jobs()
}
