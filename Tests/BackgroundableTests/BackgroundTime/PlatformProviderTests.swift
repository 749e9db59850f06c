import BackgroundableTesting
import Dispatch
import Synchronization
import Testing

@testable import Backgroundable

/// The platform-neutral logic behind the Apple-only providers: the main-thread hop
/// of `UIApplicationBackgroundTaskProvider` and the whole of
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

    @Test func mainThreadRunHopsToTheMainActorAndBack() async {
        let (wasMain, onMain) = await Task.detached {
            (MainThread.isCurrent, MainThread.run { MainThread.isCurrent })
        }.value
        #expect(!wasMain)
        #expect(onMain)
    }

    @Test @MainActor func mainThreadRunRunsInPlaceOnTheMainThread() {
        #expect(MainThread.isCurrent)
        #expect(MainThread.run { 42 } == 42)
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
