import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The on-disk form of one job (``FileJobStore``), in a slot of a slab file or in a file
/// of its own: a 20-byte header — the magic `BGJ2`, the record's revision, the body's
/// length and a CRC-32 of the revision and the body, all little-endian — then the record
/// as JSON. The revision is the store's count of writes: when a crash leaves two copies
/// of a job, the higher revision is the newer. Bytes whose header, length or checksum do
/// not match their body are torn or damaged, and are never taken for a job. Files of the
/// first format (`BGJ1`: no revision, a 12-byte header) are still read, as revision 0.
enum JobFile {
    static let fileExtension = "job"
    static let temporaryExtension = "tmp"
    static let headerSize = 20
    private static let magic: [UInt8] = Array("BGJ2".utf8)
    private static let firstMagic: [UInt8] = Array("BGJ1".utf8)

    static func encode(_ record: DurableJobRecord, revision: UInt64) throws -> [UInt8] {
        let body: Data
        do {
            body = try encoder.encode(record)
        } catch {
            throw DurableStoreError(.encoding, "job \(record.id) could not be encoded: \(error)")
        }
        var bytes = magic
        bytes.reserveCapacity(headerSize + body.count)
        append(revision, size: 8, to: &bytes)
        append(UInt64(body.count), size: 4, to: &bytes)
        var crc = CRC32.start
        CRC32.add(bytes[4..<12], to: &crc)
        CRC32.add(body, to: &crc)
        append(UInt64(CRC32.finish(crc)), size: 4, to: &bytes)
        bytes.append(contentsOf: body)
        return bytes
    }

    /// The record in `bytes` and its revision, or a description of what is wrong with
    /// them. `padded` bytes (a slot) may go on past the body; a file's may not.
    static func decode(_ bytes: some RandomAccessCollection<UInt8>, padded: Bool = false)
        -> Result<(record: DurableJobRecord, revision: UInt64), DurableStoreError>
    {
        let bytes = Array(bytes)
        let prefix = bytes.count >= 4 ? Array(bytes[0..<4]) : []
        let isFirstFormat = prefix == firstMagic
        guard prefix == magic || isFirstFormat else {
            return .failure(DurableStoreError(.encoding, "not a job (\(bytes.count) bytes, no header)"))
        }
        let header = isFirstFormat ? 12 : headerSize
        guard bytes.count >= header else {
            return .failure(DurableStoreError(.encoding, "torn: \(bytes.count) bytes of a \(header)-byte header"))
        }
        let revision = isFirstFormat ? 0 : read(bytes, at: 4, size: 8)
        let length = Int(read(bytes, at: header - 8, size: 4))
        let checksum = UInt32(read(bytes, at: header - 4, size: 4))
        guard padded ? bytes.count >= header + length : bytes.count == header + length else {
            return .failure(
                DurableStoreError(.encoding, "torn: \(bytes.count - header) bytes of a \(length)-byte body"))
        }
        let body = bytes[header..<(header + length)]
        var crc = CRC32.start
        if !isFirstFormat { CRC32.add(bytes[4..<12], to: &crc) }
        CRC32.add(body, to: &crc)
        guard CRC32.finish(crc) == checksum else {
            return .failure(DurableStoreError(.encoding, "damaged: the checksum does not match"))
        }
        do {
            return .success((try JSONDecoder().decode(DurableJobRecord.self, from: Data(body)), revision))
        } catch {
            return .failure(DurableStoreError(.encoding, "unreadable record: \(error)"))
        }
    }

    private static var encoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return encoder
    }

    private static func append(_ value: UInt64, size: Int, to bytes: inout [UInt8]) {
        for byte in 0..<size { bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(8 * byte))) }
    }

    private static func read(_ bytes: [UInt8], at offset: Int, size: Int) -> UInt64 {
        (0..<size).reduce(0) { $0 | UInt64(bytes[offset + $1]) << UInt64(8 * $1) }
    }
}

/// CRC-32 (IEEE 802.3, as zlib computes it).
enum CRC32 {
    private static let table: [UInt32] = (0..<256).map { index in
        (0..<8).reduce(UInt32(index)) { crc, _ in crc & 1 == 1 ? 0xEDB8_8320 ^ (crc >> 1) : crc >> 1 }
    }

    static let start: UInt32 = 0xFFFF_FFFF

    static func add(_ bytes: some Sequence<UInt8>, to crc: inout UInt32) {
        for byte in bytes { crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
    }

    static func finish(_ crc: UInt32) -> UInt32 { crc ^ 0xFFFF_FFFF }
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
    ///
    /// A lock held elsewhere is tried again for up to 0.2 s (blocking the calling thread,
    /// the store's own): a child process being spawned holds a copy of every descriptor
    /// of its parent until it starts its program, so a store just closed in a process
    /// that spawns others can keep its lock for that moment.
    static func lock(_ path: String) throws -> Int32 {
        // Read-only: an open file written to would keep its file system from being
        // remounted read-only.
        let descriptor = open(path, O_RDONLY | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw error("open", path) }
        let deadline = ContinuousClock.now + .milliseconds(200)
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            let code = errno
            if code == EINTR || (code == EWOULDBLOCK && ContinuousClock.now < deadline) {
                usleep(1_000)
                continue
            }
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

    /// Writes `bytes` to `path` atomically and durably: into a temporary file beside it,
    /// flushed to the disk, then renamed over `path`, and the directory (open as
    /// `directory`) flushed, so the rename too survives a power loss. On failure before
    /// the rename nothing is left behind and `path` is unchanged.
    static func writeAtomically(_ bytes: [UInt8], to path: String, temporary: String, directory: Int32) throws {
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
        if failure == nil, !syncToDisk(descriptor) { failure = error("fdatasync", temporary) }
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
        try syncDirectory(directory, path)
    }

    /// Writes all of `bytes` at `offset` of the open file `descriptor` (at `path`).
    static func writeAll(_ bytes: some Collection<UInt8>, to descriptor: Int32, at offset: Int, path: String) throws {
        let bytes = Array(bytes)
        var written = 0
        while written < bytes.count {
            let count = bytes.withUnsafeBytes {
                pwrite(descriptor, $0.baseAddress! + written, $0.count - written, off_t(offset + written))
            }
            if count >= 0 {
                written += count
            } else if errno != EINTR {
                throw error("pwrite", path)
            }
        }
    }

    /// Flushes the data of the open file `descriptor` (at `path`) to the disk.
    static func flush(_ descriptor: Int32, _ path: String) throws {
        if !syncToDisk(descriptor) { throw error("fdatasync", path) }
    }

    /// Puts what was written through `descriptor` on the disk itself: on Apple's systems
    /// `fsync` leaves it in the drive's cache, where a power loss can drop it or reorder
    /// it, so `F_FULLFSYNC` asks the drive to write its cache out (with `fsync` for file
    /// systems that do not support it); elsewhere `fdatasync` does. `false` on failure.
    private static func syncToDisk(_ descriptor: Int32) -> Bool {
        #if canImport(Darwin)
            return fcntl(descriptor, F_FULLFSYNC) != -1 || fsync(descriptor) == 0
        #else
            return fdatasync(descriptor) == 0
        #endif
    }

    /// Unlinks `path` (nothing to do when it is gone), without flushing its directory.
    static func remove(_ path: String) throws {
        if unlink(path) != 0, errno != ENOENT { throw error("unlink", path) }
    }

    static func syncDirectory(_ directory: Int32, _ path: String) throws {
        #if canImport(Darwin)
            let synced = syncToDisk(directory)
        #else
            let synced = fsync(directory) == 0
        #endif
        if !synced { throw error("fsync (directory of)", path) }
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
