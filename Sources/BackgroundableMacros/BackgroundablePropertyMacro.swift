#if Macros
    import SwiftDiagnostics
    import SwiftParser
    public import SwiftSyntax
    import SwiftSyntaxBuilder
    public import SwiftSyntaxMacros

    /// `@BackgroundableProperty(name:)`: adds to a class the stored
    /// `BackgroundTimeAssertionSlot` that `@Backgroundable(propertyName:)` fills.
    public struct BackgroundablePropertyMacro: MemberMacro {
        /// The property's name when `name:` is not given.
        static let defaultName = "backgroundTimeAssertion"

        public static func expansion(
            of node: AttributeSyntax,
            providingMembersOf declaration: some DeclGroupSyntax,
            conformingTo protocols: [TypeSyntax],
            in context: some MacroExpansionContext
        ) throws -> [DeclSyntax] {
            guard let classDecl = declaration.as(ClassDeclSyntax.self) else {
                context.diagnose(
                    Diagnostic(
                        node: node,
                        message: BackgroundableDiagnostic.propertyMacroOnNonClass(kind: describe(declaration))
                    )
                )
                return []
            }
            guard let arguments = stringArguments(of: node, in: context) else { return [] }
            var name = defaultName
            if let argument = arguments["name"] {
                guard let identifier = identifier(argument, in: context) else { return [] }
                name = identifier
            }
            // Visible as widely as the class itself, so other code can see or end the assertion.
            let modifiers = classDecl.modifiers
            let access =
                if modifiers.contains(.public) || modifiers.contains(.open) {
                    "public "
                } else if modifiers.contains(.package) {
                    "package "
                } else {
                    ""
                }
            return [
                """
                /// The background-time assertion held by this object's `@Backgroundable` methods.
                \(raw: access)let \(raw: name) = BackgroundTimeAssertionSlot()
                """
            ]
        }

        /// The property names declared by the `@BackgroundableProperty` attributes in
        /// `attributes` (unparseable arguments are skipped: they are diagnosed where
        /// that attribute expands).
        static func declaredNames(in attributes: AttributeListSyntax) -> [String] {
            attributes.attributes(named: "BackgroundableProperty").compactMap { attribute in
                guard case .argumentList(let list) = attribute.arguments,
                    let argument = list.first(where: { $0.label?.text == "name" })
                else { return defaultName }
                if argument.expression.is(NilLiteralExprSyntax.self) { return defaultName }
                return argument.expression.as(StringLiteralExprSyntax.self)?.representedLiteralValue
            }
        }

        private static func describe(_ declaration: some DeclGroupSyntax) -> String {
            switch declaration.kind {
            case .structDecl: "a struct"
            case .enumDecl: "an enum"
            case .actorDecl: "an actor"
            case .protocolDecl: "a protocol"
            case .extensionDecl: "an extension"
            default: "this declaration"
            }
        }
    }
#endif
