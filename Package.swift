// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "Backgroundable",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .library(name: "Backgroundable", targets: ["Backgroundable"]),
        .executable(name: "backgroundable-bench", targets: ["backgroundable-bench"]),
    ],
    targets: [
        .target(name: "Backgroundable"),
        .testTarget(name: "BackgroundableTests", dependencies: ["Backgroundable"]),
        .executableTarget(
            name: "backgroundable-bench",
            dependencies: ["Backgroundable"],
            path: "Benchmarks/backgroundable-bench"
        ),
    ],
    swiftLanguageModes: [.v6]
)

// The same strict settings for every target.
for target in package.targets {
    target.swiftSettings = (target.swiftSettings ?? []) + [
        .enableUpcomingFeature("ExistentialAny"),
        .enableUpcomingFeature("MemberImportVisibility"),
        .enableUpcomingFeature("InternalImportsByDefault"),
    ]
}
