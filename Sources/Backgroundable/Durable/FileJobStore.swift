import Dispatch
public import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The default durable-job store: files in a directory you name, for an app or a single
/// process. It needs no package and no server.
///
/// ```swift
/// let support = FileManager.default.urls(for: .applicationSupportDirectory, in: .userDomainMask)[0]
/// let folder = support.appending(path: "Jobs")
/// let store = try await FileJobStore(directory: folder)
/// ```
///
/// ## Durability
/// An add is on the disk before it returns, so a crash — or a power loss — either keeps
/// the whole job or none of it. A job is kept in a 4 KiB slot of a file the store makes
/// ahead (`jobs/slab-N.slots`): an add writes the slot and flushes it (`fdatasync`),
/// changing no file's size and no directory. A job too large for a slot gets a file of
/// its own (`jobs/<id>.job`), written to a temporary file, flushed, renamed into place
/// and the directory flushed. When its outcome is final, a job's slot is cleared (or its
/// file removed) and that is flushed too.
///
/// A claim, a retry and a release write the job to a new slot and flush it before they
/// clear the old one: a torn write never harms the only copy of a job, and after a crash
/// the newer copy wins. A replace by name writes the new job before it removes the old
/// one; if the process dies between the two, the next open keeps the newer job and
/// removes the older, so a name is never left with two jobs.
///
/// ## One owner
/// A store holds an exclusive lock on its directory (`flock` on `lock` inside it) for
/// as long as it lives; opening a second store on the same directory, in this process
/// or another, throws ``DurableStoreError/Code/directoryInUse`` (after trying for 0.2 s:
/// a process being spawned holds a closed store's lock for a moment). The lock is the lease:
/// when the process ends — even killed — the system drops it, and the next store to open
/// the directory runs the jobs that were running (their attempt counted).
///
/// ## What opening finds
/// Opening reads every job into memory (``recovery`` says what it found). A slot or a
/// file that is torn or damaged — its header, length or CRC-32 does not match — is
/// copied to `quarantine/` inside the directory and cleared, never taken for a job and
/// never in the way of the others. Temporary files of writes that never finished are
/// removed, and so are the empty slab files at the end.
///
/// ## Threads
/// File I/O runs on a serial dispatch queue of the store's own, never on a thread of
/// Swift's cooperative pool; every call suspends until its I/O is done, and calls take
/// effect one at a time, in the order they arrive.
public final class FileJobStore: DurableJobStore {
    /// What opening the directory found.
    public struct Recovery: Sendable, Hashable {
        /// A file or a slot that held no readable job, moved to `quarantine/`.
        public struct QuarantinedFile: Sendable, Hashable {
            /// Its name in `quarantine/`: the file's name in `jobs/`, or `slab-N-slot-I`
            /// for slot `I` of `jobs/slab-N.slots`.
            public let name: String
            /// What was wrong with it.
            public let reason: String
        }

        /// The jobs read back.
        public internal(set) var jobs = 0
        /// Files and slots that held no readable job.
        public internal(set) var quarantined: [QuarantinedFile] = []
        /// Temporary files of writes that never finished, removed.
        public internal(set) var removedTemporaryFiles = 0
        /// Jobs removed because a newer job had the same name (a replace that was
        /// interrupted between writing the new job and removing the old one).
        public internal(set) var removedDuplicates: [DurableJobID] = []
    }

    /// The directory the store keeps its jobs in.
    public let directory: URL
    /// What opening the directory found.
    public let recovery: Recovery

    private let io = DispatchQueue(label: "Backgroundable.FileJobStore")
    private let index: Lock<JobIndex>
    /// Used only on `io`.
    private let slots: JobSlots
    // Owned by the store, closed in deinit; read only after init.
    private let lockDescriptor: Int32

    /// Opens (creating it if needed) the store in `directory`, and reads back every job
    /// in it. Suspends while the files are read, on the store's own queue.
    ///
    /// - Throws: ``DurableStoreError/Code/directoryInUse`` when another store has the
    ///   directory open; ``DurableStoreError/Code/io`` when the directory cannot be
    ///   created, locked or read.
    public init(directory: URL) async throws {
        let root = directory.withUnsafeFileSystemRepresentation { String(cString: $0!) }
        let io = self.io
        let opened = try await withCheckedThrowingContinuation {
            (continuation: CheckedContinuation<Opened, any Error>) in
            // Resumed once: the block runs once and resumes on every path.
            io.async { continuation.resume(with: Result { try Self.openDirectory(root) }) }
        }
        self.directory = directory
        self.lockDescriptor = opened.lock
        self.slots = opened.slots
        self.recovery = opened.recovery
        self.index = Lock(opened.index)
    }

    deinit {
        close(lockDescriptor)  // drops the directory's lock; the slots close their files
    }

    public func enqueue(_ job: DurableJobRecord, replacing: Bool) async throws -> DurableJobReceipt {
        try await perform { [self] in
            var job = job
            guard index.withLock({ $0.record(job.id) == nil }) else {
                throw DurableStoreError(.duplicateID, "job \(job.id) is stored already; nothing was stored")
            }
            let existing = job.name.flatMap { name in index.withLock { $0.job(named: name) } }
            if let existing, !replacing { return DurableJobReceipt(id: existing, wasDropped: true) }
            job.sequence = index.withLock { $0.takeSequence() }
            try slots.write([job])
            index.withLock { index in
                if let existing { index.remove(existing) }
                index.insert(job)
            }
            if let existing {
                // Should its removal fail, the old job stays on the disk, removed before
                // any other job is (and the next open keeps the newer job of the name);
                // this process no longer runs it.
                slots.abandon(existing)
            }
            return DurableJobReceipt(id: job.id, replaced: existing)
        }
    }

    public func claim(kinds: Set<String>, limit: Int, lease: Duration) async throws -> [DurableJobRecord] {
        try await perform { [self] in
            let claimed = index.withLock { $0.claim(kinds: kinds, limit: limit, now: Date()) }
            // The attempt count on disk bounds how often a job that crashes the process
            // runs. Should the write fail (a full disk), the jobs run anyway, their counts
            // on disk one behind.
            try? slots.write(claimed)
            return claimed
        }
    }

    public func nextDueDate(kinds: Set<String>) async throws -> Date? {
        try await perform { [self] in index.withLock { $0.nextDueDate(kinds: kinds, now: Date()) } }
    }

    /// Does nothing: the directory's lock is the lease, held while the store lives.
    public func renew(_ ids: [DurableJobID], lease: Duration) async throws {}

    public func complete(_ id: DurableJobID) async throws {
        _ = try await remove(id)
    }

    public func retry(_ id: DurableJobID, at date: Date, error: String) async throws {
        try await giveBack(id) { job in
            job.runAt = date
            job.lastError = error
        }
    }

    public func release(_ id: DurableJobID) async throws {
        try await giveBack(id) { job in
            job.attempt = max(0, job.attempt - 1)
            job.runAt = min(job.runAt, Date())
        }
    }

    public func remove(_ id: DurableJobID) async throws -> Bool {
        try await perform { [self] in
            guard index.withLock({ $0.record(id) }) != nil else { return false }
            try slots.remove(id)
            index.withLock { _ = $0.remove(id) }
            return true
        }
    }

    public func jobs() async throws -> [DurableJobRecord] {
        try await perform { [self] in index.withLock { $0.records } }
    }

    // MARK: - I/O

    private func giveBack(_ id: DurableJobID, _ change: @escaping @Sendable (inout DurableJobRecord) -> Void)
        async throws
    {
        try await perform { [self] in
            guard var job = index.withLock({ $0.record(id) }) else { return }
            change(&job)
            try slots.write([job])
            index.withLock { _ = $0.update(job, claimed: false) }
        }
    }

    /// Runs `work` on the store's queue and returns its result. The queue lets go of
    /// `work` — and of the store it captures — before the caller resumes, so a store the
    /// caller then drops is closed at once, and its directory can be opened again.
    private func perform<Result: Sendable>(_ work: @escaping @Sendable () throws -> Result) async throws -> Result {
        let box = WorkBox(work)
        return try await withCheckedThrowingContinuation { continuation in
            // Resumed once: the block runs once and resumes on every path.
            io.async { continuation.resume(with: box.run()) }
        }
    }

    /// `@unchecked Sendable`: `work` is set at init and taken once, by the one block
    /// that runs it.
    private final class WorkBox<Result: Sendable>: @unchecked Sendable {
        private var work: (@Sendable () throws -> Result)?
        init(_ work: @escaping @Sendable () throws -> Result) { self.work = work }
        func run() -> Swift.Result<Result, any Error> {
            let work = self.work.take()!
            return Swift.Result { try work() }
        }
    }

    private struct Opened: @unchecked Sendable {  // handed from the queue's block to init, once
        var lock: Int32
        var slots: JobSlots
        var recovery: Recovery
        var index: JobIndex
    }

    private static func openDirectory(_ root: String) throws -> Opened {
        let jobsPath = root + "/jobs"
        try FileSystem.createDirectory(root)
        // A store must write; say so now rather than at the first add.
        if access(root, W_OK) != 0 { throw FileSystem.error("access (for writing)", root) }
        let lock = try FileSystem.lock(root + "/lock")
        do {
            try FileSystem.createDirectory(jobsPath)
            let jobsDescriptor = open(jobsPath, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            guard jobsDescriptor >= 0 else { throw FileSystem.error("open", jobsPath) }
            var recovery = Recovery()
            let (slots, found) = try JobSlots.load(jobsPath, directory: jobsDescriptor, recovery: &recovery)
            // Of two jobs of one name (a replace cut short), the later stays.
            var kept: [DurableJobRecord] = []
            var named = Set<String>()
            for job in found.map(\.record).sorted(by: { $0.sequence > $1.sequence }) {
                if let name = job.name, !named.insert(name).inserted {
                    try slots.remove(job.id)
                    recovery.removedDuplicates.append(job.id)
                } else {
                    kept.append(job)
                }
            }
            var index = JobIndex()
            for job in kept.reversed() { index.insert(job) }
            recovery.jobs = index.count
            try FileSystem.syncDirectory(jobsDescriptor, jobsPath)
            return Opened(lock: lock, slots: slots, recovery: recovery, index: index)
        } catch {
            close(lock)
            throw error
        }
    }
}
