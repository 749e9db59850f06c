import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The on-disk form of one job (``FileJobStore``): a 12-byte header — the magic `BGJ1`,
/// the body's length and its CRC-32, both little-endian — then the record as JSON. A file
/// whose header, length or checksum does not match its body is torn or damaged, and is
/// never taken for a job.
enum JobFile {
    static let magic: [UInt8] = Array("BGJ1".utf8)
    static let fileExtension = "job"
    static let temporaryExtension = "tmp"

    static func encode(_ record: DurableJobRecord) throws -> [UInt8] {
        let body: Data
        do {
            body = try encoder.encode(record)
        } catch {
            throw DurableStoreError(.encoding, "job \(record.id) could not be encoded: \(error)")
        }
        var bytes = magic
        bytes.reserveCapacity(12 + body.count)
        append(UInt32(body.count), to: &bytes)
        append(CRC32.checksum(body), to: &bytes)
        bytes.append(contentsOf: body)
        return bytes
    }

    /// The record in `bytes`, or a description of what is wrong with them.
    static func decode(_ bytes: [UInt8]) -> Result<DurableJobRecord, DurableStoreError> {
        guard bytes.count >= 12, Array(bytes[0..<4]) == magic else {
            return .failure(DurableStoreError(.encoding, "not a job file (\(bytes.count) bytes, no header)"))
        }
        let length = Int(readUInt32(bytes, at: 4))
        let checksum = readUInt32(bytes, at: 8)
        guard bytes.count == 12 + length else {
            return .failure(DurableStoreError(.encoding, "torn: \(bytes.count - 12) bytes of a \(length)-byte body"))
        }
        let body = Data(bytes[12...])
        guard CRC32.checksum(body) == checksum else {
            return .failure(DurableStoreError(.encoding, "damaged: the checksum does not match"))
        }
        do {
            return .success(try JSONDecoder().decode(DurableJobRecord.self, from: body))
        } catch {
            return .failure(DurableStoreError(.encoding, "unreadable record: \(error)"))
        }
    }

    private static var encoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return encoder
    }

    private static func append(_ value: UInt32, to bytes: inout [UInt8]) {
        for shift in stride(from: 0, to: 32, by: 8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt32(shift))) }
    }

    private static func readUInt32(_ bytes: [UInt8], at offset: Int) -> UInt32 {
        (0..<4).reduce(0) { $0 | UInt32(bytes[offset + $1]) << UInt32(8 * $1) }
    }
}

/// CRC-32 (IEEE 802.3, as zlib computes it).
enum CRC32 {
    private static let table: [UInt32] = (0..<256).map { index in
        (0..<8).reduce(UInt32(index)) { crc, _ in crc & 1 == 1 ? 0xEDB8_8320 ^ (crc >> 1) : crc >> 1 }
    }

    static func checksum(_ data: Data) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in data { crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        return crc ^ 0xFFFF_FFFF
    }
}

/// The POSIX calls of ``FileJobStore``, each throwing a ``DurableStoreError/Code/io``
/// error that names the call, the path and the `errno`.
enum FileSystem {
    static func error(_ call: String, _ path: String, _ code: Int32 = errno) -> DurableStoreError {
        DurableStoreError(.io, "\(call) \(path): \(String(cString: strerror(code))) (errno \(code))")
    }

    static func createDirectory(_ path: String) throws {
        if mkdir(path, 0o755) != 0, errno != EEXIST { throw error("mkdir", path) }
    }

    /// Opens `path` for an exclusive `flock` held until the process ends or the
    /// descriptor is closed; throws ``DurableStoreError/Code/directoryInUse`` when another
    /// open descriptor holds it.
    static func lock(_ path: String) throws -> Int32 {
        // Read-only: an open file written to would keep its file system from being
        // remounted read-only.
        let descriptor = open(path, O_RDONLY | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw error("open", path) }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let code = errno
            close(descriptor)
            if code == EWOULDBLOCK {
                throw DurableStoreError(.directoryInUse, "\(path) is locked by another FileJobStore")
            }
            throw error("flock", path, code)
        }
        return descriptor
    }

    static func readFile(_ path: String) throws -> [UInt8] {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw error("open", path) }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw error("read", path)
            }
            if count == 0 { return bytes }
            bytes.append(contentsOf: buffer[0..<count])
        }
    }

    /// Writes `bytes` to `path` atomically: into a temporary file beside it, flushed to
    /// the disk when `sync` is `true`, then renamed over `path` (and the directory
    /// flushed, so the rename too survives a power loss). On failure nothing is left
    /// behind and `path` is unchanged.
    static func writeAtomically(_ bytes: [UInt8], to path: String, temporary: String, directory: Int32, sync: Bool)
        throws
    {
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw error("open", temporary) }
        var failure: DurableStoreError?
        var written = 0
        while failure == nil, written < bytes.count {
            let count = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress! + written, $0.count - written) }
            if count >= 0 {
                written += count
            } else if errno != EINTR {
                failure = error("write", temporary)
            }
        }
        if failure == nil, sync, fdatasync(descriptor) != 0 { failure = error("fdatasync", temporary) }
        if close(descriptor) != 0, failure == nil { failure = error("close", temporary) }
        if let failure {
            unlink(temporary)
            throw failure
        }
        guard rename(temporary, path) == 0 else {
            let failure = error("rename", temporary)
            unlink(temporary)
            throw failure
        }
        if sync { try syncDirectory(directory, path) }
    }

    static func remove(_ path: String, directory: Int32, sync: Bool) throws {
        if unlink(path) != 0, errno != ENOENT { throw error("unlink", path) }
        if sync { try syncDirectory(directory, path) }
    }

    static func syncDirectory(_ directory: Int32, _ path: String) throws {
        if fsync(directory) != 0 { throw error("fsync (directory of)", path) }
    }

    /// The names of the entries of the directory at `path`.
    static func list(_ path: String) throws -> [String] {
        guard let stream = opendir(path) else { throw error("opendir", path) }
        defer { closedir(stream) }
        var names: [String] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) {
                String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != ".", name != ".." { names.append(name) }
        }
        return names
    }
}
