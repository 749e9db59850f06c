import Backgroundable
import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Kill -9 at random points: `durable-fixture` adds and runs jobs on a FileJobStore and
/// is killed, twice per run, at a moment drawn from the run's seed; then this process
/// opens the store and runs what is left. Each run checks:
/// - every job an add acknowledged reaches a final outcome (or was replaced by name);
/// - no job whose end the store recorded runs again;
/// - at every reopen, the store holds at most one job per name and no damaged file.
///
/// `BACKGROUNDABLE_CRASH_RUNS` sets the number of runs (200 by default) and
/// `BACKGROUNDABLE_CRASH_SEED` the first seed (printed, to replay a failure).
@Suite struct DurableCrashTests {
    private struct Log {
        /// The adds, in order: the acknowledged ones, and after each generation's the one
        /// that was in flight when the kill came, if its job started (so it was written,
        /// and may have replaced an earlier job of its name, then ended, unacknowledged).
        var adds: [(id: String, name: String?, dropped: Bool, acknowledged: Bool)] = []
        var started: Set<String> = []
        var completing: Set<String> = []
        var completed: Set<String> = []
        /// Jobs of each name some reopen found stored, by id.
        var storedNames: [String: Set<String>] = [:]
        var ready = false

        /// Reads one generation's lines; `stored` holds the jobs the reopen before it found.
        mutating func read(_ text: String, stored: Set<String>) {
            var startedNames: [(id: String, name: String?)] = []
            for line in text.split(separator: "\n") {
                let words = line.split(separator: " ").map(String.init)
                switch words.first {
                case "ready": ready = true
                case "acked" where words.count == 4:
                    adds.append((words[1], words[2] == "-" ? nil : words[2], words[3] == "1", true))
                case "start" where words.count == 4:
                    started.insert(words[1])
                    startedNames.append((words[1], words[3] == "-" ? nil : words[3]))
                case "completing" where words.count == 2: completing.insert(words[1])
                case "completed" where words.count == 2: completed.insert(words[1])
                default: break  // a line cut by the kill
                }
            }
            let known = Set(adds.map(\.id)).union(stored)
            if let inFlight = startedNames.first(where: { !known.contains($0.id) }) {
                adds.append((inFlight.id, inFlight.name, false, false))
            }
        }
    }

    /// Runs the fixture on `directory` and kills it `delay` after it says it is ready;
    /// returns what it printed.
    private func runAndKill(directory: String, seed: UInt64, jobs: Int, delay: Duration) async throws -> String {
        let log = URL(fileURLWithPath: directory + ".log")
        defer { try? FileManager.default.removeItem(at: log) }
        let child = try ChildProcess(
            try fixtureURL("durable-fixture"), [directory, "\(seed)", "\(jobs)"], output: log)
        // The child writes a line per fact straight to the file: poll it for "ready".
        let deadline = ContinuousClock.now + .seconds(60)
        while !(try String(contentsOf: log, encoding: .utf8)).contains("ready\n"), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(1))
        }
        try await Task.sleep(for: delay)  // the kill's random point
        kill(child.processIdentifier, SIGKILL)
        #expect(await child.hasExited(within: .seconds(30)), "seed \(seed): the killed child did not end")
        return try String(contentsOf: log, encoding: .utf8)
    }

    @Test func everyAcknowledgedJobEndsOnceAfterKills() async throws {
        let environment = ProcessInfo.processInfo.environment
        let runs = environment["BACKGROUNDABLE_CRASH_RUNS"].flatMap(Int.init) ?? 200
        let firstSeed =
            environment["BACKGROUNDABLE_CRASH_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 1...1_000_000)
        print("DurableCrashTests: \(runs) runs from seed \(firstSeed)")
        for seed in firstSeed..<firstSeed + UInt64(runs) {
            try await check(seed: seed)
        }
    }

    private func check(seed: UInt64) async throws {
        let directory = ScratchDirectory("durable-crash")
        defer { directory.remove() }
        var log = Log()
        var storedAtReopen: Set<String> = []
        for generation in 0..<2 {
            // Kill anywhere from before the first add to after the last job ended.
            let delay = Duration.microseconds(Int64((seed &* 7919 &+ UInt64(generation) &* 104_729) % 40_000))
            let printed = try await runAndKill(
                directory: directory.path, seed: seed &* 2 &+ UInt64(generation), jobs: 12, delay: delay)
            log.read(printed, stored: storedAtReopen)
            let jobs = try await checkStore(directory, seed: seed)
            storedAtReopen = Set(jobs.map(\.id.description))
            for job in jobs {
                if let name = job.name { log.storedNames[name, default: []].insert(job.id.description) }
            }
        }

        // Restart: this process runs what is left, to the end.
        let store = try await FileJobStore(directory: directory.url)
        let before = try await store.jobs()
        let ranAfterRestart = Lock<Set<String>>([])
        let jobs = DurableQueue(store: store, queue: BackgroundQueue(maxConcurrentTasks: 3))
        struct Work: Codable, Sendable {
            var milliseconds: Int
            var failures: Int
        }
        jobs.register(DurableJobKind<Work>("work")) { work, job in
            ranAfterRestart.withLock { _ = $0.insert(job.id.description) }
            struct Flaky: Error {}
            if job.attempt <= work.failures { throw Flaky() }
        }
        // Run what is due until the store has nothing left: between runs, wait for the
        // next retry to fall due (a retry's backoff is 1 ms).
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            await jobs.runUntilIdle()
            guard let due = try await jobs.nextDueDate() else { break }
            try await Task.sleep(for: .seconds(max(0, due.timeIntervalSinceNow)))
        }
        let stored = try await store.jobs()
        let drained = stored.isEmpty
        #expect(drained, "seed \(seed): jobs left after the restart: \(stored)")
        let ran = ranAfterRestart.withLock { $0 }

        let ended = log.completed
        #expect(ran.isDisjoint(with: ended), "seed \(seed): a job whose end was recorded ran again")
        let storedAtRestart = Set(before.map(\.id.description))
        for (index, add) in log.adds.enumerated() where add.acknowledged && !add.dropped {
            // Replaced: by a later add of the name, acknowledged or not (the kill can come
            // between a replace's write and its acknowledgement): then its job started, or
            // a reopen found another job of the name stored, or the restart did.
            let replaced =
                add.name.map { name in
                    log.adds[(index + 1)...].contains { $0.name == name && !$0.dropped }
                        || log.storedNames[name, default: []].contains { $0 != add.id }
                        || before.contains { $0.name == name && $0.id.description != add.id }
                } ?? false
            // Ended: its removal returned; or it was being removed when the kill came, and
            // the store no longer had it; or it was left to this process, and ran here.
            let finished =
                ended.contains(add.id) || (log.completing.contains(add.id) && !storedAtRestart.contains(add.id))
                || (storedAtRestart.contains(add.id) && ran.contains(add.id))
            #expect(
                finished || replaced,
                """
                seed \(seed): acknowledged job \(add.id) (\(add.name ?? "-")) never reached an outcome: \
                started \(log.started.contains(add.id)), stored at restart \(storedAtRestart.contains(add.id)), \
                ran after \(ran.contains(add.id))
                """)
        }
    }

    /// Opens the store the way the next launch would, and checks what it finds.
    private func checkStore(_ directory: ScratchDirectory, seed: UInt64) async throws -> [DurableJobRecord] {
        let store = try await FileJobStore(directory: directory.url)
        #expect(store.recovery.quarantined.isEmpty, "seed \(seed): damaged files \(store.recovery.quarantined)")
        let jobs = try await store.jobs()
        let names = jobs.compactMap(\.name)
        #expect(Set(names).count == names.count, "seed \(seed): two jobs of one name: \(names.sorted())")
        return jobs
    }
}
