// A child process for the graceful-shutdown tests (GracefulShutdownTests.swift): a
// small server written the way the *Running in a server* article shows.
//
//     graceful-shutdown-fixture <directory> <units> <unit-ms> <grace-ms>
//
// Installs `GracefulShutdown`, then starts the work (ShutdownFixtureKit). Prints "ready"
// once every unit has started, waits for the shutdown request (SIGTERM / SIGINT),
// prints "draining", drains the queue, and then — `main`'s own code, after the wait —
// writes the events and the manifest and exits with the status the report suggests.
import Backgroundable
import ShutdownFixtureKit

let arguments = FixtureArguments(program: "graceful-shutdown-fixture")
let shutdown = GracefulShutdown.install(gracePeriod: .milliseconds(arguments.graceMilliseconds))
// The default provider is now the graceful-shutdown one.
let queue = BackgroundQueue(name: "fixture")
guard queue.backgroundTaskProvider is GracefulShutdown else {
    say("the queue did not get the installed provider", to: 2)
    finish(arguments, events: [], report: nil)
}
let events = startWork(on: queue, arguments) { say("ready") }

await shutdown.waitForShutdownRequest()
say("draining")
let report = await shutdown.drain(queue)
finish(arguments, events: await events.value, report: report)
