import Testing

@testable import Backgroundable

/// The unit's lifecycle as pure transitions, in the windows no scheduling test can hold
/// open: between a unit's start and the moment its wrapping `Task` takes the work.
@Suite("Unit state")
struct UnitStateTests {
    private let core = QueueCore(
        label: "unit-state", limit: .max, provider: NoopBackgroundTaskProvider(), expirationPolicy: .keepRunning)

    private func startedState(_ work: sending AsyncTask.Work = .callback { _ in }) -> UnitState {
        var state = UnitState(work: work)
        let claimed = state.claim(by: core)
        let attached = if case .attached = state.attach(.init(slot: 0, ticket: 1)) { true } else { false }
        let started = state.launch() != nil
        #expect(claimed && attached && started)
        return state
    }

    /// Issue: a unit its queue started but whose `Task` had not taken the work yet read
    /// `isExecuting == true`, and `finish()` then reported `finished` for work that never
    /// ran.
    @Test func aStartedUnitIsNotExecutingUntilItsTaskTakesTheWork() {
        var state = startedState()
        #expect(!state.isExecuting)
        #expect(!state.hasEnded)
        _ = state.takeWork(taskID: { 1 })
        #expect(state.isExecuting)
    }

    @Test func finishBeforeTheTaskTakesTheWorkCancels() {
        var state = startedState()
        let ending = state.finish()
        #expect(ending?.outcome.kind == .cancelled, "work that never ran is not finished")
        #expect(state.takeWork(taskID: { 1 }) == nil, "and never runs")
    }

    @Test func aUnitIsClaimedByOneQueueOnlyAndExternalWorkByNone() {
        var state = UnitState(work: .callback { _ in })
        let first = state.claim(by: core)
        let second = state.claim(by: core)
        #expect(first)
        #expect(!second, "a unit belongs to one queue")
        var external = UnitState(work: .external)
        let claimed = external.claim(by: core)
        let byOthers = external.startHere(byItsFrontEnd: false)
        let byItsFrontEnd = external.startHere(byItsFrontEnd: true)
        #expect(!claimed, "an AsyncOperation's unit runs only through its operation")
        #expect(byOthers == nil)
        #expect(byItsFrontEnd != nil)
        #expect(external.isExecuting)
    }

    @Test func aUnitThatEndedBeforeItsOwnerAttachedHandsBackItsOutcome() {
        var state = UnitState(work: .callback { _ in })
        _ = state.claim(by: core)
        let ending = state.end(.cancelled)
        #expect(ending?.handle == .unadmitted, "no queue admitted it yet")
        #expect(ending?.queue === core, "the queue that claimed it is told")
        let outcome: AsyncTask.Outcome? =
            if case .ended(let outcome) = state.attach(.init(slot: 0, ticket: 1)) { outcome } else { nil }
        #expect(outcome?.kind == .cancelled, "the queue that admitted it is told by the caller")
    }

    /// The adding thread does not retain the queue (see ``Owner``): the unit holds its
    /// queue from the moment the queue admitted it, and only from then.
    @Test func aUnitHoldsItsQueueOnceAdmitted() {
        weak var weakQueue: QueueCore?
        var state = UnitState(work: .callback { _ in })
        do {
            let queue = QueueCore(
                label: "owner", limit: .max, provider: NoopBackgroundTaskProvider(), expirationPolicy: .keepRunning)
            weakQueue = queue
            _ = state.claim(by: queue)
            let attached = if case .attached = state.attach(.init(slot: 0, ticket: 1)) { true } else { false }
            #expect(attached)
        }
        #expect(weakQueue != nil, "the admitted unit keeps its queue alive")
        let ending = state.end(.cancelled)
        #expect(ending?.queue === weakQueue)
        #expect(ending?.handle == .init(slot: 0, ticket: 1))
    }

    @Test func aUnitThatEndsBeforeItsTaskRunsNeverHandsOutItsWork() async {
        var state = startedState()
        let task = Task<Void, Never> {}
        let attached = state.attach(task)
        let ending = state.end(.cancelled)
        let work = state.takeWork(taskID: { 1 })
        let attachedAfterTheEnd = state.attach(task)
        #expect(attached)
        #expect(ending?.queue === core)
        #expect(ending?.task != nil, "the attached Task is cancelled with the unit")
        #expect(ending?.parkedBody == nil)
        #expect(work == nil)
        #expect(!attachedAfterTheEnd)
    }

    @Test func theTaskAttachedWhileLaunchingIsKeptWhenItTakesTheWork() {
        var state = startedState()
        let task = Task<Void, Never> {}
        let attached = state.attach(task)
        let attachedTwice = state.attach(task)
        let work = state.takeWork(taskID: { 1 })
        let workAgain = state.takeWork(taskID: { 1 })
        let ending = state.end(.timedOut)
        #expect(attached)
        #expect(!attachedTwice, "a unit has one wrapping Task")
        #expect(work != nil)
        #expect(workAgain == nil, "the work is handed out once")
        #expect(ending?.task != nil)
    }

    @Test func aTaskAttachedAfterItTookTheWorkIsKeptToo() {
        var state = startedState()
        let work = state.takeWork(taskID: { 1 })
        let attached = state.attach(Task<Void, Never> {})
        let ending = state.end(.cancelled)
        #expect(work != nil)
        #expect(attached)
        #expect(ending?.task != nil)
    }

    @Test func onlyACallbackBodyParksAndItsEndingResumesIt() async {
        var state = startedState()
        _ = state.takeWork(taskID: {
            Issue.record("a callback body needs no task id")
            return 1
        })
        await withContinuation { (continuation: Continuation<Void>) in
            let parked = state.park(continuation).parked
            let ending = state.end(.finished)
            #expect(parked)
            #expect(ending?.task == nil, "finishing does not cancel the Task")
            ending?.parkedBody?.resume()
        }
    }

    @Test func anAsyncBodyIsRecognisedByItsTaskOnlyWhileItRuns() async {
        var state = startedState(.operation { 0 })
        #expect(!state.isRunningBody(in: 7))
        _ = state.takeWork(taskID: { 7 })
        #expect(state.isRunningBody(in: 7))
        #expect(!state.isRunningBody(in: 9))
        await withContinuation { (continuation: Continuation<Void>) in
            let parked = state.park(continuation).parked
            #expect(!parked, "an async body never parks")
            continuation.resume()
        }
        _ = state.end(.finished)
        #expect(!state.isRunningBody(in: 7))
    }

    /// A body that fails its first attempt before its queue attached it: exactly one of
    /// the park and the attach tells the queue about the retry, whichever comes second.
    @Test func aRetryBeforeTheAttachIsToldByTheAttach() async {
        for attachFirst in [false, true] {
            var state = UnitState(work: .operation { 0 })
            _ = state.claim(by: core)
            _ = state.launch()
            _ = state.takeWork(taskID: { 3 })
            if attachFirst { _ = state.attach(.init(slot: 0, ticket: 1)) }
            let wait = state.beginRetry(after: TestError(code: 1), delay: .seconds(1))?.wait
            #expect(wait.map { if case .queue = $0 { true } else { false } } == true)
            await withContinuation { (continuation: Continuation<Void>) in
                let parked = state.park(untilNextAttempt: continuation)
                if attachFirst {
                    #expect(parked.tellsQueue, "attached before: the park tells the queue")
                } else {
                    #expect(!parked.tellsQueue)
                    let attached = state.attach(.init(slot: 0, ticket: 1))
                    #expect(attached.tellsQueue, "parked before: the attach tells the queue")
                }
                if case .nextAttempt(let parked)? = state.launch() { parked.resume() }
            }
            #expect(state.resumeAttempt() && state.attempts == 2)
        }
    }
}

extension UnitState.Parked {
    fileprivate var tellsQueue: Bool { if case .tellQueue = self { true } else { false } }
}

extension UnitState.Attached {
    fileprivate var tellsQueue: Bool { if case .retrying = self { true } else { false } }
}
