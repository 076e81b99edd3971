// Setting an Int property: plain, @Hooked, and a three-way sync of three
// objects done four ways (didSet by hand, a HookBind Binding, OpenCombine
// @Published + sink, Swift Observation).
import BenchSupport
import BenchTargets
import Benchmark
import Hook
import HookBind
import Observation
import OpenCombine

final class PlainModel { var value = 0 }
final class HookedModel { @Hooked var value = 0 }

@inline(never) func setPlain(_ m: PlainModel, _ v: Int) { m.value = v }
@inline(never) func setHooked(_ m: HookedModel, _ v: Int) { m.value = v }


/// OpenCombine: each object's @Published value is sunk into the other two,
/// with the same guard against echo (@Published publishes before it stores).
final class CombineNode {
    @OpenCombine.Published var value = 0
}

final class CombineGroup {
    var syncing = false
    var cancellables: [AnyCancellable] = []
    let nodes = [CombineNode(), CombineNode(), CombineNode()]

    init() {
        for (i, node) in nodes.enumerated() {
            let others = nodes.enumerated().filter { $0.offset != i }.map(\.element)
            cancellables.append(node.$value.sink { [unowned self] value in
                guard !self.syncing else { return }
                self.syncing = true
                for other in others { other.value = value }
                self.syncing = false
            })
        }
    }
}

@inline(never) func setCombine(_ m: CombineNode, _ v: Int) { m.value = v }

/// Observation: `withObservationTracking` tells once, before the change; after
/// each set the group copies the changed value to the other two and tracks
/// all three again (what a client of Observation does to keep them in sync).
@Observable
final class ObservedNode {
    var value = 0
}

final class ObservationGroup: @unchecked Sendable {
    let nodes = [ObservedNode(), ObservedNode(), ObservedNode()]
    var changed: Int?
    var syncing = false

    init() { for i in nodes.indices { track(i) } }

    func track(_ i: Int) {
        withObservationTracking {
            _ = nodes[i].value
        } onChange: { [unowned self] in
            if !self.syncing { self.changed = i }
        }
    }

    func set(_ i: Int, _ value: Int) {
        nodes[i].value = value
        guard let source = changed else { return }
        changed = nil
        syncing = true
        for j in nodes.indices where j != source { nodes[j].value = value }
        syncing = false
        for j in nodes.indices { track(j) }
    }
}

func propertyBenchmarks(_ configuration: Benchmark.Configuration) {
    let plain = PlainModel(), none = HookedModel(), after = HookedModel()
    try! PropertyHook.of(after, \.value).after { call in
        if try call.argument(0, as: Int.self) == -1 { print("unreachable") }
    }
    Benchmark("property/plain: set an Int stored property", configuration: configuration) { benchmark in
        for _ in benchmark.scaledIterations { for i in 0..<callsPerSample { setPlain(plain, i) } }
    }
    Benchmark("property/none: set a @Hooked Int, no hooks", configuration: configuration) { benchmark in
        for _ in benchmark.scaledIterations { for i in 0..<callsPerSample { setHooked(none, i) } }
    }
    Benchmark("property/after: set a @Hooked Int, one after hook reading the new value", configuration: configuration) { benchmark in
        for _ in benchmark.scaledIterations { for i in 0..<callsPerSample { setHooked(after, i) } }
    }
    let typed = HookedModel()
    try! PropertyHook.of(typed, \.value).didSet { _, new in
        if new == -1 { print("unreachable") }
    }
    Benchmark("property/typed: set a @Hooked Int, one typed after hook (didSet) reading the new value", configuration: configuration) { benchmark in
        for _ in benchmark.scaledIterations { for i in 0..<callsPerSample { setHooked(typed, i) } }
    }

    let group = DidSetNode.Group()
    let p = DidSetNode(group: group), q = DidSetNode(group: group), r = DidSetNode(group: group)
    (p.first, p.second, q.first, q.second, r.first, r.second) = (q, r, p, r, p, q)
    Benchmark("sync3/didset: three-way sync by hand with didSet, one set", configuration: configuration) { benchmark in
        for _ in benchmark.scaledIterations { for i in 0..<callsPerSample { setDidSet(p, i) } }
        precondition(r.value == callsPerSample - 1)
        withExtendedLifetime((q, r)) {}
    }

    let a = HookedModel(), b = HookedModel(), c = HookedModel()
    try! Binding.bind([.both(a, \.value), .both(b, \.value), .both(c, \.value)])
    Benchmark("sync3/binding: three-way bilateral HookBind Binding of @Hooked, one set", configuration: configuration) { benchmark in
        for _ in benchmark.scaledIterations { for i in 0..<callsPerSample { setHooked(a, i) } }
        precondition(c.value == callsPerSample - 1)
    }

    let combine = CombineGroup()
    Benchmark("sync3/opencombine: three-way sync with OpenCombine @Published + sink, one set", configuration: configuration) { benchmark in
        for _ in benchmark.scaledIterations { for i in 0..<callsPerSample { setCombine(combine.nodes[0], i) } }
        precondition(combine.nodes[2].value == callsPerSample - 1)
    }

    let observation = ObservationGroup()
    Benchmark("sync3/observation: three-way sync with Swift Observation, one set", configuration: configuration) { benchmark in
        for _ in benchmark.scaledIterations { for i in 0..<callsPerSample { observation.set(0, i) } }
        precondition(observation.nodes[2].value == callsPerSample - 1)
    }
}
