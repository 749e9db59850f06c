public import Backgroundable

/// Waiting for a queue's events in a test: make the iterator before the work you
/// watch (a stream sees events from its creation on), then wait for what you need.
///
/// ```swift
/// var events = queue.events.makeAsyncIterator()
/// let unit = queue.add(timeout: .seconds(5)) { _ in }
/// _ = await events.next(where: { if case .started = $0 { true } else { false } })
/// clock.advance(by: .seconds(5))
/// ```
extension AsyncStream.Iterator where Element == BackgroundQueue.Event {
    /// Skips events until one satisfies `predicate`, and returns it.
    ///
    /// - Returns: The first matching event; `nil` if the stream finished first (its
    ///   queue was deinitialised and went idle) or the calling task was cancelled.
    public mutating func next(
        where predicate: (BackgroundQueue.Event) -> Bool,
        isolation actor: isolated (any Actor)? = #isolation
    ) async -> BackgroundQueue.Event? {
        while let event = await next(isolation: actor) {
            if predicate(event) { return event }
        }
        return nil
    }

    /// Collects events up to and including the first that satisfies `predicate` — for
    /// example one busy period, through its `idle` event.
    ///
    /// - Returns: The events in the order the queue reported them; they end early,
    ///   without a match, if the stream finished or the calling task was cancelled.
    public mutating func collect(
        through predicate: (BackgroundQueue.Event) -> Bool,
        isolation actor: isolated (any Actor)? = #isolation
    ) async -> [BackgroundQueue.Event] {
        var events: [BackgroundQueue.Event] = []
        while let event = await next(isolation: actor) {
            events.append(event)
            if predicate(event) { break }
        }
        return events
    }
}
