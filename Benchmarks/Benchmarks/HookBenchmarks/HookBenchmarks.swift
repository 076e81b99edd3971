// Hook and HookBind against the floor and the peers, the same work on every
// side. Each sample makes `callsPerSample` calls (or sets, or writes);
// `bench-report` divides by it. Cases are named "<group>/<id>: <what>" so
// the report can pair each with its floor and its peer.
import BenchSupport
import Benchmark
import Foundation

let benchmarks: @Sendable () -> Void = {
    cFunctionBenchmarks(configuration)
    closureBenchmarks(configuration)
    propertyBenchmarks(configuration)
    reactiveBenchmarks(configuration)
    kairoBenchmarks(configuration)
    scalingBenchmarks(configuration)
    footprintBenchmarks(configuration)
    importBenchmarks(configuration)
    entryBenchmarks(configuration)
    swiftEntryBenchmarks(configuration)
    observabilityBenchmarks(configuration)
    threadsBenchmarks(configuration)
}
