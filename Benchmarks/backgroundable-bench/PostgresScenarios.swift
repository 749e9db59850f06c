#if Postgres
    import Backgroundable
    import Foundation
    import PostgresNIO

    /// Durable jobs on a `PostgresJobStore` (the `Postgres` trait), on the server the
    /// BACKGROUNDABLE_POSTGRES_* variables name (`.ci/postgres.sh env` prints them; without
    /// them these scenarios are left out). Each repetition uses a table of its own, dropped
    /// afterwards. `jobs` jobs per repetition; a commit waits for the server's WAL flush, as
    /// it does by default.
    ///
    /// - `durable.postgres.enqueue`: the caller's cost of one `add` (one INSERT, committed).
    /// - `durable.postgres.e2e`: add, claim, run a no-op handler, and delete, per job, with
    ///   one process claiming (compared with `durable.file.e2e`).
    func postgresScenarios(jobs: Int) -> [Scenario] {
        guard let configuration = benchmarkConfiguration() else {
            FileHandle.standardError.write(
                Data("durable.postgres.*: left out (set BACKGROUNDABLE_POSTGRES_HOST, _PORT, _USER, ...)\n".utf8))
            return []
        }
        return [
            Scenario(id: "durable.postgres.enqueue", unit: "ns/unit", baseline: ("durable.file.enqueue", nil)) { _ in
                withTable(configuration) { store in
                    let queue = DurableQueue(store: store, queue: BackgroundQueue(name: "bench"))
                    let start = DispatchTime.now().uptimeNanoseconds
                    for index in 0..<jobs { try! await queue.add(.postgresBenchmark, index) }
                    return Double(DispatchTime.now().uptimeNanoseconds - start) / Double(jobs)
                }
            },
            Scenario(id: "durable.postgres.e2e", unit: "ns/unit", baseline: ("durable.file.e2e", nil)) { _ in
                withTable(configuration) { store in
                    let queue = DurableQueue(store: store, queue: BackgroundQueue(name: "bench", maxConcurrentTasks: 4))
                    queue.register(.postgresBenchmark) { _, _ in }
                    let start = DispatchTime.now().uptimeNanoseconds
                    for index in 0..<jobs { try! await queue.add(.postgresBenchmark, index) }
                    await queue.runUntilIdle()
                    return Double(DispatchTime.now().uptimeNanoseconds - start) / Double(jobs)
                }
            },
        ]
    }

    extension DurableJobKind where Payload == Int {
        fileprivate static let postgresBenchmark = DurableJobKind("benchmark")
    }

    private func benchmarkConfiguration() -> PostgresClient.Configuration? {
        let environment = ProcessInfo.processInfo.environment
        guard let host = environment["BACKGROUNDABLE_POSTGRES_HOST"],
            let user = environment["BACKGROUNDABLE_POSTGRES_USER"]
        else { return nil }
        return PostgresClient.Configuration(
            host: host, port: environment["BACKGROUNDABLE_POSTGRES_PORT"].flatMap(Int.init) ?? 5432, username: user,
            password: environment["BACKGROUNDABLE_POSTGRES_PASSWORD"],
            database: environment["BACKGROUNDABLE_POSTGRES_DATABASE"], tls: .disable)
    }

    /// Runs `body` (blocking this thread, never a cooperative one) with a store on a new,
    /// prepared table and a running client; then drops the table and stops the client.
    private func withTable(
        _ configuration: PostgresClient.Configuration, _ body: @escaping @Sendable (PostgresJobStore) async -> Double
    ) -> Double {
        nonisolated(unsafe) var result = 0.0  // written before blockingWait returns
        blockingWait {
            let client = PostgresClient(configuration: configuration)
            let running = Task { await client.run() }
            let table = "bench_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
            let store = PostgresJobStore(client: client, table: table)
            try! await store.prepare()
            result = await body(store)
            try! await client.query(PostgresQuery(unsafeSQL: "DROP TABLE \"\(table)\""))
            running.cancel()
            await running.value
        }
        return result
    }
#else
    func postgresScenarios(jobs: Int) -> [Scenario] { [] }
#endif
