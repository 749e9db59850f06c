#if Tracing
    import Instrumentation
    import ServiceContextModule

    /// A job carries the trace context of the code that added it (the `Tracing` trait):
    /// injected into its record as propagation headers (W3C `traceparent` with the usual
    /// tracers), and extracted where it runs — in another launch or on another replica —
    /// so that its unit's span is a child of the span that added it.
    enum DurableTraceContext {
        static func capture() -> [String: String]? {
            guard let context = InstrumentationContext.current else { return nil }
            var headers: [String: String] = [:]
            InstrumentationSystem.instrument.inject(context, into: &headers, using: HeadersInjector())
            return headers.isEmpty ? nil : headers
        }

        static func restore<Result>(_ headers: [String: String]?, _ body: () -> Result) -> Result {
            guard let headers else { return body() }
            var context = InstrumentationContext.topLevel
            InstrumentationSystem.instrument.extract(headers, into: &context, using: HeadersExtractor())
            return InstrumentationContext.withValue(context, operation: body)
        }
    }

    private struct HeadersInjector: Injector {
        func inject(_ value: String, forKey key: String, into carrier: inout [String: String]) {
            carrier[key] = value
        }
    }

    private struct HeadersExtractor: Extractor {
        func extract(key: String, from carrier: [String: String]) -> String? { carrier[key] }
    }
#else
    /// Without the `Tracing` trait, jobs carry no trace context.
    enum DurableTraceContext {
        static func capture() -> [String: String]? { nil }
        static func restore<Result>(_ headers: [String: String]?, _ body: () -> Result) -> Result { body() }
    }
#endif
