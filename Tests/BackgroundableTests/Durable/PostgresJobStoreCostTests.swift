#if Postgres
    @testable import Backgroundable
    import Foundation
    import Logging
    import PostgresNIO
    import Testing

    /// What the store's statements read from a large table: `EXPLAIN ANALYZE` of its own
    /// claim and next-due-date statements counts the rows each scan returned or filtered.
    @Suite(.enabled(if: PostgresTestServer.shouldRun, PostgresTestServer.skipReason))
    struct PostgresJobStoreCostTests {
        let logger = Logger(label: "PostgresJobStoreCostTests", factory: { _ in SwiftLogNoOpLogHandler() })

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
