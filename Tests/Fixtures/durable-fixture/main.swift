// A process that adds and runs durable jobs on a FileJobStore until it is killed, for the
// kill -9 tests (DurableCrashTests). It prints one line per fact, written straight to its
// standard output so that a kill loses none that was printed:
//
//   ready                                   the store is open
//   acked <id> <name|-> <dropped 0|1>       an add returned
//   start <id> <attempt> <name|->           a handler started
//   completing <id>                         a job ended; the store is asked to remove it
//   completed <id>                          the store removed it
//
//   durable-fixture <directory> <seed> <jobs>
//
// With the `Postgres` trait, `durable-fixture --postgres ...` is a replica on a shared
// PostgreSQL table instead (Postgres.swift, PostgresReplicaTests).
import Backgroundable
import Dispatch
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

struct Work: Codable, Sendable {
    var milliseconds: Int
    var failures: Int
    /// The job's lane, for the log (a handler's context does not carry it).
    var lane: String? = nil
}

extension DurableJobKind where Payload == Work {
    static let work = DurableJobKind("work")
}

func say(_ line: String) {
    let bytes = Array((line + "\n").utf8)
    _ = bytes.withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
}

/// A store, printing each removal of an ended job once the store has made it (and, with
/// `logsClaims`, each claim, with the monotonic time just before the store was asked).
struct LoggingStore: DurableJobStore {
    let base: any DurableJobStore
    var logsClaims = false
    func enqueue(_ job: DurableJobRecord, replacing: Bool) async throws -> DurableJobReceipt {
        try await base.enqueue(job, replacing: replacing)
    }
    func claim(kinds: Set<String>, limit: Int, lease: Duration) async throws -> [DurableJobRecord] {
        let asked = DispatchTime.now().uptimeNanoseconds
        let claimed = try await base.claim(kinds: kinds, limit: limit, lease: lease)
        if logsClaims {
            for job in claimed { say("claimed \(job.id) \(job.attempt) \(asked)") }
        }
        return claimed
    }
    func nextDueDate(kinds: Set<String>) async throws -> Date? { try await base.nextDueDate(kinds: kinds) }
    func renew(_ ids: [DurableJobID], lease: Duration) async throws { try await base.renew(ids, lease: lease) }
    func complete(_ id: DurableJobID) async throws {
        say("completing \(id)")
        try await base.complete(id)
        say("completed \(id)")
    }
    func retry(_ id: DurableJobID, at date: Date, error: String) async throws {
        try await base.retry(id, at: date, error: error)
    }
    func release(_ id: DurableJobID) async throws { try await base.release(id) }
    func remove(_ id: DurableJobID) async throws -> Bool { try await base.remove(id) }
    func jobs() async throws -> [DurableJobRecord] { try await base.jobs() }
}

let arguments = CommandLine.arguments
if arguments.count > 1, arguments[1] == "--postgres" {
    #if Postgres
        try await runOnPostgres(Array(arguments.dropFirst(2)))  // runs until killed
    #else
        FileHandle.standardError.write(Data("durable-fixture: --postgres needs the Postgres trait\n".utf8))
        exit(2)
    #endif
}
guard arguments.count == 4, let seed = UInt64(arguments[2]), let count = Int(arguments[3]) else {
    FileHandle.standardError.write(Data("usage: durable-fixture <directory> <seed> <jobs>\n".utf8))
    exit(2)
}

/// SplitMix64: the plan of adds follows from the seed.
struct Random: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

let store = try await FileJobStore(directory: URL(fileURLWithPath: arguments[1]))
let jobs = DurableQueue(
    store: LoggingStore(base: store), queue: BackgroundQueue(name: "durable-fixture", maxConcurrentTasks: 3))
jobs.register(.work) { work, job in
    say("start \(job.id) \(job.attempt) \(job.name ?? "-")")
    try await Task.sleep(for: .milliseconds(work.milliseconds))
    struct Flaky: Error {}
    if job.attempt <= work.failures { throw Flaky() }
}
say("ready")
let runner = Task { await jobs.run() }

var random = Random(state: seed)
for _ in 0..<count {
    let named = Bool.random(using: &random)
    let name = named ? "n\(Int.random(in: 0..<5, using: &random))" : nil
    let options = DurableJobOptions(
        name: name,
        uniquenessPolicy: Bool.random(using: &random) ? .replace : .drop,
        lane: Int.random(in: 0..<3, using: &random) == 0 ? "lane" : nil,
        retry: .fixed(maxAttempts: 3, delay: .milliseconds(1)))
    let work = Work(
        milliseconds: Int.random(in: 0..<4, using: &random), failures: Int.random(in: 0..<3, using: &random))
    let receipt = try await jobs.add(.work, work, options: options)
    say("acked \(receipt.id) \(name ?? "-") \(receipt.wasDropped ? 1 : 0)")
    try await Task.sleep(for: .microseconds(Int.random(in: 0..<1500, using: &random)))
}
await runner.value
