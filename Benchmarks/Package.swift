// swift-tools-version: 6.1
// The benchmarks of Hook and HookBind: a package of its own, so that users of
// the library never build benchmark code. Run from this folder:
//   swift package benchmark --target HookBenchmarks       (hooks, bindings, threads)
//   swift package benchmark --target HookableBenchmarks   (@Hookable; builds swift-syntax)
// and see the Performance article (Sources/Hook/Hook.docc/Performance.md) for the report and chart.
import PackageDescription

let package = Package(
    name: "HookBenchmarks",
    platforms: [.macOS(.v14)],
    dependencies: [
        .package(name: "Hook", path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark", exact: "1.38.1", traits: ["MallocInterposer"]),
        .package(url: "https://github.com/OpenCombine/OpenCombine", exact: "0.14.0"),
        // A real metrics backend for HookObservability's measured() case.
        .package(url: "https://github.com/swift-server/swift-prometheus", exact: "2.4.1"),
    ],
    targets: [
        // The C side of the C cases: the function hooked, the bare libffi
        // floor, and the loop that calls every pointer the same way.
        .target(
            name: "CBenchSupport",
            linkerSettings: [.linkedLibrary("ffi")]
        ),
        .executableTarget(
            name: "HookBenchmarks",
            dependencies: [
                "CBenchSupport",
                .product(name: "Hook", package: "Hook"),
                .product(name: "HookBind", package: "Hook"),
                .product(name: "HookObservability", package: "Hook"),
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "OpenCombine", package: "OpenCombine"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                "ThreadsSuite",
                "BenchSupport",
                "BenchTargets",
                "BenchSwiftSample",
            ],
            path: "Benchmarks/HookBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // @Hookable's costs. It depends on HookMacros, so building it builds
        // swift-syntax in release (3 to 4 minutes on two cores), unless
        // HOOK_MACRO_PLUGIN names a plug-in built already (below; CI does).
        .executableTarget(
            name: "HookableBenchmarks",
            dependencies: [
                .product(name: "HookMacros", package: "Hook"),
                .product(name: "Benchmark", package: "benchmark"),
                "BenchSupport",
            ],
            path: "Benchmarks/HookableBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // What both benchmark targets share: samples, configuration, the footprint measurement.
        .target(
            name: "BenchSupport",
            dependencies: ["CBenchSupport", .product(name: "Benchmark", package: "benchmark")]
        ),
        // The threads suite's cases and its thread pool, for the benchmarks
        // (threads*/...) and for threads-probe.
        .target(
            name: "ThreadsSuite",
            dependencies: [
                "CBenchSupport",
                "ThreadsTable",
                .product(name: "Hook", package: "Hook"),
                .product(name: "HookBind", package: "Hook"),
            ]
        ),
        // Swift code hooked by name (SwiftEntryHook's cases), in a module of its own.
        .target(name: "BenchSwiftSample"),
        // The threads table (cases, targets, Markdown), shared by bench-report and threads-probe.
        .target(name: "ThreadsTable"),
        // The threads suite without package-benchmark: thread counts from the
        // command line; builds with --static-swift-stdlib to run where Swift is not.
        .executableTarget(name: "threads-probe", dependencies: ["ThreadsSuite", "ThreadsTable"], path: "Sources/ThreadsProbe"),
        // One call path in a loop, for instruction counts under callgrind (call-counts.sh).
        .executableTarget(
            name: "call-counts",
            dependencies: ["CBenchSupport", "CallCountsGraph", "BenchSwiftSample", .product(name: "Hook", package: "Hook"), .product(name: "HookBind", package: "Hook")],
            path: "Sources/CallCounts"
        ),
        // call-counts' computed cases, apart (see Diamond.swift).
        .target(name: "CallCountsGraph", dependencies: [.product(name: "HookBind", package: "Hook")], path: "Sources/CallCountsGraph"),
        // Reads one run's export and prints ratios, checks allocations, draws the chart.
        .executableTarget(name: "bench-report", dependencies: ["ThreadsTable", "BenchTargets"], path: "Sources/BenchReport"),
        // The cases' targets, read by bench-report and hook-overhead alike, and
        // the floors the benchmarks and hook-overhead share.
        .target(name: "BenchTargets"),
        // A quick measure of what a hook costs, with those targets (no
        // swift-syntax, no package-benchmark: its first build is Hook's).
        .executableTarget(
            name: "hook-overhead",
            dependencies: ["CBenchSupport", "BenchTargets", .product(name: "Hook", package: "Hook"), .product(name: "HookBind", package: "Hook")],
            path: "Sources/HookOverhead"
        ),
    ],
    swiftLanguageModes: [.v6]
)

// HOOK_MACRO_PLUGIN=PATH (see Hook's Package.swift): the @Hookable plug-in an
// earlier build of Hook made, here too for the benchmarks that expand the
// macro, so that HookableBenchmarks builds in release without swift-syntax
// (seconds, not 3 to 4 minutes). From this folder, after `swift build` in Hook's:
//   HOOK_MACRO_PLUGIN=$PWD/../.build/debug/HookMacrosPlugin-tool \
//     swift package benchmark --target HookableBenchmarks
if let plugin = Context.environment["HOOK_MACRO_PLUGIN"] {
    for target in package.targets where target.name == "HookableBenchmarks" {
        target.swiftSettings = (target.swiftSettings ?? []) + [.unsafeFlags(["-load-plugin-executable", "\(plugin)#HookMacrosPlugin"])]
    }
}
