/// The coordinator's timed events: the sleeper's wake-ups (deadlines, start times,
/// progress samples), and the compaction of stale entries in the small machines.
extension QueueStateMachine {
    /// The sleeper of `generation` woke up: times out every executing member whose
    /// deadline passed, then lets every delayed member whose start time came go on
    /// (ready, or blocked while its predecessor is live), earliest first. Returns the
    /// next time to sleep until, or `nil` when this sleeper should stop (nothing is
    /// left, or a newer sleeper took over).
    mutating func deadlineReached(generation: UInt64, actions: inout Actions<some MayStart & MayEnd & MaySample>)
        -> Int64?
    {
        guard timers.isCurrent(generation) else { return nil }
        let now = now()
        while let entry = timers.popDeadline(dueBy: now) {
            if isExecuting(entry) {
                markEnding(entry.slot, .timedOut, actions: &actions)
            }
        }
        var becameReady = false
        while let entry = timers.popStartTime(dueBy: now) {
            guard isDelayed(entry) else { continue }
            timers.startTimeLeft()
            if records[Int(entry.slot)].place == .blockedDelayed {
                records[Int(entry.slot)].place = .blocked
            } else {
                makeReady(entry.slot)
                becameReady = true
            }
        }
        while let entry = timers.firstDeadline, !isExecuting(entry) {
            timers.removeFirstDeadline()
        }
        while let entry = timers.firstStartTime, !isDelayed(entry) {
            timers.removeFirstStartTime()
        }
        if becameReady { startReady(inline: 64, actions: &actions) }
        if progress.takeSample(dueBy: now) {
            actions.sampleProgress(executingMembers(limit: .max))
            scheduleProgressSample(actions: &actions)
        }
        return timers.sleep(generation, orUntil: progress.nextSample)
    }

    private func isExecuting(_ entry: DeadlineHeap.Entry) -> Bool {
        Self.isExecuting(entry, in: records)
    }

    private func isDelayed(_ entry: DeadlineHeap.Entry) -> Bool {
        Self.isDelayed(entry, in: records)
    }

    /// Drops stale queue and heap entries once they outnumber the live ones, so memory
    /// follows the live members, not the members ever added.
    mutating func compactIfMostlyStale() {
        if timers.deadlinesAreMostlyStale {
            let records = self.records
            timers.compactDeadlines { Self.isExecuting($0, in: records) }
        }
        if timers.startTimesAreMostlyStale {
            let records = self.records
            timers.compactStartTimes { Self.isDelayed($0, in: records) }
        }
        if ready.entryCount > 64 + 2 * ready.count {
            let records = self.records
            ready.compact { Self.isReady($0, rank: $1, in: records) }
        }
    }
}
