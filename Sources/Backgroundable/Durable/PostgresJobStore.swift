#if Postgres
    public import Foundation
    public import Logging
    public import PostgresNIO
    import Synchronization

    /// Durable jobs in a PostgreSQL table, shared by every process that uses the same table:
    /// the store for a server run as several replicas (the `Postgres` trait).
    ///
    /// ```swift
    /// let client = PostgresClient(configuration: configuration)
    /// // client.run() must be running while the store is used, e.g. in a task group
    /// // or as a service of the app's ServiceGroup.
    /// let store = PostgresJobStore(client: client)
    /// try await store.prepare()  // creates the table and its indexes if absent
    /// ```
    ///
    /// The store does not own `client`: the caller creates it, runs its `run()` for as long
    /// as the store is used (postgres-nio hands out no connection otherwise), and ends it.
    /// Each call is one statement on one pooled connection; none blocks a thread.
    ///
    /// How it keeps the rules of ``DurableJobStore`` across replicas:
    /// - **Names**: a unique index on the `name` column (where it is not null); an enqueue
    ///   is one `INSERT … ON CONFLICT DO NOTHING`, a replacing one deletes the job of that
    ///   name and inserts in the same statement.
    /// - **Claims**: `SELECT … FOR UPDATE SKIP LOCKED` and an `UPDATE` in one statement, which
    ///   counts the attempt and writes a lease: `lease_owner` (this store's ``ownerID``) and
    ///   `lease_until`. A job whose lease ran out can be claimed by any store.
    /// - **Lanes**: a job of a lane can be claimed only when no job of its lane came before
    ///   it (by `sequence`) and none holds a live lease.
    /// - **Costs**: a claim walks the jobs in the order it takes them (an index on priority
    ///   and arrival) and stops at its limit, so the size of a backlog costs it nothing;
    ///   what it steps over does: jobs held or not yet due that come before the due ones,
    ///   and the later jobs of a lane (two index lookups each). ``nextDueDate(kinds:)``
    ///   reads a few index entries per kind, per job being run and per lane.
    /// - ``retry(_:at:error:)``, ``release(_:)`` and ``renew(_:lease:)`` change only jobs whose
    ///   lease this store holds (its ``ownerID``): a store whose lease ran out and whose job
    ///   another store claimed changes nothing. ``complete(_:)`` and ``remove(_:)`` delete by id.
    ///
    /// Every time is the database's (`now()`), so the replicas' clocks need not agree: a
    /// job's `notBefore`, and the date of a retry, count as a delay from this process's
    /// clock, re-based on the database's; ``nextDueDate(kinds:)`` converts back. Delays
    /// saturate at about 300 years.
    ///
    /// A dropped connection, a server that cannot be reached, and an error the server
    /// reports are thrown as ``DurableStoreError`` with code ``DurableStoreError/Code/connection``
    /// and the server's message; so is a call with no answer within ``timeout``. The
    /// statement that failed changed nothing, or (a connection lost after the server
    /// committed, a statement that ran after the call gave up) changed what it was asked
    /// to: a claim whose answer was lost leaves its jobs leased until their lease runs out,
    /// and then claimable again. No job is lost either way. A cancelled task's call throws
    /// `CancellationError`.
    public final class PostgresJobStore: DurableJobStore {
        /// The client every call uses. The caller runs it.
        public let client: PostgresClient
        /// The table's name, unquoted.
        public let table: String
        /// The table's schema, or `nil` for the connection's `search_path`.
        public let schema: String?
        /// This store's identity in `lease_owner`: the jobs it claims are its own until
        /// their lease runs out. New for each store.
        public let ownerID: UUID

        /// How long a call waits for its answer before it throws.
        public let timeout: Duration
        private let logger: Logger
        // The table and its indexes, quoted for SQL.
        private let qualifiedTable: String
        private let nameIndex: String
        private let dueIndex: String
        private let laneIndex: String
        private let orderIndex: String
        private let readyIndex: String
        private let leaseIndex: String

        /// A store on `table` (in `schema`, if given) through `client`, which the caller
        /// runs. Call ``prepare()`` once before use, from any number of replicas.
        ///
        /// - Parameters:
        ///   - client: The client every call uses; the caller keeps its `run()` running.
        ///   - table: The table's name. Stores on the same table share their jobs.
        ///   - schema: The table's schema, which must exist; `nil` for the connection's
        ///     `search_path`.
        ///   - timeout: How long a call waits for its answer — a connection from the pool,
        ///     then the statement's result — before it throws ``DurableStoreError/Code/connection``
        ///     and gives up on it. postgres-nio can leave a call waiting for a connection
        ///     forever after connections drop; the limit keeps a ``DurableQueue`` going.
        ///   - logger: Where postgres-nio logs each statement; logs nothing by default.
        /// - Precondition: `table` and `schema` are 1 to 48 bytes of UTF-8 and hold no NUL
        ///   character (PostgreSQL cuts identifiers at 63 bytes, and the index names add a
        ///   suffix to the table's).
        public init(
            client: PostgresClient, table: String = "backgroundable_jobs", schema: String? = nil,
            timeout: Duration = .seconds(30),
            logger: Logger = Logger(
                label: "Backgroundable.PostgresJobStore", factory: { _ in SwiftLogNoOpLogHandler() })
        ) {
            for identifier in [table] + (schema.map { [$0] } ?? []) {
                precondition(
                    (1...48).contains(identifier.utf8.count) && !identifier.utf8.contains(0),
                    "PostgresJobStore: a table or schema name is 1 to 48 bytes with no NUL, not \"\(identifier)\"")
            }
            self.client = client
            self.table = table
            self.schema = schema
            self.ownerID = UUID()
            self.timeout = timeout
            self.logger = logger
            let quotedTable = Self.quoted(table)
            qualifiedTable = schema.map { "\(Self.quoted($0)).\(quotedTable)" } ?? quotedTable
            nameIndex = Self.quoted(table + "_name")
            dueIndex = Self.quoted(table + "_due")
            laneIndex = Self.quoted(table + "_lane")
            orderIndex = Self.quoted(table + "_order")
            readyIndex = Self.quoted(table + "_ready")
            leaseIndex = Self.quoted(table + "_leases")
        }

        private static func quoted(_ identifier: String) -> String {
            "\"" + identifier.replacingOccurrences(of: "\"", with: "\"\"") + "\""
        }

        // MARK: Schema

        /// Creates the table and its indexes if they do not exist. Idempotent, and safe when
        /// several replicas call it at once: it runs in one transaction under an advisory
        /// lock named after the table. The schema, if given, must exist.
        ///
        /// On a table an earlier version made, it adds the indexes this one reads from;
        /// building them holds back writes to the table until they are built.
        public func prepare() async throws {
            let lockName = "Backgroundable.PostgresJobStore:" + qualifiedTable
            let statements: [PostgresQuery] = [
                "SELECT pg_advisory_xact_lock(hashtext(\(lockName)))",
                PostgresQuery(
                    unsafeSQL: """
                        CREATE TABLE IF NOT EXISTS \(qualifiedTable) (
                            id uuid PRIMARY KEY,
                            sequence bigint GENERATED ALWAYS AS IDENTITY,
                            kind text NOT NULL,
                            payload bytea NOT NULL,
                            name text,
                            lane text,
                            priority smallint NOT NULL,
                            timeout_seconds bigint,
                            timeout_attoseconds bigint,
                            max_attempts bigint NOT NULL,
                            backoff text NOT NULL,
                            run_at timestamptz NOT NULL,
                            attempt bigint NOT NULL,
                            enqueued_at timestamptz NOT NULL DEFAULT now(),
                            last_error text,
                            trace_context text,
                            lease_owner uuid,
                            lease_until timestamptz
                        )
                        """),
                PostgresQuery(
                    unsafeSQL:
                        "CREATE UNIQUE INDEX IF NOT EXISTS \(nameIndex) ON \(qualifiedTable) (name) WHERE name IS NOT NULL"
                ),
                PostgresQuery(unsafeSQL: "CREATE INDEX IF NOT EXISTS \(dueIndex) ON \(qualifiedTable) (run_at)"),
                PostgresQuery(
                    unsafeSQL:
                        "CREATE INDEX IF NOT EXISTS \(laneIndex) ON \(qualifiedTable) (lane, sequence) WHERE lane IS NOT NULL"
                ),
                // A claim walks the jobs in the order it takes them, and stops at its limit.
                PostgresQuery(
                    unsafeSQL: "CREATE INDEX IF NOT EXISTS \(orderIndex) ON \(qualifiedTable) (priority DESC, sequence)"
                ),
                // The next due date: the earliest job of each kind outside lanes and leases...
                PostgresQuery(
                    unsafeSQL: """
                        CREATE INDEX IF NOT EXISTS \(readyIndex) ON \(qualifiedTable) (kind, run_at)
                        WHERE lane IS NULL AND lease_until IS NULL
                        """),
                // ...and the leases, as many as the jobs being run.
                PostgresQuery(
                    unsafeSQL: """
                        CREATE INDEX IF NOT EXISTS \(leaseIndex) ON \(qualifiedTable) (lane, lease_until)
                        WHERE lease_until IS NOT NULL
                        """),
            ]
            let (client, logger) = (self.client, self.logger)
            do {
                try await Self.answer(within: timeout) {
                    try await client.withTransaction(logger: logger) { connection in
                        for statement in statements {
                            try await connection.query(statement, logger: logger)
                        }
                    }
                }
            } catch {
                throw Self.storeError(error, "creating the table \(qualifiedTable)")
            }
        }

        // MARK: DurableJobStore

        /// The columns a record is read from, in every statement that returns records.
        private static let columns = [
            "id", "sequence", "kind", "payload", "name", "lane", "priority", "timeout_seconds", "timeout_attoseconds",
            "max_attempts", "backoff", "run_at", "attempt", "enqueued_at", "last_error", "trace_context",
        ]

        public func enqueue(_ job: DurableJobRecord, replacing: Bool) async throws -> DurableJobReceipt {
            let backoff: String
            let traceContext: String?
            do {
                backoff = String(decoding: try JSONEncoder().encode(job.backoff), as: UTF8.self)
                traceContext = try job.traceContext.map {
                    String(decoding: try JSONEncoder().encode($0), as: UTF8.self)
                }
            } catch {
                throw DurableStoreError(.encoding, "job \(job.id) does not encode: \(error)")
            }
            let delay = Self.seconds(job.runAt.timeIntervalSince(job.enqueuedAt))
            var insert = PostgresQuery(
                unsafeSQL: """
                    INSERT INTO \(qualifiedTable) (id, kind, payload, name, lane, priority, timeout_seconds,
                        timeout_attoseconds, max_attempts, backoff, run_at, attempt, last_error, trace_context)
                    SELECT $1::uuid, $2::text, $3::bytea, $4::text, $5::text, $6::smallint, $7::bigint, $8::bigint,
                        $9::bigint, $10::text, now() + make_interval(secs => $11::float8), $12::bigint, $13::text,
                        $14::text
                    """)
            insert.binds.append(job.id.uuid)
            insert.binds.append(job.kind)
            try Self.bind(job.payload, to: &insert)
            insert.binds.append(job.name)
            insert.binds.append(job.lane)
            insert.binds.append(Int16(job.priority))
            insert.binds.append(job.timeout.map { $0.components.seconds })
            insert.binds.append(job.timeout.map { $0.components.attoseconds })
            insert.binds.append(job.maxAttempts)
            insert.binds.append(backoff)
            insert.binds.append(delay)
            insert.binds.append(job.attempt)
            insert.binds.append(job.lastError)
            insert.binds.append(traceContext)

            guard let name = job.name else {
                _ = try await rows(insert, "storing job \(job.id)")
                return DurableJobReceipt(id: job.id)
            }
            // One statement each; it answers nothing only when it raced a job of the same
            // name stored, or removed, after the statement's snapshot: then it runs again.
            // A stored id is looked for first, in the statement's snapshot (one stored
            // later fails the insert on the primary key): such a record is not stored, and
            // replaces or drops nothing.
            var statement = insert
            statement.binds.append(name)
            let lookup = "dup AS (SELECT EXISTS (SELECT FROM \(qualifiedTable) WHERE id = $1::uuid) AS stored)"
            let duplicate = "SELECT NULL::uuid, NULL::uuid, true FROM dup WHERE stored"
            if replacing {
                // The delete runs first: the insert reads its result.
                statement.sql = """
                    WITH \(lookup),
                    old AS (
                        DELETE FROM \(qualifiedTable) WHERE name = $15::text AND NOT (SELECT stored FROM dup) RETURNING id
                    ),
                    new AS (
                        \(insert.sql) FROM (SELECT count(*) FROM old) AS deleted WHERE NOT (SELECT stored FROM dup)
                        ON CONFLICT (name) WHERE name IS NOT NULL DO NOTHING RETURNING id
                    )
                    SELECT new.id, (SELECT id FROM old LIMIT 1) AS other, false FROM new
                    UNION ALL \(duplicate)
                    """
            } else {
                statement.sql = """
                    WITH \(lookup),
                    new AS (
                        \(insert.sql) WHERE NOT (SELECT stored FROM dup)
                        ON CONFLICT (name) WHERE name IS NOT NULL DO NOTHING RETURNING id
                    )
                    SELECT id, NULL::uuid AS other, false FROM new
                    UNION ALL
                    SELECT NULL::uuid, id, false FROM \(qualifiedTable)
                    WHERE name = $15::text AND NOT EXISTS (SELECT FROM new) AND NOT (SELECT stored FROM dup)
                    UNION ALL \(duplicate)
                    """
            }
            for _ in 0..<100 {
                guard let row = try await rows(statement, "storing job \(job.id) named \"\(name)\"").first else {
                    continue
                }
                let (stored, other, isDuplicate) = try Self.decode(row, "storing job \(job.id)") {
                    try $0.decode((UUID?, UUID?, Bool).self)
                }
                if isDuplicate {
                    throw Self.duplicate("storing job \(job.id) named \"\(name)\"")
                } else if stored != nil {
                    return DurableJobReceipt(id: job.id, replaced: other.map(DurableJobID.init(uuid:)))
                } else if let other {
                    return DurableJobReceipt(id: DurableJobID(uuid: other), wasDropped: true)
                }
            }
            throw DurableStoreError(
                .connection, "storing job \(job.id) named \"\(name)\": other stores kept changing that name")
        }

        public func claim(kinds: Set<String>, limit: Int, lease: Duration) async throws -> [DurableJobRecord] {
            guard limit > 0, !kinds.isEmpty else { return [] }
            let claimed = try await rows(claimQuery(kinds: kinds, limit: limit, lease: lease), "claiming jobs").map {
                try Self.record($0)
            }
            // RETURNING keeps no order: highest priority first, then in order of arrival.
            return claimed.sorted { ($0.priority, $1.sequence) > ($1.priority, $0.sequence) }
        }

        /// ``claim(kinds:limit:lease:)``'s statement (its costs: the type's **Costs**).
        func claimQuery(kinds: Set<String>, limit: Int, lease: Duration) -> PostgresQuery {
            """
            WITH due AS (
                SELECT j.id FROM \(unescaped: qualifiedTable) AS j
                WHERE j.kind = ANY(\(Array(kinds))) AND j.run_at <= now()
                    AND (j.lease_until IS NULL OR j.lease_until <= now())
                    AND (j.lane IS NULL OR (
                        (SELECT min(o.sequence) FROM \(unescaped: qualifiedTable) AS o WHERE o.lane = j.lane) = j.sequence
                        AND NOT EXISTS (
                            SELECT FROM \(unescaped: qualifiedTable) AS o
                            WHERE o.lane = j.lane AND o.lease_until > now() AND o.id <> j.id)))
                ORDER BY j.priority DESC, j.sequence
                LIMIT \(limit)
                FOR UPDATE SKIP LOCKED
            )
            UPDATE \(unescaped: qualifiedTable) AS j
            SET attempt = j.attempt + 1, lease_owner = \(ownerID),
                lease_until = now() + make_interval(secs => \(Self.seconds(lease)))
            FROM due WHERE j.id = due.id
            RETURNING \(unescaped: Self.columns.map { "j.\($0)" }.joined(separator: ", "))
            """
        }

        /// Also counts a job another store holds, due when its lease runs out: a queue
        /// then wakes to take over the jobs of a replica that died.
        public func nextDueDate(kinds: Set<String>) async throws -> Date? {
            guard !kinds.isEmpty else { return nil }
            guard let row = try await rows(nextDueDateQuery(kinds: kinds), "reading the next due date").first else {
                return nil
            }
            let seconds = try Self.decode(row, "reading the next due date") { try $0.decode(Double?.self) }
            return seconds.map { Date().addingTimeInterval($0) }
        }

        /// ``nextDueDate(kinds:)``'s statement, in seconds from the database's `now()`.
        ///
        /// Three parts, each read from an index: the jobs outside lanes that nobody
        /// holds (the earliest of each kind); those outside lanes that another store
        /// holds, or whose lease ran out; the first job of each lane (found by skipping
        /// from lane to lane), due once no other job of its lane holds a lease.
        func nextDueDateQuery(kinds: Set<String>) -> PostgresQuery {
            let kinds = Array(kinds)
            return """
                WITH RECURSIVE heads AS (
                    (SELECT lane, sequence FROM \(unescaped: qualifiedTable)
                        WHERE lane IS NOT NULL ORDER BY lane, sequence LIMIT 1)
                    UNION ALL
                    SELECT step.lane, step.sequence FROM heads CROSS JOIN LATERAL (
                        SELECT lane, sequence FROM \(unescaped: qualifiedTable)
                        WHERE lane > heads.lane ORDER BY lane, sequence LIMIT 1) AS step
                )
                SELECT EXTRACT(EPOCH FROM min(due) - now())::float8 FROM (
                    SELECT (SELECT min(j.run_at) FROM \(unescaped: qualifiedTable) AS j
                            WHERE j.kind = wanted.kind AND j.lane IS NULL AND j.lease_until IS NULL) AS due
                    FROM unnest(\(kinds)::text[]) AS wanted(kind)
                    UNION ALL
                    SELECT GREATEST(j.run_at, j.lease_until) FROM \(unescaped: qualifiedTable) AS j
                    WHERE j.lane IS NULL AND j.lease_until IS NOT NULL AND j.kind = ANY(\(kinds))
                        AND (j.lease_owner IS DISTINCT FROM \(ownerID) OR j.lease_until <= now())
                    UNION ALL
                    SELECT GREATEST(j.run_at, j.lease_until, (
                        SELECT max(o.lease_until) FROM \(unescaped: qualifiedTable) AS o
                        WHERE o.lane = j.lane AND o.lease_until IS NOT NULL AND o.id <> j.id))
                    FROM heads JOIN \(unescaped: qualifiedTable) AS j ON j.lane = heads.lane AND j.sequence = heads.sequence
                    WHERE j.kind = ANY(\(kinds))
                        AND (j.lease_owner IS DISTINCT FROM \(ownerID) OR j.lease_until IS NULL OR j.lease_until <= now())
                ) AS parts
                """
        }

        public func renew(_ ids: [DurableJobID], lease: Duration) async throws {
            guard !ids.isEmpty else { return }
            let query: PostgresQuery = """
                UPDATE \(unescaped: qualifiedTable)
                SET lease_until = now() + make_interval(secs => \(Self.seconds(lease)))
                WHERE id = ANY(\(ids.map(\.uuid))) AND lease_owner = \(ownerID)
                """
            _ = try await rows(query, "renewing the lease of \(ids.count) jobs")
        }

        public func complete(_ id: DurableJobID) async throws {
            _ = try await remove(id)
        }

        public func retry(_ id: DurableJobID, at date: Date, error: String) async throws {
            let query: PostgresQuery = """
                UPDATE \(unescaped: qualifiedTable)
                SET run_at = now() + make_interval(secs => \(Self.seconds(date.timeIntervalSinceNow))),
                    last_error = \(error), lease_owner = NULL, lease_until = NULL
                WHERE id = \(id.uuid) AND lease_owner = \(ownerID)
                """
            _ = try await rows(query, "giving back job \(id) for a retry")
        }

        public func release(_ id: DurableJobID) async throws {
            let query: PostgresQuery = """
                UPDATE \(unescaped: qualifiedTable)
                SET attempt = GREATEST(attempt - 1, 0), lease_owner = NULL, lease_until = NULL
                WHERE id = \(id.uuid) AND lease_owner = \(ownerID)
                """
            _ = try await rows(query, "releasing job \(id)")
        }

        public func remove(_ id: DurableJobID) async throws -> Bool {
            let query: PostgresQuery = "DELETE FROM \(unescaped: qualifiedTable) WHERE id = \(id.uuid) RETURNING id"
            return try await !rows(query, "removing job \(id)").isEmpty
        }

        public func jobs() async throws -> [DurableJobRecord] {
            let query = PostgresQuery(
                unsafeSQL: "SELECT \(Self.columns.joined(separator: ", ")) FROM \(qualifiedTable) ORDER BY sequence")
            return try await rows(query, "reading the jobs").map { try Self.record($0) }
        }

        // MARK: Rows and errors

        /// Runs `query` and reads every row; any error becomes a ``DurableStoreError``.
        ///
        /// Through `withConnection`, which gives the connection back to the pool on every
        /// path: `PostgresClient.query` (postgres-nio 1.33) keeps it leased forever when the
        /// connection drops between the query's start and its first row, and once every
        /// connection of the pool is lost that way, each later call waits forever.
        private func rows(_ query: PostgresQuery, _ doing: @autoclosure () -> String) async throws -> [PostgresRow] {
            let (client, logger) = (self.client, self.logger)
            do {
                return try await Self.answer(within: timeout) {
                    try await client.withConnection { connection in
                        try await connection.query(query, logger: logger).collect()
                    }
                }
            } catch {
                throw Self.storeError(error, doing())
            }
        }

        /// `operation`'s answer, or an error once `limit` has passed or the calling task is
        /// cancelled, whichever comes first. The operation runs in a task of its own, which
        /// is cancelled when the caller stops waiting for it.
        private static func answer<Value: Sendable>(
            within limit: Duration, _ operation: @escaping @Sendable () async throws -> Value
        ) async throws -> Value {
            let race = Race<Value>()
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { continuation in
                    race.start(continuation, operation: operation, limit: limit)
                }
            } onCancel: {
                race.finish(.failure(CancellationError()))
            }
        }

        private static func bind(_ payload: Data, to query: inout PostgresQuery) throws {
            do {
                try query.binds.append(payload)
            } catch {
                throw DurableStoreError(.encoding, "a payload does not encode as bytea: \(error)")
            }
        }

        private static func decode<Value>(
            _ row: PostgresRow, _ doing: String, _ body: (PostgresRow) throws -> Value
        ) throws -> Value {
            do {
                return try body(row)
            } catch {
                throw DurableStoreError(.encoding, "\(doing): a row does not decode: \(error)")
            }
        }

        /// A record from a row of ``columns``.
        private static func record(_ row: PostgresRow) throws -> DurableJobRecord {
            let fields = try decode(row, "reading a job") {
                try $0.decode(
                    (
                        UUID, Int64, String, Data, String?, String?, Int16, Int64?, Int64?, Int, String, Date, Int,
                        Date, String?, String?
                    ).self)
            }
            let backoff: RetryPolicy.Backoff
            let traceContext: [String: String]?
            do {
                backoff = try JSONDecoder().decode(RetryPolicy.Backoff.self, from: Data(fields.10.utf8))
                traceContext = try fields.15.map {
                    try JSONDecoder().decode([String: String].self, from: Data($0.utf8))
                }
            } catch {
                throw DurableStoreError(
                    .encoding, "job \(fields.0): its backoff or trace context does not decode: \(error)")
            }
            let timeout = fields.7.map { Duration(secondsComponent: $0, attosecondsComponent: fields.8 ?? 0) }
            return DurableJobRecord(
                id: DurableJobID(uuid: fields.0), kind: fields.2, payload: fields.3, name: fields.4, lane: fields.5,
                priority: UInt8(clamping: fields.6), timeout: timeout, maxAttempts: fields.9, backoff: backoff,
                runAt: fields.11, attempt: fields.12, enqueuedAt: fields.13, sequence: fields.1, lastError: fields.14,
                traceContext: traceContext)
        }

        /// A delay in seconds for `make_interval`: at least 0, at most about 300 years.
        private static func seconds(_ interval: TimeInterval) -> Double {
            interval.isNaN ? 0 : min(max(interval, 0), 1e10)
        }

        private static func seconds(_ duration: Duration) -> Double {
            let (seconds, attoseconds) = duration.components
            return Self.seconds(Double(seconds) + Double(attoseconds) / 1e18)
        }

        /// The end of ``answer(within:_:)``: the first of the operation, the time limit and
        /// the caller's cancellation resumes the continuation (the lock hands it out once);
        /// the others find it gone. Ending cancels the operation and the timer.
        private final class Race<Value: Sendable>: Sendable {
            private struct State {
                var continuation: CheckedContinuation<Value, any Error>?
                var tasks: [Task<Void, Never>] = []
                var isOver = false
            }
            private let state = Lock(State())

            func start(
                _ continuation: CheckedContinuation<Value, any Error>,
                operation: @escaping @Sendable () async throws -> Value, limit: Duration
            ) {
                state.withLock { $0.continuation = continuation }
                let work = Task {
                    do { self.finish(.success(try await operation())) } catch { self.finish(.failure(error)) }
                }
                let timer = Task {
                    guard (try? await Task.sleep(for: limit)) != nil else { return }
                    self.finish(.failure(NoAnswer(limit: limit)))
                }
                // Cancelled at once if the race already ended (the operation was that fast).
                let isOver = state.withLock { state in
                    state.tasks = [work, timer]
                    return state.isOver
                }
                if isOver {
                    work.cancel()
                    timer.cancel()
                }
            }

            func finish(_ result: Result<Value, any Error>) {
                let (continuation, tasks) = state.withLock { state in
                    state.isOver = true
                    defer { state.continuation = nil }
                    return (state.continuation, state.tasks)
                }
                guard let continuation else { return }
                for task in tasks { task.cancel() }
                continuation.resume(with: result)
            }
        }

        private struct NoAnswer: Error, CustomStringConvertible {
            let limit: Duration
            var description: String { "no answer within \(limit)" }
        }

        /// `error` as a ``DurableStoreError`` (``DurableStoreError/Code/connection``) with the
        /// server's message, unless it already is one or is a cancellation.
        private static func storeError(_ error: any Error, _ doing: String) -> any Error {
            if error is DurableStoreError || error is CancellationError { return error }
            // A unique violation of the primary key: only an insert of a stored id meets it
            // (the name's index is handled by each statement's `ON CONFLICT`).
            if let error = error as? PSQLError, let info = error.serverInfo, info[.sqlState] == "23505",
                info[.constraintName]?.hasSuffix("_pkey") ?? false
            {
                return duplicate(doing)
            }
            return DurableStoreError(.connection, "PostgreSQL: \(doing) failed: \(describe(error))")
        }

        private static func duplicate(_ doing: String) -> DurableStoreError {
            DurableStoreError(
                .duplicateID, "PostgreSQL: \(doing): a job of this id is stored already; nothing was stored")
        }

        /// What went wrong, for people: PSQLError's description hides everything (it may
        /// reach end users), so its code and the server's fields are spelled out here. Bound
        /// values (payloads) are never included.
        private static func describe(_ error: any Error) -> String {
            if let error = error as? PSQLError {
                var parts = ["\(error.code)"]
                if let info = error.serverInfo {
                    let fields: [PSQLError.ServerInfo.Field] = [.severity, .sqlState, .message, .detail, .hint]
                    parts += fields.compactMap { field in info[field].map { "\(field): \($0)" } }
                }
                if let underlying = error.underlying {
                    parts.append("underlying: \(describe(underlying))")
                }
                return parts.joined(separator: ", ")
            }
            if let error = error as? PostgresTransactionError {
                let inner = [error.beginError, error.closureError, error.commitError, error.rollbackError]
                return inner.compactMap { $0.map(describe) }.joined(separator: "; ")
            }
            return String(describing: error)
        }
    }
#endif
