import Foundation
import Synchronization

/// What ``ContinuedProcessing`` needs of the system's continued-processing task
/// (`BGContinuedProcessingTask` on iOS 26; a fake in the tests).
protocol ContinuedProcessingTask: AnyObject, Sendable {
    /// The progress the system shows for the task.
    var progress: Progress { get }
    /// Changes what the system shows for the task.
    func updateTitle(_ title: String, subtitle: String)
    /// Called by the system, once, when the task's time is up or the person cancelled it.
    func setExpirationHandler(_ handler: @escaping @Sendable () -> Void)
    /// Tells the system the task is over.
    func setTaskCompleted(success: Bool)
}

/// The platform-neutral logic of the continued-processing provider
/// (`ContinuedProcessingBackgroundTaskProvider`, iOS 26), as a
/// ``BackgroundTaskProvider``: each assertion submits a request; the system task that
/// the request launches is bound to that assertion, shows the queue's progress, and
/// ends with it. The system's expiration (its time is up, or the person cancelled the
/// task) is the assertion's expiration, so the queue's expiration policy applies.
///
/// Every rule the iOS provider follows lives here, where the tests drive it with a fake
/// system task; the iOS file only submits requests and registers the launch handler.
final class ContinuedProcessing: BackgroundTaskProvider, QueueProgressFollower {
    /// Submits the request for the assertion whose task identifier is given; throws
    /// when the system refuses it (then the assertion is not granted).
    typealias Submit = @Sendable (_ taskIdentifier: String) throws -> Void

    private struct Assertion {
        let expirationHandler: @Sendable () -> Void
        var task: (any ContinuedProcessingTask)?
    }

    private struct State {
        var nextNumber = 1
        var assertions: [Int: Assertion] = [:]
        var latest = QueueProgress()
    }

    /// Task identifiers are this prefix, a dot, and the assertion's number.
    let identifierPrefix: String
    let title: String
    private let subtitle: (@Sendable (QueueProgress) -> String)?
    private let submit: Submit
    private let state = Lock(State())

    /// The system's progress counts this many units per queue unit, so the executing
    /// units' partial progress shows.
    static let unitsPerMember: Int64 = 100

    init(
        identifierPrefix: String, title: String, subtitle: (@Sendable (QueueProgress) -> String)?,
        submit: @escaping Submit
    ) {
        self.identifierPrefix = identifierPrefix
        self.title = title
        self.subtitle = subtitle
        self.submit = submit
    }

    func beginBackgroundTask(
        named name: String, expirationHandler: @escaping @Sendable () -> Void
    ) -> BackgroundTaskIdentifier? {
        let number = state.withLock { state in
            defer { state.nextNumber += 1 }
            state.assertions[state.nextNumber] = Assertion(expirationHandler: expirationHandler)
            return state.nextNumber
        }
        do {
            try submit("\(identifierPrefix).\(number)")
        } catch {
            state.withLock { _ = $0.assertions.removeValue(forKey: number) }
            return nil
        }
        return BackgroundTaskIdentifier(rawValue: number)
    }

    /// The queue is done: the task completes successfully, now if it launched, else as
    /// soon as it launches (its assertion is gone then).
    func endBackgroundTask(_ identifier: BackgroundTaskIdentifier) {
        // The whole assertion is handed out, so that its expiration handler (and what
        // that captured) is released after unlocking.
        let assertion = state.withLock { $0.assertions.removeValue(forKey: identifier.rawValue) }
        assertion?.task?.setTaskCompleted(success: true)
    }

    /// The system launched the task of `taskIdentifier`: it is bound to its assertion,
    /// shows the queue's progress from now on, and its expiration expires the assertion.
    /// A task whose assertion ended already (or that this provider does not know)
    /// completes at once.
    func launched(taskIdentifier: String, _ task: any ContinuedProcessingTask) {
        let number = taskIdentifier.split(separator: ".").last.flatMap { Int($0) }
        let latest = state.withLock { state -> QueueProgress? in
            guard let number, state.assertions[number] != nil else { return nil }
            state.assertions[number]?.task = task
            return state.latest
        }
        guard let number, var shown = latest else {
            task.setTaskCompleted(success: true)
            return
        }
        task.setExpirationHandler { [self] in expired(number) }
        show(shown, on: task)
        // A change delivered meanwhile may have been shown before this older value:
        // show the latest again until this call has shown the latest.
        while let newer = state.withLock({ $0.latest == shown ? nil : $0.latest }) {
            shown = newer
            show(newer, on: task)
        }
    }

    /// The system took the time back: the queue hears it (its expiration policy
    /// applies), then the task completes unsuccessfully.
    private func expired(_ number: Int) {
        guard let assertion = state.withLock({ $0.assertions.removeValue(forKey: number) }) else { return }
        assertion.expirationHandler()
        assertion.task?.setTaskCompleted(success: false)
    }

    func queueProgressChanged(_ progress: QueueProgress) {
        let tasks = state.withLock { state in
            state.latest = progress
            return state.assertions.values.compactMap(\.task)
        }
        for task in tasks { show(progress, on: task) }
    }

    private func show(_ progress: QueueProgress, on task: any ContinuedProcessingTask) {
        task.progress.follow(progress, unitsPerMember: Self.unitsPerMember)
        if let subtitle { task.updateTitle(title, subtitle: subtitle(progress)) }
    }
}

/// A ``BackgroundTaskProvider`` that shows its queue's progress: the queue watches its
/// own progress for it from its creation.
protocol QueueProgressFollower: Sendable {
    /// Called on the queue's delivering thread, outside its locks, one call at a time.
    func queueProgressChanged(_ progress: QueueProgress)
}
