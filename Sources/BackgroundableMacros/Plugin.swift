#if Macros
import SwiftCompilerPlugin
import SwiftSyntaxMacros

/// The compiler plug-in that hosts the package's macros. Built only with the
/// `Macros` package trait; without it this target compiles to nothing.
@main
struct BackgroundableMacrosPlugin: CompilerPlugin {
    let providingMacros: [any Macro.Type] = [
        BackgroundableMacro.self,
        BackgroundablePropertyMacro.self,
    ]
}
#endif
