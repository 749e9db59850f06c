#if Macros
    import BackgroundableMacros
    import SwiftSyntaxMacros
    import SwiftSyntaxMacrosGenericTestSupport
    import SwiftSyntaxMacrosTestSupport
    import XCTest

    // `assertMacroExpansion` reports through XCTest, so these are XCTest cases.
    final class BackgroundableMacroExpansionTests: XCTestCase {
        let macros: [String: any Macro.Type] = [
            "Backgroundable": BackgroundableMacro.self,
            "BackgroundableProperty": BackgroundablePropertyMacro.self,
        ]

        func testDefaultNameInAClass() {
            assertMacroExpansion(
                """
                final class Uploader {
                    @Backgroundable
                    func upload() {
                        send()
                    }
                }
                """,
                expandedSource: """
                    final class Uploader {
                        func upload() {
                            let __macro_local_9assertionfMu_ = BackgroundTimeAssertion.begin(named: "Uploader.upload")
                            defer {
                                __macro_local_9assertionfMu_.end()
                            }
                            send()
                        }
                    }
                    """,
                macros: macros
            )
        }

        func testNameAndExpirationInAClassAsyncThrows() {
            assertMacroExpansion(
                """
                final class Uploader {
                    @Backgroundable(withName: "Upload", expirationFunc: "saveProgress")
                    func upload() async throws -> Int {
                        try await send()
                        return 1
                    }
                }
                """,
                expandedSource: """
                    final class Uploader {
                        func upload() async throws -> Int {
                            let __macro_local_9assertionfMu_ = BackgroundTimeAssertion.begin(
                                named: "Upload",
                                onExpiration: _BackgroundableMacroSupport.expirationHandler(for: self) {
                                    $0.saveProgress()
                                }
                            )
                            defer {
                                __macro_local_9assertionfMu_.end()
                            }
                            try await send()
                            return 1
                        }
                    }
                    """,
                macros: macros
            )
        }

        func testSingleExpressionBodyGetsAnExplicitReturn() {
            assertMacroExpansion(
                """
                struct Reader {
                    @Backgroundable
                    func read() -> Int { 42 }
                }
                """,
                expandedSource: """
                    struct Reader {
                        func read() -> Int {
                            let __macro_local_9assertionfMu_ = BackgroundTimeAssertion.begin(named: "Reader.read")
                            defer {
                                __macro_local_9assertionfMu_.end()
                            }
                            return 42
                        }
                    }
                    """,
                macros: macros
            )
        }

        func testStructUsesTheValueOverload() {
            assertMacroExpansion(
                """
                struct Reader {
                    @Backgroundable(expirationFunc: "stop")
                    func read() {
                    }
                }
                """,
                expandedSource: """
                    struct Reader {
                        func read() {
                            let __macro_local_9assertionfMu_ = BackgroundTimeAssertion.begin(
                                named: "Reader.read",
                                onExpiration: _BackgroundableMacroSupport.expirationHandler(for: self) {
                                    $0.stop()
                                }
                            )
                            defer {
                                __macro_local_9assertionfMu_.end()
                            }
                        }
                    }
                    """,
                macros: macros
            )
        }

        func testActorCallsTheExpirationOnTheActor() {
            assertMacroExpansion(
                """
                actor Store {
                    @Backgroundable(expirationFunc: "flush")
                    func save() async {
                        await write()
                    }
                }
                """,
                expandedSource: """
                    actor Store {
                        func save() async {
                            let __macro_local_9assertionfMu_ = BackgroundTimeAssertion.begin(
                                named: "Store.save",
                                onExpiration: _BackgroundableMacroSupport.actorExpirationHandler(for: self) {
                                    $0.flush()
                                }
                            )
                            defer {
                                __macro_local_9assertionfMu_.end()
                            }
                            await write()
                        }
                    }
                    """,
                macros: macros
            )
        }

        func testMainActorTypeCallsTheExpirationOnTheMainActor() {
            assertMacroExpansion(
                """
                @MainActor
                final class Model {
                    @Backgroundable(expirationFunc: "expired")
                    func refresh() {
                    }
                }
                """,
                expandedSource: """
                    @MainActor
                    final class Model {
                        func refresh() {
                            let __macro_local_9assertionfMu_ = BackgroundTimeAssertion.begin(
                                named: "Model.refresh",
                                onExpiration: _BackgroundableMacroSupport.mainActorExpirationHandler(for: self) {
                                    $0.expired()
                                }
                            )
                            defer {
                                __macro_local_9assertionfMu_.end()
                            }
                        }
                    }
                    """,
                macros: macros
            )
        }

        /// A `nonisolated` type, and a `nonisolated` method of a main-actor type or an
        /// actor, get the plain form: its handler runs the expiration on the isolation it
        /// was formed in (none here). In a main-actor-by-default module, a type without
        /// an annotation expands as `Uploader` above, and its handler runs on the main
        /// actor (`ApproachableConcurrencyTests` compiles and runs each kind).
        func testNonisolatedTypesAndMethodsGetThePlainForm() {
            assertMacroExpansion(
                """
                nonisolated final class Checksummer: Sendable {
                    @Backgroundable(expirationFunc: "expired")
                    func checksum() {
                    }
                }
                @MainActor
                final class Model {
                    @Backgroundable(expirationFunc: "expired")
                    nonisolated func hash() {
                    }
                }
                actor Store {
                    @Backgroundable(expirationFunc: "flush")
                    nonisolated func describe() {
                    }
                }
                """,
                expandedSource: """
                    nonisolated final class Checksummer: Sendable {
                        func checksum() {
                            let __macro_local_9assertionfMu_ = BackgroundTimeAssertion.begin(
                                named: "Checksummer.checksum",
                                onExpiration: _BackgroundableMacroSupport.expirationHandler(for: self) {
                                    $0.expired()
                                }
                            )
                            defer {
                                __macro_local_9assertionfMu_.end()
                            }
                        }
                    }
                    @MainActor
                    final class Model {
                        nonisolated func hash() {
                            let __macro_local_9assertionfMu0_ = BackgroundTimeAssertion.begin(
                                named: "Model.hash",
                                onExpiration: _BackgroundableMacroSupport.expirationHandler(for: self) {
                                    $0.expired()
                                }
                            )
                            defer {
                                __macro_local_9assertionfMu0_.end()
                            }
                        }
                    }
                    actor Store {
                        nonisolated func describe() {
                            let __macro_local_9assertionfMu1_ = BackgroundTimeAssertion.begin(
                                named: "Store.describe",
                                onExpiration: _BackgroundableMacroSupport.expirationHandler(for: self) {
                                    $0.flush()
                                }
                            )
                            defer {
                                __macro_local_9assertionfMu1_.end()
                            }
                        }
                    }
                    """,
                macros: macros
            )
        }

        func testNestedTypeInAnExtensionAndFreeFunction() {
            assertMacroExpansion(
                """
                extension Outer.Inner {
                    @Backgroundable
                    static func work() {
                    }
                }
                @MainActor @Backgroundable(expirationFunc: "cleanUp")
                func topLevel() {
                }
                """,
                expandedSource: """
                    extension Outer.Inner {
                        static func work() {
                            let __macro_local_9assertionfMu_ = BackgroundTimeAssertion.begin(named: "Outer.Inner.work")
                            defer {
                                __macro_local_9assertionfMu_.end()
                            }
                        }
                    }
                    @MainActor
                    func topLevel() {
                        let __macro_local_9assertionfMu0_ = BackgroundTimeAssertion.begin(
                            named: "topLevel",
                            onExpiration: _BackgroundableMacroSupport.mainActorExpirationHandler {
                                cleanUp()
                            }
                        )
                        defer {
                            __macro_local_9assertionfMu0_.end()
                        }
                    }
                    """,
                macros: macros
            )
        }

        func testPropertyNameStoresTheAssertion() {
            assertMacroExpansion(
                """
                @BackgroundableProperty(name: "uploadAssertion")
                public final class Uploader {
                    @Backgroundable(propertyName: "uploadAssertion")
                    func upload() {
                    }
                }
                """,
                expandedSource: """
                    public final class Uploader {
                        func upload() {
                            let __macro_local_9assertionfMu_ = BackgroundTimeAssertion.begin(named: "Uploader.upload")
                            self.uploadAssertion.hold(__macro_local_9assertionfMu_)
                            defer {
                                __macro_local_9assertionfMu_.end()
                                self.uploadAssertion.release(__macro_local_9assertionfMu_)
                            }
                        }

                        /// The background-time assertion held by this object's `@Backgroundable` methods.
                        public let uploadAssertion = BackgroundTimeAssertionSlot()
                    }
                    """,
                macros: macros
            )
        }

        func testPropertyMacroDefaultName() {
            assertMacroExpansion(
                """
                @BackgroundableProperty
                final class Sync {
                }
                """,
                expandedSource: """
                    final class Sync {

                        /// The background-time assertion held by this object's `@Backgroundable` methods.
                        let backgroundTimeAssertion = BackgroundTimeAssertionSlot()
                    }
                    """,
                macros: macros
            )
        }

        // MARK: - Diagnostics

        func testMethodWithoutBody() {
            assertMacroExpansion(
                """
                protocol Uploading {
                    @Backgroundable
                    func upload()
                }
                """,
                expandedSource: """
                    protocol Uploading {
                        func upload()
                    }
                    """,
                diagnostics: [
                    DiagnosticSpec(
                        message: "@Backgroundable needs a body to wrap, but 'upload' has none", line: 3, column: 10)
                ],
                macros: macros
            )
        }

        func testNotAFunction() {
            assertMacroExpansion(
                """
                final class Uploader {
                    @Backgroundable
                    init() {
                    }
                }
                """,
                expandedSource: """
                    final class Uploader {
                        init() {
                        }
                    }
                    """,
                diagnostics: [
                    DiagnosticSpec(
                        message: "@Backgroundable can only be attached to a method or function", line: 2, column: 5)
                ],
                macros: macros
            )
        }

        func testNonLiteralAndInterpolatedArguments() {
            assertMacroExpansion(
                """
                struct S {
                    @Backgroundable(withName: name, expirationFunc: "\\(function)")
                    func work() {
                    }
                }
                """,
                expandedSource: """
                    struct S {
                        func work() {
                        }
                    }
                    """,
                diagnostics: [
                    DiagnosticSpec(
                        message: "'withName:' must be a string literal; the macro reads it at compile time",
                        line: 2,
                        column: 31
                    ),
                    DiagnosticSpec(
                        message:
                            "'expirationFunc:' must be a plain string literal without interpolation; the macro reads it at compile time",
                        line: 2,
                        column: 53
                    ),
                ],
                macros: macros
            )
        }

        func testEmptyName() {
            assertMacroExpansion(
                """
                struct S {
                    @Backgroundable(withName: "")
                    func work() {
                    }
                }
                """,
                expandedSource: """
                    struct S {
                        func work() {
                        }
                    }
                    """,
                diagnostics: [DiagnosticSpec(message: "'withName:' must not be empty", line: 2, column: 31)],
                macros: macros
            )
        }

        func testExpirationFuncThatIsNotAnIdentifierGetsAFixIt() {
            assertMacroExpansion(
                """
                struct S {
                    @Backgroundable(expirationFunc: "self.save()")
                    func work() {
                    }
                }
                """,
                expandedSource: """
                    struct S {
                        func work() {
                        }
                    }
                    """,
                diagnostics: [
                    DiagnosticSpec(
                        message: "'expirationFunc:' must name a member, but \"self.save()\" is not an identifier",
                        line: 2,
                        column: 37,
                        fixIts: [FixItSpec(message: "use \"save\"")]
                    )
                ],
                macros: macros,
                applyFixIts: ["use \"save\""],
                fixedSource: """
                    struct S {
                        @Backgroundable(expirationFunc: "save")
                        func work() {
                        }
                    }
                    """
            )
        }

        func testPropertyMacroOnNonClasses() {
            assertMacroExpansion(
                """
                @BackgroundableProperty
                struct S {
                }
                @BackgroundableProperty
                actor A {
                }
                """,
                expandedSource: """
                    struct S {
                    }
                    actor A {
                    }
                    """,
                diagnostics: [
                    DiagnosticSpec(
                        message:
                            "@BackgroundableProperty can only be attached to a class, not to a struct; declare 'let <name> = BackgroundTimeAssertionSlot()' yourself instead",
                        line: 1,
                        column: 1
                    ),
                    DiagnosticSpec(
                        message:
                            "@BackgroundableProperty can only be attached to a class, not to an actor; declare 'let <name> = BackgroundTimeAssertionSlot()' yourself instead",
                        line: 4,
                        column: 1
                    ),
                ],
                macros: macros
            )
        }

        func testPropertyNameNotDeclaredGetsAFixIt() {
            assertMacroExpansion(
                """
                @BackgroundableProperty(name: "assertion")
                final class C {
                    @Backgroundable(propertyName: "asertion")
                    func work() {
                    }
                }
                """,
                expandedSource: """
                    final class C {
                        func work() {
                        }

                        /// The background-time assertion held by this object's `@Backgroundable` methods.
                        let assertion = BackgroundTimeAssertionSlot()
                    }
                    """,
                diagnostics: [
                    DiagnosticSpec(
                        message:
                            "'propertyName: \"asertion\"' names no property declared by @BackgroundableProperty on 'C' (it declares 'assertion')",
                        line: 3,
                        column: 35,
                        fixIts: [FixItSpec(message: "use \"assertion\"")]
                    )
                ],
                macros: macros,
                applyFixIts: ["use \"assertion\""],
                fixedSource: """
                    @BackgroundableProperty(name: "assertion")
                    final class C {
                        @Backgroundable(propertyName: "assertion")
                        func work() {
                        }
                    }
                    """
            )
        }

        func testPropertyNameWithoutPropertyMacro() {
            assertMacroExpansion(
                """
                final class C {
                    @Backgroundable(propertyName: "assertion")
                    func work() {
                    }
                }
                """,
                expandedSource: """
                    final class C {
                        func work() {
                        }
                    }
                    """,
                diagnostics: [
                    DiagnosticSpec(
                        message:
                            "'propertyName: \"assertion\"' names no property declared by @BackgroundableProperty; add @BackgroundableProperty(name: \"assertion\") to 'C'",
                        line: 2,
                        column: 35
                    )
                ],
                macros: macros
            )
        }
    }
#endif
