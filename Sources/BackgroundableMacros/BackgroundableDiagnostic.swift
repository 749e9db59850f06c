#if Macros
    import SwiftDiagnostics

    /// Every error and fix-it the macros can report, with the message the user sees.
    enum BackgroundableDiagnostic: DiagnosticMessage {
        case notAFunction
        case missingBody(function: String)
        case notAStringLiteral(argument: String)
        case interpolatedString(argument: String)
        case notAnIdentifier(argument: String, value: String)
        case emptyName
        case propertyMacroOnNonClass(kind: String)
        case undeclaredProperty(name: String, type: String, declared: [String])

        var message: String {
            switch self {
            case .notAFunction:
                "@Backgroundable can only be attached to a method or function"
            case .missingBody(let function):
                "@Backgroundable needs a body to wrap, but '\(function)' has none"
            case .notAStringLiteral(let argument):
                "'\(argument):' must be a string literal; the macro reads it at compile time"
            case .interpolatedString(let argument):
                "'\(argument):' must be a plain string literal without interpolation; the macro reads it at compile time"
            case .notAnIdentifier(let argument, let value):
                "'\(argument):' must name a member, but \"\(value)\" is not an identifier"
            case .emptyName:
                "'withName:' must not be empty"
            case .propertyMacroOnNonClass(let kind):
                "@BackgroundableProperty can only be attached to a class, not to \(kind); "
                    + "declare 'let <name> = BackgroundTimeAssertionSlot()' yourself instead"
            case .undeclaredProperty(let name, let type, let declared):
                if declared.isEmpty {
                    "'propertyName: \"\(name)\"' names no property declared by @BackgroundableProperty; "
                        + "add @BackgroundableProperty(name: \"\(name)\") to '\(type)'"
                } else {
                    "'propertyName: \"\(name)\"' names no property declared by @BackgroundableProperty on '\(type)' "
                        + "(it declares \(declared.map { "'\($0)'" }.joined(separator: ", ")))"
                }
            }
        }

        var diagnosticID: MessageID {
            let id =
                switch self {
                case .notAFunction: "notAFunction"
                case .missingBody: "missingBody"
                case .notAStringLiteral: "notAStringLiteral"
                case .interpolatedString: "interpolatedString"
                case .notAnIdentifier: "notAnIdentifier"
                case .emptyName: "emptyName"
                case .propertyMacroOnNonClass: "propertyMacroOnNonClass"
                case .undeclaredProperty: "undeclaredProperty"
                }
            return MessageID(domain: "Backgroundable", id: id)
        }

        var severity: DiagnosticSeverity { .error }
    }

    /// The fix-its offered with ``BackgroundableDiagnostic``.
    struct BackgroundableFixIt: FixItMessage {
        let message: String
        var fixItID: MessageID { MessageID(domain: "Backgroundable", id: message) }
    }

    /// Thrown by argument parsing once the diagnostic has been emitted, to stop the expansion.
    struct DiagnosedError: Error {}
#endif
