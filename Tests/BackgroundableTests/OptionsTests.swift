import Foundation
import Testing

@testable import Backgroundable

/// `AsyncTask.Options`: one value carries every setting, to every entry point that
/// creates a unit, with the same defaults as the parameters of the same names.
@Suite("Options")
struct OptionsTests {
    private let shared = AsyncTask.Options(
        name: "upload", timeout: .seconds(30), priority: .utility, uniquenessPolicy: .replace)

    private func expectShared(_ unit: AsyncTask, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(unit.name == "upload", sourceLocation: sourceLocation)
        #expect(unit.timeout == .seconds(30), sourceLocation: sourceLocation)
        #expect(unit.priority == .utility, sourceLocation: sourceLocation)
        #expect(unit.uniquenessPolicy == .replace, sourceLocation: sourceLocation)
    }

    @Test func everyEntryPointTakesTheSameOptions() async throws {
        let queue = BackgroundQueue(backgroundTaskProvider: NoopBackgroundTaskProvider())
        queue.suspend()
        expectShared(AsyncTask(shared) { $0.finish() })
        expectShared(AsyncTaskHandle(shared) { 1 }.task)
        expectShared(AsyncTask(operation: BlockOperation {}, options: shared))
        expectShared(queue.add(shared) { $0.finish() })
        expectShared(queue.add(shared) { 1 }.task)
        expectShared(queue.add(BlockOperation {}, options: shared))
        queue.cancelAll()
        queue.resume()
        #expect(try await queue.run(shared) { 42 } == 42)
    }

    @Test func anUnsetTimeoutIsTheStylesDefault() {
        let options = AsyncTask.Options(name: "styled")
        #expect(options.usesStyleTimeout && options.timeout == nil)
        #expect(AsyncTask(options) { $0.finish() }.timeout == AsyncTask.defaultTimeout)
        #expect(AsyncTaskHandle(options) { 1 }.task.timeout == nil)
        #expect(AsyncTask(operation: BlockOperation {}, options: options).timeout == AsyncTask.defaultTimeout)
    }

    @Test func aTimeoutSetToNilMeansNoneForEveryStyle() {
        var options = AsyncTask.Options()
        options.timeout = nil
        #expect(!options.usesStyleTimeout)
        #expect(AsyncTask(options) { $0.finish() }.timeout == nil)
        #expect(AsyncTask(AsyncTask.Options(timeout: nil)) { $0.finish() }.timeout == nil)
        options.timeout = .seconds(2)
        #expect(AsyncTaskHandle(options) { 1 }.task.timeout == .seconds(2))
    }

    @Test func anOperationsNameIsTheUnitsUnlessTheOptionsNameIt() {
        let operation = BlockOperation {}
        operation.name = "legacy"
        #expect(AsyncTask(operation: operation, options: .init()).name == "legacy")
        let other = BlockOperation {}
        other.name = "legacy"
        #expect(AsyncTask(operation: other, options: .init(name: "renamed")).name == "renamed")
    }

    @Test func onTimeoutTravelsWithTheOptions() async {
        let queue = BackgroundQueue(backgroundTaskProvider: NoopBackgroundTaskProvider())
        let (fired, firing) = AsyncStream.makeStream(of: String?.self)
        let options = AsyncTask.Options(timeout: .zero, onTimeout: { task in firing.yield(task.name) })
        var named = options
        named.name = "late"
        let unit = queue.add(named) { $0.finish() }
        #expect(await unit.outcome.kind == .timedOut)
        var iterator = fired.makeAsyncIterator()
        #expect(await iterator.next() == "late")
    }
}
