// Hook and HookBind against the floor and the peers, the same work on every
// side. Each sample makes `callsPerSample` calls (or sets, or writes);
// `bench-report` divides by it. Cases are named "<group>/<id>: <what>" so
// the report can pair each with its floor and its peer.
import Benchmark
import Foundation

/// Calls, sets or writes per measured sample.
let callsPerSample = 1_000

/// `HOOK_BENCH_SMOKE=1`: a few samples per case (CI: builds, runs, counts mallocs).
let smoke = ProcessInfo.processInfo.environment["HOOK_BENCH_SMOKE"] != nil

nonisolated(unsafe) let configuration = Benchmark.Configuration(
    metrics: [.wallClock, .mallocCountTotal],
    timeUnits: .nanoseconds,
    warmupIterations: smoke ? 2 : 20,
    scalingFactor: .one,
    maxDuration: smoke ? .milliseconds(50) : .seconds(1),
    maxIterations: smoke ? 20 : 100_000
)

let benchmarks: @Sendable () -> Void = {
    cFunctionBenchmarks(configuration)
    closureBenchmarks(configuration)
    propertyBenchmarks(configuration)
    reactiveBenchmarks(configuration)
    scalingBenchmarks(configuration)
    footprintBenchmarks(configuration)
    importBenchmarks(configuration)
    threadsBenchmarks(configuration)
}
