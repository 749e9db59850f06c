// swift-tools-version: 6.2
// Type-checks every Swift code block of the README and the DocC catalog twice: in a
// Swift 6 module and in an approachable-concurrency module (what Xcode 26 creates).
// `.ci/doc-blocks.sh` writes the blocks into the two targets, next to the app's stubs
// (Stubs/AppStubs.swift), then builds this package.
import PackageDescription

// The blocks see the package with every trait on, as the articles about them show it.
let dependencies: [Target.Dependency] = [
    .product(name: "Backgroundable", package: "Backgroundable"),
    .product(name: "BackgroundableTesting", package: "Backgroundable"),
    .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
    .product(name: "Logging", package: "swift-log"),
    .product(name: "Metrics", package: "swift-metrics"),
    .product(name: "Tracing", package: "swift-distributed-tracing"),
    .product(name: "PostgresNIO", package: "postgres-nio"),
]

let package = Package(
    name: "DocBlocks",
    platforms: [.macOS(.v15), .iOS(.v18)],
    dependencies: [
        .package(
            name: "Backgroundable", path: "../..",
            traits: ["Macros", "ServiceLifecycle", "Metrics", "Tracing", "Postgres"]),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.6.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.1.0"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.21.0"),
    ],
    targets: [
        .testTarget(name: "Swift6Blocks", dependencies: dependencies),
        .testTarget(
            name: "ApproachableBlocks",
            dependencies: dependencies,
            swiftSettings: [
                .defaultIsolation(MainActor.self),
                .enableUpcomingFeature("NonisolatedNonsendingByDefault"),
                .enableUpcomingFeature("InferIsolatedConformances"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
