// What the HookBenchmarks and HookableBenchmarks targets share: the
// samples' size and configuration, and the footprint cases' measurement
// (objects made per sample, their time, mallocs and the heap's growth).
import Benchmark
import CBenchSupport
import Foundation

/// Calls, sets or writes per measured sample (`bench-report` divides by it).
public let callsPerSample = 1_000

/// `HOOK_BENCH_SMOKE=1`: a few samples per case (CI: builds, runs, counts mallocs).
public let smoke = ProcessInfo.processInfo.environment["HOOK_BENCH_SMOKE"] != nil

/// The call-path cases' configuration: wall clock and mallocs, in ns.
nonisolated(unsafe) public let configuration = Benchmark.Configuration(
    metrics: [.wallClock, .mallocCountTotal],
    timeUnits: .nanoseconds,
    warmupIterations: smoke ? 2 : 20,
    scalingFactor: .one,
    maxDuration: smoke ? .milliseconds(50) : .seconds(1),
    maxIterations: smoke ? 20 : 100_000
)

/// The footprint cases' configuration: `base` with frees and heap bytes, fewer samples.
public func footprintConfiguration(_ base: Benchmark.Configuration) -> Benchmark.Configuration {
    var configuration = base
    configuration.metrics = [.wallClock, .mallocCountTotal, .freeCountTotal, heapBytes]
    // (A smoke run makes the objects once: a footprint1k/100k sample is
    // 1,000 or 100,000 of them, and CI checks no footprint figure.)
    configuration.maxIterations = smoke ? 1 : 200
    configuration.warmupIterations = smoke ? 0 : 2
    return configuration
}

/// Heap bytes in use, a custom metric (one value per sample, not scaled).
public let heapBytes = BenchmarkMetric.custom("heapBytes", polarity: .prefersSmaller, useScalingFactor: false)

/// One footprint case: `prepare` runs outside the measurement and returns
/// what `measure` works on for object `i`; what `measure` returns is kept
/// alive until the sample's heap growth is read.
public func footprint<Prepared>(
    _ name: String, objects n: Int, _ configuration: Benchmark.Configuration,
    prepare: @escaping (Int) -> Prepared, measure: @escaping (Prepared) -> AnyObject?
) {
    Benchmark(name, configuration: configuration) { benchmark in
        for _ in benchmark.scaledIterations {
            var prepared: [Prepared] = []
            prepared.reserveCapacity(n)
            for i in 0..<n { prepared.append(prepare(i)) }
            var kept: [AnyObject?] = []
            kept.reserveCapacity(n)
            let before = bench_heap_in_use()
            benchmark.startMeasurement()
            for i in 0..<n { kept.append(measure(prepared[i])) }
            benchmark.stopMeasurement()
            let after = bench_heap_in_use()
            benchmark.measurement(heapBytes, after >= before ? Int(after - before) : 0)
            blackHole(kept)
            blackHole(prepared)
        }
    }
}
