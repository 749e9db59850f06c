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
