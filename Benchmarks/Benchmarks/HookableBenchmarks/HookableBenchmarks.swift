// What `@Hookable` costs with no hook: a method call and a property set of a
// `@Hookable` class against the same plain class (issue 17: at most 2 ns
// more), the same with a hook point made and no hook, with one after hook,
// and making an instance. A target of its own: it depends on HookMacros, so
// it builds swift-syntax in release (3 to 4 minutes on two cores, once),
// which the HookBenchmarks target does not, unless HOOK_MACRO_PLUGIN names
// the plug-in a debug build of Hook made (as CI's smoke run does). Run from
// Benchmarks/:
//   swift package benchmark --target HookableBenchmarks
// or, after `swift build` in the folder above, without swift-syntax's build:
//   HOOK_MACRO_PLUGIN=$PWD/../.build/debug/HookMacrosPlugin-tool \
//     swift package benchmark --target HookableBenchmarks
// Cases are named "<group>/<id>: <what>" as in HookBenchmarks, for bench-report.
import BenchSupport
import Benchmark
import Foundation
import HookMacros

final class PlainModel {
    var total = 0
    var value = 0
    var name = ""
    var ratio = 0.0
    func add(_ x: Int) -> Int { total = total &* 31 &+ x; return total }
    func reset() { total = 0 }
}

@Hookable
final class HookableModel {
    @Unhooked var total = 0
    var value = 0
    var name = ""
    var ratio = 0.0
    func add(_ x: Int) -> Int { total = total &* 31 &+ x; return total }
    func reset() { total = 0 }
}

/// Hides an object from the optimizer, so that every call in a loop is made.
@inline(never) func opaque<T: AnyObject>(_ x: T) -> T { x }

@inline(never) func callLoop(_ o: PlainModel, _ n: Int) -> Int {
    var s = 0
    for i in 0..<n { s &+= o.add(i) }
    return s
}

@inline(never) func callLoop(_ o: HookableModel, _ n: Int) -> Int {
    var s = 0
    for i in 0..<n { s &+= o.add(i) }
    return s
}

@inline(never) func setLoop(_ o: PlainModel, _ n: Int) {
    for i in 0..<n { o.value = i }
}

@inline(never) func setLoop(_ o: HookableModel, _ n: Int) {
    for i in 0..<n { o.value = i }
}

let benchmarks: @Sendable () -> Void = {
    let plain = opaque(PlainModel()), noPoint = opaque(HookableModel()), idle = opaque(HookableModel())
    _ = idle.$add                 // hook points with no hook
    _ = idle.$value
    let hooked = opaque(HookableModel())
    hooked.$add.after { call in
        if try call.result(as: Int.self) == -1 { print("unreachable") }
    }
    hooked.$value.after { call in
        if try call.argument(0, as: Int.self) == -1 { print("unreachable") }
    }

    Benchmark("hookable/plain: plain method call", configuration: configuration) { benchmark in
        for _ in benchmark.scaledIterations { blackHole(callLoop(plain, callsPerSample)) }
    }
    Benchmark("hookable/none: @Hookable method, no hook point", configuration: configuration) { benchmark in
        for _ in benchmark.scaledIterations { blackHole(callLoop(noPoint, callsPerSample)) }
    }
    Benchmark("hookable/idle: @Hookable method, hook point, no hook", configuration: configuration) { benchmark in
        for _ in benchmark.scaledIterations { blackHole(callLoop(idle, callsPerSample)) }
    }
    Benchmark("hookable/after: @Hookable method, one after hook reading the result", configuration: configuration) { benchmark in
        for _ in benchmark.scaledIterations { blackHole(callLoop(hooked, callsPerSample)) }
    }
    Benchmark("hookableset/plain: plain stored property set", configuration: configuration) { benchmark in
        for _ in benchmark.scaledIterations { setLoop(plain, callsPerSample) }
    }
    Benchmark("hookableset/none: @Hookable property set, no hook point", configuration: configuration) { benchmark in
        for _ in benchmark.scaledIterations { setLoop(noPoint, callsPerSample) }
    }
    Benchmark("hookableset/idle: @Hookable property set, hook point, no hook", configuration: configuration) { benchmark in
        for _ in benchmark.scaledIterations { setLoop(idle, callsPerSample) }
    }
    Benchmark("hookableset/after: @Hookable property set, one after hook", configuration: configuration) { benchmark in
        for _ in benchmark.scaledIterations { setLoop(hooked, callsPerSample) }
    }

    let footprintSettings = footprintConfiguration(configuration)
    for n in [1_000, 100_000] {
        let size = n == 1_000 ? "1k" : "100k"
        footprint("footprint\(size)/plainmodel: make a plain class, three properties and two methods, \(n) objects",
                  objects: n, footprintSettings, prepare: { _ in () }, measure: { PlainModel() })
        footprint("footprint\(size)/hookable: make a @Hookable class, three properties and two methods, \(n) objects",
                  objects: n, footprintSettings, prepare: { _ in () }, measure: { HookableModel() })
    }
}
