import BackgroundableTesting
import Testing

@testable import Backgroundable

@Suite struct SmokeTests {
    @Test func callbackAndOperationUnitsFinish() async throws {
        let (queue, provider) = makeQueue()
        let unit = queue.add(.init(timeout: nil)) { task in task.finish() }
        let handle = queue.add { 41 + 1 }
        #expect(await unit.outcome.kind == .finished)
        #expect(try await handle.value == 42)
        await queue.waitUntilIdle()
        #expect(provider.activeIdentifiers.isEmpty)
        #expect(provider.log.count == 2 || provider.log.count == 4)
    }
}
