#if Macros
    import SwiftSyntax

    /// What a macro can see of the declarations around it (their headers only: the
    /// compiler strips bodies and member lists from the lexical context).
    struct EnclosingContext {
        enum Kind {
            case `class`, `actor`, valueType, `extension`, `protocol`
        }

        /// The innermost enclosing type or extension, if any.
        let kind: Kind?
        /// The enclosing type names, outermost first (`Outer.Inner`).
        let typeName: String?
        /// The innermost type or extension declares `@MainActor`.
        let isMainActor: Bool
        /// The innermost enclosing declaration when it is a class (for its attributes).
        let classDecl: ClassDeclSyntax?

        init(lexicalContext: [Syntax]) {
            var names: [String] = []
            var innermost: (kind: Kind, attributes: AttributeListSyntax)?
            var classDecl: ClassDeclSyntax?
            // The lexical context lists the innermost declaration first.
            for node in lexicalContext {
                let found: (Kind, String, AttributeListSyntax)? =
                    if let decl = node.as(ClassDeclSyntax.self) {
                        (.class, decl.name.text, decl.attributes)
                    } else if let decl = node.as(ActorDeclSyntax.self) {
                        (.actor, decl.name.text, decl.attributes)
                    } else if let decl = node.as(StructDeclSyntax.self) {
                        (.valueType, decl.name.text, decl.attributes)
                    } else if let decl = node.as(EnumDeclSyntax.self) {
                        (.valueType, decl.name.text, decl.attributes)
                    } else if let decl = node.as(ProtocolDeclSyntax.self) {
                        (.protocol, decl.name.text, decl.attributes)
                    } else if let decl = node.as(ExtensionDeclSyntax.self) {
                        (.extension, decl.extendedType.trimmedDescription, decl.attributes)
                    } else {
                        nil
                    }
                guard let (kind, name, attributes) = found else { continue }
                if innermost == nil {
                    innermost = (kind, attributes)
                    classDecl = node.as(ClassDeclSyntax.self)
                }
                names.insert(name, at: 0)
                if kind == .extension { break }  // an extension names its type in full
            }
            self.kind = innermost?.kind
            self.typeName = names.isEmpty ? nil : names.joined(separator: ".")
            self.isMainActor = innermost.map { $0.attributes.contains(named: "MainActor") } ?? false
            self.classDecl = classDecl
        }
    }

    extension AttributeListSyntax {
        /// The attributes named `name` (or `Module.name`).
        func attributes(named name: String) -> [AttributeSyntax] {
            compactMap { element in
                guard case .attribute(let attribute) = element else { return nil }
                let type = attribute.attributeName
                let baseName =
                    type.as(IdentifierTypeSyntax.self)?.name.text ?? type.as(MemberTypeSyntax.self)?.name.text
                return baseName == name ? attribute : nil
            }
        }

        func contains(named name: String) -> Bool {
            !attributes(named: name).isEmpty
        }
    }

    extension DeclModifierListSyntax {
        func contains(_ keyword: Keyword) -> Bool {
            contains { $0.name.tokenKind == .keyword(keyword) }
        }
    }
#endif
