import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Where a ``FileJobStore`` keeps its jobs on disk, and the writes that keep them safe.
///
/// A job lives in a 4 KiB slot of a slab file (`slab-N.slots`), or — when its encoded
/// record does not fit a slot — in a file of its own (`<id>.job`). Slabs are made ahead,
/// full of zeros, flushed and renamed into place, so writing a slot changes no file's
/// size and no directory: an add is one `pwrite` and one `fdatasync`, where a file of its
/// own takes a write, an `fdatasync`, a rename and a flush of the directory. A slot whose
/// header is all zeros is free.
///
/// A job that changes is written to a free slot, flushed, and only then is its old place
/// cleared, so a torn write never harms the only copy of a job; after a crash the copy
/// with the higher revision (``JobFile``) wins. A job's removal makes sure its older
/// copies are cleared on the disk before its live copy is, so no crash brings back a job
/// whose outcome was final. Each slot is a block of its own, so a torn slot never harms
/// another job either.
///
/// Slabs double in size as they are needed (8 slots, then as many as there are, up to
/// 2,048), so a store of a few jobs takes a few blocks and one of many keeps few files
/// open. A store keeps its slabs while it lives; opening it removes the empty slabs at
/// the end.
///
/// `@unchecked Sendable`: used only on the store's serial queue.
final class JobSlots: @unchecked Sendable {
    enum Place: Hashable {
        case slot(slab: Int, index: Int)
        case file
    }

    /// A job read back by ``load(_:directory:recovery:)``.
    struct Found {
        var record: DurableJobRecord
        var place: Place
    }

    static let slotSize = 4096
    static let maximumSlabSlots = 2048
    private static let slabPrefix = "slab-"
    private static let slabExtension = "slots"

    private struct Slab {
        var number: Int
        var descriptor: Int32
        var slots: Int
    }

    private let path: String
    private let directory: Int32
    private var slabs: [Slab] = []
    /// Free slots, the most recently freed last (taken first).
    private var free: [Place] = []
    private var places: [DurableJobID: Place] = [:]
    private var revision: UInt64 = 0
    /// The older copies of jobs that moved (see ``retire(_:of:)``).
    private var oldCopies: [DurableJobID: [OldCopy]] = [:]
    /// Jobs the store let go of whose removal failed (the older job of a replace): they
    /// are removed before any other job is (see ``abandon(_:)``).
    private var abandoned: Set<DurableJobID> = []
    /// How often each slab, and the directory, were flushed.
    private var slabFlushes: [Int] = []
    private var directoryFlushes = 0
    /// When a slab last could not be made (a full disk): no other is tried for a second,
    /// or until a slot is freed.
    private var slabFailed: ContinuousClock.Instant?

    /// An older copy of a job: cleared after the flush count of its slab (or of the
    /// directory, for a file) was `clearedAt`, or still there (`nil`) if clearing failed.
    private struct OldCopy {
        var place: Place
        var clearedAt: Int?
    }

    /// Takes over `directory`, an open descriptor of the directory at `path`.
    private init(path: String, directory: Int32) {
        self.path = path
        self.directory = directory
    }

    deinit {
        for slab in slabs { close(slab.descriptor) }
        close(directory)
    }

    /// Whether an older copy of the job `id` may still be on the disk.
    func hasOldCopies(of id: DurableJobID) -> Bool {
        oldCopies[id]?.contains { !isGone($0) } ?? false
    }

    // MARK: - Writing

    /// Writes `jobs` to new places and flushes them to the disk, then clears their old
    /// places. On failure no job has moved: each keeps its old place.
    func write(_ jobs: [DurableJobRecord]) throws {
        var written: [(id: DurableJobID, place: Place)] = []
        var touched = Set<Int>()
        do {
            for job in jobs {
                revision += 1
                let bytes = try JobFile.encode(job, revision: revision)
                // A slab that cannot be made (a nearly full disk) leaves a file of its own.
                if bytes.count <= Self.slotSize, let place = try? takeSlot(), case .slot(let slab, let index) = place {
                    written.append((job.id, place))
                    try FileSystem.writeAll(
                        bytes, to: slabs[slab].descriptor, at: index * Self.slotSize, path: slabPath(slab))
                    touched.insert(slab)
                } else {
                    // Listed first: the file may be in place even if the call throws.
                    written.append((job.id, .file))
                    try FileSystem.writeAtomically(
                        bytes, to: filePath(job.id), temporary: temporaryPath(job.id), directory: directory)
                    directoryFlushes += 1
                }
            }
            for slab in touched.sorted() { try flush(slab) }
        } catch {
            for (id, place) in written where place != places[id] { retire(place, of: id) }
            throw error
        }
        for (id, place) in written {
            if let old = places.updateValue(place, forKey: id), old != place { retire(old, of: id) }
        }
    }

    /// Removes the job `id` for good, flushed to the disk, so that no store reads it back
    /// again. Does nothing for a job it does not hold. Jobs abandoned earlier are removed
    /// first.
    ///
    /// The job's older copies are cleared and flushed before its live copy is: once the
    /// live copy is gone, an older copy a crash kept would take its place, and a job
    /// whose outcome was final would run again.
    func remove(_ id: DurableJobID) throws {
        for other in abandoned {
            try removeNow(other)
            abandoned.remove(other)
        }
        try removeNow(id)
    }

    /// Removes the job `id` (see ``remove(_:)``); should that fail, the job is removed
    /// before the next removal of any other job, which fails while it cannot be.
    func abandon(_ id: DurableJobID) {
        do {
            try removeNow(id)
        } catch {
            abandoned.insert(id)
        }
    }

    private func removeNow(_ id: DurableJobID) throws {
        guard let place = places[id] else { return }
        for (index, copy) in (oldCopies[id] ?? []).enumerated() where !isGone(copy) {
            if copy.clearedAt == nil {
                try clearNow(copy.place, of: id)
                oldCopies[id]![index].clearedAt = flushes(of: copy.place)
                try flush(copy.place)
                release(copy.place)
            } else {
                try flush(copy.place)
            }
        }
        try clearNow(place, of: id)
        try flush(place)
        release(place)
        places[id] = nil
        oldCopies[id] = nil
    }

    /// Clears an older copy of the job `id`, without flushing: should the clear be lost
    /// in a crash, the copy loses to the newer one when the store opens, and the job's
    /// removal flushes it first. A copy that could not be cleared is cleared then.
    private func retire(_ place: Place, of id: DurableJobID) {
        oldCopies[id, default: []].removeAll { isGone($0) }
        let cleared = (try? clearNow(place, of: id)) != nil
        oldCopies[id, default: []].append(OldCopy(place: place, clearedAt: cleared ? flushes(of: place) : nil))
        if cleared { release(place) }
    }

    /// Clears `place` (the job `id`'s slot or file) without flushing.
    private func clearNow(_ place: Place, of id: DurableJobID) throws {
        switch place {
        case .slot(let slab, let index):
            try FileSystem.writeAll(
                Self.freeHeader, to: slabs[slab].descriptor, at: index * Self.slotSize, path: slabPath(slab))
        case .file:
            try FileSystem.remove(filePath(id))
        }
    }

    /// A slot that was cleared is free again (only then: a slot whose clear failed still
    /// holds its job).
    private func release(_ place: Place) {
        guard case .slot = place else { return }
        free.append(place)
        slabFailed = nil
    }

    /// Whether an older copy was cleared and the clear flushed.
    private func isGone(_ copy: OldCopy) -> Bool {
        guard let clearedAt = copy.clearedAt else { return false }
        return flushes(of: copy.place) > clearedAt
    }

    private func flushes(of place: Place) -> Int {
        switch place {
        case .slot(let slab, _): slabFlushes[slab]
        case .file: directoryFlushes
        }
    }

    private func flush(_ place: Place) throws {
        switch place {
        case .slot(let slab, _): try flush(slab)
        case .file: try flushDirectory()
        }
    }

    private func flush(_ slab: Int) throws {
        try FileSystem.flush(slabs[slab].descriptor, slabPath(slab))
        slabFlushes[slab] += 1
    }

    private func flushDirectory() throws {
        try FileSystem.syncDirectory(directory, path)
        directoryFlushes += 1
    }

    private static let freeHeader = [UInt8](repeating: 0, count: JobFile.headerSize)

    private func takeSlot() throws -> Place {
        if free.isEmpty {
            if let slabFailed, slabFailed.duration(to: .now) < .seconds(1) {
                throw DurableStoreError(.io, "no slab could be made in \(path) a moment ago")
            }
            do {
                try addSlab()
                slabFailed = nil
            } catch {
                slabFailed = .now
                throw error
            }
        }
        return free.removeLast()
    }

    /// Makes a slab of zeros as a temporary file, flushes it, renames it into place and
    /// flushes the directory: a slab is whole, or absent.
    private func addSlab() throws {
        let number = (slabs.last?.number ?? -1) + 1
        let slots = min(max(8, slabs.reduce(0) { $0 + $1.slots }), Self.maximumSlabSlots)
        let name = Self.slabName(number)
        let temporary = "\(path)/\(name).\(JobFile.temporaryExtension)"
        let descriptor = open(temporary, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw FileSystem.error("open", temporary) }
        do {
            let zeros = [UInt8](repeating: 0, count: 64 * 1024)
            var offset = 0
            while offset < slots * Self.slotSize {
                let count = min(zeros.count, slots * Self.slotSize - offset)
                try FileSystem.writeAll(zeros[0..<count], to: descriptor, at: offset, path: temporary)
                offset += count
            }
            try FileSystem.flush(descriptor, temporary)
            guard rename(temporary, "\(path)/\(name)") == 0 else { throw FileSystem.error("rename", temporary) }
            try flushDirectory()
        } catch {
            // Truncated first: a child process being spawned may hold the file open for
            // a moment, and the space it took must come back now (a nearly full disk).
            _ = ftruncate(descriptor, 0)
            close(descriptor)
            unlink(temporary)
            throw error
        }
        slabs.append(Slab(number: number, descriptor: descriptor, slots: slots))
        slabFlushes.append(0)
        free.append(contentsOf: (0..<slots).reversed().map { .slot(slab: slabs.count - 1, index: $0) })
    }

    // MARK: - Opening

    /// Reads back every job in the directory at `path` (open as `directory`, which the
    /// slots take over). Removes the temporary files of writes that never finished;
    /// moves what is torn or damaged to `quarantine/` beside the directory, clearing a
    /// slot it was in; of two copies of one job, keeps the newer and clears the other.
    static func load(_ path: String, directory: Int32, recovery: inout FileJobStore.Recovery) throws
        -> (JobSlots, [Found])
    {
        let slots = JobSlots(path: path, directory: directory)
        let quarantine = (path as NSString).deletingLastPathComponent + "/quarantine"
        var copies: [DurableJobID: (found: Found, revision: UInt64)] = [:]
        var stale: [(DurableJobID, Place)] = []
        func keep(_ record: DurableJobRecord, _ revision: UInt64, at place: Place) {
            if let other = copies[record.id] {
                let older = other.revision > revision ? place : other.found.place
                stale.append((record.id, older))
                if other.revision > revision { return }
            }
            copies[record.id] = (Found(record: record, place: place), revision)
            slots.revision = max(slots.revision, revision)
        }

        var slabNumbers: [Int] = []
        for name in try FileSystem.list(path).sorted() {
            let file = "\(path)/\(name)"
            if name.hasSuffix("." + JobFile.temporaryExtension) {
                try FileSystem.remove(file)
                recovery.removedTemporaryFiles += 1
            } else if let number = slabNumber(name) {
                slabNumbers.append(number)
            } else {
                switch JobFile.decode(try FileSystem.readFile(file)) {
                case .success(let (record, revision)) where name == fileName(record.id):
                    keep(record, revision, at: .file)
                case .success(let (record, _)):
                    try moveToQuarantine(name, because: "holds job \(record.id)", from: path, to: quarantine)
                    recovery.quarantined.append(.init(name: name, reason: "holds job \(record.id)"))
                case .failure(let error):
                    try moveToQuarantine(name, because: error.message, from: path, to: quarantine)
                    recovery.quarantined.append(.init(name: name, reason: error.message))
                }
            }
        }
        for number in slabNumbers.sorted() {
            let file = "\(path)/\(slabName(number))"
            let bytes = try FileSystem.readFile(file)
            let descriptor = open(file, O_RDWR | O_CLOEXEC)
            guard descriptor >= 0 else { throw FileSystem.error("open", file) }
            let slab = slots.slabs.count
            slots.slabs.append(Slab(number: number, descriptor: descriptor, slots: bytes.count / slotSize))
            slots.slabFlushes.append(0)
            for index in 0..<(bytes.count / slotSize) {
                let slot = bytes[(index * slotSize)..<((index + 1) * slotSize)]
                let place = Place.slot(slab: slab, index: index)
                if slot.prefix(JobFile.headerSize).allSatisfy({ $0 == 0 }) { continue }
                switch JobFile.decode(slot, padded: true) {
                case .success(let (record, revision)):
                    keep(record, revision, at: place)
                case .failure(let error):
                    // The copy is on the disk before the slot is cleared.
                    let name = try copyToQuarantine(slot, named: "\(slabPrefix)\(number)-slot-\(index)", quarantine)
                    try FileSystem.writeAll(freeHeader, to: descriptor, at: index * slotSize, path: file)
                    recovery.quarantined.append(.init(name: name, reason: error.message))
                }
            }
        }
        for found in copies.values { slots.places[found.found.record.id] = found.found.place }
        for (id, place) in stale { try slots.clearNow(place, of: id) }
        slots.free = []
        // The empty slabs at the end go; the free slots of the others are taken first to last.
        let taken = Set(slots.places.values)
        while let last = slots.slabs.last,
            !(0..<last.slots).contains(where: { taken.contains(.slot(slab: slots.slabs.count - 1, index: $0)) })
        {
            try FileSystem.remove(slots.slabPath(slots.slabs.count - 1))
            close(last.descriptor)
            slots.slabs.removeLast()
            slots.slabFlushes.removeLast()
        }
        for slab in slots.slabs.indices.reversed() {
            for index in (0..<slots.slabs[slab].slots).reversed()
            where !taken.contains(.slot(slab: slab, index: index)) {
                slots.free.append(.slot(slab: slab, index: index))
            }
            try FileSystem.flush(slots.slabs[slab].descriptor, slots.slabPath(slab))
        }
        // Every slab was flushed, and the store flushes the directory once it has opened.
        return (slots, copies.values.map(\.found))
    }

    // MARK: - Names

    static func fileName(_ id: DurableJobID) -> String { "\(id.uuid.uuidString).\(JobFile.fileExtension)" }

    private static func slabName(_ number: Int) -> String { "\(slabPrefix)\(number).\(slabExtension)" }

    private static func slabNumber(_ name: String) -> Int? {
        guard name.hasPrefix(slabPrefix), name.hasSuffix("." + slabExtension) else { return nil }
        return Int(name.dropFirst(slabPrefix.count).dropLast(slabExtension.count + 1))
    }

    private func slabPath(_ slab: Int) -> String { "\(path)/\(Self.slabName(slabs[slab].number))" }
    private func filePath(_ id: DurableJobID) -> String { "\(path)/\(Self.fileName(id))" }
    private func temporaryPath(_ id: DurableJobID) -> String {
        "\(path)/\(id.uuid.uuidString).\(JobFile.temporaryExtension)"
    }

    /// Writes `bytes` to a new file in `quarantine`, named `name` (or `name-2`, `name-3`,
    /// ... when taken), flushed with its directory; returns the name.
    private static func copyToQuarantine(_ bytes: ArraySlice<UInt8>, named name: String, _ quarantine: String) throws
        -> String
    {
        try FileSystem.createDirectory(quarantine)
        var unique = name
        var suffix = 1
        while access("\(quarantine)/\(unique)", F_OK) == 0 {
            suffix += 1
            unique = "\(name)-\(suffix)"
        }
        let folder = open(quarantine, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard folder >= 0 else { throw FileSystem.error("open", quarantine) }
        defer { close(folder) }
        try FileSystem.writeAtomically(
            Array(bytes), to: "\(quarantine)/\(unique)",
            temporary: "\(quarantine)/\(unique).\(JobFile.temporaryExtension)", directory: folder)
        return unique
    }

    private static func moveToQuarantine(
        _ name: String, because reason: String, from jobs: String, to quarantine: String
    )
        throws
    {
        try FileSystem.createDirectory(quarantine)
        guard rename("\(jobs)/\(name)", "\(quarantine)/\(name)") == 0 else {
            throw FileSystem.error("rename (to quarantine)", "\(jobs)/\(name)")
        }
    }
}
