#if Postgres
    import Backgroundable
    import Foundation
    import PostgresNIO
    import Synchronization
    import Testing

    /// `PostgresJobStore` against a real server (see PostgresTestSupport.swift): each test on
    /// a table of its own, several stores on several clients standing in for replicas.
    @Suite(.enabled(if: PostgresTestServer.shouldRun, PostgresTestServer.skipReason))
    struct PostgresJobStoreTests {
        @Test func prepareIsIdempotentAndSafeFromSeveralReplicasAtOnce() async throws {
            try await withPostgres(clients: 3) { database in
                let table = database.table + "_fresh"
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for index in 0..<6 {
                        group.addTask {
                            try await PostgresJobStore(client: database.clients[index % 3], table: table).prepare()
                        }
                    }
                    try await group.waitForAll()
                }
                let store = PostgresJobStore(client: database.client, table: table)
                try await store.prepare()
                _ = try await store.enqueue(testRecord(), replacing: false)
                #expect(try await store.jobs().count == 1)
                try await database.client.query(PostgresQuery(unsafeSQL: "DROP TABLE \"\(table)\""))
            }
        }

        @Test func enqueueStoresEveryFieldBeforeItReturns() async throws {
            try await withPostgres(clients: 2) { database in
                let writer = database.store(client: 0)
                let reader = database.store(client: 1)
                var job = testRecord(name: "photo-1", lane: "uploads", priority: 25, payload: "{\"id\":1}")
                job.timeout = .milliseconds(1500) + .nanoseconds(7)
                job.maxAttempts = 5
                job.backoff = .exponential(
                    initialDelay: .seconds(2), multiplier: 3, maximumDelay: .seconds(60), jitter: 0.25)
                job.traceContext = ["traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"]
                let receipt = try await writer.enqueue(job, replacing: false)
                #expect(receipt == DurableJobReceipt(id: job.id))

                // Another client (another replica) sees it as soon as enqueue returned.
                let stored = try #require(try await reader.jobs().first)
                #expect(stored.id == job.id)
                #expect(stored.kind == job.kind)
                #expect(stored.payload == job.payload)
                #expect(stored.name == "photo-1")
                #expect(stored.lane == "uploads")
                #expect(stored.priority == 25)
                #expect(stored.timeout == job.timeout)
                #expect(stored.maxAttempts == 5)
                #expect(stored.backoff == job.backoff)
                #expect(stored.attempt == 0)
                #expect(stored.lastError == nil)
                #expect(stored.traceContext == job.traceContext)
                #expect(stored.sequence > 0)

                let second = try await writer.enqueue(testRecord(), replacing: false)
                let jobs = try await reader.jobs()
                #expect(jobs.map(\.id) == [job.id, second.id])
                #expect(jobs[0].sequence < jobs[1].sequence)
            }
        }

        @Test func aNameIsDroppedOrReplaced() async throws {
            try await withPostgres { database in
                let store = database.store()
                let first = testRecord(name: "sync")
                #expect(try await store.enqueue(first, replacing: false) == DurableJobReceipt(id: first.id))

                let dropped = testRecord(name: "sync")
                let dropReceipt = try await store.enqueue(dropped, replacing: false)
                #expect(dropReceipt == DurableJobReceipt(id: first.id, wasDropped: true))

                let replacement = testRecord(name: "sync", payload: "new")
                let replaceReceipt = try await store.enqueue(replacement, replacing: true)
                #expect(replaceReceipt == DurableJobReceipt(id: replacement.id, replaced: first.id))

                // Replacing when nothing has the name stores the job and replaces nothing.
                let other = testRecord(name: "other")
                #expect(try await store.enqueue(other, replacing: true) == DurableJobReceipt(id: other.id))

                let jobs = try await store.jobs()
                #expect(jobs.map(\.id) == [replacement.id, other.id])
                #expect(jobs[0].payload == Data("new".utf8))

                // A claimed job is replaced too (its claimer's complete is then a no-op).
                let claimed = try await store.claim(kinds: ["test"], limit: 10, lease: .seconds(30))
                #expect(Set(claimed.map(\.id)) == [replacement.id, other.id])
                let third = testRecord(name: "sync")
                #expect(
                    try await store.enqueue(third, replacing: true)
                        == DurableJobReceipt(id: third.id, replaced: replacement.id))
                try await store.complete(replacement.id)
                #expect(try await store.jobs().map(\.id) == [other.id, third.id])
            }
        }

        @Test func anEnqueueOfAStoredIDIsADuplicateIDErrorAndChangesNothing() async throws {
            try await withPostgres { database in
                let store = database.store()
                let named = testRecord(name: "sync", payload: "first")
                let unnamed = testRecord(payload: "first")
                _ = try await store.enqueue(named, replacing: false)
                _ = try await store.enqueue(unnamed, replacing: false)
                // The same id again (an add tried again after it succeeded), under its own
                // name, another name or none, dropping or replacing: an error, before any
                // name rule.
                for id in [named.id, unnamed.id] {
                    for name in ["sync", "other", nil] as [String?] {
                        for replacing in [false, true] {
                            var again = testRecord(name: name, payload: "again")
                            again.id = id
                            let error = await #expect(throws: DurableStoreError.self) {
                                _ = try await store.enqueue(again, replacing: replacing)
                            }
                            #expect(error?.code == .duplicateID, "\(name ?? "no name"), replacing: \(replacing)")
                        }
                    }
                }
                let jobs = try await store.jobs()
                #expect(jobs.map(\.id) == [named.id, unnamed.id])
                #expect(jobs.map(\.payload) == [Data("first".utf8), Data("first".utf8)])
                #expect(jobs.map(\.name) == ["sync", nil])
            }
        }

        @Test func namesStayUniqueUnderConcurrentEnqueuesFromSeveralReplicas() async throws {
            try await withPostgres(clients: 3) { database in
                let stores = (0..<3).map { database.store(client: $0) }
                let names = ["a", "b", "c"]
                let receipts = try await withThrowingTaskGroup(of: (String, DurableJobReceipt).self) { group in
                    for index in 0..<90 {
                        group.addTask {
                            let name = names[index % names.count]
                            let receipt = try await stores[index % stores.count].enqueue(
                                testRecord(name: name), replacing: index % 2 == 0)
                            return (name, receipt)
                        }
                    }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
                let jobs = try await stores[0].jobs()
                #expect(jobs.compactMap(\.name).sorted() == names)
                for name in names {
                    let ofName = receipts.filter { $0.0 == name }.map(\.1)
                    let stored = Set(ofName.filter { !$0.wasDropped }.map(\.id))
                    let replaced = ofName.compactMap(\.replaced)
                    let final = try #require(jobs.first { $0.name == name }).id
                    // Every stored job but the last was replaced, by exactly one add.
                    #expect(replaced.count == Set(replaced).count)
                    #expect(stored.subtracting(replaced) == [final])
                    // A dropped add names a job that was stored.
                    #expect(ofName.filter(\.wasDropped).allSatisfy { stored.contains($0.id) })
                }
            }
        }

        @Test func concurrentClaimersGetEachJobOnce() async throws {
            try await withPostgres(clients: 2) { database in
                let writer = database.store()
                var ids: Set<DurableJobID> = []
                for index in 0..<120 {
                    let job = testRecord(lane: index % 10 == 0 ? "lane-\(index % 20)" : nil)
                    ids.insert(try await writer.enqueue(job, replacing: false).id)
                }
                // Four replicas, two on each client, each claiming in a loop; a lane's jobs
                // wait for its first to complete, so claimers complete what they claim.
                let claims = try await withThrowingTaskGroup(of: [DurableJobID].self) { group in
                    for index in 0..<4 {
                        let store = database.store(client: index % 2)
                        group.addTask {
                            var mine: [DurableJobID] = []
                            var idle = 0
                            while idle < 20 {
                                let claimed = try await store.claim(kinds: ["test"], limit: 7, lease: .seconds(60))
                                for job in claimed {
                                    #expect(job.attempt == 1)
                                    mine.append(job.id)
                                    try await store.complete(job.id)
                                }
                                idle = claimed.isEmpty ? idle + 1 : 0
                                if claimed.isEmpty { try await Task.sleep(for: .milliseconds(10)) }
                            }
                            return mine
                        }
                    }
                    return try await group.reduce(into: []) { $0 += $1 }
                }
                #expect(claims.count == ids.count)
                #expect(Set(claims) == ids)
                #expect(try await writer.jobs().isEmpty)
            }
        }

        @Test func aJobWhoseLeaseRanOutIsClaimedByAnotherStore() async throws {
            try await withPostgres(clients: 2) { database in
                let first = database.store(client: 0)
                let second = database.store(client: 1)
                let job = testRecord()
                _ = try await first.enqueue(job, replacing: false)
                // A lease of seconds, so that a loaded machine still asks the other store in time.
                let claimed = try await first.claim(kinds: ["test"], limit: 1, lease: .seconds(3))
                #expect(claimed.map(\.id) == [job.id])
                #expect(claimed.first?.attempt == 1)

                // While the lease holds, nobody else gets it; the other store is told when it
                // runs out.
                #expect(try await second.claim(kinds: ["test"], limit: 1, lease: .seconds(30)).isEmpty)
                let due = try #require(try await second.nextDueDate(kinds: ["test"]))
                #expect(due.timeIntervalSinceNow < 5)

                let taken = try await claimEventually(second)
                #expect(taken.map(\.id) == [job.id])
                #expect(taken.first?.attempt == 2)

                // The first store's lease is gone: its retry, release and renew change nothing.
                try await first.retry(job.id, at: Date(), error: "late")
                try await first.release(job.id)
                try await first.renew([job.id], lease: .seconds(60))
                let stored = try #require(try await second.jobs().first)
                #expect(stored.attempt == 2)
                #expect(stored.lastError == nil)
                #expect(try await first.claim(kinds: ["test"], limit: 1, lease: .seconds(30)).isEmpty)
            }
        }

        @Test func renewKeepsALeaseAlive() async throws {
            try await withPostgres(clients: 2) { database in
                let holder = database.store(client: 0)
                let other = database.store(client: 1)
                let job = testRecord()
                _ = try await holder.enqueue(job, replacing: false)
                // A lease of seconds, so that a loaded machine still renews it in time.
                #expect(try await holder.claim(kinds: ["test"], limit: 1, lease: .seconds(3)).count == 1)
                try await holder.renew([job.id], lease: .seconds(60))
                // Past the first lease, the job is still held: no store can claim it, and no
                // store is told it falls due before the renewed lease ends.
                let deadline = ContinuousClock.now + .milliseconds(3300)
                while ContinuousClock.now < deadline {
                    #expect(try await other.claim(kinds: ["test"], limit: 1, lease: .seconds(1)).isEmpty)
                    try await Task.sleep(for: .milliseconds(50))
                }
                let due = try #require(try await other.nextDueDate(kinds: ["test"]))
                #expect(due.timeIntervalSinceNow > 30)
            }
        }

        @Test func aLaneRunsOneJobAtATimeAcrossStores() async throws {
            try await withPostgres(clients: 2) { database in
                let first = database.store(client: 0)
                let second = database.store(client: 1)
                let lane = try await (0..<3).asyncMap { _ in
                    try await first.enqueue(testRecord(lane: "account-7"), replacing: false).id
                }
                let free = try await first.enqueue(testRecord(), replacing: false).id

                // Only the lane's first job, and the job without a lane.
                let claimed = try await first.claim(kinds: ["test"], limit: 10, lease: .seconds(30))
                #expect(Set(claimed.map(\.id)) == [lane[0], free])
                #expect(try await second.claim(kinds: ["test"], limit: 10, lease: .seconds(30)).isEmpty)
                // The later jobs of a held lane wake no store: the other store is woken
                // only when the held jobs' leases run out, the holder not at all.
                let due = try #require(try await second.nextDueDate(kinds: ["test"]))
                #expect(due.timeIntervalSinceNow > 20)
                #expect(try await first.nextDueDate(kinds: ["test"]) == nil)

                try await first.complete(lane[0])
                #expect(try await second.claim(kinds: ["test"], limit: 10, lease: .seconds(30)).map(\.id) == [lane[1]])
                #expect(try await first.claim(kinds: ["test"], limit: 10, lease: .seconds(30)).isEmpty)

                // Given back, the lane's job is the next one claimed (the attempt given back).
                try await second.release(lane[1])
                let again = try await first.claim(kinds: ["test"], limit: 10, lease: .seconds(30))
                #expect(again.map(\.id) == [lane[1]])
                #expect(again.first?.attempt == 1)

                // A retry waits in place: the lane waits for it.
                try await first.retry(lane[1], at: Date().addingTimeInterval(3600), error: "offline")
                #expect(try await second.claim(kinds: ["test"], limit: 10, lease: .seconds(30)).isEmpty)
                #expect(try await first.remove(lane[1]))
                #expect(try await second.claim(kinds: ["test"], limit: 10, lease: .seconds(30)).map(\.id) == [lane[2]])
            }
        }

        @Test func aLaneJobOfAnotherKindHoldsTheLane() async throws {
            try await withPostgres { database in
                let store = database.store()
                _ = try await store.enqueue(testRecord(kind: "newer-kind", lane: "l"), replacing: false)
                _ = try await store.enqueue(testRecord(lane: "l"), replacing: false)
                #expect(try await store.claim(kinds: ["test"], limit: 10, lease: .seconds(30)).isEmpty)
                #expect(try await store.nextDueDate(kinds: ["test"]) == nil)
            }
        }

        @Test func claimsFollowPriorityThenArrival() async throws {
            try await withPostgres { database in
                let store = database.store()
                let low = try await store.enqueue(testRecord(priority: 9), replacing: false).id
                let high = try await store.enqueue(testRecord(priority: 25), replacing: false).id
                let low2 = try await store.enqueue(testRecord(priority: 9), replacing: false).id
                let other = try await store.enqueue(testRecord(kind: "other", priority: 33), replacing: false).id
                #expect(try await store.claim(kinds: ["test"], limit: 2, lease: .seconds(30)).map(\.id) == [high, low])
                #expect(
                    try await store.claim(kinds: ["test", "other"], limit: 5, lease: .seconds(30)).map(\.id) == [
                        other, low2,
                    ])
                #expect(try await store.claim(kinds: [], limit: 5, lease: .seconds(30)).isEmpty)
                #expect(try await store.claim(kinds: ["test"], limit: 0, lease: .seconds(30)).isEmpty)
            }
        }

        @Test func aDelayedJobWaitsForItsRunAt() async throws {
            try await withPostgres { database in
                let store = database.store()
                let later = testRecord(delay: 3600)
                _ = try await store.enqueue(later, replacing: false)
                let before = Date()
                let start = ContinuousClock.now
                // Seconds ahead, so that a loaded machine still claims before it is due.
                let soon = testRecord(delay: 3)
                _ = try await store.enqueue(soon, replacing: false)

                #expect(try await store.claim(kinds: ["test"], limit: 10, lease: .seconds(30)).isEmpty)
                let due = try #require(try await store.nextDueDate(kinds: ["test"]))
                #expect(due >= before.addingTimeInterval(2.9) && due <= Date().addingTimeInterval(3.1))

                let claimed = try await claimEventually(store, limit: 10)
                #expect(claimed.map(\.id) == [soon.id])
                #expect(ContinuousClock.now - start >= .milliseconds(2900))
                let next = try #require(try await store.nextDueDate(kinds: ["test"]))
                #expect(next.timeIntervalSinceNow > 3500)
            }
        }

        @Test func aRetryRecordsTheAttemptAndTheError() async throws {
            try await withPostgres { database in
                let store = database.store()
                let job = testRecord()
                _ = try await store.enqueue(job, replacing: false)
                #expect(try await store.claim(kinds: ["test"], limit: 1, lease: .seconds(30)).first?.attempt == 1)
                // Seconds ahead, so that a loaded machine still claims before it is due.
                try await store.retry(job.id, at: Date().addingTimeInterval(3), error: "HTTP 503")

                let stored = try #require(try await store.jobs().first)
                #expect(stored.attempt == 1)
                #expect(stored.lastError == "HTTP 503")
                #expect(stored.runAt > Date().addingTimeInterval(-1))
                #expect(try await store.claim(kinds: ["test"], limit: 1, lease: .seconds(30)).isEmpty)

                let again = try await claimEventually(store)
                #expect(again.first?.attempt == 2)
                #expect(again.first?.lastError == "HTTP 503")
            }
        }

        @Test func aReleaseGivesTheAttemptBack() async throws {
            try await withPostgres { database in
                let store = database.store()
                let job = testRecord()
                _ = try await store.enqueue(job, replacing: false)
                #expect(try await store.claim(kinds: ["test"], limit: 1, lease: .seconds(30)).first?.attempt == 1)
                try await store.release(job.id)
                #expect(try await store.jobs().first?.attempt == 0)
                let again = try await store.claim(kinds: ["test"], limit: 1, lease: .seconds(30))
                #expect(again.first?.attempt == 1)

                // Calls on a job no longer stored are no-ops.
                #expect(try await store.remove(job.id))
                #expect(try await store.remove(job.id) == false)
                try await store.complete(job.id)
                try await store.release(job.id)
                try await store.retry(job.id, at: Date(), error: "gone")
                try await store.renew([job.id], lease: .seconds(1))
                #expect(try await store.jobs().isEmpty)
            }
        }

        @Test func aDroppedConnectionIsAClearErrorAndLosesNoJob() async throws {
            let victim = "backgroundable-victim-\(UUID().uuidString.prefix(8))"
            try await withPostgres(clients: 2, applicationNames: [nil, victim]) { database in
                let healthy = database.store(client: 0)
                let store = database.store(client: 1)
                let jobs = try await (0..<5).asyncMap { _ in
                    try await store.enqueue(testRecord(), replacing: false).id
                }
                // Hold the table, so that the store's claim waits on the server; end that
                // backend while it waits.
                let failure = try await database.client.withTransaction(logger: Logger(label: "test")) { connection in
                    try await connection.query(
                        PostgresQuery(unsafeSQL: "LOCK TABLE \"\(database.table)\" IN ACCESS EXCLUSIVE MODE"),
                        logger: Logger(label: "test"))
                    async let claim = Result {
                        try await store.claim(kinds: ["test"], limit: 5, lease: .seconds(30))
                    }
                    var terminated = false
                    let deadline = ContinuousClock.now + .seconds(20)
                    while !terminated && ContinuousClock.now < deadline {
                        let rows = try await connection.query(
                            """
                            SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                            WHERE application_name = \(victim) AND wait_event_type = 'Lock'
                            """, logger: Logger(label: "test")
                        ).collect()
                        terminated = !rows.isEmpty
                        if !terminated { try await Task.sleep(for: .milliseconds(20)) }
                    }
                    #expect(terminated)
                    return await claim
                }
                let error = try #require(failure.thrown as? DurableStoreError)
                #expect(error.code == .connection)
                #expect(error.message.contains("claiming jobs"))
                #expect(error.message.contains("terminating connection"), "\(error.message)")

                // Nothing was claimed and nothing lost; the store works again on a new connection.
                #expect(try await healthy.jobs().map(\.id) == jobs)
                #expect(try await healthy.jobs().allSatisfy { $0.attempt == 0 })
                let claimed = try await claimEventually(store, limit: 5)
                #expect(Set(claimed.map(\.id)) == Set(jobs))
            }
        }

        @Test func aQueueLosesNoJobWhenItsConnectionsDrop() async throws {
            let victim = "backgroundable-victim-\(UUID().uuidString.prefix(8))"
            try await withPostgres(clients: 2, applicationNames: [nil, victim]) { database in
                let errors = Lock<[any Error]>([])
                let ran = Lock<Set<DurableJobID>>([])
                let jobs = DurableQueue(
                    // A short time limit: postgres-nio can leave a call waiting forever for a
                    // connection after connections drop, and the queue waits on its calls.
                    store: PostgresJobStore(client: database.clients[1], table: database.table, timeout: .seconds(2)),
                    queue: BackgroundQueue(maxConcurrentTasks: 4),
                    pollInterval: .milliseconds(50), onStoreError: { error in errors.withLock { $0.append(error) } })
                jobs.register(DurableJobKind<Int>("test")) { _, job in
                    ran.withLock { _ = $0.insert(job.id) }
                    try await Task.sleep(for: .milliseconds(5))
                }
                var added: Set<DurableJobID> = []
                for index in 0..<40 { added.insert(try await jobs.add(DurableJobKind<Int>("test"), index).id) }
                let running = Task { await jobs.run() }
                // End every connection of the queue's client, a few times, while it works.
                for _ in 0..<5 {
                    try await database.client.query(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = \(victim)")
                    try await Task.sleep(for: .milliseconds(30))
                }
                let healthy = database.store(client: 0)
                let deadline = ContinuousClock.now + .seconds(60)
                var left = try await healthy.jobs()
                while !left.isEmpty && ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(20))
                    left = try await healthy.jobs()
                }
                // Whatever failed while the queue ran was reported as a connection error
                // (cancelling run() below may also cut a call short).
                let failures = errors.withLock { $0 }
                running.cancel()
                await running.value
                #expect(left.isEmpty, "jobs left: \(left.map(\.id))")
                #expect(ran.withLock { $0 } == added)
                for error in failures {
                    #expect((error as? DurableStoreError)?.code == .connection, "\(error)")
                }
            }
        }

        @Test func aCallWithNoAnswerInTimeIsAConnectionError() async throws {
            try await withPostgres(clients: 2) { database in
                let store = PostgresJobStore(
                    client: database.clients[1], table: database.table, timeout: .milliseconds(300))
                // (Through the same client: its connection is open when the claim starts.)
                _ = try await database.store(client: 1).enqueue(testRecord(), replacing: false)
                // The table held by another transaction: the claim waits on the server.
                let failure = try await database.client.withTransaction(logger: Logger(label: "test")) { connection in
                    try await connection.query(
                        PostgresQuery(unsafeSQL: "LOCK TABLE \"\(database.table)\" IN ACCESS EXCLUSIVE MODE"),
                        logger: Logger(label: "test"))
                    return await Result { try await store.claim(kinds: ["test"], limit: 1, lease: .seconds(1)) }
                }
                let error = try #require(failure.thrown as? DurableStoreError)
                #expect(error.code == .connection)
                #expect(error.message.contains("claiming jobs failed: no answer within"), "\(error.message)")
                // Nothing is lost: the statement may still have claimed the job when the
                // table came free (its answer unread); then the job is claimable again once
                // that lease has run out.
                #expect(try await claimEventually(store).count == 1)
            }
        }

        @Test func aClientThatStoppedRunningIsAConnectionError() async throws {
            let client = PostgresClient(configuration: try PostgresTestServer.configuration())
            let run = Task { await client.run() }
            let store = PostgresJobStore(client: client, table: "never_created")
            run.cancel()
            await run.value
            let failure = await Result { try await store.jobs() }
            let error = try #require(failure.thrown as? DurableStoreError)
            #expect(error.code == .connection)
            #expect(error.message.contains("reading the jobs"))
        }

        @Test func aServerErrorIsAConnectionErrorWithTheServersMessage() async throws {
            try await withPostgres { database in
                let store = PostgresJobStore(client: database.client, table: database.table + "_missing")
                let failure = await Result { try await store.jobs() }
                let error = try #require(failure.thrown as? DurableStoreError)
                #expect(error.code == .connection)
                #expect(error.message.contains("does not exist"), "\(error.message)")
                #expect(error.message.contains("42P01"), "\(error.message)")
            }
        }
    }

    extension Result where Failure == any Error {
        var thrown: (any Error)? {
            if case .failure(let error) = self { return error }
            return nil
        }
    }

    extension Sequence where Element: Sendable {
        /// `map` with an async transform, one element after another.
        func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
            var results: [T] = []
            for element in self { results.append(try await transform(element)) }
            return results
        }
    }
#endif
