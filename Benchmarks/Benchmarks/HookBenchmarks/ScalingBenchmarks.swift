// How a hooked call scales with the hooks attached, and what adding and
// removing a hook costs while other threads call.
import BenchSupport
import Benchmark
import CBenchSupport
import Foundation
import Hook

func scalingBenchmarks(_ configuration: Benchmark.Configuration) {
    let signature = Signature(returning: Int64.self, arguments: Int64.self, Int64.self)
    for count in [1, 10, 100] {
        let hook = try! FunctionHook(cFunction: bench_add as BinaryOp, signature: signature, name: "add")
        for _ in 0..<count {
            hook.after { call in
                if try call.result(as: Int64.self) == -1 { print("unreachable") }
            }
        }
        cLoop("scaling/after\(count): add, FunctionHook, \(count) after hook\(count == 1 ? "" : "s")", configuration, keep: hook) {
            hook.entry(as: BinaryOp.self)
        }
    }

    Benchmark("scaling/churn: add and remove an after hook while 2 threads call", configuration: configuration) { benchmark in
        let hook = try! FunctionHook(cFunction: bench_add as BinaryOp, signature: signature, name: "add")
        let entry = hook.entry(as: BinaryOp.self)
        let running = CallerFlag()
        let done = DispatchGroup()
        for _ in 0..<2 {
            done.enter()
            Thread {
                while running.isOn { blackHole(bench_call_loop(entry, 1000)) }
                done.leave()
            }.start()
        }
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            for _ in 0..<callsPerSample {
                let token = hook.after { _ in }
                token.remove()
            }
        }
        benchmark.stopMeasurement()
        running.turnOff()
        done.wait()
        withExtendedLifetime(hook) {}
    }
}

/// Tells the calling threads when to stop.
final class CallerFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var on = true
    var isOn: Bool { lock.withLock { on } }
    func turnOff() { lock.withLock { on = false } }
}
