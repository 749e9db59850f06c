// A child process for the ServiceLifecycle tests (ServiceLifecycleTests.swift): the
// graceful-shutdown fixture's server, run by a real `ServiceGroup` that owns the
// signals (the `ServiceLifecycle` trait).
//
//     service-lifecycle-fixture <directory> <units> <unit-ms> <grace-ms>
//
// SIGTERM is the group's graceful-shutdown signal, SIGINT its cancellation signal, and
// <grace-ms> its maximumGracefulShutdownDuration. Unit i writes "<directory>/unit-i"
// as "partial", then "complete" after <unit-ms> milliseconds, or "saved" when
// cancelled. Prints "ready" once every unit started and the group traps its signals; after the group returns, writes
// "<directory>/events" and "<directory>/manifest", prints the report to standard error
// unless the work completed, and exits with the status the report suggests.
#if ServiceLifecycle
    import Backgroundable
    import Logging
    import ServiceLifecycle
    import Synchronization
    import UnixSignals

    #if canImport(Glibc)
        import Glibc
    #elseif canImport(Darwin)
        import Darwin
    #endif

    func say(_ line: String, to descriptor: Int32 = 1) {
        var bytes = Array((line + "\n").utf8)
        _ = bytes.withUnsafeMutableBytes { write(descriptor, $0.baseAddress, $0.count) }
    }

    func writeFile(_ path: String, _ contents: String) {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        guard descriptor >= 0 else { return say("cannot open \(path)", to: 2) }
        var bytes = Array(contents.utf8)
        _ = bytes.withUnsafeMutableBytes { write(descriptor, $0.baseAddress, $0.count) }
        close(descriptor)
    }

    let arguments = CommandLine.arguments
    guard arguments.count == 5, let units = Int(arguments[2]), let unitMilliseconds = Int(arguments[3]),
        let graceMilliseconds = Int(arguments[4])
    else {
        say("usage: service-lifecycle-fixture <directory> <units> <unit-ms> <grace-ms>", to: 2)
        exit(64)
    }
    let directory = arguments[1]

    let queue = BackgroundQueue(name: "fixture")
    let events = queue.events
    let recorder = Task {
        var lines: [String] = []
        var ended = 0
        guard units > 0 else { return lines }
        for await event in events {
            lines.append("\(event)")
            if case .ended = event { ended += 1 }
            if case .idle = event, ended == units { break }
        }
        return lines
    }

    // "ready" is printed by a service of the group, once every unit started: by then the
    // group traps its signals (it does before it starts its services).
    let (allStarted, startedContinuation) = AsyncStream.makeStream(of: Void.self)
    struct ReadyService: Service {
        let allStarted: AsyncStream<Void>

        func run() async {
            for await _ in allStarted { break }
            say("ready")
            try? await gracefulShutdown()
        }
    }

    let started = Atomic<Int>(0)
    for index in 0..<units {
        let path = "\(directory)/unit-\(index)"
        queue.addTask(name: "unit-\(index)") {
            writeFile(path, "partial")
            if started.add(1, ordering: .acquiringAndReleasing).newValue == units {
                startedContinuation.yield()
            }
            do {
                try await Task.sleep(for: .milliseconds(unitMilliseconds))
                writeFile(path, "complete")
            } catch {
                writeFile(path, "saved")
            }
        }
    }
    if units == 0 { startedContinuation.yield() }

    let report = Mutex<ShutdownReport?>(nil)
    var configuration = ServiceGroupConfiguration(
        services: [
            BackgroundQueueService(queue) { finished in report.withLock { $0 = finished } },
            ReadyService(allStarted: allStarted),
        ],
        gracefulShutdownSignals: [.sigterm],
        cancellationSignals: [.sigint],
        logger: Logger(label: "service-lifecycle-fixture"))
    configuration.maximumGracefulShutdownDuration = .milliseconds(graceMilliseconds)
    try await ServiceGroup(configuration: configuration).run()

    let ending = report.withLock { $0 }
    writeFile("\(directory)/events", (await recorder.value).joined(separator: "\n"))
    writeFile("\(directory)/manifest", ending.map { "\($0.ending)" } ?? "no report")
    if let ending, !ending.isComplete { say(ending.description, to: 2) }
    exit(ending?.exitStatus ?? 70)
#else
    print("service-lifecycle-fixture needs the ServiceLifecycle trait")
#endif
