import Backgroundable
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite struct FileJobStoreTests {
    private func record(_ text: String, name: String? = nil, sequence: Int64 = 0) throws -> DurableJobRecord {
        DurableJobRecord(
            id: DurableJobID(), kind: "note", payload: try JSONEncoder().encode(Note(text: text)), name: name,
            lane: nil, priority: 0, timeout: nil, maxAttempts: 1, backoff: .fixed(.zero), runAt: Date(),
            enqueuedAt: Date(), sequence: sequence)
    }

    private func jobFiles(_ directory: ScratchDirectory) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory.path + "/jobs").sorted()
    }

    @Test func aSecondStoreOnTheSameDirectoryIsTurnedAway() async throws {
        let directory = ScratchDirectory()
        defer { directory.remove() }
        let store = try await FileJobStore(directory: directory.url)
        let error = await #expect(throws: DurableStoreError.self) {
            _ = try await FileJobStore(directory: directory.url)
        }
        #expect(error?.code == .directoryInUse)
        _ = store
    }

    @Test func aTornOrDamagedFileIsQuarantinedAndEveryOtherJobKept() async throws {
        let directory = ScratchDirectory()
        defer { directory.remove() }
        var kept: [DurableJobID] = []
        do {
            let store = try await FileJobStore(directory: directory.url)
            for text in ["a", "b", "c"] { kept.append(try await store.enqueue(try record(text), replacing: false).id) }
        }
        let files = try jobFiles(directory)
        #expect(files.count == 3)
        // Tear one file (a short write), flip a byte in another's body, and leave an
        // add's temporary file behind.
        let torn = directory.path + "/jobs/" + files[0]
        let tornBytes = try Data(contentsOf: URL(fileURLWithPath: torn))
        try tornBytes.prefix(tornBytes.count / 2).write(to: URL(fileURLWithPath: torn))
        let damaged = directory.path + "/jobs/" + files[1]
        var damagedBytes = try Data(contentsOf: URL(fileURLWithPath: damaged))
        damagedBytes[damagedBytes.count - 3] ^= 0x01
        try damagedBytes.write(to: URL(fileURLWithPath: damaged))
        try Data("half an add".utf8).write(to: URL(fileURLWithPath: directory.path + "/jobs/x.tmp"))

        let store = try await FileJobStore(directory: directory.url)
        #expect(store.recovery.jobs == 1)
        #expect(store.recovery.removedTemporaryFiles == 1)
        #expect(Set(store.recovery.quarantined.map(\.name)) == Set(files[0...1]))
        #expect(store.recovery.quarantined.contains { $0.reason.contains("torn") })
        #expect(store.recovery.quarantined.contains { $0.reason.contains("checksum") })
        let remaining = try await store.jobs().map(\.id)
        #expect(remaining.count == 1 && kept.contains(remaining[0]))
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: directory.path + "/quarantine").sorted()
                == Array(files[0...1]))
    }

    @Test func aReplaceInterruptedBetweenItsStepsLeavesOneJobOfTheName() async throws {
        let directory = ScratchDirectory()
        defer { directory.remove() }
        let old = try record("old", name: "sync")
        let new = try record("new", name: "sync")
        do {
            let store = try await FileJobStore(directory: directory.url)
            _ = try await store.enqueue(old, replacing: false)
        }
        // The state a crash leaves between writing the new job and removing the old one:
        // both files, the new one with the later sequence.
        let oldFile = directory.path + "/jobs/\(old.id).job"
        let oldBytes = try Data(contentsOf: URL(fileURLWithPath: oldFile))
        do {
            let store = try await FileJobStore(directory: directory.url)
            _ = try await store.enqueue(new, replacing: true)
        }
        try oldBytes.write(to: URL(fileURLWithPath: oldFile))

        let store = try await FileJobStore(directory: directory.url)
        #expect(store.recovery.removedDuplicates == [old.id])
        #expect(try await store.jobs().map(\.id) == [new.id])
        #expect(try jobFiles(directory) == ["\(new.id).job"])
    }

    @Test func aClaimIsKeptAcrossACrashWithItsAttemptCounted() async throws {
        let directory = ScratchDirectory()
        defer { directory.remove() }
        let job = try record("a")
        do {
            let store = try await FileJobStore(directory: directory.url)
            _ = try await store.enqueue(job, replacing: false)
            #expect(try await store.claim(kinds: ["note"], limit: 5, lease: .seconds(1)).map(\.attempt) == [1])
            #expect(try await store.claim(kinds: ["note"], limit: 5, lease: .seconds(1)).isEmpty)
        }
        // The process that held it is gone: the next store can claim it, as its second attempt.
        let store = try await FileJobStore(directory: directory.url)
        #expect(try await store.claim(kinds: ["note"], limit: 5, lease: .seconds(1)).map(\.attempt) == [2])
    }

    /// Runs `body` with a tmpfs of `kilobytes` mounted at a fresh directory, then unmounts
    /// it; where this process may not mount file systems, says so and runs nothing.
    private func withTmpfs(kilobytes: Int, _ body: (ScratchDirectory) async throws -> Void) async throws {
        let mount = ScratchDirectory("durable-mount")
        try FileManager.default.createDirectory(at: mount.url, withIntermediateDirectories: true)
        defer { mount.remove() }
        let status = await run("/bin/mount", ["-t", "tmpfs", "-o", "size=\(kilobytes)k", "tmpfs", mount.path])
        guard status == 0 else {
            print("FileJobStoreTests: skipped: cannot mount a tmpfs here (mount exited \(status))")
            return
        }
        do {
            try await body(mount)
        } catch {
            Issue.record(error)
        }
        await run("/bin/umount", [mount.path])
    }

    @discardableResult
    private func run(_ tool: String, _ arguments: [String]) async -> Int32 {
        guard let child = try? ChildProcess(URL(fileURLWithPath: tool), arguments) else { return -1 }
        return await child.exitStatus()
    }

    @Test func aFullDiskFailsTheAddClearlyAndLosesNoOtherJob() async throws {
        try await withTmpfs(kilobytes: 64) { mount in
            let store = try await FileJobStore(directory: mount.url.appendingPathComponent("jobs"))
            let kept = try await store.enqueue(try record("small"), replacing: false)
            var big = try record("big")
            big.payload = Data(repeating: 0x41, count: 256 * 1024)
            let error = await #expect(throws: DurableStoreError.self) {
                _ = try await store.enqueue(big, replacing: false)
            }
            #expect(error?.code == .io)
            #expect(error?.message.contains("No space left") == true)
            #expect(try await store.jobs().map(\.id) == [kept.id])
            // Nothing half-written is left: a new store reads back exactly the kept job.
            let listing = try FileManager.default.contentsOfDirectory(atPath: mount.path + "/jobs/jobs")
            #expect(listing == ["\(kept.id).job"])
        }
    }

    @Test func aReadOnlyDirectoryFailsTheAddClearlyAndKeepsItsJobs() async throws {
        try await withTmpfs(kilobytes: 1024) { mount in
            let folder = mount.url.appendingPathComponent("jobs")
            let kept: DurableJobID
            do {
                let store = try await FileJobStore(directory: folder)
                kept = try await store.enqueue(try record("kept"), replacing: false).id
            }
            #expect(await run("/bin/mount", ["-o", "remount,ro", mount.path]) == 0)
            // Opening a read-only directory is refused clearly: the store cannot even lock it.
            let openError = await #expect(throws: DurableStoreError.self) {
                _ = try await FileJobStore(directory: folder)
            }
            #expect(openError?.code == .io)
            #expect(openError?.message.contains("Read-only file system") == true)
            #expect(await run("/bin/mount", ["-o", "remount,rw", mount.path]) == 0)
            // A store opened before the directory turned read-only fails its adds, keeps its jobs.
            let store = try await FileJobStore(directory: folder)
            #expect(await run("/bin/mount", ["-o", "remount,ro", mount.path]) == 0)
            let addError = await #expect(throws: DurableStoreError.self) {
                _ = try await store.enqueue(try record("refused"), replacing: false)
            }
            #expect(addError?.code == .io)
            #expect(try await store.jobs().map(\.id) == [kept])
            #expect(await run("/bin/mount", ["-o", "remount,rw", mount.path]) == 0)
        }
    }
}
