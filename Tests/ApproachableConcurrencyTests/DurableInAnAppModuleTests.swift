import Backgroundable
import Foundation
import Testing

// Durable jobs from an app module (main actor by default): the payload type is
// `nonisolated`, as DurableWork.md says, and the rest reads as written there.

nonisolated struct Upload: Codable, Sendable {
    var path: String
}

extension DurableJobKind where Payload == Upload {
    static let upload = DurableJobKind("upload")
}

/// Main-actor state the handler reports to.
final class UploadLog {
    var paths: [String] = []
}

@Test func durableJobsRunFromAnAppModule() async throws {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("app-jobs-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: folder) }
    let log = UploadLog()
    let jobs = DurableQueue(store: try await FileJobStore(directory: folder), queue: BackgroundQueue(name: "uploads"))
    jobs.register(.upload) { upload, _ in
        #expect(!Thread.isMainThread)  // handlers run off the main actor
        await MainActor.run { log.paths.append(upload.path) }
    }
    try await jobs.add(.upload, Upload(path: "a.heic"), options: .init(name: "a"))
    await jobs.runUntilIdle()
    #expect(log.paths == ["a.heic"])
}
