// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "Hook",
    products: [
        .library(name: "Hook", targets: ["Hook"]),
        .library(name: "HookBind", targets: ["HookBind"]),
        .executable(name: "hook-demo", targets: ["HookDemo"]),
    ],
    dependencies: [
        // `swift package generate-documentation` (the DocC catalogs in Sources/*/*.docc).
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", exact: "1.5.0"),
    ],
    targets: [
        // C only: <ffi.h>, the libffi link and the per-thread hook state.
        .target(
            name: "CFFIShim",
            linkerSettings: [.linkedLibrary("ffi")]
        ),
        .target(
            name: "Hook",
            dependencies: ["CFFIShim"]
        ),
        // Bindings made of hook points: Fish, Binding, Transformer.
        .target(
            name: "HookBind",
            dependencies: ["Hook"]
        ),
        // C functions the demo hooks, and the bare libffi floor it measures against.
        .target(
            name: "CHookDemoSupport",
            dependencies: ["CFFIShim"]
        ),
        .executableTarget(
            name: "HookDemo",
            dependencies: ["Hook", "HookBind", "CHookDemoSupport"],
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
            dependencies: ["Hook", "CFFIShim", "CHookTestSupport"]
        ),
        .testTarget(
            name: "HookBindTests",
            dependencies: ["Hook", "HookBind", "CHookTestSupport"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
