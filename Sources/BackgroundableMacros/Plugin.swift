#if Macros
    import SwiftCompilerPlugin
    import SwiftSyntaxMacros

    /// The compiler plug-in that hosts the package's macros. Built only with the
    /// `Macros` package trait.
    @main
    struct BackgroundableMacrosPlugin: CompilerPlugin {
        let providingMacros: [any Macro.Type] = [
            BackgroundableMacro.self,
            BackgroundablePropertyMacro.self,
        ]
    }
#else
    /// Without the `Macros` trait SwiftPM still builds this target (a package cannot
    /// declare a target only for a trait), so it is an empty program that needs no
    /// swift-syntax and that nothing loads.
    @main
    enum BackgroundableMacrosPlaceholder {
        static func main() {}
    }
#endif
