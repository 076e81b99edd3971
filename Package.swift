// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "Hook",
    products: [
        .library(name: "Hook", targets: ["Hook"]),
        .executable(name: "hook-demo", targets: ["HookDemo"]),
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
        // C functions the demo hooks, and the bare libffi floor it measures against.
        .target(
            name: "CHookDemoSupport",
            dependencies: ["CFFIShim"]
        ),
        .executableTarget(
            name: "HookDemo",
            dependencies: ["Hook", "CHookDemoSupport"]
        ),
        // Real C functions whose ABI the tests exercise, and a malloc counter.
        .target(
            name: "CHookTestSupport",
            path: "Tests/CHookTestSupport"
        ),
        .testTarget(
            name: "HookTests",
            dependencies: ["Hook", "CFFIShim", "CHookTestSupport"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
