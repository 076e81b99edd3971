// swift-tools-version: 6.1
// Every Swift code block of the README and of the DocC articles, compiled as a
// user's package would compile it: a package of its own that depends on Hook
// by path, exactly as the README's installation section says. `generate.py`
// writes Sources/DocSnippets/Generated from the documents; `.ci/run` checks
// that they are current and that this package builds with no warning.
import PackageDescription

let package = Package(
    name: "DocSnippets",
    dependencies: [
        .package(name: "Hook", path: ".."),
    ],
    targets: [
        // C declarations the examples use as a C library's: `struct Pair`, `add`.
        .target(name: "CDocSnippets"),
        .target(
            name: "DocSnippets",
            dependencies: [
                .product(name: "Hook", package: "Hook"),
                .product(name: "HookBind", package: "Hook"),
                .product(name: "HookMacros", package: "Hook"),
                .product(name: "HookObservability", package: "Hook"),
                "CDocSnippets",
            ],
            // The import-hook examples name SQLite's library.
            linkerSettings: [.linkedLibrary("sqlite3")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
