import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Hook
import Testing

/// The calls an entry hook sees, from the probe `swift-entry-reach`: a module
/// (SwiftEntrySample) called from another one, built in debug (by this test
/// run) and in release (built here, in `.build-release`). The probe exits
/// with 1 when what it sees is not what the article documents.
/// Not one of `SwiftEntrySuites` (one at a time): the probes hook functions
/// in processes of their own, so this suite, a release build for the most
/// part (half a minute), runs beside the others.
@Suite(.enabled(if: EntryHook.isAvailable))
struct ReachTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..").standardized

    /// Runs `arguments` in the package's root; its status and output (in a
    /// file). With `posix_spawn`: Foundation's `Process.run()` leaves a weak
    /// reference's side table that LeakSanitizer reports.
    func run(_ arguments: [String], environment: [String: String] = [:]) throws -> (Int32, String) {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("swift-entry-reach-\(getpid())-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: output) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let variables = ProcessInfo.processInfo.environment.merging(environment) { $1 }.map { "\($0.key)=\($0.value)" }
        let argv = (["/usr/bin/env", "-C", Self.root.path] + arguments).map { strdup($0) } + [nil]
        let envp = variables.map { strdup($0) } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, "/usr/bin/env", &actions, nil, argv, envp)
        guard spawned == 0 else { throw POSIXError(POSIXErrorCode(rawValue: spawned) ?? .EINVAL) }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        // WIFEXITED: the low 7 bits are 0; then the status is in bits 8-15.
        let code = status & 0x7f == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        return (code, (try? String(contentsOfFile: output, encoding: .utf8)) ?? "")
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

    /// (Not under AddressSanitizer: the release probe is not instrumented,
    /// so that run would only repeat the plain run's check.)
    @Test(.timeLimit(.minutes(10)), .enabled(if: dlsym(nil, "__asan_init") == nil, "the release probe is not instrumented"))
    func aReleaseBuildSeesWhatTheArticleSays() throws {
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
