// A Swift closure (Int, Int) -> Int: direct, hooked, and hooked as a C pointer.
import BenchSupport
import Benchmark
import CBenchSupport
import Hook

/// Hides a value from the optimizer, so a closure known at compile time is
/// still called through its context like any closure value.
@_optimize(none) func opaque<T>(_ value: T) -> T { value }

@inline(never) func closureLoop(_ f: (Int, Int) -> Int, _ n: Int) -> Int {
    var sum = 0
    for i in 0..<n { sum &+= f(i, 1) }
    return sum
}

func closureBenchmarks(_ configuration: Benchmark.Configuration) {
    let plain: (Int, Int) -> Int = opaque { $0 &+ $1 }
    Benchmark("swift/direct: (Int, Int) -> Int, plain closure", configuration: configuration) { benchmark in
        for _ in benchmark.scaledIterations { blackHole(closureLoop(plain, callsPerSample)) }
    }
    let none = ClosureHook(name: "add") { (a: Int, b: Int) in a &+ b }
    let noneFunction = none.function
    Benchmark("swift/none: (Int, Int) -> Int, ClosureHook, no hooks", configuration: configuration) { benchmark in
        for _ in benchmark.scaledIterations { blackHole(closureLoop(noneFunction, callsPerSample)) }
    }
    let after = ClosureHook(name: "add") { (a: Int, b: Int) in a &+ b }
    after.after { call in
        if try call.result(as: Int.self) == -1 { print("unreachable") }
    }
    let afterFunction = after.function
    Benchmark("swift/after: (Int, Int) -> Int, ClosureHook, one after hook reading the result", configuration: configuration) { benchmark in
        for _ in benchmark.scaledIterations { blackHole(closureLoop(afterFunction, callsPerSample)) }
    }
    let typed = ClosureHook(name: "add") { (a: Int, b: Int) in a &+ b }
    typed.afterReturning { sum, _, _ in
        if sum == -1 { print("unreachable") }
    }
    let typedFunction = typed.function
    Benchmark("swift/typed: (Int, Int) -> Int, ClosureHook, one typed after hook (afterReturning) reading the result", configuration: configuration) { benchmark in
        for _ in benchmark.scaledIterations { blackHole(closureLoop(typedFunction, callsPerSample)) }
    }
    // The same hooked closure handed to C as a function pointer, called from the C loop.
    let pointer = ClosureHook(name: "add") { (a: Int64, b: Int64) in a &+ b }
    Benchmark("swift/cpointer: (Int64, Int64) -> Int64, ClosureHook called through its C function pointer", configuration: configuration) { benchmark in
        let fn = try! pointer.cFunction(as: BinaryOp.self)
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { blackHole(bench_call_loop(fn, Int64(callsPerSample))) }
        withExtendedLifetime(pointer) {}
    }
}
