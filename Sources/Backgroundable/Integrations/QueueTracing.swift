#if Tracing
    import Instrumentation
    import Synchronization
    import Tracing

    /// A span per unit through swift-distributed-tracing (the `Tracing` trait): named
    /// after the unit (`AsyncTask` when it has no name), from its add to its outcome,
    /// a child of the span that was active where the unit was added. It carries the
    /// attributes `backgroundable.queue`, `backgroundable.outcome` and
    /// `backgroundable.attempts`, an event `started` when each attempt starts, an event
    /// `retrying` (with the attempt, its error and the delay) between two attempts, an
    /// event `joined` for each caller that joined it (``UniquenessPolicy/join``: such a
    /// caller has no span of its own), an event `escalated` (with the priority) when a
    /// task of higher priority awaited it, and the error of a failed unit.
    ///
    /// A queue created while no tracer is bootstrapped (`InstrumentationSystem.bootstrap`)
    /// traces nothing and costs nothing.
    final class QueueTracing: QueueObserver {
        private let queue: String
        private let spans = Lock<[ObjectIdentifier: any Span]>([:])
        let events: ObservedEvents = [.enqueued, .started, .ended, .retrying, .joined, .escalated]

        init?(queue: String) {
            guard !(InstrumentationSystem.tracer is NoOpTracer) else { return nil }
            self.queue = queue
        }

        func observe(_ event: QueueEvent<AsyncTask>) {
            switch event {
            case .enqueued(let unit):
                let span = start(unit)
                spans.withLock { $0[ObjectIdentifier(unit)] = span }
            case .started(let unit):
                spans.withLock { $0[ObjectIdentifier(unit)] }?.addEvent("started")
            case .ended(let unit, let outcome):
                // A unit turned away at once (dropped) was never enqueued: its span is
                // begun and ended here.
                let span = spans.withLock { $0.removeValue(forKey: ObjectIdentifier(unit)) } ?? start(unit)
                span.attributes["backgroundable.outcome"] = "\(outcome.kind)"
                span.attributes["backgroundable.attempts"] = unit.attempts
                if case .failed(let error) = outcome {
                    span.recordError(error)
                    span.setStatus(SpanStatus(code: .error))
                }
                span.end()
            case .retrying(let unit, let retry):
                let attributes: SpanAttributes = [
                    "backgroundable.attempt": .int64(Int64(retry.attempt)),
                    "backgroundable.error": .string("\(retry.error)"),
                    "backgroundable.delay": .string("\(retry.delay)"),
                ]
                spans.withLock { $0[ObjectIdentifier(unit)] }?.addEvent(
                    SpanEvent(name: "retrying", attributes: attributes))
            case .joined(_, let primary):
                spans.withLock { $0[ObjectIdentifier(primary)] }?.addEvent("joined")
            case .escalated(let unit, let priority):
                let attributes: SpanAttributes = ["backgroundable.priority": .int64(Int64(priority))]
                spans.withLock { $0[ObjectIdentifier(unit)] }?.addEvent(
                    SpanEvent(name: "escalated", attributes: attributes))
            case .backgroundTimeExpiring:
                break
            }
        }

        private func start(_ unit: AsyncTask) -> any Span {
            let span = startSpan(unit.name ?? "AsyncTask", context: unit.addedInContext ?? .topLevel)
            span.attributes["backgroundable.queue"] = queue
            return span
        }
    }

#endif
