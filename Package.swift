// swift-tools-version: 6.1
import CompilerPluginSupport
import PackageDescription

let package = Package(
    name: "Hook",
    products: [
        .library(name: "Hook", targets: ["Hook"]),
        .library(name: "HookBind", targets: ["HookBind"]),
        // @Hookable and @Unhooked: a product of their own, so that a user of
        // Hook alone never builds swift-syntax.
        .library(name: "HookMacros", targets: ["HookMacros"]),
        // Hooked calls as spans, metrics and log lines (swift-distributed-tracing,
        // swift-metrics, swift-log): a product of its own, so that a user of
        // Hook alone builds none of them.
        .library(name: "HookObservability", targets: ["HookObservability"]),
        .executable(name: "hook-demo", targets: ["HookDemo"]),
        // hook-trace: what a program calls, as ltrace and uftrace show it; the
        // launcher and the library it preloads (C only: a traced program loads
        // no Swift runtime).
        .executable(name: "hook-trace", targets: ["HookTraceLauncher"]),
        .executable(name: "swift-entry-reach", targets: ["SwiftEntryReach"]),
        .library(name: "HookTrace", type: .dynamic, targets: ["CHookTrace"]),
    ],
    dependencies: [
        // `swift package generate-documentation` (the DocC catalogs in Sources/*/*.docc).
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", exact: "1.5.0"),
        .package(url: "https://github.com/swiftlang/swift-syntax", exact: "603.0.1"),
        .package(url: "https://github.com/apple/swift-distributed-tracing", exact: "1.7.3"),
        .package(url: "https://github.com/apple/swift-metrics", exact: "2.13.0"),
        .package(url: "https://github.com/apple/swift-log", exact: "1.16.2"),
        // Tests only: the Prometheus text exposition of hooked calls' metrics.
        .package(url: "https://github.com/swift-server/swift-prometheus", exact: "2.4.1"),
    ],
    targets: [
        // C only, one module per concern. libffi (<ffi.h>, the link), the
        // native entries and direct calls of integer-class originals.
        .target(
            name: "CFFIShim",
            linkerSettings: [.linkedLibrary("ffi")]
        ),
        // The per-thread state of the call path (frames, reentrancy guard),
        // words written once, references that keep only an object's memory.
        .target(name: "CHookThreads"),
        // GOT slots and symbol-table entries, for import hooks.
        .target(name: "CImportSlots"),
        // HookBind's per-thread state (the change being delivered, the lock record).
        .target(name: "CHookBindThread", dependencies: ["CHookThreads"]),
        // C only: entry hooks (symbol lookup, the relocator on Zydis, the
        // patching protocol). Debian: libzydis-dev.
        .target(
            name: "CEntryHooks",
            dependencies: ["CHookThreads"],
            linkerSettings: [.linkedLibrary("Zydis")]
        ),
        // hook-trace's preloaded library: the tracing stub, the call lines and
        // the summary, on the entry and import patching above.
        .target(
            name: "CHookTrace",
            dependencies: ["CEntryHooks", "CImportSlots"]
        ),
        .executableTarget(name: "HookTraceLauncher"),
        .target(
            name: "Hook",
            dependencies: ["CFFIShim", "CHookThreads", "CImportSlots", "CEntryHooks"]
        ),
        // Bindings made of hook points: Fish, Binding, Transformer.
        .target(
            name: "HookBind",
            dependencies: ["Hook", "CHookBindThread"]
        ),
        // Spans, metrics and log lines of hooked calls.
        .target(
            name: "HookObservability",
            dependencies: [
                "Hook",
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The compiler plug-in that expands @Hookable (swift-syntax).
        .macro(
            name: "HookMacrosPlugin",
            dependencies: [
                .product(name: "SwiftSyntaxMacros", package: "swift-syntax"),
                .product(name: "SwiftCompilerPlugin", package: "swift-syntax"),
                .product(name: "SwiftSyntaxBuilder", package: "swift-syntax"),
                .product(name: "SwiftDiagnostics", package: "swift-syntax"),
            ]
        ),
        // The macro declarations, and the runtime pieces their expansions call.
        .target(
            name: "HookMacros",
            dependencies: ["Hook", "HookMacrosPlugin"]
        ),
        // C functions the demo hooks.
        .target(
            name: "CHookDemoSupport"
        ),
        // Plain Swift code in a module of its own, which the demo hooks by name.
        .target(name: "HookDemoShop"),
        .executableTarget(
            name: "HookDemo",
            dependencies: ["Hook", "HookBind", "HookMacros", "CHookDemoSupport", "HookDemoShop"],
            // The import-hook tour watches SQLite (Debian: libsqlite3-dev).
            linkerSettings: [.linkedLibrary("sqlite3")]
        ),
        // Real C functions whose ABI the tests exercise, and a malloc counter;
        // SQLite and zlib, system libraries whose imports the ImportHook tests take over.
        .target(
            name: "CHookTestSupport",
            path: "Tests/CHookTestSupport",
            linkerSettings: [.linkedLibrary("sqlite3"), .linkedLibrary("z")]
        ),
        .testTarget(
            name: "HookTests",
            dependencies: ["Hook", "CFFIShim", "CHookThreads", "CImportSlots", "CHookTestSupport", "SwiftEntrySample"]
        ),
        .testTarget(
            name: "HookBindTests",
            dependencies: ["Hook", "HookBind", "CHookTestSupport"]
        ),
        // Swift code that did not opt in, in its own module: SwiftEntryHook's tests hook it by name.
        .target(name: "SwiftEntrySample", path: "Tests/SwiftEntrySample"),
        // Which calls an entry hook sees, debug or release (the article's table).
        .executableTarget(name: "SwiftEntryReach", dependencies: ["Hook", "SwiftEntrySample"], path: "Tests/SwiftEntryReach"),
        .testTarget(
            name: "SwiftEntryTests",
            dependencies: ["Hook", "HookBind", "SwiftEntrySample", "SwiftEntryReach"]
        ),
        // A C program whose calls hook-trace's tests trace (loops, SQLite, threads, fork, exec).
        .executableTarget(
            name: "HookTraceSample",
            path: "Tests/HookTraceSample",
            linkerSettings: [.linkedLibrary("sqlite3")]
        ),
        // A Swift program for hook-trace's tests (demangled names).
        .executableTarget(name: "HookTraceSwiftSample", path: "Tests/HookTraceSwiftSample"),
        // hook-trace against the samples, and beside ltrace and uftrace.
        .testTarget(
            name: "HookTraceTests",
            dependencies: ["HookTraceLauncher", "HookTraceSample", "HookTraceSwiftSample", "CHookTrace", "CHookTestSupport"]
        ),
        // What @Hookable expands to, and the diagnostics it gives (swift-syntax's assertMacroExpansion).
        .testTarget(
            name: "HookMacrosExpansionTests",
            dependencies: [
                "HookMacrosPlugin",
                .product(name: "SwiftSyntaxMacroExpansion", package: "swift-syntax"),
                .product(name: "SwiftSyntaxMacrosGenericTestSupport", package: "swift-syntax"),
            ]
        ),
        // HookObservability with the in-memory tracer and the metrics test kit.
        .testTarget(
            name: "HookObservabilityTests",
            dependencies: [
                "Hook", "HookObservability", "CHookTestSupport",
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]
        ),
        // @Hookable classes and actors through the public API; async hook points.
        .testTarget(
            name: "HookableTests",
            dependencies: ["Hook", "HookBind", "HookMacros", "CHookTestSupport"]
        ),
    ],
    swiftLanguageModes: [.v6]
)

/// Leaves swift-syntax out of the package (both knobs below).
@MainActor func removeSwiftSyntax() {
    package.dependencies.removeAll {
        if case .sourceControl(_, let location, _) = $0.kind { return "\(location)".contains("swift-syntax") }
        return false
    }
}
/// Whether `dependency` is the package's own target `name`.
func names(_ dependency: Target.Dependency, _ name: String) -> Bool {
    if case .byNameItem(let named, _) = dependency { return named == name }
    return false
}

// HOOK_MACRO_PLUGIN=PATH takes the @Hookable plug-in from PATH, an executable
// an earlier build made (.build/debug/HookMacrosPlugin-tool), instead of building
// it and swift-syntax again: CI's ThreadSanitizer run, in a scratch folder of its
// own, then runs the @Hookable tests and the demo without 90 s of swift-syntax
// (and so does its AddressSanitizer run).
// The expansion tests, which link swift-syntax, are left out (`swift test` runs them).
if let plugin = Context.environment["HOOK_MACRO_PLUGIN"] {
    package.targets.removeAll { ["HookMacrosPlugin", "HookMacrosExpansionTests"].contains($0.name) }
    removeSwiftSyntax()
    for target in package.targets where target.name == "HookMacros" || target.dependencies.contains(where: { names($0, "HookMacros") }) {
        target.dependencies.removeAll { names($0, "HookMacrosPlugin") }
        target.swiftSettings = (target.swiftSettings ?? []) + [.unsafeFlags(["-load-plugin-executable", "\(plugin)#HookMacrosPlugin"])]
    }
}

// HOOK_WITHOUT_MACROS=1 leaves out what needs swift-syntax (the macros, their
// tests, and the demo, which uses them): the release build of the entry-hook
// reach probe (SwiftEntryTests' ReachTests) then builds no swift-syntax.
if Context.environment["HOOK_WITHOUT_MACROS"] != nil {
    let needsMacros: Set = ["HookMacros", "HookMacrosPlugin", "HookMacrosExpansionTests", "HookableTests", "HookDemo", "HookDemoShop"]
    package.products.removeAll { needsMacros.contains($0.name) || $0.name == "hook-demo" }
    package.targets.removeAll { needsMacros.contains($0.name) }
    removeSwiftSyntax()
}
