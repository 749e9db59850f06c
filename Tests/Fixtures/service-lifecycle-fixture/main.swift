// A child process for the ServiceLifecycle tests (ServiceLifecycleTests.swift): the
// graceful-shutdown fixture's server, run by a real `ServiceGroup` that owns the
// signals (the `ServiceLifecycle` trait).
//
//     service-lifecycle-fixture <directory> <units> <unit-ms> <grace-ms>
//
// SIGTERM is the group's graceful-shutdown signal, SIGINT its cancellation signal, and
// <grace-ms> its maximumGracefulShutdownDuration. Prints "ready" once every unit
// started and the group traps its signals; after the group returns, writes the events
// and the manifest and exits with the status the report suggests.
#if ServiceLifecycle
    import Backgroundable
    import Logging
    import ServiceLifecycle
    import ShutdownFixtureKit
    import Synchronization
    import UnixSignals

    /// Prints "ready" once every unit started: it runs in the group, which traps its
    /// signals before it starts its services.
    struct ReadyService: Service {
        let allStarted: AsyncStream<Void>

        func run() async {
            for await _ in allStarted { break }
            say("ready")
            try? await gracefulShutdown()
        }
    }

    let arguments = FixtureArguments(program: "service-lifecycle-fixture")
    let queue = BackgroundQueue(name: "fixture")
    let (allStarted, started) = AsyncStream.makeStream(of: Void.self)
    let events = startWork(on: queue, arguments) { started.yield() }

    let report = Mutex<ShutdownReport?>(nil)
    var configuration = ServiceGroupConfiguration(
        services: [
            BackgroundQueueService(queue) { finished in report.withLock { $0 = finished } },
            ReadyService(allStarted: allStarted),
        ],
        gracefulShutdownSignals: [.sigterm],
        cancellationSignals: [.sigint],
        logger: Logger(label: "service-lifecycle-fixture"))
    configuration.maximumGracefulShutdownDuration = .milliseconds(arguments.graceMilliseconds)
    try await ServiceGroup(configuration: configuration).run()
    finish(arguments, events: await events.value, report: report.withLock { $0 })
#else
    print("service-lifecycle-fixture needs the ServiceLifecycle trait")
#endif
