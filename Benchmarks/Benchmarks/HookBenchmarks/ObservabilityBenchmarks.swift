// HookObservability: what a traced or measured call costs next to the hook
// alone (one instead hook calling the original, which is what `traced` and
// `measured` are). No tracer or metrics system is bootstrapped here, so the
// tracer is swift-distributed-tracing's no-op one and the metrics go to
// swift-metrics' no-op handler: the cost is the hooks' own. The last case
// gives measured() a real backend, swift-prometheus: two counters and a
// histogram per call.
import BenchSupport
import Benchmark
import Hook
import HookObservability
import Prometheus

func observabilityBenchmarks(_ configuration: Benchmark.Configuration) {
    func closureCase(_ name: String, _ setUp: (ClosureHook<Int, Int, Int>) -> Void) {
        let hook = ClosureHook(name: "add") { (a: Int, b: Int) in a &+ b }
        setUp(hook)
        let function = hook.function
        Benchmark(name, configuration: configuration) { benchmark in
            for _ in benchmark.scaledIterations { blackHole(closureLoop(function, callsPerSample)) }
        }
    }
    closureCase("observe/hook: (Int, Int) -> Int, ClosureHook, one instead hook calling the original") { hook in
        hook.instead { call in try call.invokeOriginal() }
    }
    closureCase("observe/traced: (Int, Int) -> Int, ClosureHook, traced() with the no-op tracer") { hook in
        hook.traced()
    }
    closureCase("observe/measured: (Int, Int) -> Int, ClosureHook, measured() with the no-op metrics handler") { hook in
        hook.measured()
    }
    closureCase("observe/prometheus: (Int, Int) -> Int, ClosureHook, measured() into swift-prometheus") { hook in
        hook.measured(factory: PrometheusMetricsFactory(registry: PrometheusCollectorRegistry()))
    }
}
