// Import hooks: an imported call with no hook point, with one and no hooks,
// with one after hook, and the time to patch one symbol in every loaded object.
//
// The imported call: glibc's strdup reaches malloc through libc's own PLT slot
// (glibc calls its allocator through the PLT so that it can be replaced), so
// each strdup + free is one call through a GOT slot that an ImportHook on
// malloc, limited to libc.so.6, takes over. The hook point is installed in a
// case's setup and restored in its teardown, so the other cases never see it.
import BenchSupport
import Benchmark
import Foundation
import Hook

private let mallocSignature = Signature(returning: UnsafeMutableRawPointer?.self, arguments: Int.self)

/// `n` times strdup + free: `n` calls of malloc through libc's GOT.
@inline(never) func strdupLoop(_ n: Int) -> Int {
    var total = 0
    for _ in 0..<n {
        let copy = strdup("x")!
        total &+= Int(copy.pointee)
        free(copy)
    }
    return total
}

/// A strdup case; `install` runs in setup and returns the hook point that teardown restores.
private func importCase(_ name: String, _ configuration: Benchmark.Configuration, install: @escaping () throws -> ImportHook?) {
    nonisolated(unsafe) var installed: ImportHook?
    Benchmark(name, configuration: configuration) { benchmark in
        for _ in benchmark.scaledIterations { blackHole(strdupLoop(callsPerSample)) }
    } setup: {
        installed = try install()
    } teardown: {
        try installed?.restore()
        installed = nil
    }
}

func importBenchmarks(_ configuration: Benchmark.Configuration) {
    importCase("import/direct: strdup + free, libc's malloc slot untouched", configuration) { nil }
    importCase("import/none: strdup + free, ImportHook on malloc in libc.so.6, no hooks", configuration) {
        try ImportHook(symbol: "malloc", signature: mallocSignature, in: ["libc.so.6"])
    }
    importCase("import/after: strdup + free, ImportHook on malloc in libc.so.6, one after hook", configuration) {
        let hook = try ImportHook(symbol: "malloc", signature: mallocSignature, in: ["libc.so.6"])
        hook.after { call in
            if try call.result(as: UnsafeMutableRawPointer?.self) == nil { print("unreachable") }
        }
        return hook
    }
    importCase("import/typed: strdup + free, ImportHook on malloc in libc.so.6, one typed after hook (afterReturning)", configuration) {
        let hook = try ImportHook(symbol: "malloc", signature: mallocSignature, in: ["libc.so.6"])
        try hook.afterReturning { (block: UnsafeMutableRawPointer?, _: Int) in
            if block == nil { print("unreachable") }
        }
        return hook
    }

    // Patching: every JUMP_SLOT / GLOB_DAT / R_X86_64_64 naming getenv in every
    // loaded object and its symbol-table entry, then restore(): one "call" is one
    // install + restore pair. The first request makes the trampoline; every
    // later one reuses it, as a process that hooks and unhooks would.
    var patchConfiguration = configuration
    patchConfiguration.maxIterations = smoke ? 2 : 50
    let getenvSignature = Signature(returning: UnsafeMutablePointer<CChar>?.self, arguments: UnsafePointer<CChar>?.self)
    Benchmark("import/patch: ImportHook(symbol: \"getenv\") + restore(), every loaded object", configuration: patchConfiguration) { benchmark in
        for _ in benchmark.scaledIterations {
            for _ in 0..<callsPerSample {
                let hook = try ImportHook(symbol: "getenv", signature: getenvSignature)
                try hook.restore()
            }
        }
    }
}
