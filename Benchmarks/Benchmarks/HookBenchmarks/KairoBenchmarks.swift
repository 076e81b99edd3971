// The kairo shapes of js-reactivity-benchmark (milomg/js-reactivity-benchmark,
// src/kairo), the same work done three ways in one run: HookBind's Observable
// and Computed (an effect is a subscription), OpenCombine 0.14 (an effect is
// a sink; a node of several inputs merges them, flatMap over a sequence of
// them, and waits for all with collect, since 0.14 has neither
// combineLatest nor MergeMany), and Swift's
// Observation (@Observable stored values, computed properties, an effect is a
// withObservationTracking that re-registers after each change). One sample
// is `callsPerSample` updates; an update is one write to the source (mux: to
// one of its sources) and everything it causes.
import BenchSupport
import Benchmark
import HookBind
import Observation
import OpenCombine

@Observable
final class ObservedHead {
    var value = 0
}

@Observable
final class ObservedHeads {
    var values = [Int](repeating: 0, count: 100)
}

/// A chain of `count` maps (`+ 1` each) after `upstream`, type-erased.
private func mapChain(_ upstream: AnyPublisher<Int, Never>, _ count: Int, _ step: @escaping (Int) -> Int) -> AnyPublisher<Int, Never> {
    var publisher = upstream
    for _ in 0..<count { publisher = publisher.map(step).eraseToAnyPublisher() }
    return publisher
}

/// All of `publishers`' outputs, as they come (OpenCombine 0.14 has no MergeMany).
private func merged(_ publishers: [AnyPublisher<Int, Never>]) -> AnyPublisher<Int, Never> {
    publishers.publisher.flatMap { $0 }.eraseToAnyPublisher()
}

func kairoBenchmarks(_ configuration: Benchmark.Configuration) {
    // A benchmark of each library: `make` builds the graph and returns the update.
    func shape(_ id: String, _ what: String,
               computed: @escaping (Accumulator) -> (Int) -> Void,
               opencombine: @escaping (Accumulator, inout [AnyCancellable]) -> (Int) -> Void,
               observation: @escaping (Accumulator) -> (Int) -> Void) {
        Benchmark("kairo-\(id)/computed: \(what), HookBind Computed", configuration: configuration) { benchmark in
            let accumulator = Accumulator()
            let update = computed(accumulator)
            update(-1)
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations { for i in 0..<callsPerSample { update(i) } }
            benchmark.stopMeasurement()
            blackHole(accumulator.sum)
        }
        Benchmark("kairo-\(id)/opencombine: \(what), OpenCombine", configuration: configuration) { benchmark in
            let accumulator = Accumulator()
            var cancellables: [AnyCancellable] = []
            let update = opencombine(accumulator, &cancellables)
            update(-1)
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations { for i in 0..<callsPerSample { update(i) } }
            benchmark.stopMeasurement()
            blackHole(accumulator.sum)
            blackHole(cancellables)
        }
        Benchmark("kairo-\(id)/observation: \(what), Swift Observation", configuration: configuration) { benchmark in
            let accumulator = Accumulator()
            let update = observation(accumulator)
            update(-1)
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations { for i in 0..<callsPerSample { update(i) } }
            benchmark.stopMeasurement()
            blackHole(accumulator.sum)
        }
    }

    // deep: a chain of 50 computeds, an effect at its end.
    shape("deep", "a chain of 50 computeds, one effect",
          computed: { accumulator in
              let head = Observable(0)
              var current = Computed { head.value }
              for _ in 0..<49 { let previous = current; current = Computed { previous.value &+ 1 } }
              current.subscribe { _, new in accumulator.sum &+= new }
              // The update keeps the graph alive (a source does not keep its dependents).
              let end = current
              return { _ = end; head.value = $0 }
          },
          opencombine: { accumulator, cancellables in
              let head = CurrentValueSubject<Int, Never>(0)
              cancellables.append(mapChain(head.eraseToAnyPublisher(), 50) { $0 &+ 1 }.sink { accumulator.sum &+= $0 })
              return { head.send($0) }
          },
          observation: { accumulator in
              let head = ObservedHead()
              let effect = ObservationSubscriber(accumulator: accumulator) {
                  var value = head.value
                  for _ in 0..<49 { value &+= 1 }
                  return value
              }
              effect.catchUp()
              return { head.value = $0; effect.catchUp() }
          })

    // broad: 50 computeds over one source, an effect on each.
    shape("broad", "50 computeds over one source, an effect on each",
          computed: { accumulator in
              let head = Observable(0)
              let nodes = (0..<50).map { i in Computed { head.value &+ i } }
              for node in nodes { node.subscribe { _, new in accumulator.sum &+= new } }
              return { _ = nodes; head.value = $0 }
          },
          opencombine: { accumulator, cancellables in
              let head = CurrentValueSubject<Int, Never>(0)
              for i in 0..<50 { cancellables.append(head.map { $0 &+ i }.sink { accumulator.sum &+= $0 }) }
              return { head.send($0) }
          },
          observation: { accumulator in
              let head = ObservedHead()
              let effects = (0..<50).map { i in ObservationSubscriber(accumulator: accumulator) { head.value &+ i } }
              for effect in effects { effect.catchUp() }
              return { head.value = $0; for effect in effects { effect.catchUp() } }
          })

    // diamond: width 5, their sum, one effect.
    shape("diamond", "5 computeds over one source and their sum, one effect",
          computed: { accumulator in
              let head = Observable(0)
              let branches = (0..<5).map { i in Computed { head.value &+ i } }
              let sum = Computed { branches.reduce(0) { $0 &+ $1.value } }
              sum.subscribe { _, new in accumulator.sum &+= new }
              return { _ = sum; head.value = $0 }
          },
          opencombine: { accumulator, cancellables in
              let head = CurrentValueSubject<Int, Never>(0)
              let branches = (0..<5).map { i in head.map { $0 &+ i }.eraseToAnyPublisher() }
              cancellables.append(merged(branches).collect(5).map { $0.reduce(0, &+) }.sink { accumulator.sum &+= $0 })
              return { head.send($0) }
          },
          observation: { accumulator in
              let head = ObservedHead()
              let effect = ObservationSubscriber(accumulator: accumulator) { (0..<5).reduce(0) { $0 &+ head.value &+ $1 } }
              effect.catchUp()
              return { head.value = $0; effect.catchUp() }
          })

    // triangle: a chain of 10 and the sum of all ten, one effect.
    shape("triangle", "a chain of 10 and the sum of all of it, one effect",
          computed: { accumulator in
              let head = Observable(0)
              var chain: [Computed<Int>] = [Computed { head.value }]
              for _ in 1..<10 { let previous = chain[chain.count - 1]; chain.append(Computed { previous.value &+ 1 }) }
              // (A constant captured: the `var` itself, captured, was a box the
              // closure retained, released and checked for exclusive access on
              // every evaluation, about 550 instructions a write.)
              let nodes = chain
              let sum = Computed { nodes.reduce(0) { $0 &+ $1.value } }
              sum.subscribe { _, new in accumulator.sum &+= new }
              return { _ = sum; head.value = $0 }
          },
          opencombine: { accumulator, cancellables in
              let head = CurrentValueSubject<Int, Never>(0)
              var chain: [AnyPublisher<Int, Never>] = [head.eraseToAnyPublisher()]
              for _ in 1..<10 { chain.append(chain[chain.count - 1].map { $0 &+ 1 }.eraseToAnyPublisher()) }
              cancellables.append(merged(chain).collect(10).map { $0.reduce(0, &+) }.sink { accumulator.sum &+= $0 })
              return { head.send($0) }
          },
          observation: { accumulator in
              let head = ObservedHead()
              let effect = ObservationSubscriber(accumulator: accumulator) {
                  var sum = 0, value = head.value
                  for _ in 0..<10 { sum &+= value; value &+= 1 }
                  return sum
              }
              effect.catchUp()
              return { head.value = $0; effect.catchUp() }
          })

    // mux: 100 sources into one computed (all their values), split again into
    // 100 computeds (one value each, + 1), an effect on each; an update
    // writes one source (of the first ten, in turn).
    shape("mux", "100 sources muxed into one computed and split into 100, an effect on each",
          computed: { accumulator in
              let heads = (0..<100).map { _ in Observable(0) }
              let mux = Computed { heads.map { $0.value } }
              let splits = (0..<100).map { i in Computed { mux.value[i] } }.map { split in Computed { split.value &+ 1 } }
              for split in splits { split.subscribe { _, new in accumulator.sum &+= new } }
              return { _ = splits; heads[($0 & 0x7fff_ffff) % 10].value = $0 }
          },
          opencombine: { accumulator, cancellables in
              // combineLatest of 100: every source's sink writes its slot and sends the array.
              let mux = CurrentValueSubject<[Int], Never>([Int](repeating: 0, count: 100))
              let heads = (0..<100).map { _ in CurrentValueSubject<Int, Never>(0) }
              for (i, head) in heads.enumerated() {
                  cancellables.append(head.dropFirst().sink { value in mux.value[i] = value })
              }
              for i in 0..<100 {
                  cancellables.append(mux.map { $0[i] }.removeDuplicates().map { $0 &+ 1 }.sink { accumulator.sum &+= $0 })
              }
              return { heads[($0 & 0x7fff_ffff) % 10].send($0) }
          },
          observation: { accumulator in
              let heads = ObservedHeads()
              let effects = (0..<100).map { i in ObservationSubscriber(accumulator: accumulator) { heads.values[i] &+ 1 } }
              for effect in effects { effect.catchUp() }
              return { heads.values[($0 & 0x7fff_ffff) % 10] = $0; for effect in effects { effect.catchUp() } }
          })

    // repeated observers: one computed reads the source 30 times, one effect.
    shape("repeated", "one computed reading its source 30 times, one effect",
          computed: { accumulator in
              let head = Observable(0)
              let current = Computed { (0..<30).reduce(0) { sum, _ in sum &+ head.value } }
              current.subscribe { _, new in accumulator.sum &+= new }
              return { _ = current; head.value = $0 }
          },
          opencombine: { accumulator, cancellables in
              let head = CurrentValueSubject<Int, Never>(0)
              cancellables.append(head.map { value in (0..<30).reduce(0) { sum, _ in sum &+ value } }.sink { accumulator.sum &+= $0 })
              return { head.send($0) }
          },
          observation: { accumulator in
              let head = ObservedHead()
              let effect = ObservationSubscriber(accumulator: accumulator) { (0..<30).reduce(0) { sum, _ in sum &+ head.value } }
              effect.catchUp()
              return { head.value = $0; effect.catchUp() }
          })

    // unstable: which computeds one reads depends on the source's parity.
    shape("unstable", "a computed whose dependencies change with the source's parity, one effect",
          computed: { accumulator in
              let head = Observable(0)
              let double = Computed { head.value &* 2 }
              let inverse = Computed { 0 &- head.value }
              let current = Computed {
                  var result = 0
                  for _ in 0..<20 { result &+= head.value & 1 == 1 ? double.value : inverse.value }
                  return result
              }
              current.subscribe { _, new in accumulator.sum &+= new }
              return { _ = current; head.value = $0 }
          },
          opencombine: { accumulator, cancellables in
              let head = CurrentValueSubject<Int, Never>(0)
              let double = head.map { $0 &* 2 }, inverse = head.map { 0 &- $0 }
              // The parity picks the branch: the pair of both, then the one read 20 times.
              cancellables.append(head.zip(double, inverse).map { value, double, inverse in
                  var result = 0
                  for _ in 0..<20 { result &+= value & 1 == 1 ? double : inverse }
                  return result
              }.sink { accumulator.sum &+= $0 })
              return { head.send($0) }
          },
          observation: { accumulator in
              let head = ObservedHead()
              let effect = ObservationSubscriber(accumulator: accumulator) {
                  var result = 0
                  for _ in 0..<20 { result &+= head.value & 1 == 1 ? head.value &* 2 : 0 &- head.value }
                  return result
              }
              effect.catchUp()
              return { head.value = $0; effect.catchUp() }
          })

    // avoidable propagation: a computed whose value never changes stops the
    // update before a chain of four busy computeds and the effect.
    shape("avoidable", "a computed whose value does not change, then 4 busy computeds, one effect",
          computed: { accumulator in
              let head = Observable(0)
              let gate = Computed { head.value & 0 }
              var current = gate
              for _ in 0..<4 { let previous = current; current = Computed { busy(previous.value) } }
              current.subscribe { _, new in accumulator.sum &+= new }
              let end = current
              return { _ = end; head.value = $0 }
          },
          opencombine: { accumulator, cancellables in
              let head = CurrentValueSubject<Int, Never>(0)
              let gate = head.map { $0 & 0 }.removeDuplicates().eraseToAnyPublisher()
              cancellables.append(mapChain(gate, 4, busy).sink { accumulator.sum &+= $0 })
              return { head.send($0) }
          },
          observation: { accumulator in
              let head = ObservedHead()
              let effect = ObservationSubscriber(accumulator: accumulator) {
                  var value = head.value & 0
                  for _ in 0..<4 { value = busy(value) }
                  return value
              }
              effect.catchUp()
              return { head.value = $0; effect.catchUp() }
          })
}

/// A little work the optimizer cannot drop (kairo's `busy`: a loop).
@inline(never)
func busy(_ value: Int) -> Int {
    var result = value
    for i in 0..<20 { result = result &* 31 &+ i }
    return result & 0xffff
}
