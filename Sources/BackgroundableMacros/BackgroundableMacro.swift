#if Macros
    import SwiftDiagnostics
    public import SwiftSyntax
    import SwiftSyntaxBuilder
    public import SwiftSyntaxMacros

    /// `@Backgroundable(withName:expirationFunc:propertyName:)`: wraps a function body
    /// in a `BackgroundTimeAssertion`, begun before the body and ended in a `defer`.
    ///
    /// The expiration function is called through `_BackgroundableMacroSupport`, whose
    /// overloads let the type checker pick the right capture for a class (weak), an
    /// actor (weak, then a task on the actor) or a value type (a copy). A `@MainActor`
    /// method, or a method of a `@MainActor` type, gets the main-actor form.
    public struct BackgroundableMacro: BodyMacro {
        public static func expansion(
            of node: AttributeSyntax,
            providingBodyFor declaration: some DeclSyntaxProtocol & WithOptionalCodeBlockSyntax,
            in context: some MacroExpansionContext
        ) throws -> [CodeBlockItemSyntax] {
            guard let function = declaration.as(FunctionDeclSyntax.self) else {
                context.diagnose(Diagnostic(node: node, message: BackgroundableDiagnostic.notAFunction))
                return Array(declaration.body?.statements ?? [])
            }
            guard let body = function.body else {
                context.diagnose(
                    Diagnostic(
                        node: function.name, message: BackgroundableDiagnostic.missingBody(function: function.name.text)
                    )
                )
                return []
            }
            let original = statements(of: body, returning: function.signature.returnClause != nil)
            guard let arguments = stringArguments(of: node, in: context) else { return original }
            let enclosing = EnclosingContext(lexicalContext: context.lexicalContext)

            // The assertion's name.
            let nameLiteral: StringLiteralExprSyntax
            if let argument = arguments["withName"] {
                guard !argument.value.isEmpty else {
                    context.diagnose(Diagnostic(node: argument.literal, message: BackgroundableDiagnostic.emptyName))
                    return original
                }
                nameLiteral = argument.literal.trimmed
            } else {
                nameLiteral = stringLiteral(
                    [enclosing.typeName, function.name.text].compactMap { $0 }.joined(separator: "."))
            }

            // The expiration handler.
            var expiration: ExprSyntax?
            if let argument = arguments["expirationFunc"] {
                guard let member = identifier(argument, in: context) else { return original }
                expiration = expirationHandler(calling: member, in: function, enclosing: enclosing)
            }

            // The property that also holds the assertion.
            var property: String?
            if let argument = arguments["propertyName"] {
                guard let name = identifier(argument, in: context),
                    checkDeclared(name, argument: argument, enclosing: enclosing, in: context)
                else { return original }
                property = name
            }

            let assertion = context.makeUniqueName("assertion")
            let begin: ExprSyntax =
                if let expiration {
                    """
                    BackgroundTimeAssertion.begin(
                        named: \(nameLiteral),
                        onExpiration: \(expiration)
                    )
                    """
                } else {
                    "BackgroundTimeAssertion.begin(named: \(nameLiteral))"
                }
            var prologue: [CodeBlockItemSyntax] = ["let \(assertion) = \(begin)"]
            if let property {
                prologue.append("self.\(raw: property).hold(\(assertion))")
                prologue.append(
                    """
                    defer {
                        \(assertion).end()
                        self.\(raw: property).release(\(assertion))
                    }
                    """
                )
            } else {
                prologue.append(
                    """
                    defer {
                        \(assertion).end()
                    }
                    """
                )
            }
            return prologue + original
        }

        /// The body's statements, with the implicit `return` of a single-expression
        /// body made explicit (the wrapped body has more than one statement).
        private static func statements(of body: CodeBlockSyntax, returning: Bool) -> [CodeBlockItemSyntax] {
            let items = Array(body.statements)
            guard returning, items.count == 1, let expression = items[0].item.as(ExprSyntax.self) else {
                return items
            }
            let returned = ReturnStmtSyntax(
                returnKeyword: .keyword(.return, trailingTrivia: .space),
                expression: expression.trimmed
            )
            return [items[0].with(\.item, .stmt(StmtSyntax(returned)))]
        }

        /// The `onExpiration:` argument that calls `member` on `self` (or, outside a
        /// type, the function `member`).
        private static func expirationHandler(
            calling member: String,
            in function: FunctionDeclSyntax,
            enclosing: EnclosingContext
        ) -> ExprSyntax {
            let mainActor =
                function.attributes.contains(named: "MainActor")
                || (enclosing.isMainActor && !function.modifiers.contains(.nonisolated))
            let support = "_BackgroundableMacroSupport"
            if enclosing.kind == nil {
                return mainActor
                    ? "\(raw: support).mainActorExpirationHandler { \(raw: member)() }"
                    : "{ \(raw: member)() }"
            }
            let actor = enclosing.kind == .actor && !function.modifiers.contains(.nonisolated)
            let helper =
                mainActor ? "mainActorExpirationHandler" : actor ? "actorExpirationHandler" : "expirationHandler"
            return "\(raw: support).\(raw: helper)(for: self) { $0.\(raw: member)() }"
        }

        /// Diagnoses `propertyName:` when the enclosing class is visible and none of
        /// its `@BackgroundableProperty` attributes declares `name`. Returns `false`
        /// when it diagnosed.
        private static func checkDeclared(
            _ name: String,
            argument: StringArgument,
            enclosing: EnclosingContext,
            in context: some MacroExpansionContext
        ) -> Bool {
            // Only a class can carry the property macro; elsewhere the property may be
            // declared by hand, out of the macro's sight.
            guard let classDecl = enclosing.classDecl else { return true }
            let declared = BackgroundablePropertyMacro.declaredNames(in: classDecl.attributes)
            guard !declared.contains(name) else { return true }
            let fixIts =
                declared.count == 1
                ? [
                    FixIt(
                        message: BackgroundableFixIt(message: "use \"\(declared[0])\""),
                        changes: [
                            .replace(oldNode: Syntax(argument.literal), newNode: Syntax(stringLiteral(declared[0])))
                        ]
                    )
                ] : []
            context.diagnose(
                Diagnostic(
                    node: argument.literal,
                    message: BackgroundableDiagnostic.undeclaredProperty(
                        name: name,
                        type: classDecl.name.text,
                        declared: declared
                    ),
                    fixIts: fixIts
                )
            )
            return false
        }
    }
#endif
