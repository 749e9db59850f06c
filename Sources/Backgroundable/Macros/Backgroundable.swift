#if Macros
    /// Wraps the method's body in a background-time assertion: begun before the
    /// body, ended in a `defer` on every path out of it — return, throw, or an
    /// early exit after cancellation.
    ///
    /// ```swift
    /// final class Uploader: Sendable {
    ///     @Backgroundable(withName: "Upload", expirationFunc: "saveProgress")
    ///     func upload(_ file: File) async throws { … }
    ///
    ///     func saveProgress() { … }
    /// }
    /// ```
    ///
    /// The expansion calls ``BackgroundTimeAssertion/begin(named:provider:onExpiration:)``
    /// with the default provider (``DefaultBackgroundTaskProvider/make()``, which tests
    /// can replace with ``DefaultBackgroundTaskProvider/withProvider(_:operation:)``),
    /// so it works on every platform, Linux included. Works on sync, async and throwing
    /// methods of classes, structs, enums and actors, and on free functions.
    ///
    /// - Parameters:
    ///   - withName: The assertion's name, a string literal. Defaults to
    ///     `"Type.method"`.
    ///   - expirationFunc: The name of a method without arguments, called on `self`
    ///     at most once if the time runs out before the body finished (the assertion
    ///     has then already been ended). A string literal.
    ///     - In a class it is called on the provider's thread through a weak
    ///       reference (not at all if the object is gone); the class must be
    ///       `Sendable` and the method callable from any thread.
    ///     - In a struct or enum it is called on a copy of `self`; the type must be
    ///       `Sendable`.
    ///     - In an actor it is called in a new task on the actor (so it may be
    ///       actor-isolated), shortly after the assertion ended.
    ///     - In a `@MainActor` method or type it runs on the main actor: right away
    ///       when the provider expires on the main thread (UIKit does), otherwise in
    ///       a new main-actor task.
    ///     Other global actors are not detected: make such an expiration method
    ///     `nonisolated`.
    ///   - propertyName: The name of a property declared with
    ///     ``BackgroundableProperty(name:)`` (or by hand, as a
    ///     ``BackgroundTimeAssertionSlot``) that holds the assertion while the body
    ///     runs, so other code can see or end it. A string literal.
    @attached(body)
    public macro Backgroundable(
        withName: String? = nil,
        expirationFunc: String? = nil,
        propertyName: String? = nil
    ) = #externalMacro(module: "BackgroundableMacros", type: "BackgroundableMacro")
#endif
