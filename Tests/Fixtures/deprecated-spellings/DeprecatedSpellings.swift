// Every deprecated spelling of the unit-making API, as a client wrote it: `.ci/deprecated-spellings.sh`
// type-checks this file, expects no error, and expects each call's warning to name its new
// spelling. (Not a target of the package: it is compiled on its own against the module.)
import Backgroundable
import Foundation

func deprecatedSpellings(_ queue: BackgroundQueue, _ operation: Operation) async throws {
    let options = AsyncTask.Options(name: "options")
    let onTimeout: @Sendable (AsyncTask) -> Void = { _ in }

    // BackgroundQueue: settings as labelled parameters.
    queue.add(name: "callback", timeout: .seconds(1), priority: .low, uniquenessPolicy: .drop, onTimeout: onTimeout) {
        task in task.finish()
    }
    queue.addTask(name: "body", timeout: nil, priority: .high, uniquenessPolicy: .join, onTimeout: onTimeout) { 1 }
    queue.addTask(options) { 2 }
    queue.addOperation(name: "body") { 3 }
    _ = try await queue.run(name: "run", uniquenessPolicy: .replace) { 4 }
    queue.add(operation, timeout: nil, priority: .utility, uniquenessPolicy: .ignore, onTimeout: onTimeout)

    // AsyncTask: settings as labelled parameters, and `operation` for an async body.
    _ = AsyncTask(name: "unit", timeout: nil) { task in task.finish() }
    _ = AsyncTask.operation(name: "handle", priority: .medium) { 5 }
    _ = AsyncTask.operation(options) { 6 }
    _ = AsyncTask(operation: BlockOperation {}, name: "adopted", timeout: .seconds(2))
}

// The new spellings, with every setting left out, where a deprecated overload could also
// take the call: they must resolve to the new ones (no warning).
func newSpellings(
    _ queue: BackgroundQueue, _ operation: Operation, _ work: @escaping @Sendable (AsyncTask) -> Void,
    _ body: @escaping @Sendable () async throws -> Int
) async throws {
    queue.add(work)
    queue.add(body)
    _ = try await queue.run(body)
    queue.add(operation)
    _ = AsyncTask(work)
    _ = AsyncTaskHandle(body)
    _ = AsyncTask(operation: operation)
}
