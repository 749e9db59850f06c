#if Metrics || Tracing
    import Foundation
    import Testing

    @testable import Backgroundable

    #if Metrics
        import CoreMetrics
        import MetricsTestKit
    #endif
    #if Tracing
        import InMemoryTracing
        import Instrumentation
        import Tracing
    #endif

    // Backends are bootstrapped once per process; every queue created afterwards, in any
    // test, is observed (which changes nothing about what it does).
    #if Metrics
        let testMetrics: TestMetrics = {
            let metrics = TestMetrics()
            MetricsSystem.bootstrap(metrics)
            return metrics
        }()
    #endif
    #if Tracing
        let testTracer: InMemoryTracer = {
            let tracer = InMemoryTracer()
            InstrumentationSystem.bootstrap(tracer)
            return tracer
        }()
    #endif

    /// The `Metrics` and `Tracing` traits, through swift-metrics' `TestMetrics` and
    /// swift-distributed-tracing's `InMemoryTracer`.
    @Suite("Metrics and tracing")
    struct MetricsAndTracingTests {
        /// Three units: one finishes, one fails, one is dropped.
        private func runThreeUnits(on queue: BackgroundQueue) async {
            queue.suspend()
            let ok = queue.add(.init(name: "ok")) { 1 }
            let failing = queue.add(.init(name: "failing")) { () async throws -> Int in throw TestError(code: 3) }
            let dropped = queue.add(.init(name: "ok", uniquenessPolicy: .drop)) { 2 }
            #expect(dropped.task.currentOutcome?.kind == .dropped)
            queue.resume()
            _ = await (ok.outcome, failing.outcome)
            await queue.waitUntilIdle()
        }

        #if Metrics
            @Test func aQueueReportsItsCountsOutcomesAndTimes() async throws {
                let metrics = testMetrics
                let name = "metrics-\(UUID().uuidString)"
                let queue = BackgroundQueue(name: name, backgroundTaskProvider: NoopBackgroundTaskProvider())
                await runThreeUnits(on: queue)
                let queueDimension = [("queue", name)]
                for (kind, expected) in [("finished", 1), ("failed", 1), ("dropped", 1), ("cancelled", 0)] {
                    let total = metrics.counterTotal(
                        label: "backgroundable_outcomes_total", dimensions: queueDimension + [("outcome", kind)])
                    #expect(total == Int64(expected), "\(kind)")
                }
                let enqueued = try metrics.expectGauge("backgroundable_enqueued_units", queueDimension)
                let executing = try metrics.expectGauge("backgroundable_executing_units", queueDimension)
                #expect(enqueued.values.max() == 2, "two units waited while the queue was suspended")
                #expect(enqueued.lastValue == 0 && executing.lastValue == 0)
                let waits = try metrics.expectTimer("backgroundable_wait_duration", queueDimension)
                let runs = try metrics.expectTimer("backgroundable_run_duration", queueDimension)
                #expect(waits.values.count == 2 && runs.values.count == 2)
                #expect(waits.values.allSatisfy { $0 >= 0 })
            }
        #endif

        #if Metrics
            /// Many units added and ended on several threads at once (the sanitizer run of
            /// the traits checks this path): every outcome is counted, and the gauges end
            /// at zero.
            @Test func concurrentUnitsAreAllCountedAndTheGaugesSettle() async throws {
                let metrics = TestMetrics()
                let name = "concurrent"
                let queue = BackgroundQueue(
                    name: name, maxConcurrentTasks: 3, backgroundTaskProvider: NoopBackgroundTaskProvider(),
                    metricsFactory: metrics)
                await withTaskGroup(of: Void.self) { group in
                    for _ in 0..<4 {
                        group.addTask {
                            for index in 0..<250 {
                                if index.isMultiple(of: 5) {
                                    queue.add(.init(name: "n\(index % 7)", uniquenessPolicy: .drop)) { index }
                                } else {
                                    queue.add(.init(timeout: nil)) { $0.finish() }
                                }
                            }
                        }
                    }
                }
                await queue.waitUntilIdle()
                let counted = AsyncTask.Outcome.Kind.allCases.reduce(Int64(0)) { total, kind in
                    total
                        + metrics.counterTotal(
                            label: "backgroundable_outcomes_total",
                            dimensions: [("queue", name), ("outcome", "\(kind)")])
                }
                #expect(counted == 1_000)
                let enqueued = try metrics.expectGauge("backgroundable_enqueued_units", [("queue", name)])
                let executing = try metrics.expectGauge("backgroundable_executing_units", [("queue", name)])
                #expect(enqueued.lastValue == 0 && executing.lastValue == 0)
            }

            /// Levels reported out of order (two threads after two transitions) leave the
            /// gauges on the later transition's levels.
            @Test func gaugesEndOnTheLatestTransitionsLevels() throws {
                let metrics = TestMetrics()
                let measurer = try #require(QueueMetrics(queue: "levels", factory: metrics))
                measurer.levelsChanged(enqueued: 3, executing: 1, version: 2)
                measurer.levelsChanged(enqueued: 4, executing: 0, version: 1)
                let enqueued = try metrics.expectGauge("backgroundable_enqueued_units", [("queue", "levels")])
                #expect(enqueued.values == [3])
                measurer.levelsChanged(enqueued: 3, executing: 1, version: 3)
                #expect(enqueued.values == [3], "unchanged levels are not recorded again")
                measurer.levelsChanged(enqueued: 0, executing: 0, version: 4)
                #expect(enqueued.lastValue == 0)
            }
        #endif

        #if Tracing
            @Test func aDurableJobIsTracedUnderTheSpanThatAddedItWhereverItRuns() async throws {
                let tracer = testTracer
                let name = "durable-tracing-\(UUID().uuidString)"
                let directory = ScratchDirectory()
                defer { directory.remove() }
                let parent = startSpan("request-\(name)")
                // Added under a span by one queue, whose store then closes...
                try await InstrumentationContext.$current.withValue(parent.context) {
                    let jobs = DurableQueue(
                        store: try await FileJobStore(directory: directory.url), queue: BackgroundQueue())
                    try await jobs.add(.note, Note(text: "traced"), options: .init(name: name))
                }
                parent.end()
                // ...and run, outside any span, by another over the same directory.
                let jobs = DurableQueue(
                    store: try await FileJobStore(directory: directory.url),
                    queue: BackgroundQueue(backgroundTaskProvider: NoopBackgroundTaskProvider()))
                jobs.register(.note) { _, _ in }
                await jobs.runUntilIdle()
                let parentSpan = tracer.finishedSpans.first { $0.operationName == "request-\(name)" }
                let span = tracer.finishedSpans.first { $0.operationName == name }
                #expect(parentSpan != nil && span != nil)
                #expect(span?.parentSpanID == parentSpan?.spanID)
                #expect(span?.traceID == parentSpan?.traceID)
            }

            @Test func everyUnitHasASpanUnderTheSpanActiveWhereItWasAdded() async throws {
                let tracer = testTracer
                let name = "tracing-\(UUID().uuidString)"
                let queue = BackgroundQueue(name: name, backgroundTaskProvider: NoopBackgroundTaskProvider())
                let parent = startSpan("request")
                await InstrumentationContext.$current.withValue(parent.context) {
                    await runThreeUnits(on: queue)
                }
                parent.end()
                func string(_ key: String, of span: FinishedInMemorySpan) -> String? {
                    if case .string(let value)? = span.attributes.get(key) { value } else { nil }
                }
                let spans = tracer.finishedSpans.filter { string("backgroundable.queue", of: $0) == name }
                #expect(spans.count == 3)
                let parentID = tracer.finishedSpans.first { $0.operationName == "request" }?.spanID
                for span in spans {
                    #expect(span.parentSpanID == parentID, "\(span.operationName)")
                    guard case .int64(let attempts)? = span.attributes.get("backgroundable.attempts") else {
                        Issue.record("no attempts attribute on \(span.operationName)")
                        continue
                    }
                    // A dropped unit never ran.
                    #expect(attempts == (string("backgroundable.outcome", of: span) == "dropped" ? 0 : 1))
                }
                let outcomes = Set(spans.compactMap { string("backgroundable.outcome", of: $0) })
                #expect(outcomes == ["finished", "failed", "dropped"])
                let failed = spans.first { $0.operationName == "failing" }
                #expect(failed?.errors.count == 1)
                #expect(failed?.events.map(\.name) == ["started"])
            }

            @Test func aRetriedUnitsSpanShowsEachAttempt() async throws {
                let tracer = testTracer
                let name = "tracing-retry-\(UUID().uuidString)"
                let queue = BackgroundQueue(name: name, backgroundTaskProvider: NoopBackgroundTaskProvider())
                let failures = Recorder<Int>()
                let handle = queue.add(.init(name: "flaky", retry: .fixed(maxAttempts: 3, delay: .zero))) {
                    failures.append(1)
                    if failures.count < 3 { throw TestError(code: failures.count) }
                }
                try await handle.value
                await queue.waitUntilIdle()
                let span = try #require(
                    tracer.finishedSpans.first { span in
                        if case .string(name)? = span.attributes.get("backgroundable.queue") { true } else { false }
                    })
                #expect(span.events.map(\.name) == ["started", "retrying", "started", "retrying", "started"])
                guard case .int64(let attempts)? = span.attributes.get("backgroundable.attempts") else {
                    Issue.record("no attempts attribute")
                    return
                }
                #expect(attempts == 3)
            }
        #endif
    }
#endif
