#if Macros
    /// Adds to a class the stored property that ``Backgroundable(withName:expirationFunc:propertyName:)``
    /// methods fill when given `propertyName:`.
    ///
    /// ```swift
    /// @BackgroundableProperty
    /// final class Sync: Sendable {
    ///     @Backgroundable(propertyName: "backgroundTimeAssertion")
    ///     func run() async { … }
    ///
    ///     func stop() { backgroundTimeAssertion.end() }
    /// }
    /// ```
    ///
    /// The property is a `let` of type ``BackgroundTimeAssertionSlot`` (thread-safe),
    /// as visible as the class (`public` for a public or open class).
    ///
    /// - Parameter name: The property's name, a string literal. Defaults to
    ///   `backgroundTimeAssertion`.
    @attached(member, names: named(backgroundTimeAssertion), arbitrary)
    public macro BackgroundableProperty(
        name: String? = nil
    ) = #externalMacro(module: "BackgroundableMacros", type: "BackgroundablePropertyMacro")
#endif
