import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Callback bodies that block their thread (a 1.x habit: a semaphore wait,
/// `Thread.sleep`) can take every thread of Swift's cooperative pool at their priority.
/// Timeouts still fire — in the blocked queue and in every other queue — because each
/// queue's sleeper runs at `.high` priority (the documented limit: bodies that block the
/// `.high` threads too hold timeouts back).
///
/// The pool is blocked in a child process (`blocked-pool-fixture`): in this one, other
/// tests run in parallel, may hold pool threads of their own, and would stall while it
/// is blocked.
@Suite("A blocked cooperative pool")
struct BlockedPoolTests {
    /// Blocks every thread of the pool at the default priority with callback bodies of
    /// one queue; a unit with a 50 ms timeout on another queue, and the blocking units
    /// themselves, reach `.timedOut` while the bodies still block.
    @Test func timeoutsFireWhileBlockingBodiesHoldEveryDefaultPriorityThread() async throws {
        let priorities = [TaskPriority.medium].map { "\($0.rawValue)" }
        let (status, output) = try await runFixture("blocked-pool-fixture", arguments: priorities)
        #expect(status == 0, "\(output)")
        #expect(output.contains("other queue: timedOut"), "\(output)")
    }

    /// Runs the fixture to its end (killed after 60 s, so a hang fails the test with
    /// what it printed); its exit status and standard output.
    private func runFixture(_ name: String, arguments: [String]) async throws -> (Int32, String) {
        let process = Process()
        process.executableURL = try fixtureURL(name)
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        let terminated = Signal()
        process.terminationHandler = { _ in terminated.signal() }
        try process.run()
        await awaitTermination(of: process, terminated, killingAfter: .seconds(60))
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        return (process.terminationStatus, text)
    }
}
