import Foundation
import Hook
import Testing

/// The calls an entry hook sees, from the probe `swift-entry-reach`: a module
/// (SwiftEntrySample) called from another one, built in debug (by this test
/// run) and in release (built here, in `.build-release`). The probe exits
/// with 1 when what it sees is not what the article documents.
extension SwiftEntrySuites {
@Suite struct ReachTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..").standardized

    /// Runs `arguments` in the package's root; its status and output.
    func run(_ arguments: [String], environment: [String: String] = [:]) throws -> (Int32, String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        process.currentDirectoryURL = Self.root
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    /// The products folder this test bundle was built in.
    var products: URL { URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent() }

    @Test func aDebugBuildSeesEveryCall() throws {
        var probe = products.appendingPathComponent("swift-entry-reach")
        if !FileManager.default.fileExists(atPath: probe.path) { probe = Self.root.appendingPathComponent(".build/debug/swift-entry-reach") }
        let (status, output) = try run([probe.path])
        #expect(status == 0, "\(output)")
        #expect(output.contains("seen (debug)"))
        #expect(output.components(separatedBy: "| yes |").count - 1 == 13, "\(output)")
        #expect(!output.contains("| no |"))
    }

    @Test(.timeLimit(.minutes(10))) func aReleaseBuildSeesWhatTheArticleSays() throws {
        // Without swift-syntax (not needed by the probe): a release build of Hook and the sample, 20 s on a fresh folder.
        let (built, log) = try run(["swift", "build", "-c", "release", "--product", "swift-entry-reach", "--scratch-path", ".build-release"],
                                   environment: ["HOOK_WITHOUT_MACROS": "1"])
        try #require(built == 0, "\(log.suffix(2000))")
        let (status, output) = try run([Self.root.appendingPathComponent(".build-release/release/swift-entry-reach").path])
        #expect(status == 0, "\(output)")
        #expect(output.contains("seen (release)"))
        // The calls a release build still makes: through the vtable, and what is too large to inline.
        #expect(output.contains("| open method, object of unknown class (vtable) | yes |"))
        #expect(output.contains("| free function | no |"))
    }
}
}
