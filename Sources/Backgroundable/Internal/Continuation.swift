// The package's continuations. Production builds use `UnsafeContinuation` (every
// resume site documents why it runs exactly once); builds with
// `-DBACKGROUNDABLE_CHECKED_CONTINUATIONS` use `CheckedContinuation`, which traps on a
// double resume and reports a leaked one — CI runs the sanitizer suite that way.

#if BACKGROUNDABLE_CHECKED_CONTINUATIONS
    package typealias Continuation<Value> = CheckedContinuation<Value, Never>

    @inline(__always)
    package func withContinuation<Value>(
        isolation: isolated (any Actor)? = #isolation,
        _ body: (Continuation<Value>) -> Void
    ) async -> sending Value {
        await withCheckedContinuation(isolation: isolation, body)
    }
#else
    package typealias Continuation<Value> = UnsafeContinuation<Value, Never>

    @inline(__always)
    package func withContinuation<Value>(
        isolation: isolated (any Actor)? = #isolation,
        _ body: (Continuation<Value>) -> Void
    ) async -> sending Value {
        await withUnsafeContinuation(isolation: isolation, body)
    }
#endif
