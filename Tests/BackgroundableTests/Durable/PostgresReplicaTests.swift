#if Postgres
    import Backgroundable
    import Dispatch
    import Foundation
    import Synchronization
    import Testing

    #if canImport(Glibc)
        import Glibc
    #elseif canImport(Darwin)
        import Darwin
    #endif

    /// Two and three processes (`durable-fixture --postgres`) sharing one PostgreSQL table,
    /// each a DurableQueue on a PostgresJobStore, as server replicas are. From their logs:
    /// each job runs once per lease (no attempt runs twice), a killed replica's jobs are run
    /// by another once its lease has run out, names stay unique, and lanes stay serial.
    @Suite(.enabled(if: PostgresTestServer.shouldRun, PostgresTestServer.skipReason))
    struct PostgresReplicaTests {
        @Test(arguments: [2, 3])
        func replicasRunEachJobOncePerLeaseWithUniqueNamesAndSerialLanes(replicas: Int) async throws {
            try await withPostgres { database in
                let seed = UInt64.random(in: 1...1_000_000)
                print("PostgresReplicaTests: \(replicas) replicas from seed \(seed)")
                let workers = try (0..<replicas).map { index in
                    try Replica(table: database.table, seed: seed &+ UInt64(index), jobs: 30, leaseMilliseconds: 5_000)
                }
                defer { for worker in workers { worker.sigkill() } }
                for worker in workers {
                    #expect(await worker.waitFor("added"), "a replica did not add its jobs: \(worker.output)")
                }
                try await expectEmptied(database.store())
                for worker in workers { worker.sigkill() }

                let log = ReplicaLog(workers.map(\.output))
                print("PostgresReplicaTests: \(replicas) replicas: \(log.summary)")
                #expect(log.storeErrors.isEmpty, "\(log.storeErrors)")
                log.checkOneRunPerAttempt()
                log.checkNames()
                log.checkLanes()
                // Without kills, every attempt was claimed once: attempts 1, 2, ... in turn.
                for (id, runs) in log.runsByJob {
                    #expect(runs.map(\.attempt).sorted() == Array(1...runs.count), "job \(id): \(runs)")
                }
            }
        }

        @Test(arguments: [2, 3])
        func aKilledReplicasJobsRunElsewhereOnceItsLeaseRunsOut(replicas: Int) async throws {
            try await withPostgres { database in
                // Jobs stored up front: unnamed ones, a lane, and named ones.
                let store = database.store()
                var ids: [String] = []
                for index in 0..<14 {
                    let lane = index % 3 == 0 ? "lane0" : nil
                    let payload = try JSONEncoder().encode(
                        ReplicaWork(milliseconds: 250, failures: 0, lane: lane))
                    let job = DurableJobRecord(
                        id: DurableJobID(), kind: "work", payload: payload, name: index % 5 == 1 ? "job\(index)" : nil,
                        lane: lane, priority: 0, timeout: nil, maxAttempts: 3, backoff: .fixed(.milliseconds(1)),
                        runAt: Date(), enqueuedAt: Date())
                    ids.append(try await store.enqueue(job, replacing: false).id.description)
                }
                // Seconds, renewed every third of it: a live replica on a loaded machine
                // keeps its jobs, and only the killed one's run out.
                let lease: Int64 = 3_000
                let first = try Replica(
                    table: database.table, seed: 1, jobs: 0, leaseMilliseconds: Int(lease), maxRunning: 4)
                defer { first.sigkill() }
                #expect(await first.waitFor("run "), "the first replica ran nothing: \(first.output)")
                first.sigkill()
                let killedAt = DispatchTime.now().uptimeNanoseconds
                let others = try (1..<replicas).map { index in
                    try Replica(
                        table: database.table, seed: UInt64(index), jobs: 0, leaseMilliseconds: Int(lease),
                        maxRunning: 4)
                }
                defer { for other in others { other.sigkill() } }
                try await expectEmptied(store)
                for other in others { other.sigkill() }

                let killed = ReplicaLog([first.output], killedAt: killedAt)
                let log = ReplicaLog([first.output] + others.map(\.output), killedAt: killedAt)
                print("PostgresReplicaTests: 1 killed and \(replicas - 1) more: \(log.summary)")
                #expect(log.storeErrors.isEmpty, "\(log.storeErrors)")
                log.checkOneRunPerAttempt()
                log.checkLanes()
                // Every job ran to its end, in the killed replica or another.
                #expect(Set(ids).isSubset(of: log.completed), "never completed: \(Set(ids).subtracting(log.completed))")
                // What the killed replica held and did not finish ran elsewhere, with the
                // next attempt, and not before its lease ran out.
                let orphans = killed.claims.filter { !killed.completed.contains($0.id) }
                #expect(!orphans.isEmpty)
                for orphan in orphans {
                    let later = log.claims.filter { $0.id == orphan.id && $0.replica != 0 }
                    #expect(later.map(\.attempt) == [orphan.attempt + 1], "job \(orphan.id): \(later)")
                    for claim in later {
                        #expect(
                            claim.askedAt + 50_000_000 >= orphan.askedAt + UInt64(lease) * 1_000_000,
                            "job \(orphan.id) was claimed again before the killed replica's lease ran out")
                    }
                }
            }
        }

        /// Waits until `store` holds no job: an issue after `timeout`.
        private func expectEmptied(_ store: PostgresJobStore, timeout: Duration = .seconds(90)) async throws {
            let deadline = ContinuousClock.now + timeout
            var left = try await store.jobs()
            while !left.isEmpty && ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(50))
                left = try await store.jobs()
            }
            #expect(left.isEmpty, "jobs left after \(timeout): \(left)")
        }
    }

    /// The fixture's payload (durable-fixture's `Work`).
    private struct ReplicaWork: Codable {
        var milliseconds: Int
        var failures: Int
        var lane: String?
    }

    /// A `durable-fixture --postgres` process and what it printed so far.
    private final class Replica: @unchecked Sendable {
        // @unchecked: `process` is set up in init and afterwards only read (its pid, and
        // kill(2) with it); the output is behind a Mutex.
        private let process = Process()
        private let printed = Mutex("")

        init(table: String, seed: UInt64, jobs: Int, leaseMilliseconds: Int, maxWork: Int = 30, maxRunning: Int = 6)
            throws
        {
            process.executableURL = try fixtureURL("durable-fixture")
            process.arguments = [
                "--postgres", table, "\(seed)", "\(jobs)", "\(leaseMilliseconds)", "\(maxWork)", "\(maxRunning)",
            ]
            process.environment = ProcessInfo.processInfo.environment.merging(PostgresTestServer.childEnvironment) {
                $1
            }
            let pipe = Pipe()
            process.standardOutput = pipe
            try process.run()
            // Blocking reads, on a thread of their own.
            let handle = pipe.fileHandleForReading
            Thread.detachNewThread { [self] in
                while true {
                    let chunk = handle.availableData
                    if chunk.isEmpty { return }
                    printed.withLock { $0 += String(decoding: chunk, as: UTF8.self) }
                }
            }
        }

        var output: String { printed.withLock { $0 } }

        /// Waits until a line starting with `prefix` was printed; `false` after `timeout`.
        func waitFor(_ prefix: String, timeout: Duration = .seconds(60)) async -> Bool {
            let deadline = ContinuousClock.now + timeout
            while ContinuousClock.now < deadline {
                if output.split(separator: "\n").contains(where: { $0.hasPrefix(prefix) }) { return true }
                try? await Task.sleep(for: .milliseconds(10))
            }
            return false
        }

        /// Kills the process (SIGKILL), at once; calling it again does nothing.
        func sigkill() {
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        }
    }

    /// The replicas' logs, read together.
    private struct ReplicaLog {
        struct Run {
            var replica: Int
            var attempt: Int
            var lane: String?
            var start: UInt64
            var end: UInt64?
        }
        struct Claim {
            var replica: Int
            var id: String
            var attempt: Int
            var askedAt: UInt64
        }

        var acked: [(id: String, name: String?, dropped: Bool)] = []
        var replaced: [(id: String, old: String)] = []
        var runsByJob: [String: [Run]] = [:]
        var claims: [Claim] = []
        var completed: Set<String> = []
        var storeErrors: [String] = []

        /// `killedAt` ends the runs a replica never finished (it was killed then).
        init(_ outputs: [String], killedAt: UInt64? = nil) {
            for (replica, output) in outputs.enumerated() {
                for line in output.split(separator: "\n") {
                    let words = line.split(separator: " ").map(String.init)
                    switch (words.first, words.count) {
                    case ("acked", 4): acked.append((words[1], words[2] == "-" ? nil : words[2], words[3] == "1"))
                    case ("replaced", 3): replaced.append((words[1], words[2]))
                    case ("completed", 2): completed.insert(words[1])
                    case ("claimed", 4):
                        claims.append(
                            Claim(replica: replica, id: words[1], attempt: Int(words[2])!, askedAt: UInt64(words[3])!))
                    case ("run", 5):
                        runsByJob[words[1], default: []].append(
                            Run(
                                replica: replica, attempt: Int(words[2])!, lane: words[3] == "-" ? nil : words[3],
                                start: UInt64(words[4])!, end: nil))
                    case ("ran", 4):
                        if let index = runsByJob[words[1]]?.firstIndex(where: {
                            $0.replica == replica && $0.attempt == Int(words[2])!
                        }) {
                            runsByJob[words[1]]![index].end = UInt64(words[3])!
                        }
                    case ("store-error", _): storeErrors.append(String(line))
                    default: break  // a line cut by a kill
                    }
                }
            }
            if let killedAt {
                for (id, runs) in runsByJob {
                    runsByJob[id] = runs.map { run in
                        var run = run
                        if run.end == nil { run.end = killedAt }
                        return run
                    }
                }
            }
        }

        var summary: String {
            let runs = runsByJob.values.flatMap { $0 }
            let replicas = Set(runs.map(\.replica)).count
            return
                "\(acked.count) adds (\(acked.filter(\.dropped).count) dropped, \(replaced.count) replacing), "
                + "\(runs.count) runs of \(runsByJob.count) jobs in \(replicas) replicas "
                + "(\(runs.filter { $0.lane != nil }.count) in lanes), \(completed.count) completed"
        }

        /// Once per lease: no attempt of a job was run twice, in one replica or two.
        func checkOneRunPerAttempt() {
            for (id, runs) in runsByJob {
                let attempts = runs.map(\.attempt)
                #expect(Set(attempts).count == attempts.count, "job \(id) ran an attempt twice: \(runs)")
            }
        }

        /// Names: an add that was dropped names a job that was stored; each replaced job
        /// was replaced once; every stored job that was not replaced ran to its end.
        func checkNames() {
            let stored = Set(acked.filter { !$0.dropped }.map(\.id))
            let replacedIDs = replaced.map(\.old)
            #expect(Set(replacedIDs).count == replacedIDs.count, "a job was replaced twice")
            #expect(Set(replacedIDs).isSubset(of: stored))
            for add in acked where add.dropped {
                #expect(stored.contains(add.id), "a dropped add named \(add.id), which no add stored")
            }
            let unfinished = stored.subtracting(replacedIDs).subtracting(completed)
            #expect(unfinished.isEmpty, "stored, never replaced, never completed: \(unfinished)")
        }

        /// Lanes: the runs of one lane, in every replica, never overlap.
        func checkLanes() {
            let runs = runsByJob.values.flatMap { $0 }.filter { $0.lane != nil }
            for (lane, ofLane) in Dictionary(grouping: runs, by: { $0.lane! }) {
                let ordered = ofLane.sorted { $0.start < $1.start }
                for (earlier, later) in zip(ordered, ordered.dropFirst()) {
                    #expect(
                        earlier.end.map { $0 <= later.start } ?? false,
                        "lane \(lane): a run started at \(later.start) while one from \(earlier.start) still ran")
                }
            }
        }
    }
#endif
