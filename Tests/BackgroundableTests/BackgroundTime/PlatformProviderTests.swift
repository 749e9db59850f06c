import BackgroundableTesting
import Dispatch
import Synchronization
import Testing

@testable import Backgroundable

/// The platform-neutral logic behind the Apple-only providers: the main-thread calls
/// of `UIApplicationBackgroundTaskProvider` (`MainThreadBackgroundTasks`) and the whole of
/// `ExpiringActivityBackgroundTaskProvider` (watchOS passes it `ProcessInfo`'s API).
///
/// Serialized: one test sets the process-wide default that another one reads.
@Suite("Platform provider logic", .serialized)
struct PlatformProviderTests {
    /// A stand-in for `ProcessInfo.performExpiringActivity`: runs each block on a
    /// global queue, like the real one, and lets the test expire the activities.
    final class FakeExpiringActivity: Sendable {
        private let blocks = Lock<[@Sendable (Bool) -> Void]>([])
        /// Signalled each time a granted block returns.
        let returned = DispatchSemaphore(value: 0)
        let grant: Bool

        init(grant: Bool = true) {
            self.grant = grant
        }

        func perform(_ reason: String, _ block: @escaping @Sendable (Bool) -> Void) {
            guard grant else {
                block(true)
                return
            }
            blocks.withLock { $0.append(block) }
            DispatchQueue.global().async {
                block(false)
                self.returned.signal()
            }
        }

        func expireAll() {
            for block in blocks.withLock({ $0 }) {
                block(true)
            }
        }
    }

    @Test func endingReleasesTheActivity() {
        let fake = FakeExpiringActivity()
        let provider = ExpiringActivityBackgroundTaskProvider(performExpiringActivity: fake.perform)
        let assertion = BackgroundTimeAssertion.begin(named: "work", provider: provider)
        #expect(provider.activeCount == 1)
        assertion.end()
        fake.returned.wait()  // the granted block returns once the assertion ended
        #expect(provider.activeCount == 0)
    }

    @Test func expirationEndsTheAssertionInsideTheHandler() {
        let fake = FakeExpiringActivity()
        let provider = ExpiringActivityBackgroundTaskProvider(performExpiringActivity: fake.perform)
        let expirations = Atomic<Int>(0)
        let assertion = BackgroundTimeAssertion.begin(named: "work", provider: provider) {
            expirations.add(1, ordering: .relaxed)
        }
        fake.expireAll()
        #expect(!assertion.isHeld)
        #expect(provider.activeCount == 0)
        #expect(expirations.load(ordering: .relaxed) == 1)
        fake.returned.wait()
        assertion.end()  // idempotent after expiry
        #expect(expirations.load(ordering: .relaxed) == 1)
    }

    @Test func noGrantedTimeExpiresAtOnce() {
        let provider = ExpiringActivityBackgroundTaskProvider(
            performExpiringActivity: FakeExpiringActivity(grant: false).perform
        )
        let expirations = Atomic<Int>(0)
        let assertion = BackgroundTimeAssertion.begin(named: "work", provider: provider) {
            expirations.add(1, ordering: .relaxed)
        }
        #expect(!assertion.isHeld)
        #expect(provider.activeCount == 0)
        #expect(expirations.load(ordering: .relaxed) == 1)
    }

    /// A stand-in for `UIApplication`'s two calls, made on the main thread: records them,
    /// grants identifiers 100, 101, ... (none with `grants == false`), and keeps the
    /// expiration handlers.
    final class FakeApplication: Sendable {
        enum Call: Equatable, Sendable {
            case begin(String)
            case end(Int)
        }
        private struct State {
            var calls: [Call] = []
            var handlers: [Int: @Sendable () -> Void] = [:]
            var next = 100
        }
        private let state = Lock(State())
        let grants: Bool
        var calls: [Call] { state.withLock { $0.calls } }

        init(grants: Bool = true) { self.grants = grants }

        func tasks() -> MainThreadBackgroundTasks {
            MainThreadBackgroundTasks(
                begin: { name, handler in
                    #expect(MainThread.isCurrent)
                    return self.state.withLock { state -> Int? in
                        state.calls.append(.begin(name))
                        guard self.grants else { return nil }
                        defer { state.next += 1 }
                        state.handlers[state.next] = handler
                        return state.next
                    }
                },
                end: { rawValue in
                    #expect(MainThread.isCurrent)
                    self.state.withLock { $0.calls.append(.end(rawValue)) }
                })
        }

        /// UIKit taking the time back: calls the handler of `rawValue` on the main thread.
        @MainActor func expire(_ rawValue: Int) {
            state.withLock { $0.handlers[rawValue] }?()
        }
    }

    /// Returns once the main queue ran everything enqueued on it before the call.
    private func mainQueueDrained() async {
        await withCheckedContinuation { continuation in DispatchQueue.main.async { continuation.resume() } }
    }

    @Test func offTheMainThreadBeginAndEndReturnAtOnceAndFollowOnTheMainQueue() async {
        let application = FakeApplication()
        let tasks = application.tasks()
        // The main thread is held until both calls returned: they never wait for it.
        let held = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        DispatchQueue.main.async {
            held.signal()
            release.wait()
        }
        await Task.detached { held.wait() }.value
        let identifier = await Task.detached {
            tasks.beginBackgroundTask(named: "sync") {}
        }.value
        #expect(identifier != nil)
        #expect(application.calls.isEmpty)
        release.signal()
        await mainQueueDrained()
        #expect(application.calls == [.begin("sync")])
        await Task.detached { tasks.endBackgroundTask(identifier!) }.value
        await mainQueueDrained()
        #expect(application.calls == [.begin("sync"), .end(100)])
        #expect(tasks.activeCount == 0)
    }

    @Test func anEndBeforeTheMainQueueBeganCancelsTheBegin() async {
        let application = FakeApplication()
        let tasks = application.tasks()
        let held = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        DispatchQueue.main.async {
            held.signal()
            release.wait()
        }
        await Task.detached {
            held.wait()
            let identifier = tasks.beginBackgroundTask(named: "short") {}
            tasks.endBackgroundTask(identifier!)
            tasks.endBackgroundTask(identifier!)  // a second end does nothing
        }.value
        release.signal()
        await mainQueueDrained()
        #expect(application.calls.isEmpty)
        #expect(tasks.activeCount == 0)
    }

    @Test @MainActor func onTheMainThreadTheCallsAreMadeRightHere() {
        let application = FakeApplication()
        let tasks = application.tasks()
        let identifier = tasks.beginBackgroundTask(named: "ui") {}
        #expect(application.calls == [.begin("ui")])
        tasks.endBackgroundTask(identifier!)
        #expect(application.calls == [.begin("ui"), .end(100)])
        // No time granted: `nil`, and nothing to end.
        let refusing = FakeApplication(grants: false)
        #expect(refusing.tasks().beginBackgroundTask(named: "late") {} == nil)
    }

    /// An assertion named `name`, begun off the main thread (as a queue's deliverer
    /// begins one) over a new ``FakeApplication`` that granted it as 100; its
    /// expirations are recorded.
    private func assertionBegunOffMain(
        named name: String
    ) async -> (FakeApplication, MainThreadBackgroundTasks, BackgroundTimeAssertion, expirations: Recorder<Int>) {
        let application = FakeApplication()
        let tasks = application.tasks()
        let expirations = Recorder<Int>()
        let provider = TasksProvider(tasks: tasks)
        let assertion = await Task.detached {
            BackgroundTimeAssertion.begin(named: name, provider: provider) { expirations.append(1) }
        }.value
        await mainQueueDrained()
        return (application, tasks, assertion, expirations)
    }

    @Test func theExpirationHandlerEndsTheTaskBeforeItReturns() async {
        let (application, tasks, assertion, expirations) = await assertionBegunOffMain(named: "upload")
        let endedInside = await MainActor.run {
            application.expire(100)
            return application.calls.contains(.end(100))
        }
        #expect(endedInside)
        #expect(!assertion.isHeld)
        #expect(expirations.count == 1)
        #expect(tasks.activeCount == 0)
        assertion.end()  // idempotent after expiry
        await mainQueueDrained()
        #expect(application.calls == [.begin("upload"), .end(100)])
    }

    @Test func anEndOnItsWayToTheMainQueueIsMadeInsideTheExpirationHandler() async {
        let (application, tasks, assertion, expirations) = await assertionBegunOffMain(named: "sync")
        let endedInside = await MainActor.run {
            // The queue goes idle on another thread while the main thread is busy: its
            // end is queued behind this block, and UIKit takes the time back first.
            let ended = DispatchSemaphore(value: 0)
            DispatchQueue.global().async {
                assertion.end()
                ended.signal()
            }
            ended.wait()
            #expect(application.calls == [.begin("sync")])
            application.expire(100)
            return application.calls == [.begin("sync"), .end(100)]
        }
        #expect(endedInside)
        #expect(expirations.count == 0)  // the end won
        await mainQueueDrained()
        #expect(application.calls == [.begin("sync"), .end(100)])  // once
        #expect(tasks.activeCount == 0)
    }

    /// A provider over ``MainThreadBackgroundTasks``, as the UIKit one is.
    struct TasksProvider: BackgroundTaskProvider {
        let tasks: MainThreadBackgroundTasks

        func beginBackgroundTask(
            named name: String, expirationHandler: @escaping @Sendable () -> Void
        ) -> BackgroundTaskIdentifier? {
            tasks.beginBackgroundTask(named: name, expirationHandler: expirationHandler)
        }

        func endBackgroundTask(_ identifier: BackgroundTaskIdentifier) {
            tasks.endBackgroundTask(identifier)
        }
    }

    @Test func mainThreadIsCurrentOnlyOnTheMainThread() async {
        #expect(await Task.detached { MainThread.isCurrent }.value == false)
        #expect(await MainActor.run { MainThread.isCurrent })
    }

    @Test func defaultProviderCanBeReplacedPerTask() async {
        let recording = RecordingBackgroundTaskProvider()
        let inside = DefaultBackgroundTaskProvider.withProvider(recording) {
            DefaultBackgroundTaskProvider.make()
        }
        let inChild = await DefaultBackgroundTaskProvider.withProvider(recording) {
            await Task { DefaultBackgroundTaskProvider.make() }.value
        }
        #expect(inside as? RecordingBackgroundTaskProvider === recording)
        #expect(inChild as? RecordingBackgroundTaskProvider === recording)
        #expect(DefaultBackgroundTaskProvider.make() is NoopBackgroundTaskProvider)
    }

    @Test func replacingTheProcessDefaultReleasesTheOldOneOutsideItsLock() {
        // The replaced provider's `deinit` is a caller's: this one reads the default.
        DefaultBackgroundTaskProvider.processDefault = ReadingTheDefaultOnRelease()
        DefaultBackgroundTaskProvider.processDefault = nil
        #expect(DefaultBackgroundTaskProvider.processDefault == nil)
    }
}

/// A provider whose `deinit` reads ``DefaultBackgroundTaskProvider/processDefault``.
private final class ReadingTheDefaultOnRelease: BackgroundTaskProvider {
    deinit { _ = DefaultBackgroundTaskProvider.processDefault }

    func beginBackgroundTask(named name: String, expirationHandler: @escaping @Sendable () -> Void)
        -> BackgroundTaskIdentifier?
    { nil }

    func endBackgroundTask(_ identifier: BackgroundTaskIdentifier) {}
}
