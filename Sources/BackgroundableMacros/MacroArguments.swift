#if Macros
    import SwiftDiagnostics
    import SwiftParser
    import SwiftSyntax
    import SwiftSyntaxBuilder
    import SwiftSyntaxMacros

    /// A string argument of a macro attribute, read at compile time.
    struct StringArgument {
        let label: String
        let value: String
        let literal: StringLiteralExprSyntax
    }

    /// Reads the labelled string-literal arguments of `attribute`.
    ///
    /// Diagnoses (and leaves out) every argument that is not a plain string literal;
    /// `nil` counts as absent. Returns `nil` when something was diagnosed.
    func stringArguments(
        of attribute: AttributeSyntax,
        in context: some MacroExpansionContext
    ) -> [String: StringArgument]? {
        guard case .argumentList(let list) = attribute.arguments else { return [:] }
        var arguments: [String: StringArgument] = [:]
        var diagnosed = false
        for argument in list {
            let label = argument.label?.text ?? "_"
            if argument.expression.is(NilLiteralExprSyntax.self) { continue }
            guard let literal = argument.expression.as(StringLiteralExprSyntax.self) else {
                context.diagnose(
                    Diagnostic(
                        node: argument.expression, message: BackgroundableDiagnostic.notAStringLiteral(argument: label))
                )
                diagnosed = true
                continue
            }
            guard let value = literal.representedLiteralValue else {
                context.diagnose(
                    Diagnostic(node: literal, message: BackgroundableDiagnostic.interpolatedString(argument: label))
                )
                diagnosed = true
                continue
            }
            arguments[label] = StringArgument(label: label, value: value, literal: literal)
        }
        return diagnosed ? nil : arguments
    }

    /// Checks that `argument` names a member. Offers a fix-it when it is close to one
    /// (`"save()"` or `"self.save"` for `"save"`). Returns the identifier, or `nil`
    /// when something was diagnosed.
    func identifier(_ argument: StringArgument, in context: some MacroExpansionContext) -> String? {
        if isIdentifier(argument.value) { return argument.value }
        var candidate = argument.value.trimmingWhitespace()
        if candidate.hasPrefix("self.") { candidate.removeFirst("self.".count) }
        if candidate.hasSuffix("()") { candidate.removeLast(2) }
        let fixIts =
            isIdentifier(candidate)
            ? [
                FixIt(
                    message: BackgroundableFixIt(message: "use \"\(candidate)\""),
                    changes: [.replace(oldNode: Syntax(argument.literal), newNode: Syntax(stringLiteral(candidate)))]
                )
            ] : []
        context.diagnose(
            Diagnostic(
                node: argument.literal,
                message: BackgroundableDiagnostic.notAnIdentifier(argument: argument.label, value: argument.value),
                fixIts: fixIts
            )
        )
        return nil
    }

    /// A plain string literal holding `value`.
    func stringLiteral(_ value: String) -> StringLiteralExprSyntax {
        StringLiteralExprSyntax(content: value)
    }

    /// `true` for a plain Swift identifier (no backticks, no operators).
    func isIdentifier(_ text: String) -> Bool {
        guard let first = text.unicodeScalars.first, first == "_" || first.properties.isXIDStart else { return false }
        return text.unicodeScalars.dropFirst().allSatisfy { $0 == "_" || $0.properties.isXIDContinue }
    }

    extension String {
        fileprivate func trimmingWhitespace() -> String {
            let scalars = unicodeScalars
            guard let start = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
                let end = scalars.lastIndex(where: { !$0.properties.isWhitespace })
            else { return "" }
            return String(scalars[start...end])
        }
    }
#endif
