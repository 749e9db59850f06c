// swift-tools-version: 6.2
// Type-checks every Swift code block of the README and the DocC catalog twice: in a
// Swift 6 module and in an approachable-concurrency module (what Xcode 26 creates).
// `.ci/doc-blocks.sh` writes the blocks into the two targets, next to the app's stubs
// (Stubs/AppStubs.swift), then builds this package.
import PackageDescription

let backgroundable: Target.Dependency = .product(name: "Backgroundable", package: "Backgroundable")

let package = Package(
    name: "DocBlocks",
    platforms: [.macOS(.v15), .iOS(.v18)],
    dependencies: [
        .package(name: "Backgroundable", path: "../..", traits: ["Macros"])
    ],
    targets: [
        .testTarget(name: "Swift6Blocks", dependencies: [backgroundable]),
        .testTarget(
            name: "ApproachableBlocks",
            dependencies: [backgroundable],
            swiftSettings: [
                .defaultIsolation(MainActor.self),
                .enableUpcomingFeature("NonisolatedNonsendingByDefault"),
                .enableUpcomingFeature("InferIsolatedConformances"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
