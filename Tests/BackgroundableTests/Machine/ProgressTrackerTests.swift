import Testing

@testable import Backgroundable

@Suite("Machine: progress")
struct ProgressTrackerTests {
    @Test func changesArePostedOnceUntilTakenAndOnlyWhileWatched() {
        var progress = ProgressTracker(sampleInterval: 10)
        #expect(progress.changed() == false)
        progress.watch(names: false)
        #expect(progress.changed() == true)
        #expect(progress.changed() == false)
        progress.deliveriesTaken()
        #expect(progress.changed() == true)
        progress.unwatch(names: false)
        progress.deliveriesTaken()
        #expect(progress.changed() == false)
    }

    @Test func samplesAreDueOneIntervalApartWhileAMemberExecutes() {
        var progress = ProgressTracker(sampleInterval: 10)
        #expect(!progress.needsSample(executing: 1))
        progress.watch(names: true)
        #expect(!progress.needsSample(executing: 0))
        #expect(progress.needsSample(executing: 1))
        #expect(progress.scheduleSample(now: 100) == 110)
        #expect(!progress.needsSample(executing: 1))
        #expect(progress.takeSample(dueBy: 109) == false)
        #expect(progress.takeSample(dueBy: 110) == true)
        #expect(progress.nextSample == nil)
        // Saturates instead of overflowing.
        #expect(progress.scheduleSample(now: .max - 1) == .max)
        // The last watcher leaving cancels the next sample.
        progress.unwatch(names: true)
        #expect(progress.nextSample == nil)
    }

    @Test func sampledValuesReplaceEachOtherAndLeaveWithTheirMember() {
        var progress = ProgressTracker(sampleInterval: 10)
        progress.record(0.5, for: 1)
        progress.record(0.25, for: 2)
        progress.record(0.75, for: 1)
        #expect(progress.sampledSum == 1.0)
        progress.record(0, for: 2)
        #expect(progress.sampledSum == 0.75)
        progress.forget(1)
        #expect(progress.sampledSum == 0)
    }

    @Test func theCountsStartOverWithEachBusyPeriod() {
        var progress = ProgressTracker(sampleInterval: 10)
        progress.periodBegan()
        progress.memberAdmitted()
        progress.memberAdmitted()
        progress.memberEnded()
        #expect(progress.admitted == 2 && progress.ended == 1)
        #expect(progress.memberStarted() == false)  // nobody watches
        progress.removeAll()
        // Idle: the last period's counts stay for readers.
        #expect(progress.admitted == 2)
        progress.periodBegan()
        #expect(progress.admitted == 0 && progress.ended == 0)
    }
}
