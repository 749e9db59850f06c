#if Postgres
    // A replica on a PostgreSQL table shared with other processes (PostgresReplicaTests):
    //
    //   durable-fixture --postgres <table> <seed> <jobs> <lease-ms> <max-work-ms> <max-running>
    //
    // The server is the one the BACKGROUNDABLE_POSTGRES_* variables name; the table must
    // be prepared. The replica adds <jobs> jobs drawn from <seed> (names shared by every
    // replica; lanes only for unnamed jobs, since a replace cannot stop a job running in
    // another process), while running jobs of every replica, until it is killed. Besides
    // `ready`, `acked`, `completing` and `completed` it prints:
    //
    //   replaced <id> <old id>                  an add replaced a job
    //   added                                   the last add returned
    //   claimed <id> <attempt> <t>              a claim returned the job (t: before asking)
    //   run <id> <attempt> <lane|-> <t>         a handler started
    //   ran <id> <attempt> <t>                  it returned or threw
    //   store-error <message>                   a store call failed (the queue tries again)
    //
    // Times are the system's monotonic clock in nanoseconds, the same in every process.
    import Backgroundable
    import Dispatch
    import Foundation
    import PostgresNIO

    func runOnPostgres(_ arguments: [String]) async throws {
        let environment = ProcessInfo.processInfo.environment
        guard arguments.count == 6, let seed = UInt64(arguments[1]), let count = Int(arguments[2]),
            let leaseMilliseconds = Int(arguments[3]), let maxWork = Int(arguments[4]),
            let maxRunning = Int(arguments[5]),
            let host = environment["BACKGROUNDABLE_POSTGRES_HOST"],
            let user = environment["BACKGROUNDABLE_POSTGRES_USER"]
        else {
            FileHandle.standardError.write(
                Data(
                    """
                    usage: durable-fixture --postgres <table> <seed> <jobs> <lease-ms> <max-work-ms> <max-running>
                    (with BACKGROUNDABLE_POSTGRES_HOST, _PORT, _USER, _PASSWORD and _DATABASE set)

                    """.utf8))
            exit(2)
        }
        var configuration = PostgresClient.Configuration(
            host: host, port: environment["BACKGROUNDABLE_POSTGRES_PORT"].flatMap(Int.init) ?? 5432, username: user,
            password: environment["BACKGROUNDABLE_POSTGRES_PASSWORD"],
            database: environment["BACKGROUNDABLE_POSTGRES_DATABASE"], tls: .disable)
        configuration.options.maximumConnections = 4
        let client = PostgresClient(configuration: configuration)
        let store = PostgresJobStore(client: client, table: arguments[0])
        let jobs = DurableQueue(
            store: LoggingStore(base: store, logsClaims: true),
            queue: BackgroundQueue(name: "durable-fixture", maxConcurrentTasks: 3), maxRunningJobs: maxRunning,
            lease: .milliseconds(leaseMilliseconds), pollInterval: .milliseconds(100),
            onStoreError: { say("store-error \($0)".replacingOccurrences(of: "\n", with: " ")) })
        jobs.register(.work) { work, job in
            let lane = work.lane ?? "-"
            say("run \(job.id) \(job.attempt) \(lane) \(DispatchTime.now().uptimeNanoseconds)")
            defer { say("ran \(job.id) \(job.attempt) \(DispatchTime.now().uptimeNanoseconds)") }
            try await Task.sleep(for: .milliseconds(work.milliseconds))
            struct Flaky: Error {}
            if job.attempt <= work.failures { throw Flaky() }
        }

        await withDiscardingTaskGroup { group in
            group.addTask { await client.run() }
            group.addTask { await jobs.run() }
            say("ready")
            var random = Random(state: seed)
            do {
                for _ in 0..<count {
                    let name = Bool.random(using: &random) ? "n\(Int.random(in: 0..<5, using: &random))" : nil
                    let lane =
                        name == nil && Bool.random(using: &random)
                        ? "lane\(Int.random(in: 0..<2, using: &random))" : nil
                    let options = DurableJobOptions(
                        name: name, uniquenessPolicy: Bool.random(using: &random) ? .replace : .drop, lane: lane,
                        retry: .fixed(maxAttempts: 3, delay: .milliseconds(1)))
                    let work = Work(
                        milliseconds: Int.random(in: 0...maxWork, using: &random),
                        failures: Int.random(in: 0..<3, using: &random), lane: lane)
                    let receipt = try await jobs.add(.work, work, options: options)
                    say("acked \(receipt.id) \(name ?? "-") \(receipt.wasDropped ? 1 : 0)")
                    if let replaced = receipt.replaced { say("replaced \(receipt.id) \(replaced)") }
                }
                say("added")
            } catch {
                say("add-failed \(error)".replacingOccurrences(of: "\n", with: " "))
            }
        }
    }
#endif
