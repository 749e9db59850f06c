// swift-tools-version: 6.2
import CompilerPluginSupport
import PackageDescription

let package = Package(
    name: "Backgroundable",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .library(name: "Backgroundable", targets: ["Backgroundable"]),
        .executable(name: "backgroundable-bench", targets: ["backgroundable-bench"]),
    ],
    // `Macros` (off by default) adds `@Backgroundable` and `@BackgroundableProperty`.
    // Only with it enabled does the package resolve and build swift-syntax.
    traits: [
        .trait(
            name: "Macros", description: "The @Backgroundable and @BackgroundableProperty macros (needs swift-syntax).")
    ],
    dependencies: [
        .package(url: "https://github.com/swiftlang/swift-syntax.git", "602.0.0"..<"604.0.0")
    ],
    targets: [
        .target(
            name: "Backgroundable",
            dependencies: [
                .target(name: "BackgroundableMacros", condition: .when(traits: ["Macros"]))
            ]
        ),
        .macro(
            name: "BackgroundableMacros",
            dependencies: [
                .product(name: "SwiftSyntax", package: "swift-syntax", condition: .when(traits: ["Macros"])),
                .product(name: "SwiftParser", package: "swift-syntax", condition: .when(traits: ["Macros"])),
                .product(name: "SwiftSyntaxBuilder", package: "swift-syntax", condition: .when(traits: ["Macros"])),
                .product(name: "SwiftSyntaxMacros", package: "swift-syntax", condition: .when(traits: ["Macros"])),
                .product(name: "SwiftCompilerPlugin", package: "swift-syntax", condition: .when(traits: ["Macros"])),
                .product(name: "SwiftDiagnostics", package: "swift-syntax", condition: .when(traits: ["Macros"])),
            ]
        ),
        .testTarget(
            name: "BackgroundableMacroTests",
            dependencies: [
                .target(name: "Backgroundable"),
                .target(name: "BackgroundableMacros", condition: .when(traits: ["Macros"])),
                .product(
                    name: "SwiftSyntaxMacrosTestSupport", package: "swift-syntax", condition: .when(traits: ["Macros"])
                ),
                .product(
                    name: "SwiftSyntaxMacrosGenericTestSupport", package: "swift-syntax",
                    condition: .when(traits: ["Macros"])
                ),
                .product(name: "SwiftSyntaxMacros", package: "swift-syntax", condition: .when(traits: ["Macros"])),
            ]
        ),
        .testTarget(name: "BackgroundableTests", dependencies: ["Backgroundable"]),
        // An app module as Xcode 26 creates them (approachable concurrency): it compiles
        // only if the package is usable there as the README shows, and its tests check
        // where the closures run.
        .testTarget(
            name: "ApproachableConcurrencyTests",
            dependencies: ["Backgroundable"],
            swiftSettings: [
                .defaultIsolation(MainActor.self),
                .enableUpcomingFeature("NonisolatedNonsendingByDefault"),
                .enableUpcomingFeature("InferIsolatedConformances"),
            ]
        ),
        .executableTarget(
            name: "backgroundable-bench",
            dependencies: ["Backgroundable"],
            path: "Benchmarks/backgroundable-bench"
        ),
        .executableTarget(
            name: "graceful-shutdown-fixture", dependencies: ["Backgroundable"],
            path: "Tests/Fixtures/graceful-shutdown-fixture"),
    ],
    swiftLanguageModes: [.v6]
)

// The same strict settings for every target.
for target in package.targets {
    target.swiftSettings =
        (target.swiftSettings ?? []) + [
            .enableUpcomingFeature("ExistentialAny"),
            .enableUpcomingFeature("MemberImportVisibility"),
            .enableUpcomingFeature("InternalImportsByDefault"),
        ]
}
