// swift-tools-version: 6.2

import PackageDescription

let package = Package(
    name: "swift-resilience",
    platforms: [
        // Synchronization's Atomic needs these on Apple systems.
        .macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2),
    ],
    products: [
        .library(name: "Resilience", targets: ["Resilience"]),
        .library(name: "ResilienceURLSession", targets: ["ResilienceURLSession"]),
        .library(name: "ResilienceTesting", targets: ["ResilienceTesting"]),
        .executable(name: "resilience-benchmarks", targets: ["ResilienceBenchmarks"]),
    ],
    targets: [
        .target(name: "Resilience"),
        // The URLSession helpers, apart so that the core links no FoundationNetworking (libcurl) on Linux.
        .target(name: "ResilienceURLSession", dependencies: ["Resilience"]),
        .target(name: "ResilienceTesting", dependencies: ["Resilience"]),
        .executableTarget(
            name: "ResilienceBenchmarks",
            dependencies: ["Resilience", "ResilienceTesting", "MallocCounter"],
            path: "Benchmarks/ResilienceBenchmarks"
        ),
        // The system's libsqlite3, linked by the tests alone; the library only knows result codes.
        .systemLibrary(
            name: "CSQLite",
            path: "Tests/CSQLite",
            providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite"])]
        ),
        // Counts heap allocations for the benchmark executable; nothing else links it.
        .target(name: "MallocCounter", path: "Benchmarks/MallocCounter"),
        .testTarget(
            name: "ResilienceTests",
            dependencies: ["Resilience", "ResilienceURLSession", "ResilienceTesting", "CSQLite"],
            exclude: ["Integrations/Live/Fixtures"]
        ),
    ],
    swiftLanguageModes: [.v6]
)

// The system library and the C allocation counter take no Swift settings.
for target in package.targets where target.type != .system && target.name != "MallocCounter" {
    var settings = target.swiftSettings ?? []
    // Spell existential types `any P`, so their cost is visible.
    settings.append(.enableUpcomingFeature("ExistentialAny"))
    // A file sees only the modules it imports itself.
    settings.append(.enableUpcomingFeature("MemberImportVisibility"))
    // Imports are internal unless marked public, so dependencies do not leak.
    settings.append(.enableUpcomingFeature("InternalImportsByDefault"))
    target.swiftSettings = settings
}
