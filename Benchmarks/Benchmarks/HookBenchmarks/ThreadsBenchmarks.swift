// The threads suite (issue 14): the cases of ThreadsSuite at 1, 2 and all
// available cores. One sample = N pool threads each running the case's loop
// `ops` times (see ThreadPool for why the threads are kept, not started per
// sample); its wall clock is what package-benchmark records. The name ends with
// "N threads x OPS ops, C cores" ("1 thread" for one), from which `bench-report` turns the median
// wall clock into million operations per second over all threads and prints
// the "Threads" table.
import BenchSupport
import Benchmark
import Foundation
import ThreadsSuite

/// The pool of one benchmark, made in its setup and ended in its teardown.
final class PoolHolder: @unchecked Sendable {
    var pool: ThreadPool?
}

func threadsBenchmarks(_ base: Benchmark.Configuration) {
    var configuration = base
    configuration.metrics = [.wallClock]
    configuration.timeUnits = .nanoseconds
    configuration.warmupIterations = smoke ? 1 : 3
    configuration.maxDuration = smoke ? .milliseconds(20) : .seconds(2)
    configuration.maxIterations = smoke ? 3 : 200
    let cores = ProcessInfo.processInfo.activeProcessorCount
    for c in threadsCases {
        for n in defaultThreadCounts(cores: cores) {
            // Smoke: a twentieth of the work, enough to run every path on every thread.
            let ops = smoke ? max(c.opsPerThread / 20, 1) : c.opsPerThread
            let holder = PoolHolder()
            Benchmark(
                "threads\(n)/\(c.info.id): \(c.info.label), \(n) thread\(n == 1 ? "" : "s") x \(ops) ops, \(cores) cores",
                configuration: configuration,
                closure: { benchmark in
                    for _ in benchmark.scaledIterations { holder.pool!.run(opsPerThread: ops) }
                },
                setup: { holder.pool = ThreadPool(threads: n, makeBody: c.prepare()) },
                teardown: {
                    holder.pool?.stop()
                    holder.pool = nil
                })
        }
    }
}
