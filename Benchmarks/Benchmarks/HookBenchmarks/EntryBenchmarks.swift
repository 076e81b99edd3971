// Entry hooks: `add` called directly from a C loop (no pointer to install:
// the function itself is patched), with no hook, one after hook, before +
// after; and what patching and unpatching an entry costs.
import BenchSupport
import Benchmark
import CBenchSupport
import Hook

func entryBenchmarks(_ configuration: Benchmark.Configuration) {
    let signature = Signature(returning: Int64.self, arguments: Int64.self, Int64.self)
    let hook = try! EntryHook(address: unsafeBitCast(bench_add_entry as BinaryOp, to: UnsafeRawPointer.self), signature: signature, name: "bench_add_entry")
    try! hook.uninstall()

    /// A case that calls bench_add_entry from a C loop with the entry patched
    /// and `setUp`'s hooks (none installed outside the case).
    func entryCase(_ name: String, patched: Bool, _ setUp: @escaping (EntryHook) -> Void) {
        Benchmark(name, configuration: configuration) { benchmark in
            hook.removeAllHooks()
            setUp(hook)
            if patched { try hook.install() }
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations { blackHole(bench_call_loop(bench_add_entry, Int64(callsPerSample))) }
            benchmark.stopMeasurement()
            try hook.uninstall()
            hook.removeAllHooks()
        }
    }

    entryCase("entry/direct: add, direct call, entry not patched", patched: false) { _ in }
    entryCase("entry/none: add, EntryHook, no hooks", patched: true) { _ in }
    entryCase("entry/after: add, EntryHook, one after hook reading the result", patched: true) { hook in
        hook.after { call in
            if try call.result(as: Int64.self) == -1 { print("unreachable") }
        }
    }
    entryCase("entry/typed: add, EntryHook, one typed after hook (afterReturning)", patched: true) { hook in
        try! hook.afterReturning { (sum: Int64, _: Int64, _: Int64) in
            if sum == -1 { print("unreachable") }
        }
    }
    entryCase("entry/both: add, EntryHook, before + after reading typed arguments", patched: true) { hook in
        hook.before { call in
            let a = try call.argument(0, as: Int64.self), b = try call.argument(1, as: Int64.self)
            if a == -1, b == -1 { print("unreachable") }
        }
        hook.after { call in
            if try call.result(as: Int64.self) == -1 { print("unreachable") }
        }
    }

    // One "call" is one install + uninstall pair: each writes the entry with
    // the int3 protocol (three core-serializing membarriers), and the install
    // interrupts every other thread once (SIGPROF).
    var patchConfiguration = configuration
    patchConfiguration.maxIterations = smoke ? 2 : 20
    Benchmark("entry/patch: EntryHook install() + uninstall()", configuration: patchConfiguration) { benchmark in
        for _ in benchmark.scaledIterations {
            // As many pairs as a sample has calls (bench-report divides by it); fewer in a smoke run.
            for _ in 0..<(smoke ? 10 : callsPerSample) {
                try hook.install()
                try hook.uninstall()
            }
        }
    }
}
