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

    /// The bytes of slot `index` of the first slab.
    private func slot(_ index: Int, in directory: ScratchDirectory) throws -> Data {
        let slab = try Data(contentsOf: URL(fileURLWithPath: directory.path + "/jobs/slab-0.slots"))
        return slab[(index * 4096)..<((index + 1) * 4096)]
    }

    /// Writes `bytes` over slot `index` of the first slab, as a crash could have left it.
    private func overwrite(slot index: Int, with bytes: Data, in directory: ScratchDirectory) throws {
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: directory.path + "/jobs/slab-0.slots"))
        defer { try? handle.close() }
        try handle.seek(toOffset: UInt64(index * 4096))
        try handle.write(contentsOf: bytes)
    }

    @Test func jobsTakeSlotsOfOneSlabAndOnlyALargeJobAFileOfItsOwn() async throws {
        let directory = ScratchDirectory()
        defer { directory.remove() }
        let store = try await FileJobStore(directory: directory.url)
        for text in ["a", "b", "c"] { _ = try await store.enqueue(try record(text), replacing: false) }
        var large = try record("large")
        large.payload = Data(repeating: 0x41, count: 8 * 1024)
        _ = try await store.enqueue(large, replacing: false)
        #expect(try jobFiles(directory) == ["\(large.id).job", "slab-0.slots"].sorted())
        // A job whose outcome is final gives its slot back: the next add takes it.
        let done = try await store.jobs().first { $0.id != large.id }!
        try await store.complete(done.id)
        _ = try await store.enqueue(try record("d"), replacing: false)
        #expect(try jobFiles(directory) == ["\(large.id).job", "slab-0.slots"].sorted())
        #expect(try await store.jobs().count == 4)
    }

    @Test func aTornOrDamagedJobIsQuarantinedAndEveryOtherJobKept() async throws {
        let directory = ScratchDirectory()
        defer { directory.remove() }
        var ids: [DurableJobID] = []
        var large = try record("large")
        large.payload = Data(repeating: 0x41, count: 8 * 1024)
        do {
            let store = try await FileJobStore(directory: directory.url)
            for text in ["a", "b"] { ids.append(try await store.enqueue(try record(text), replacing: false).id) }
            _ = try await store.enqueue(large, replacing: false)
        }
        // Flip a byte in the body of the first slot's job, tear the large job's file (a
        // short write), and leave a write's temporary file behind.
        var damaged = try slot(0, in: directory)
        damaged[damaged.startIndex + 40] ^= 0x01
        try overwrite(slot: 0, with: damaged, in: directory)
        let torn = directory.path + "/jobs/\(large.id).job"
        let tornBytes = try Data(contentsOf: URL(fileURLWithPath: torn))
        try tornBytes.prefix(tornBytes.count / 2).write(to: URL(fileURLWithPath: torn))
        try Data("half an add".utf8).write(to: URL(fileURLWithPath: directory.path + "/jobs/x.tmp"))

        let store = try await FileJobStore(directory: directory.url)
        #expect(store.recovery.jobs == 1)
        #expect(store.recovery.removedTemporaryFiles == 1)
        #expect(Set(store.recovery.quarantined.map(\.name)) == ["slab-0-slot-0", "\(large.id).job"])
        #expect(store.recovery.quarantined.contains { $0.reason.contains("torn") })
        #expect(store.recovery.quarantined.contains { $0.reason.contains("checksum") })
        #expect(try await store.jobs().map(\.id) == [ids[1]])
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: directory.path + "/quarantine").sorted()
                == ["\(large.id).job", "slab-0-slot-0"].sorted())
        #expect(try jobFiles(directory) == ["slab-0.slots"])
        // The damaged slot was cleared: the next add takes it.
        _ = try await store.enqueue(try record("c"), replacing: false)
        #expect(try slot(0, in: directory).prefix(4) == Data("BGJ2".utf8))
    }

    @Test func aSlotDamagedAgainIsQuarantinedUnderANameOfItsOwn() async throws {
        let directory = ScratchDirectory()
        defer { directory.remove() }
        for round in 1...2 {
            do {
                let store = try await FileJobStore(directory: directory.url)
                _ = try await store.enqueue(try record("round \(round)"), replacing: false)
            }
            var damaged = try slot(0, in: directory)
            damaged[damaged.startIndex + 40] ^= 0x01
            try overwrite(slot: 0, with: damaged, in: directory)
            let store = try await FileJobStore(directory: directory.url)
            #expect(store.recovery.quarantined.map(\.name) == [round == 1 ? "slab-0-slot-0" : "slab-0-slot-0-2"])
        }
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: directory.path + "/quarantine").sorted()
                == ["slab-0-slot-0", "slab-0-slot-0-2"])
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
        // The state a crash leaves between writing the new job and clearing the old one:
        // both jobs, the new one with the later sequence.
        let oldSlot = try slot(0, in: directory)
        do {
            let store = try await FileJobStore(directory: directory.url)
            _ = try await store.enqueue(new, replacing: true)
        }
        try overwrite(slot: 0, with: oldSlot, in: directory)

        do {
            let store = try await FileJobStore(directory: directory.url)
            #expect(store.recovery.removedDuplicates == [old.id])
            #expect(try await store.jobs().map(\.id) == [new.id])
        }
        let store = try await FileJobStore(directory: directory.url)
        #expect(store.recovery.removedDuplicates.isEmpty)
        #expect(store.recovery.jobs == 1)
    }

    @Test func aClaimInterruptedBeforeItClearedTheOldCopyKeepsTheNewer() async throws {
        let directory = ScratchDirectory()
        defer { directory.remove() }
        let job = try record("a")
        let firstCopy: Data
        do {
            let store = try await FileJobStore(directory: directory.url)
            _ = try await store.enqueue(job, replacing: false)
            firstCopy = try slot(0, in: directory)
            // The claim writes the job, its attempt counted, to another slot, then clears this one.
            #expect(try await store.claim(kinds: ["note"], limit: 5, lease: .seconds(1)).map(\.attempt) == [1])
            #expect(try slot(0, in: directory).prefix(20).allSatisfy { $0 == 0 })
        }
        // A crash before the clear reached the disk: both copies.
        try overwrite(slot: 0, with: firstCopy, in: directory)
        do {
            let store = try await FileJobStore(directory: directory.url)
            #expect(store.recovery.jobs == 1)
            #expect(try await store.claim(kinds: ["note"], limit: 5, lease: .seconds(1)).map(\.attempt) == [2])
        }
        let store = try await FileJobStore(directory: directory.url)
        #expect(try await store.jobs().map(\.attempt) == [2])
    }

    @Test func theEmptySlabsAtTheEndGoWhenTheStoreOpens() async throws {
        let directory = ScratchDirectory()
        defer { directory.remove() }
        do {
            let store = try await FileJobStore(directory: directory.url)
            var ids: [DurableJobID] = []
            for index in 0..<20 { ids.append(try await store.enqueue(try record("\(index)"), replacing: false).id) }
            #expect(try jobFiles(directory) == ["slab-0.slots", "slab-1.slots", "slab-2.slots"])
            for id in ids.dropFirst() { try await store.complete(id) }
        }
        let store = try await FileJobStore(directory: directory.url)
        #expect(store.recovery.jobs == 1)
        #expect(try jobFiles(directory) == ["slab-0.slots"])
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

    @Test func anAddOfAStoredIDIsADuplicateIDErrorAndChangesNothing() async throws {
        let directory = ScratchDirectory()
        defer { directory.remove() }
        let job = try record("first", name: "sync")
        do {
            let store = try await FileJobStore(directory: directory.url)
            _ = try await store.enqueue(job, replacing: false)
            // The same id again (an add tried again after it succeeded), under its own name,
            // another name or none, dropping or replacing: an error, before any name rule.
            for name in ["sync", "other", nil] as [String?] {
                for replacing in [false, true] {
                    var again = try record("again", name: name)
                    again.id = job.id
                    let error = await #expect(throws: DurableStoreError.self) {
                        _ = try await store.enqueue(again, replacing: replacing)
                    }
                    #expect(error?.code == .duplicateID)
                }
            }
            #expect(try await store.jobs().map(\.payload) == [job.payload])
        }
        // Nothing of the refused adds reached the disk either.
        let reopened = try await FileJobStore(directory: directory.url)
        let jobs = try await reopened.jobs()
        #expect(jobs.map(\.id) == [job.id])
        #expect(jobs.map(\.payload) == [job.payload])
        #expect(try jobFiles(directory) == ["slab-0.slots"])
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
            // Nothing half-written is left.
            let listing = try FileManager.default.contentsOfDirectory(atPath: mount.path + "/jobs/jobs")
            #expect(listing == ["slab-0.slots"])
        }
    }

    @Test func aDiskTooFullForANewSlabStillTakesAJobInAFileOfItsOwn() async throws {
        try await withTmpfs(kilobytes: 96) { mount in
            let store = try await FileJobStore(directory: mount.url.appendingPathComponent("jobs"))
            for index in 0..<8 { _ = try await store.enqueue(try record("\(index)"), replacing: false) }
            // Fill the disk, then free two pages: too little for the next slab (8 slots),
            // enough for a file.
            let filler = mount.path + "/filler"
            _ = FileManager.default.createFile(atPath: filler, contents: nil)
            let handle = try #require(FileHandle(forWritingAtPath: filler))
            let page = Data(repeating: 0, count: 4096)
            while (try? handle.write(contentsOf: page)) != nil {}
            try handle.truncate(atOffset: try handle.offset() - 2 * 4096)
            try handle.close()

            let ninth = try await store.enqueue(try record("ninth"), replacing: false)
            #expect(try await store.jobs().count == 9)
            let listing = try FileManager.default.contentsOfDirectory(atPath: mount.path + "/jobs/jobs").sorted()
            #expect(listing == ["\(ninth.id).job", "slab-0.slots"].sorted())
        }
    }

    @Test func aReadOnlyDirectoryFailsTheAddClearlyAndKeepsItsJobs() async throws {
        try await withTmpfs(kilobytes: 1024) { mount in
            let folder = mount.url.appendingPathComponent("jobs")
            // A job too large for a slot: the store then holds no slab open, which would
            // keep the file system from being remounted read-only (see below).
            var large = try record("kept")
            large.payload = Data(repeating: 0x41, count: 8 * 1024)
            let kept = large.id
            do {
                let store = try await FileJobStore(directory: folder)
                _ = try await store.enqueue(large, replacing: false)
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
            do {
                let store = try await FileJobStore(directory: folder)
                #expect(await run("/bin/mount", ["-o", "remount,ro", mount.path]) == 0)
                let addError = await #expect(throws: DurableStoreError.self) {
                    _ = try await store.enqueue(try record("refused"), replacing: false)
                }
                #expect(addError?.code == .io)
                #expect(addError?.message.contains("Read-only file system") == true)
                #expect(try await store.jobs().map(\.id) == [kept])
                #expect(await run("/bin/mount", ["-o", "remount,rw", mount.path]) == 0)
            }
            // Once a store has a slab, it holds it open for writing, and the system refuses
            // to remount the file system read-only under it.
            let store = try await FileJobStore(directory: folder)
            _ = try await store.enqueue(try record("small"), replacing: false)
            #expect(await run("/bin/mount", ["-o", "remount,ro", mount.path]) != 0)
            #expect(try await store.jobs().count == 2)
        }
    }
}
