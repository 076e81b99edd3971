// The footprint cases' measurement, shared by the HookBenchmarks and
// HookableBenchmarks targets: objects made per sample, their time, mallocs
// and the heap's growth.
import Benchmark
import CBenchSupport

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
