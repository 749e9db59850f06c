/// The steps of a shutdown that every front end takes alike (``GracefulShutdown``, the
/// `ServiceLifecycle` trait's service): waiting for queues to be idle, naming what is
/// unfinished, and expiring the work that is still running.
enum QueueShutdown {
    /// Returns when every queue is idle at once (or the calling task is cancelled).
    static func waitUntilIdle(_ queues: [BackgroundQueue]) async {
        repeat {
            for queue in queues { await queue.waitUntilIdle() }
        } while !Task.isCancelled && queues.contains(where: \.isBusy)
    }

    /// `queue "name": ["unit", <unnamed>]` for each queue with live units.
    static func unfinishedWork(in queues: [BackgroundQueue]) -> [String] {
        queues.compactMap { queue in
            let units = queue.core.read { $0.liveMembers() }
            guard !units.isEmpty else { return nil }
            let names = units.map { $0.name.map { "\"\($0)\"" } ?? "<unnamed>" }
            return "queue \"\(queue.name)\": [\(names.joined(separator: ", "))]"
        }
    }

    /// Names the unfinished work, runs `expire` (which makes each queue emit
    /// ``BackgroundQueue/Event/Kind/backgroundTimeExpiring`` and apply its expiration
    /// policy), then waits — at most `cancellationPeriod`, taken within zero...about 292
    /// years — for the bodies that were running to return, and for the queues that are
    /// idle again to deliver their events. The waits run in a task of their own, so they
    /// take place even when the calling task is already cancelled (a service lifecycle
    /// cancels its services).
    ///
    /// - Returns: The unfinished work, as ``unfinishedWork(in:)`` names it.
    static func expire(
        _ queues: [BackgroundQueue], cancellationPeriod: Duration, expire: () -> Void
    ) async -> [String] {
        let unfinished = unfinishedWork(in: queues)
        let cancellationPeriod = cancellationPeriod.clampedToWait
        let bodies = queues.flatMap { queue in queue.core.read { $0.liveMembers() }.compactMap(\.runningTask) }
        expire()
        await Task.detached {
            let returned = Latch()
            let waiter = Task.detached {
                for body in bodies { await body.value }
                returned.open()
            }
            _ = await firstToReturn([
                { await returned.wait() },
                { try? await Task.sleep(for: cancellationPeriod) },
            ])
            waiter.cancel()
            for queue in queues where !queue.isBusy { await queue.waitUntilIdle() }
        }.value
        return unfinished
    }
}
