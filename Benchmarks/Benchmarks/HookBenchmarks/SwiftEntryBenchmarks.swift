// A Swift method hooked by name (SwiftEntryHook): an open class's method in
// another module called through its vtable, with the entry not patched, no
// hook, one typed after hook, a CallBack after hook, and hooks for another
// object than the one called.
import BenchSupport
import BenchSwiftSample
import Benchmark
import Hook

/// The object the calls go to, of a class the optimizer cannot see.
@inline(never) func opaqueWorker(_ worker: BenchWorker) -> BenchWorker { worker }

func swiftEntryBenchmarks(_ configuration: Benchmark.Configuration) {
    let hook = try! SwiftEntryHook.named("BenchSwiftSample.BenchWorker.work(_:)", as: ((BenchWorker, Int) -> Int).self)
    try! hook.uninstall()
    let worker = opaqueWorker(BenchWorker()), other = BenchWorker()

    func swiftCase(_ name: String, patched: Bool, _ setUp: @escaping (SwiftEntryHook<BenchWorker, Int, Int>) -> Void) {
        Benchmark(name, configuration: configuration) { benchmark in
            hook.removeAllHooks()
            setUp(hook)
            if patched { try hook.install() }
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                var sum = 0
                for i in 0..<callsPerSample { sum &+= worker.work(i) }
                blackHole(sum)
            }
            benchmark.stopMeasurement()
            try hook.uninstall()
            hook.removeAllHooks()
        }
    }

    swiftCase("swiftentry/direct: BenchWorker.work, vtable call, entry not patched", patched: false) { _ in }
    swiftCase("swiftentry/none: SwiftEntryHook, no hooks", patched: true) { _ in }
    swiftCase("swiftentry/typed: SwiftEntryHook, one typed after hook (afterReturning)", patched: true) { hook in
        try! hook.afterReturning { (result: Int, _: BenchWorker, _: Int) in
            if result == -1 { print("unreachable") }
        }
    }
    swiftCase("swiftentry/after: SwiftEntryHook, one after hook reading the result", patched: true) { hook in
        hook.after { call in
            if try call.result(as: Int.self) == -1 { print("unreachable") }
        }
    }
    swiftCase("swiftentry/other: SwiftEntryHook, hooks for another object", patched: true) { hook in
        _ = try! hook.after(for: other) { call in
            if try call.result(as: Int.self) == -1 { print("unreachable") }
        }
    }
}
