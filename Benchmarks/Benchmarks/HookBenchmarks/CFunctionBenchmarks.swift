// int64_t add(int64_t, int64_t), and a 5-argument function with a 24-byte
// struct by value, called from a C loop through each pointer.
import BenchSupport
import Benchmark
import CBenchSupport
import Hook

typealias BinaryOp = @convention(c) (Int64, Int64) -> Int64
typealias MixOp = @convention(c) (Int64, Double, bench_triple, Int32, Int64) -> Int64

/// A case that calls the pointer made by `pointer` from a C loop (`loop`);
/// `keep` lives until the case ends.
func cCase<F>(_ name: String, _ configuration: Benchmark.Configuration, keep: AnyObject?,
              _ pointer: @escaping () -> F, loop: @escaping (F, Int64) -> Int64) {
    Benchmark(name, configuration: configuration) { benchmark in
        let fn = pointer()
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { blackHole(loop(fn, Int64(callsPerSample))) }
        benchmark.stopMeasurement()
        withExtendedLifetime(keep) {}
    }
}

/// `add` called from C through the pointer `pointer` makes.
func cLoop(_ name: String, _ configuration: Benchmark.Configuration, keep: AnyObject? = nil, _ pointer: @escaping () -> BinaryOp) {
    cCase(name, configuration, keep: keep, pointer) { bench_call_loop($0, $1) }
}

/// The 5-argument function called from C through the pointer `pointer` makes.
func mixLoop(_ name: String, _ configuration: Benchmark.Configuration, keep: AnyObject? = nil, _ pointer: @escaping () -> MixOp) {
    cCase(name, configuration, keep: keep, pointer) { bench_call_mix_loop($0, $1) }
}

func cFunctionBenchmarks(_ configuration: Benchmark.Configuration) {
    let addSignature = Signature(returning: Int64.self, arguments: Int64.self, Int64.self)
    func addHook() -> FunctionHook {
        try! FunctionHook(cFunction: bench_add as BinaryOp, signature: addSignature, name: "add")
    }

    cLoop("c/direct: add, direct call through a pointer", configuration) { bench_add }
    // The floors are made once, like the hooks: package-benchmark runs a case's
    // closure once per sample, and a trampoline made there would be a new
    // (leaked) closure on a cold code page every sample.
    let addFloor = unsafeBitCast(bench_make_add_passthrough(unsafeBitCast(bench_add as BinaryOp, to: UnsafeMutableRawPointer.self))!, to: BinaryOp.self)
    cLoop("c/floor: add, bare libffi closure + ffi_call (C)", configuration) { addFloor }

    let none = addHook()
    cLoop("c/none: add, FunctionHook, no hooks", configuration, keep: none) { none.entry(as: BinaryOp.self) }

    let before = addHook()
    before.before { call in
        if try call.argument(0, as: Int64.self) == -1 { print("unreachable") }
    }
    cLoop("c/before: add, FunctionHook, one before hook", configuration, keep: before) { before.entry(as: BinaryOp.self) }

    let after = addHook()
    after.after { call in
        if try call.result(as: Int64.self) == -1 { print("unreachable") }
    }
    cLoop("c/after: add, FunctionHook, one after hook reading the result", configuration, keep: after) { after.entry(as: BinaryOp.self) }

    let typed = addHook()
    try! typed.afterReturning { (sum: Int64, _: Int64, _: Int64) in
        if sum == -1 { print("unreachable") }
    }
    cLoop("c/typed: add, FunctionHook, one typed after hook (afterReturning)", configuration, keep: typed) { typed.entry(as: BinaryOp.self) }

    let both = addHook()
    both.before { call in
        let a = try call.argument(0, as: Int64.self), b = try call.argument(1, as: Int64.self)
        if a == -1, b == -1 { print("unreachable") }
    }
    both.after { call in
        if try call.result(as: Int64.self) == -1 { print("unreachable") }
    }
    cLoop("c/both: add, FunctionHook, before + after reading typed arguments", configuration, keep: both) { both.entry(as: BinaryOp.self) }

    let instead = addHook()
    instead.instead { call in try call.invokeOriginal() }
    cLoop("c/instead: add, FunctionHook, one instead hook calling the original", configuration, keep: instead) { instead.entry(as: BinaryOp.self) }

    // int64_t mix(int64_t, double, struct { int64_t; double; int32_t }, int32_t, int64_t)
    let mixSignature = Signature(returning: .int64, arguments: [.int64, .double, .structure([.int64, .double, .int32]), .int32, .int64])
    func mixHook() -> FunctionHook {
        try! FunctionHook(cFunction: bench_mix as MixOp, signature: mixSignature, name: "mix")
    }
    mixLoop("mix/direct: 5 arguments with a 24-byte struct, direct call", configuration) { bench_mix }
    let mixFloor = unsafeBitCast(bench_make_mix_passthrough(unsafeBitCast(bench_mix as MixOp, to: UnsafeMutableRawPointer.self))!, to: MixOp.self)
    mixLoop("mix/floor: 5 arguments with a 24-byte struct, bare libffi closure + ffi_call (C)", configuration) { mixFloor }
    let mixNone = mixHook()
    mixLoop("mix/none: 5 arguments with a 24-byte struct, FunctionHook, no hooks", configuration, keep: mixNone) { mixNone.entry(as: MixOp.self) }
    let mixBoth = mixHook()
    mixBoth.before { call in
        if try call.argument(0, as: Int64.self) == -1 { print("unreachable") }
    }
    mixBoth.after { call in
        if try call.result(as: Int64.self) == -1 { print("unreachable") }
    }
    mixLoop("mix/both: 5 arguments with a 24-byte struct, FunctionHook, before + after", configuration, keep: mixBoth) { mixBoth.entry(as: MixOp.self) }
}
