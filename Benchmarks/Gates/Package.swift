// swift-tools-version: 6.2
import Foundation
import PackageDescription

// Deterministic performance gates: allocations and instructions per unit, checked
// against Benchmarks/Gates/thresholds.txt. A package of its own, so that the root
// package's default build still resolves no package. Run it in release mode:
//
//     swift run -c release --package-path Benchmarks/Gates backgroundable-gates
//
// A path dependency's identity is its folder's name, which is the clone's name.
let root = URL(fileURLWithPath: Context.packageDirectory).deletingLastPathComponent().deletingLastPathComponent()

let package = Package(
    name: "BackgroundableGates",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(path: root.path),
        .package(url: "https://github.com/ordo-one/malloc-interposer", from: "1.6.1"),
    ],
    targets: [
        // Callgrind's client requests (zero the counters, dump them), or no-ops when
        // valgrind's headers were missing at build time.
        // DWARF 4: valgrind 3.19 (Debian 12) cannot read clang's default DWARF 5.
        .target(name: "CallgrindClient", cSettings: [.unsafeFlags(["-gdwarf-4"])]),
        .target(
            name: "GateShapes", dependencies: [.product(name: "Backgroundable", package: root.lastPathComponent)]),
        // Runs the gates, and counts allocations (in a child process of its own, through
        // the interposer it links ahead of the C library's malloc).
        .executableTarget(
            name: "backgroundable-gates",
            dependencies: [
                "GateShapes", "backgroundable-gates-instructions",
                .product(name: "MallocInterposerSwift", package: "malloc-interposer"),
            ]
        ),
        // Counts instructions, under callgrind, for `backgroundable-gates`. It does not
        // link the interposer, so callgrind counts the C library's malloc.
        .executableTarget(name: "backgroundable-gates-instructions", dependencies: ["GateShapes", "CallgrindClient"]),
    ],
    swiftLanguageModes: [.v6]
)

for target in package.targets where target.name != "CallgrindClient" {
    target.swiftSettings =
        (target.swiftSettings ?? []) + [
            .enableUpcomingFeature("ExistentialAny"),
            .enableUpcomingFeature("MemberImportVisibility"),
            .enableUpcomingFeature("InternalImportsByDefault"),
        ]
}
