#if Postgres
    @testable import Backgroundable
    import Foundation
    import Logging
    import PostgresNIO
    import Testing

    /// The store's claim and next-due-date statements, which read indexes: they answer as
    /// their plain definitions do (one scan of every job), and `EXPLAIN ANALYZE` of them
    /// counts the rows their scans returned or filtered.
    @Suite(.enabled(if: PostgresTestServer.shouldRun, PostgresTestServer.skipReason))
    struct PostgresJobStoreQueryTests {
        let logger = Logger(label: "PostgresJobStoreQueryTests", factory: { _ in SwiftLogNoOpLogHandler() })

        /// Random tables of up to 30 jobs (kinds, lanes, priorities, due or not, leased by
        /// this store or another, live or run out), each compared in one transaction, so at
        /// one `now()`. `BACKGROUNDABLE_POSTGRES_SEED` replays a printed seed.
        @Test func claimsAndNextDueDatesAnswerAsTheirPlainDefinitions() async throws {
            let seed =
                ProcessInfo.processInfo.environment["BACKGROUNDABLE_POSTGRES_SEED"].flatMap { UInt64($0) }
                ?? UInt64.random(in: 0...UInt64.max)
            print("PostgresJobStoreQueryTests seed \(seed)")
            var random = SplitMix64(seed: seed)
            try await withPostgres { database in
                let store = database.store()
                let table = "\"\(database.table)\""
                let template = try await store.enqueue(testRecord(), replacing: false).id
                let other = UUID()
                for round in 0..<200 {
                    var rows: [String] = []
                    for _ in 0..<Int.random(in: 0...30, using: &random) {
                        let owner = random.chance(60) ? nil : random.chance(50) ? store.ownerID : other
                        let lease = owner.map { _ in "now() + interval '\(Int.random(in: -10...10, using: &random)) s'"
                        }
                        rows.append(
                            """
                            ('\(random.pick(["test", "other", "third"]))', \(random.chance(50) ? "NULL" : "'\(random.pick(["a", "b", "c"]))'"), \
                            \(Int.random(in: 0...2, using: &random)), now() + interval '\(Int.random(in: -10...10, using: &random)) s', \
                            \(owner.map { "'\($0)'::uuid" } ?? "NULL"), \(lease ?? "NULL"))
                            """)
                    }
                    let kinds: Set<String> = random.chance(50) ? ["test"] : ["test", "other"]
                    let limit = Int.random(in: 1...5, using: &random)
                    let kindList = kinds.map { "'\($0)'" }.joined(separator: ", ")
                    let answers = try await database.client.withConnection { connection in
                        try await connection.query("BEGIN", logger: logger)
                        if !rows.isEmpty {
                            try await connection.query(
                                PostgresQuery(
                                    unsafeSQL: """
                                        INSERT INTO \(table) (id, kind, payload, lane, priority, timeout_seconds,
                                            timeout_attoseconds, max_attempts, backoff, run_at, attempt, lease_owner, lease_until)
                                        SELECT gen_random_uuid(), v.kind, t.payload, v.lane::text, v.priority::smallint, t.timeout_seconds,
                                            t.timeout_attoseconds, t.max_attempts, t.backoff, v.run_at, t.attempt, v.owner::uuid,
                                                v.until::timestamptz
                                        FROM \(table) AS t, (VALUES \(rows.joined(separator: ", ")))
                                            AS v(kind, lane, priority, run_at, owner, until)
                                        WHERE t.id = '\(template.uuid)'
                                        """), logger: logger)
                        }
                        try await connection.query(
                            PostgresQuery(unsafeSQL: "DELETE FROM \(table) WHERE id = '\(template.uuid)'"),
                            logger: logger)
                        // The definitions: every job read, every lane's rule checked row by row.
                        let expectedNext = try await connection.query(
                            PostgresQuery(
                                unsafeSQL: """
                                    SELECT EXTRACT(EPOCH FROM min(GREATEST(j.run_at, j.lease_until, (
                                        SELECT max(o.lease_until) FROM \(table) AS o WHERE o.lane = j.lane AND o.id <> j.id
                                    ))) - now())::float8
                                    FROM \(table) AS j
                                    WHERE j.kind IN (\(kindList))
                                        AND (j.lease_owner IS DISTINCT FROM '\(store.ownerID)'
                                            OR j.lease_until IS NULL OR j.lease_until <= now())
                                        AND (j.lane IS NULL OR NOT EXISTS (
                                            SELECT FROM \(table) AS o WHERE o.lane = j.lane AND o.sequence < j.sequence))
                                    """), logger: logger
                        ).collect().first?.decode(Double?.self)
                        let expectedClaim = try await connection.query(
                            PostgresQuery(
                                unsafeSQL: """
                                    SELECT j.id FROM \(table) AS j
                                    WHERE j.kind IN (\(kindList)) AND j.run_at <= now()
                                        AND (j.lease_until IS NULL OR j.lease_until <= now())
                                        AND (j.lane IS NULL OR NOT EXISTS (
                                            SELECT FROM \(table) AS o WHERE o.lane = j.lane AND o.id <> j.id
                                                AND (o.sequence < j.sequence OR o.lease_until > now())))
                                    ORDER BY j.priority DESC, j.sequence LIMIT \(limit)
                                    """), logger: logger
                        ).collect().map { try $0.decode(UUID.self) }
                        let next = try await connection.query(store.nextDueDateQuery(kinds: kinds), logger: logger)
                            .collect().first?.decode(Double?.self)
                        let claimed = try await connection.query(
                            store.claimQuery(kinds: kinds, limit: limit, lease: .seconds(30)), logger: logger
                        ).collect().map { row in
                            let columns = row.makeRandomAccess()
                            return (
                                try columns["id"].decode(UUID.self), try columns["sequence"].decode(Int64.self),
                                try columns["priority"].decode(Int16.self)
                            )
                        }
                        try await connection.query("ROLLBACK", logger: logger)
                        let claimOrder = claimed.sorted { ($0.2, $1.1) > ($1.2, $0.1) }.map(\.0)
                        return (expectedNext, next, expectedClaim, claimOrder)
                    }
                    #expect(
                        answers.0 == answers.1,
                        "round \(round) (seed \(seed)): next due in \(String(describing: answers.1)) s, not \(String(describing: answers.0))"
                    )
                    #expect(
                        answers.2 == answers.3, "round \(round) (seed \(seed)): claimed \(answers.3), not \(answers.2)")
                }
            }
        }

        @Test func aClaimAndTheNextDueDateReadNoMoreWhenTheBacklogDoubles() async throws {
            try await withPostgres { database in
                let store = database.store()
                let template = try await store.enqueue(testRecord(), replacing: false).id
                // Per round: 20,000 due jobs, 5,000 more in one lane, 2,000 due in an hour, 50
                // held by another store. Once: 500 lanes of one job (each lane costs the next
                // due date a few rows, by design).
                func add(_ count: Int, lane: String = "NULL", runAt: String = "run_at", lease: String = "NULL")
                    async throws
                {
                    try await database.client.query(
                        PostgresQuery(
                            unsafeSQL: """
                                INSERT INTO "\(database.table)" (id, kind, payload, lane, priority, timeout_seconds,
                                    timeout_attoseconds, max_attempts, backoff, run_at, attempt, lease_owner, lease_until)
                                SELECT gen_random_uuid(), kind, payload, \(lane), priority, timeout_seconds,
                                    timeout_attoseconds, max_attempts, backoff, \(runAt), attempt,
                                    CASE WHEN \(lease) IS NULL THEN NULL ELSE gen_random_uuid() END, \(lease)
                                FROM "\(database.table)" AS template, generate_series(1, \(count)) AS n
                                WHERE template.id = '\(template.uuid)'
                                """))
                }
                try await add(500, lane: "'lane-' || n")
                var reads: [(claim: Int, next: Int)] = []
                for _ in 0..<2 {
                    try await add(20_000)
                    try await add(5_000, lane: "'big'")
                    try await add(2_000, runAt: "run_at + interval '1 hour'")
                    try await add(50, lease: "now() + interval '1 hour'")
                    try await database.client.query(PostgresQuery(unsafeSQL: "ANALYZE \"\(database.table)\""))
                    reads.append(
                        (
                            try await rowsRead(
                                store.claimQuery(kinds: ["test"], limit: 10, lease: .seconds(30)), database.client),
                            try await rowsRead(store.nextDueDateQuery(kinds: ["test"]), database.client)
                        ))
                }
                // The table holds 27,551 jobs, then 54,601; a full scan would read them all.
                #expect(reads[0].claim < 100 && reads[1].claim <= reads[0].claim + 5, "claims read \(reads)")
                #expect(reads[0].next < 3_000 && reads[1].next <= reads[0].next + 5, "next due dates read \(reads)")
                // And they still answer right: ten jobs claimed, the next one due at once.
                #expect(try await store.claim(kinds: ["test"], limit: 10, lease: .seconds(30)).count == 10)
                let due = try #require(try await store.nextDueDate(kinds: ["test"]))
                #expect(due.timeIntervalSinceNow < 1)
            }
        }

        /// The rows the scans of `query`'s plan returned or filtered out, over all their loops.
        /// In a transaction rolled back: a claim measured claims nothing.
        private func rowsRead(_ query: PostgresQuery, _ client: PostgresClient) async throws -> Int {
            let explain = PostgresQuery(unsafeSQL: "EXPLAIN (ANALYZE, FORMAT JSON) " + query.sql, binds: query.binds)
            let text = try await client.withConnection { connection in
                try await connection.query("BEGIN", logger: logger)
                var text = ""
                for try await row in try await connection.query(explain, logger: logger) {
                    text += try row.decode(String.self)
                }
                try await connection.query("ROLLBACK", logger: logger)
                return text
            }
            let plans = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [[String: Any]])
            func read(_ node: [String: Any]) -> Int {
                let loops = node["Actual Loops"] as? Int ?? 1
                let rows = (node["Actual Rows"] as? Int ?? 0) + (node["Rows Removed by Filter"] as? Int ?? 0)
                let own = (node["Node Type"] as? String ?? "").hasSuffix("Scan") ? rows * loops : 0
                return own + (node["Plans"] as? [[String: Any]] ?? []).map(read).reduce(0, +)
            }
            return plans.compactMap { $0["Plan"] as? [String: Any] }.map(read).reduce(0, +)
        }
    }
#endif
