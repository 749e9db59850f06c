/// The steps of a shutdown that every front end takes alike (``GracefulShutdown``, the
/// `ServiceLifecycle` trait's service): waiting for queues to be idle, listing what is
/// unfinished, and expiring the work that is still running.
enum QueueShutdown {
    /// Returns when every queue is idle at once and the bodies their ended units left
    /// running have returned (or the calling task is cancelled).
    static func waitUntilIdle(_ queues: [BackgroundQueue]) async {
        repeat {
            for queue in queues { await queue.waitUntilIdle() }
            await waitForLingeringBodies(of: queues)
        } while !Task.isCancelled && queues.contains(where: \.isBusy)
    }

    /// Returns when the bodies that still run although their units ended (cancelled or
    /// timed out, they ignore it) have returned, or when the calling task is cancelled.
    static func waitForLingeringBodies(of queues: [BackgroundQueue]) async {
        for queue in queues {
            for case let body as ReplacementGate in queue.core.lingeringBodies() {
                await body.waitCancellably()
                if Task.isCancelled { return }
            }
        }
    }

    /// `true` while a body of an ended unit of `queues` may still run.
    static func haveLingeringBodies(_ queues: [BackgroundQueue]) -> Bool {
        queues.contains { !$0.core.lingeringBodies().isEmpty }
    }

    /// The live units of `queues`, queue by queue, each with its state.
    static func unfinishedUnits(in queues: [BackgroundQueue]) -> [ShutdownReport.UnfinishedUnit] {
        liveUnits(in: queues).map(\.entry)
    }

    /// ``unfinishedUnits(in:)``, each entry with its unit.
    private static func liveUnits(
        in queues: [BackgroundQueue]
    ) -> [(unit: AsyncTask, entry: ShutdownReport.UnfinishedUnit)] {
        queues.flatMap { queue in
            // The places are read under the queue's lock, the units' phases after it.
            queue.core.read { $0.liveMembersAndPlaces() }.map { unit, place in
                let state = state(of: unit, at: place)
                return (unit, ShutdownReport.UnfinishedUnit(queue: queue.name, name: unit.name, state: state))
            }
        }
    }

    /// An executing unit is executing whatever its phase (a retrying one its queue started
    /// again is about to run); a unit its queue holds as waiting is retrying when it is
    /// between two attempts, else delayed or waiting as its place says.
    private static func state(
        of unit: AsyncTask, at place: QueueCore.Machine.Place
    ) -> ShutdownReport.UnfinishedUnit.State {
        switch place {
        case .executing, .external: return .executing
        case .ready, .blocked, .delayed, .blockedDelayed:
            if unit.isBetweenAttempts { return .retrying }
            return place.isDelayed ? .delayed : .waiting
        }
    }

    /// Names the unfinished work, runs `expire` (which makes each queue emit
    /// ``BackgroundQueue/Event/Kind/backgroundTimeExpiring`` and apply its expiration
    /// policy), then waits — at most `cancellationPeriod`, taken within zero...about 292
    /// years — for the bodies that were running to return (those of units that ended
    /// before too), and for the queues that are idle again to deliver their events. The
    /// waits run in a task of their own, so they take place even when the calling task is
    /// already cancelled (a service lifecycle cancels its services).
    ///
    /// - Returns: The unfinished units (``unfinishedUnits(in:)``) as they were before the
    ///   expiration, less those that finished after all (the expiration policy let them
    ///   run on, or they finished as it came).
    static func expire(
        _ queues: [BackgroundQueue], cancellationPeriod: Duration, expire: () -> Void
    ) async -> [ShutdownReport.UnfinishedUnit] {
        let unfinished = liveUnits(in: queues)
        let cancellationPeriod = cancellationPeriod.clampedToWait
        let bodies = queues.flatMap { queue in queue.core.read { $0.liveMembers() }.compactMap(\.runningTask) }
        expire()
        await Task.detached {
            let returned = Latch()
            let waiter = Task.detached {
                for body in bodies { await body.value }
                await waitForLingeringBodies(of: queues)
                returned.open()
            }
            _ = await firstToReturn([
                { await returned.wait() },
                { try? await Task.sleep(for: cancellationPeriod) },
            ])
            waiter.cancel()
            for queue in queues where !queue.isBusy { await queue.waitUntilIdle() }
        }.value
        return unfinished.filter { $0.unit.currentOutcome?.kind != .finished }.map(\.entry)
    }
}
