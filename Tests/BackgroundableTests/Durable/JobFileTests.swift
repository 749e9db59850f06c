import Foundation
import Testing

@testable import Backgroundable

@Suite struct JobFileTests {
    private let job = DurableJobRecord(
        id: DurableJobID(), kind: "note", payload: Data("{}".utf8), name: "n", lane: nil, priority: 0,
        timeout: nil, maxAttempts: 1, backoff: .fixed(.zero), runAt: Date(timeIntervalSince1970: 1),
        enqueuedAt: Date(timeIntervalSince1970: 1), sequence: 7)

    @Test func aJobReadsBackWithItsRevisionAndASlotMayGoOnPastIt() throws {
        let bytes = try JobFile.encode(job, revision: 42)
        let read = try JobFile.decode(bytes).get()
        #expect(read.record == job && read.revision == 42)
        let slot = bytes + [UInt8](repeating: 0, count: 100)
        #expect(try JobFile.decode(slot, padded: true).get().revision == 42)
        // A file of its own ends where its job does.
        #expect(throws: DurableStoreError.self) { try JobFile.decode(slot).get() }
    }

    @Test func theRevisionIsCoveredByTheChecksum() throws {
        var bytes = try JobFile.encode(job, revision: 42)
        bytes[4] ^= 0x01
        let error = #expect(throws: DurableStoreError.self) { try JobFile.decode(bytes).get() }
        #expect(error?.message.contains("checksum") == true)
    }

    @Test func aFileOfTheFirstFormatStillReadsBackAsRevisionZero() throws {
        // `BGJ1`, the body's length and its CRC-32, then the body: what 1.0 of the store wrote.
        let body = try JSONEncoder().encode(job)
        var crc = CRC32.start
        CRC32.add(body, to: &crc)
        var bytes = Array("BGJ1".utf8)
        for value in [UInt32(body.count), CRC32.finish(crc)] {
            bytes += (0..<4).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) }
        }
        bytes += body
        let read = try JobFile.decode(bytes).get()
        #expect(read.record == job && read.revision == 0)
    }

    @Test func crc32MatchesZlib() {
        var crc = CRC32.start
        CRC32.add(Array("123456789".utf8), to: &crc)
        #expect(CRC32.finish(crc) == 0xCBF4_3926)
    }
}

@Suite struct JobSlotsTests {
    private func record(_ text: String) -> DurableJobRecord {
        DurableJobRecord(
            id: DurableJobID(), kind: "note", payload: Data(text.utf8), name: nil, lane: nil, priority: 0,
            timeout: nil, maxAttempts: 1, backoff: .fixed(.zero), runAt: Date(), enqueuedAt: Date())
    }

    private func withSlots(_ body: (JobSlots) throws -> Void) throws {
        let directory = ScratchDirectory()
        defer { directory.remove() }
        let jobs = directory.path + "/jobs"
        try FileManager.default.createDirectory(atPath: jobs, withIntermediateDirectories: true)
        let descriptor = open(jobs, O_RDONLY | O_DIRECTORY)
        try #require(descriptor >= 0)
        var recovery = FileJobStore.Recovery()
        let (slots, found) = try JobSlots.load(jobs, directory: descriptor, recovery: &recovery)
        #expect(found.isEmpty)
        try body(slots)
    }

    @Test func aRemovalFirstFlushesTheClearOfTheJobsOlderCopy() throws {
        try withSlots { slots in
            let job = record("a")
            let other = record("b")
            try slots.write([job])
            try slots.write([job])  // moved: its first slot cleared, not yet flushed
            #expect(slots.hasOldCopies(of: job.id))
            try slots.remove(job.id)
            #expect(!slots.hasOldCopies(of: job.id))
            // A flush of the slab for another job's sake makes the clear durable too.
            try slots.write([other])
            try slots.write([other])
            #expect(slots.hasOldCopies(of: other.id))
            try slots.write([record("c")])
            #expect(!slots.hasOldCopies(of: other.id))
        }
    }
}
