// What a hook point weighs before and after it is used: making objects with
// three @Hooked properties, Observables, finding a hook point by key path,
// adding a hook, binding two objects; each against a plain class and the
// peers (Swift's @Observable, OpenCombine's @Published and
// CurrentValueSubject, Observation's tracking registration), at 1,000 and
// 100,000 objects a sample so that growth shows as linear. `bench-report`
// divides by the object count: ns, mallocs and heap bytes per object.
import BenchSupport
import Benchmark
import CBenchSupport
import Hook
import HookBind
import Observation
import OpenCombine

final class PlainThree {
    var a = 0
    var b = ""
    var c = 0.0
}

final class HookedThree {
    @Hooked var a = 0
    @Hooked var b = ""
    @Hooked var c = 0.0
}

@Observable
final class ObservedThree {
    var a = 0
    var b = ""
    var c = 0.0
}

final class PublishedThree {
    @OpenCombine.Published var a = 0
    @OpenCombine.Published var b = ""
    @OpenCombine.Published var c = 0.0
}

final class BindableValue {
    @Hooked var c = 0
}

@Observable
final class ObservedValue {
    var c = 0
}

func footprintBenchmarks(_ base: Benchmark.Configuration) {
    let configuration = footprintConfiguration(base)
    for n in [1_000, 100_000] {
        let size = n == 1_000 ? "1k" : "100k"
        func name(_ id: String, _ what: String) -> String { "footprint\(size)/\(id): \(what), \(n) objects" }

        footprint(name("plain", "make a plain class with three properties"), objects: n, configuration,
                  prepare: { _ in () }, measure: { PlainThree() })
        footprint(name("hooked", "make a class with three @Hooked properties"), objects: n, configuration,
                  prepare: { _ in () }, measure: { HookedThree() })
        footprint(name("observation", "make an @Observable class with three properties"), objects: n, configuration,
                  prepare: { _ in () }, measure: { ObservedThree() })
        footprint(name("published", "make a class with three OpenCombine @Published"), objects: n, configuration,
                  prepare: { _ in () }, measure: { PublishedThree() })
        footprint(name("observable", "make an Observable<Int>"), objects: n, configuration,
                  prepare: { $0 }, measure: { Observable($0) })
        footprint(name("subject", "make an OpenCombine CurrentValueSubject<Int, Never>"), objects: n, configuration,
                  prepare: { $0 }, measure: { CurrentValueSubject<Int, Never>($0) })
        footprint(name("computed", "make a Computed<Int> over an Observable<Int>, no subscriber"), objects: n, configuration,
                  prepare: { Observable($0) }, measure: { (source: Observable<Int>) in Computed { source.value &+ 1 } })
        footprint(name("lookup", "PropertyHook.of on a new object of a known class"), objects: n, configuration,
                  prepare: { _ in HookedThree() }, measure: { try! PropertyHook.of($0, \.b) })
        let known = HookedThree()
        _ = try! PropertyHook.of(known, \HookedThree.b)
        footprint(name("again", "PropertyHook.of again on the same object"), objects: n, configuration,
                  prepare: { _ in known }, measure: { try! PropertyHook.of($0, \.b) })
        footprint(name("addhook", "add an after hook to a hook point, no call in flight"), objects: n, configuration,
                  prepare: { (_: Int) -> (HookedThree, PropertyHook<Int>) in
                      let object = HookedThree()
                      return (object, object.$a)
                  },
                  measure: { (prepared: (HookedThree, PropertyHook<Int>)) in prepared.1.after { _ in } })
        footprint(name("bind", "Binding.bind of two objects both ways, hook points made"), objects: n, configuration,
                  prepare: { (_: Int) -> (BindableValue, BindableValue) in
                      let pair = (BindableValue(), BindableValue())
                      _ = pair.0.$c
                      _ = pair.1.$c
                      return pair
                  },
                  measure: { (pair: (BindableValue, BindableValue)) in try! Binding.bind([.both(pair.0, \.c), .both(pair.1, \.c)]) })
        footprint(name("tracking", "Observation withObservationTracking registration"), objects: n, configuration,
                  prepare: { _ in ObservedValue() },
                  measure: { (object: ObservedValue) -> AnyObject? in
                      withObservationTracking { _ = object.c } onChange: {}
                      return nil
                  })
    }
}
