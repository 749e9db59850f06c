#if Macros
    import Backgroundable
    import BackgroundableTesting
    import Synchronization
    import Testing

    /// Runtime behaviour of the expanded macros, observed through a
    /// `RecordingBackgroundTaskProvider` bound with `DefaultBackgroundTaskProvider.withProvider`.
    @Suite("Macro runtime")
    struct MacroRuntimeTests {
        struct Failure: Error {}

        @BackgroundableProperty
        @BackgroundableProperty(name: "uploadAssertion")
        final class Uploader: Sendable {
            let expirations = Atomic<Int>(0)
            /// Yields once per expiration call (which runs in a task of its own).
            let expired = AsyncStream<Void>.makeStream()
            let seenHeld = Mutex<[Bool]>([])

            @Backgroundable
            func plain() -> Int { 42 }

            @Backgroundable(withName: "Upload", expirationFunc: "saveProgress", propertyName: "uploadAssertion")
            func upload(failing: Bool) async throws -> String {
                seenHeld.withLock { $0.append(uploadAssertion.isHeld) }
                await Task.yield()
                if failing { throw Failure() }
                return "done"
            }

            @Backgroundable(propertyName: "backgroundTimeAssertion")
            func waitForCancellation() async throws {
                // Suspends, without sleeping, until the calling task is cancelled.
                let (wake, wakeUp) = AsyncStream<Never>.makeStream()
                await withTaskCancellationHandler {
                    for await _ in wake {}
                } onCancel: {
                    wakeUp.finish()
                }
                try Task.checkCancellation()
            }

            @Backgroundable(expirationFunc: "saveProgress")
            func expiring(_ provider: RecordingBackgroundTaskProvider) {
                provider.expireAll()
            }

            func saveProgress() {
                expirations.add(1, ordering: .relaxed)
                expired.continuation.yield()
            }
        }

        final class Count: Sendable {
            let value = Atomic<Int>(0)
            let expired = AsyncStream<Void>.makeStream()
        }

        struct Counter: Sendable {
            let expirations = Count()

            @Backgroundable(expirationFunc: "expired")
            func work(_ provider: RecordingBackgroundTaskProvider) throws -> Int {
                provider.expireAll()
                throw Failure()
            }

            @Backgroundable(withName: "Counter.static")
            static func staticWork() -> Int { 7 }

            func expired() {
                expirations.value.add(1, ordering: .relaxed)
                expirations.expired.continuation.yield()
            }
        }

        actor Store {
            private(set) var expirations = 0
            private var expiredContinuation: CheckedContinuation<Void, Never>?

            @Backgroundable(expirationFunc: "expired")
            func save(_ provider: RecordingBackgroundTaskProvider) async {
                provider.expireAll()
                await withCheckedContinuation { expiredContinuation = $0 }
            }

            func expired() {
                expirations += 1
                expiredContinuation?.resume()  // resumed once: `expired` runs once, after `save` suspended
                expiredContinuation = nil
            }
        }

        @MainActor
        final class ViewModel {
            var expirations = 0

            @Backgroundable(expirationFunc: "expired")
            func refresh(_ provider: RecordingBackgroundTaskProvider) {
                provider.expireAll()
            }

            func expired() {
                expirations += 1
            }
        }

        private func names(_ provider: RecordingBackgroundTaskProvider) -> [String] {
            provider.log.compactMap {
                if case .began(_, let name) = $0 { name } else { nil }
            }
        }

        private func expectBalanced(_ provider: RecordingBackgroundTaskProvider, count: Int) {
            #expect(provider.activeIdentifiers.isEmpty)
            #expect(provider.unbalancedEndCount == 0)
            #expect(provider.log.count == 2 * count)
        }

        @Test func syncMethodBeginsAndEnds() {
            let provider = RecordingBackgroundTaskProvider()
            let value = DefaultBackgroundTaskProvider.withProvider(provider) { Uploader().plain() }
            #expect(value == 42)
            #expect(names(provider) == ["MacroRuntimeTests.Uploader.plain"])
            expectBalanced(provider, count: 1)
        }

        @Test func asyncMethodEndsOnReturnAndOnThrow() async throws {
            let provider = RecordingBackgroundTaskProvider()
            let uploader = Uploader()
            let value = try await DefaultBackgroundTaskProvider.withProvider(provider) {
                try await uploader.upload(failing: false)
            }
            #expect(value == "done")
            await DefaultBackgroundTaskProvider.withProvider(provider) {
                await #expect(throws: Failure.self) { try await uploader.upload(failing: true) }
            }
            #expect(names(provider) == ["Upload", "Upload"])
            #expect(uploader.seenHeld.withLock { $0 } == [true, true])
            #expect(uploader.uploadAssertion.current == nil)
            expectBalanced(provider, count: 2)
        }

        @Test func cancellationEndsTheAssertion() async {
            let provider = RecordingBackgroundTaskProvider()
            let uploader = Uploader()
            let task = DefaultBackgroundTaskProvider.withProvider(provider) {
                Task { try await uploader.waitForCancellation() }
            }
            while provider.activeIdentifiers.isEmpty { await Task.yield() }
            #expect(uploader.backgroundTimeAssertion.isHeld)
            task.cancel()
            await #expect(throws: CancellationError.self) { try await task.value }
            #expect(!uploader.backgroundTimeAssertion.isHeld)
            expectBalanced(provider, count: 1)
        }

        @Test func propertyLetsOtherCodeEndTheAssertion() async throws {
            let provider = RecordingBackgroundTaskProvider()
            let uploader = Uploader()
            let task = DefaultBackgroundTaskProvider.withProvider(provider) {
                Task { try await uploader.waitForCancellation() }
            }
            while provider.activeIdentifiers.isEmpty { await Task.yield() }
            uploader.backgroundTimeAssertion.end()
            #expect(provider.activeIdentifiers.isEmpty)
            task.cancel()
            _ = await task.result
            expectBalanced(provider, count: 1)
        }

        @Test func classExpirationCallsTheMethod() async {
            let provider = RecordingBackgroundTaskProvider()
            let uploader = Uploader()
            DefaultBackgroundTaskProvider.withProvider(provider) { uploader.expiring(provider) }
            // In a task on the method's isolation (here: none), right after the expiration.
            for await _ in uploader.expired.stream { break }
            #expect(uploader.expirations.load(ordering: .relaxed) == 1)
            expectBalanced(provider, count: 1)
        }

        @Test func structExpirationAndThrow() async {
            let provider = RecordingBackgroundTaskProvider()
            let counter = Counter()
            #expect(throws: Failure.self) {
                try DefaultBackgroundTaskProvider.withProvider(provider) { try counter.work(provider) }
            }
            for await _ in counter.expirations.expired.stream { break }
            #expect(counter.expirations.value.load(ordering: .relaxed) == 1)
            expectBalanced(provider, count: 1)
        }

        @Test func staticMethod() {
            let provider = RecordingBackgroundTaskProvider()
            #expect(DefaultBackgroundTaskProvider.withProvider(provider) { Counter.staticWork() } == 7)
            #expect(names(provider) == ["Counter.static"])
            expectBalanced(provider, count: 1)
        }

        @Test func actorExpirationRunsOnTheActor() async {
            let provider = RecordingBackgroundTaskProvider()
            let store = Store()
            await DefaultBackgroundTaskProvider.withProvider(provider) { await store.save(provider) }
            #expect(await store.expirations == 1)
            #expect(names(provider) == ["MacroRuntimeTests.Store.save"])
            expectBalanced(provider, count: 1)
        }

        @Test @MainActor func mainActorExpirationRunsRightAwayOnTheMainThread() {
            let provider = RecordingBackgroundTaskProvider()
            let model = ViewModel()
            DefaultBackgroundTaskProvider.withProvider(provider) { model.refresh(provider) }
            #expect(model.expirations == 1)
            expectBalanced(provider, count: 1)
        }

        @Test func freeFunction() async {
            let provider = RecordingBackgroundTaskProvider()
            await DefaultBackgroundTaskProvider.withProvider(provider) { await freeWork() }
            #expect(names(provider) == ["freeWork"])
            expectBalanced(provider, count: 1)
        }
    }

    @Backgroundable(expirationFunc: "freeExpired")
    func freeWork() async {
        await Task.yield()
    }

    func freeExpired() {}
#endif
