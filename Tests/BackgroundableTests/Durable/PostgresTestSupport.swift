#if Postgres
    import Backgroundable
    import Foundation
    import Logging
    import PostgresNIO
    import Testing

    /// The server the `Postgres` tests use, from the environment `.ci/postgres.sh env`
    /// prints: BACKGROUNDABLE_POSTGRES_HOST, _PORT (5432), _USER, _PASSWORD (none) and
    /// _DATABASE (the user's).
    ///
    /// Without a host and a user the tests are skipped, saying so, unless CI=true: there a
    /// missing server fails them.
    enum PostgresTestServer {
        static let environment = ProcessInfo.processInfo.environment

        /// The settings, or `nil` when the environment names no server.
        static let settings: (host: String, port: Int, user: String, password: String?, database: String?)? = {
            guard let host = environment["BACKGROUNDABLE_POSTGRES_HOST"], !host.isEmpty,
                let user = environment["BACKGROUNDABLE_POSTGRES_USER"], !user.isEmpty
            else { return nil }
            let port = environment["BACKGROUNDABLE_POSTGRES_PORT"].flatMap(Int.init) ?? 5432
            return (
                host, port, user, environment["BACKGROUNDABLE_POSTGRES_PASSWORD"],
                environment["BACKGROUNDABLE_POSTGRES_DATABASE"]
            )
        }()

        static let isRequired = environment["CI"] == "true"

        /// Whether the tests run: with a server, or under CI, where they fail without one.
        static let shouldRun = settings != nil || isRequired

        static let skipReason: Comment = """
            no PostgreSQL server: set BACKGROUNDABLE_POSTGRES_HOST, _PORT, _USER, _PASSWORD and _DATABASE \
            (`.ci/postgres.sh start DIR` starts one, `.ci/postgres.sh env DIR` prints them)
            """

        /// A client configuration for the test server; `applicationName` tags its
        /// connections in `pg_stat_activity`.
        static func configuration(applicationName: String? = nil) throws -> PostgresClient.Configuration {
            guard let settings else {
                throw DurableStoreError(
                    .connection, "CI=true but BACKGROUNDABLE_POSTGRES_HOST and _USER are not set: \(skipReason)")
            }
            var configuration = PostgresClient.Configuration(
                host: settings.host, port: settings.port, username: settings.user, password: settings.password,
                database: settings.database, tls: .disable)
            configuration.options.maximumConnections = 8
            if let applicationName {
                configuration.options.additionalStartupParameters = [("application_name", applicationName)]
            }
            return configuration
        }

        /// Connection settings for a child process, as the environment it reads.
        static var childEnvironment: [String: String] {
            environment.filter { $0.key.hasPrefix("BACKGROUNDABLE_POSTGRES_") }
        }
    }

    /// A table of its own for one test, and running clients on the test server.
    struct PostgresTestDatabase: Sendable {
        /// The first client, which the test's body may use for anything.
        let client: PostgresClient
        /// Every client, each running until the test ends.
        let clients: [PostgresClient]
        /// The test's own table, dropped when it ends.
        let table: String

        /// A new store on the test's table through client `index`.
        func store(client index: Int = 0) -> PostgresJobStore {
            PostgresJobStore(client: clients[index], table: table)
        }
    }

    /// Runs `body` with `clients` running clients and a new, prepared table, then drops the
    /// table and ends the clients. Each test gets its own table, so tests run in parallel.
    func withPostgres(
        clients count: Int = 1, applicationNames: [String?] = [],
        _ body: (PostgresTestDatabase) async throws -> Void
    ) async throws {
        let clients = try (0..<count).map { index in
            PostgresClient(
                configuration: try PostgresTestServer.configuration(
                    applicationName: index < applicationNames.count ? applicationNames[index] : nil))
        }
        let table = "test_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        let database = PostgresTestDatabase(client: clients[0], clients: clients, table: table)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for client in clients {
                group.addTask { await client.run() }
            }
            do {
                try await database.store().prepare()
                try await body(database)
                try await clients[0].query(PostgresQuery(unsafeSQL: "DROP TABLE IF EXISTS \"\(table)\""))
            } catch {
                _ = try? await clients[0].query(PostgresQuery(unsafeSQL: "DROP TABLE IF EXISTS \"\(table)\""))
                group.cancelAll()
                throw error
            }
            group.cancelAll()
        }
    }

    /// A record for a test: due at once unless `delay` says otherwise.
    func testRecord(
        kind: String = "test", name: String? = nil, lane: String? = nil, priority: UInt8 = 0,
        delay: TimeInterval = 0, payload: String = "payload"
    ) -> DurableJobRecord {
        let now = Date()
        return DurableJobRecord(
            id: DurableJobID(), kind: kind, payload: Data(payload.utf8), name: name, lane: lane, priority: priority,
            timeout: nil, maxAttempts: 3, backoff: .fixed(.seconds(1)), runAt: now.addingTimeInterval(delay),
            enqueuedAt: now)
    }

    /// Calls `claim` until it returns something or `timeout` passes (the database decides
    /// when a job becomes claimable; this only asks often enough).
    func claimEventually(
        _ store: PostgresJobStore, kinds: Set<String> = ["test"], limit: Int = 1, lease: Duration = .seconds(30),
        timeout: Duration = .seconds(20)
    ) async throws -> [DurableJobRecord] {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let claimed = try await store.claim(kinds: kinds, limit: limit, lease: lease)
            if !claimed.isEmpty { return claimed }
            try await Task.sleep(for: .milliseconds(20))
        }
        return []
    }
#endif
