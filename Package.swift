// swift-tools-version: 6.2
import CompilerPluginSupport
import PackageDescription

let package = Package(
    name: "Backgroundable",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .library(name: "Backgroundable", targets: ["Backgroundable"]),
        // What a user's tests need: a test clock, a recording background-task provider,
        // helpers for a queue's events. Depends on nothing but the library.
        .library(name: "BackgroundableTesting", targets: ["BackgroundableTesting"]),
        .executable(name: "backgroundable-bench", targets: ["backgroundable-bench"]),
    ],
    // Every trait is off by default, and only an enabled trait makes the package resolve
    // and build the package it needs: the default build depends on nothing.
    traits: [
        .trait(
            name: "Macros", description: "The @Backgroundable and @BackgroundableProperty macros (needs swift-syntax)."),
        .trait(
            name: "ServiceLifecycle",
            description: "BackgroundQueueService, queues as a swift-service-lifecycle Service."),
        .trait(name: "Metrics", description: "Queue gauges, outcome counters and timers through swift-metrics."),
        .trait(name: "Tracing", description: "A span per unit through swift-distributed-tracing."),
        .trait(
            name: "Postgres",
            description: "PostgresJobStore, durable jobs in PostgreSQL shared by server replicas (needs postgres-nio)."),
    ],
    dependencies: [
        .package(url: "https://github.com/swiftlang/swift-syntax.git", "602.0.0"..<"604.0.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.6.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.1.0"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.21.0"),
    ],
    targets: [
        .target(
            name: "Backgroundable",
            dependencies: [
                .target(name: "BackgroundableMacros", condition: .when(traits: ["Macros"])),
                .product(
                    name: "ServiceLifecycle", package: "swift-service-lifecycle",
                    condition: .when(traits: ["ServiceLifecycle"])),
                .product(name: "Metrics", package: "swift-metrics", condition: .when(traits: ["Metrics"])),
                .product(name: "Tracing", package: "swift-distributed-tracing", condition: .when(traits: ["Tracing"])),
                .product(name: "PostgresNIO", package: "postgres-nio", condition: .when(traits: ["Postgres"])),
                .product(name: "Logging", package: "swift-log", condition: .when(traits: ["Postgres"])),
            ]
        ),
        .target(name: "BackgroundableTesting", dependencies: ["Backgroundable"]),
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
                .target(name: "BackgroundableTesting"),
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
        .testTarget(
            name: "BackgroundableTests",
            dependencies: [
                "Backgroundable",
                "BackgroundableTesting",
                .product(
                    name: "ServiceLifecycle", package: "swift-service-lifecycle",
                    condition: .when(traits: ["ServiceLifecycle"])),
                .product(name: "MetricsTestKit", package: "swift-metrics", condition: .when(traits: ["Metrics"])),
                .product(
                    name: "InMemoryTracing", package: "swift-distributed-tracing", condition: .when(traits: ["Tracing"])
                ),
                .product(
                    name: "Logging", package: "swift-log", condition: .when(traits: ["ServiceLifecycle", "Postgres"])),
                .product(name: "PostgresNIO", package: "postgres-nio", condition: .when(traits: ["Postgres"])),
            ]
        ),
        // An app module as Xcode 26 creates them (approachable concurrency): it compiles
        // only if the package is usable there as the README shows, and its tests check
        // where the closures run.
        .testTarget(
            name: "ApproachableConcurrencyTests",
            dependencies: ["Backgroundable", "BackgroundableTesting"],
            swiftSettings: [
                .defaultIsolation(MainActor.self),
                .enableUpcomingFeature("NonisolatedNonsendingByDefault"),
                .enableUpcomingFeature("InferIsolatedConformances"),
            ]
        ),
        .executableTarget(
            name: "backgroundable-bench",
            dependencies: [
                "Backgroundable",
                .product(name: "Metrics", package: "swift-metrics", condition: .when(traits: ["Metrics"])),
                .product(name: "PostgresNIO", package: "postgres-nio", condition: .when(traits: ["Postgres"])),
            ],
            path: "Benchmarks/backgroundable-bench"
        ),
        .target(
            name: "ShutdownFixtureKit", dependencies: ["Backgroundable"], path: "Tests/Fixtures/ShutdownFixtureKit"),
        .executableTarget(
            name: "graceful-shutdown-fixture", dependencies: ["Backgroundable", "ShutdownFixtureKit"],
            path: "Tests/Fixtures/graceful-shutdown-fixture"),
        // A process that adds and runs durable jobs until a test kills it (DurableCrashTests;
        // with the `Postgres` trait, also a replica on a shared table: PostgresReplicaTests).
        .executableTarget(
            name: "durable-fixture",
            dependencies: [
                "Backgroundable",
                .product(name: "PostgresNIO", package: "postgres-nio", condition: .when(traits: ["Postgres"])),
            ],
            path: "Tests/Fixtures/durable-fixture"),
        // A process whose cooperative pool a test blocks (BlockedPoolTests).
        .executableTarget(
            name: "blocked-pool-fixture", dependencies: ["Backgroundable"], path: "Tests/Fixtures/blocked-pool-fixture"),
        // The same server under a real ServiceGroup (`ServiceLifecycle` trait; without it
        // the fixture only says so).
        .executableTarget(
            name: "service-lifecycle-fixture",
            dependencies: [
                "Backgroundable",
                "ShutdownFixtureKit",
                .product(
                    name: "ServiceLifecycle", package: "swift-service-lifecycle",
                    condition: .when(traits: ["ServiceLifecycle"])),
                .product(
                    name: "UnixSignals", package: "swift-service-lifecycle",
                    condition: .when(traits: ["ServiceLifecycle"])),
                .product(name: "Logging", package: "swift-log", condition: .when(traits: ["ServiceLifecycle"])),
            ],
            path: "Tests/Fixtures/service-lifecycle-fixture"),
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
