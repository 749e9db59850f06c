import Backgroundable
import BackgroundableTesting
import Observation
import Testing

// This file is an app module as Xcode 26 creates them: main-actor by default,
// `nonisolated` async functions run on their caller's actor, isolated conformances
// inferred. Nothing below is annotated beyond what the README shows.

/// A helper that must stay off the main actor: `@concurrent`.
@concurrent nonisolated func renderThumbnail(_ id: Int) async -> String {
    "thumbnail \(id)"
}

/// A view model: main-actor by default, the queue's delegate as it is.
final class FeedModel: BackgroundQueueDelegate {
    let queue = BackgroundQueue(name: "feed", maxConcurrentTasks: 2)
    var items: [String] = []
    var isLoading = false
    var transitions: [String] = []
    var timeouts = 0

    init() {
        queue.setDelegate(self)
    }

    func backgroundQueueWillStartTasks(_ queue: BackgroundQueue) {
        isLoading = true
        transitions.append("busy")
    }

    func backgroundQueueDidFinishTasks(_ queue: BackgroundQueue) {
        isLoading = false
        transitions.append("idle")
    }

    /// Callback style, touching main-actor state from a closure isolated to it.
    func refresh() -> AsyncTask {
        queue.add(.init(name: "refresh", timeout: nil, uniquenessPolicy: .drop)) { @MainActor task in
            self.items.append("refreshed")
            task.finish()
        }
    }

    /// Async style, the work off the main actor, the result back on it.
    func loadThumbnail(_ id: Int) async throws {
        let thumbnail = try await queue.run(.init(name: "thumbnail-\(id)")) { await renderThumbnail(id) }
        items.append(thumbnail)
    }

    /// A body isolated to the main actor.
    func count() async throws -> Int {
        try await queue.run { @MainActor in self.items.count }
    }

    /// `onTimeout` on the main actor.
    func slowCall(then timedOut: @escaping @MainActor () -> Void) {
        queue.add(
            .init(
                timeout: .milliseconds(5),
                onTimeout: { @MainActor _ in
                    self.timeouts += 1
                    timedOut()
                })
        ) { _ in }
    }

    /// Settings kept in one value, with a main-actor `onTimeout`, used by every entry point.
    let quick = AsyncTask.Options(name: "quick", timeout: .seconds(30), priority: .userInitiated)

    func withOptions() async throws -> Int {
        var expiring = quick
        expiring.timeout = .zero
        await withCheckedContinuation { continuation in
            expiring.onTimeout = { @MainActor _ in
                self.timeouts += 1
                continuation.resume()
            }
            queue.add(expiring) { @MainActor task in task.finish() }
        }
        let handle = queue.add(quick) { @MainActor in self.items.count }
        return try await queue.run(quick) { 1 } + handle.value
    }

    /// Errors matched like enum cases.
    func deduplicated() async -> String {
        queue.suspend()
        let first = queue.add(.init(name: "sync", uniquenessPolicy: .drop)) { 1 }
        let second = queue.add(.init(name: "sync", uniquenessPolicy: .drop)) { 2 }
        queue.resume()
        do {
            _ = try await first.value
            _ = try await second.value
            return "both ran"
        } catch AsyncTaskError.dropped {
            return "dropped"
        } catch is CancellationError {
            return "cancelled"
        } catch {
            return "other"
        }
    }
}

@Suite("An approachable-concurrency app module")
struct AppModuleTests {
    @Test func aViewModelUsesTheQueueAsTheReadmeShows() async throws {
        let model = FeedModel()
        _ = await model.refresh().outcome
        try await model.loadThumbnail(7)
        #expect(try await model.count() == 2)
        #expect(model.items == ["refreshed", "thumbnail 7"])
        #expect(await model.deduplicated() == "dropped")
        await withCheckedContinuation { continuation in
            model.slowCall { continuation.resume() }
        }
        #expect(model.timeouts == 1)
        #expect(try await model.withOptions() == 3)
        #expect(model.timeouts == 2)
        // The delegate's main-actor calls are posted before `waitUntilIdle` resumes this
        // (main-actor) test, and the main actor runs its jobs in order.
        await model.queue.waitUntilIdle()
        #expect(!model.isLoading)
        #expect(model.transitions.count.isMultiple(of: 2))
        #expect(model.transitions.first == "busy")
    }

    @Test func aViewHoldsTheQueuesActivityAndBodiesReportProgress() async throws {
        let queue = BackgroundQueue(name: "import")
        let activity = BackgroundQueueActivity(queue)
        let count = try await queue.run(.init(name: "import")) {
            let unit = AsyncTask.current
            for index in 0..<10 {
                unit?.reportProgress(completed: index + 1, of: 10)
            }
            return 10
        }
        #expect(count == 10)
        // The model's updates are applied on the main actor, where this test runs: no
        // change can slip between the check and the observation.
        while activity.isBusy || activity.progress.completedUnitCount != 1 {
            await withCheckedContinuation { continuation in
                withObservationTracking {
                    _ = (activity.isBusy, activity.progress)
                } onChange: {
                    continuation.resume()
                }
            }
        }
        #expect(!activity.isBusy)
        #expect(activity.progress.fractionCompleted == 1)
    }

    @Test func anUnannotatedBodyRunsOffTheMainActor() async throws {
        let queue = BackgroundQueue()
        let offMain = try await queue.run { #isolation == nil }
        #expect(offMain)
        let inTheBackgroundRan = await withCheckedContinuation { continuation in
            inTheBackground { continuation.resume(returning: #isolation == nil) }
        }
        #expect(inTheBackgroundRan)
    }
}

#if Macros
    // The macros in a main-actor-by-default module: a class and a struct (main-actor by
    // default), an actor, and a type that opts out with `nonisolated`.

    @BackgroundableProperty
    final class PhotoUploader {
        var saved = 0
        var savedHere: (() -> Void)?

        @Backgroundable(expirationFunc: "saveProgress")
        func upload(_ provider: RecordingBackgroundTaskProvider) {
            provider.expireAll()
        }

        func saveProgress() {
            saved += 1  // main-actor state: the expiration runs on the main actor
            savedHere?()
        }
    }

    struct Exporter {
        @Backgroundable(withName: "Export")
        func export() -> Int { 3 }
    }

    actor Archive {
        var expirations = 0

        @Backgroundable(expirationFunc: "expired")
        func store() -> Int { expirations }

        func expired() { expirations += 1 }
    }

    nonisolated final class Checksummer: Sendable {
        @Backgroundable(expirationFunc: "expired")
        func checksum() -> Int { 11 }

        func expired() {}
    }

    @Suite("Macros in an approachable-concurrency module")
    struct ApproachableMacroTests {
        @Test func everyKindOfTypeExpandsAndRuns() async {
            let provider = RecordingBackgroundTaskProvider()
            let uploader = PhotoUploader()
            await withCheckedContinuation { continuation in
                uploader.savedHere = { continuation.resume() }
                DefaultBackgroundTaskProvider.withProvider(provider) { uploader.upload(provider) }
            }
            #expect(uploader.saved == 1)
            let exported = DefaultBackgroundTaskProvider.withProvider(provider) { Exporter().export() }
            #expect(exported == 3)
            let stored = await DefaultBackgroundTaskProvider.withProvider(provider) { await Archive().store() }
            #expect(stored == 0)
            let sum = DefaultBackgroundTaskProvider.withProvider(provider) { Checksummer().checksum() }
            #expect(sum == 11)
            #expect(provider.activeIdentifiers.isEmpty)
            #expect(provider.unbalancedEndCount == 0)
        }
    }
#endif
