// Observable fan-out and a diamond of computeds, the same work on every side:
// HookBind's Observable / Computed, OpenCombine's CurrentValueSubject, and
// Swift's Observation (`@Observable` + `withObservationTracking`).
import BenchSupport
import Benchmark
import HookBind
import Observation
import OpenCombine

/// A sink for subscriber work that the optimizer cannot drop.
final class Accumulator: @unchecked Sendable {
    var sum = 0
}

@Observable
final class ObservedBox {
    var value = 0
}

@Observable
final class ObservedDiamond {
    var a = 0
    var b: Int { a &* 2 }
    var c: Int { a &* 3 }
    var d: Int { b &+ c }
}

/// An Observation subscriber: `withObservationTracking` fires once, before
/// the change, so after each write it reads the new value and tracks again
/// (what every Observation client does to keep hearing changes).
final class ObservationSubscriber: @unchecked Sendable {
    var dirty = true
    let read: () -> Int
    let accumulator: Accumulator

    init(accumulator: Accumulator, read: @escaping () -> Int) {
        self.accumulator = accumulator
        self.read = read
    }

    func catchUp() {
        guard dirty else { return }
        dirty = false
        withObservationTracking {
            accumulator.sum &+= read()
        } onChange: { [unowned self] in
            self.dirty = true
        }
    }
}

func reactiveBenchmarks(_ configuration: Benchmark.Configuration) {
    for subscribers in [1, 100] {
        let label = "\(subscribers) subscriber\(subscribers == 1 ? "" : "s")"
        Benchmark("fanout\(subscribers)/observable: one write, \(label), HookBind Observable", configuration: configuration) { benchmark in
            let observable = Observable(0)
            let accumulator = Accumulator()
            for _ in 0..<subscribers { observable.subscribe { _, new in accumulator.sum &+= new } }
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations { for i in 0..<callsPerSample { observable.value = i } }
            benchmark.stopMeasurement()
            blackHole(accumulator.sum)
        }
        Benchmark("fanout\(subscribers)/opencombine: one write, \(label), OpenCombine CurrentValueSubject", configuration: configuration) { benchmark in
            let subject = CurrentValueSubject<Int, Never>(0)
            let accumulator = Accumulator()
            var cancellables: [AnyCancellable] = []
            for _ in 0..<subscribers { cancellables.append(subject.sink { accumulator.sum &+= $0 }) }
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations { for i in 0..<callsPerSample { subject.send(i) } }
            benchmark.stopMeasurement()
            blackHole(accumulator.sum)
            blackHole(cancellables)
        }
        Benchmark("fanout\(subscribers)/observation: one write, \(label), Swift Observation", configuration: configuration) { benchmark in
            let box = ObservedBox()
            let accumulator = Accumulator()
            let observers = (0..<subscribers).map { _ in ObservationSubscriber(accumulator: accumulator) { box.value } }
            for observer in observers { observer.catchUp() }
            benchmark.startMeasurement()
            for _ in benchmark.scaledIterations {
                for i in 0..<callsPerSample {
                    box.value = i
                    for observer in observers { observer.catchUp() }
                }
            }
            benchmark.stopMeasurement()
            blackHole(accumulator.sum)
        }
    }

    Benchmark("diamond/computed: a -> b, c -> d, one subscriber, one write, HookBind Computed", configuration: configuration) { benchmark in
        let a = Observable(0)
        let b = Computed { a.value &* 2 }
        let c = Computed { a.value &* 3 }
        let d = Computed { b.value &+ c.value }
        let accumulator = Accumulator()
        d.subscribe { _, new in accumulator.sum &+= new }
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { for i in 0..<callsPerSample { a.value = i } }
        benchmark.stopMeasurement()
        blackHole(accumulator.sum)
    }
    Benchmark("diamond/opencombine: a -> b, c -> d, one subscriber, one write, OpenCombine zip", configuration: configuration) { benchmark in
        // OpenCombine 0.14 has no combineLatest; zip pairs each new b with its c, once per change.
        let a = CurrentValueSubject<Int, Never>(0)
        let b = a.map { $0 &* 2 }
        let c = a.map { $0 &* 3 }
        let accumulator = Accumulator()
        let cancellable = b.zip(c).map { $0 &+ $1 }.sink { accumulator.sum &+= $0 }
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations { for i in 0..<callsPerSample { a.send(i) } }
        benchmark.stopMeasurement()
        blackHole(accumulator.sum)
        blackHole(cancellable)
    }
    Benchmark("diamond/observation: a -> b, c -> d, one subscriber, one write, Swift Observation", configuration: configuration) { benchmark in
        let model = ObservedDiamond()
        let accumulator = Accumulator()
        let observer = ObservationSubscriber(accumulator: accumulator) { model.d }
        observer.catchUp()
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            for i in 0..<callsPerSample {
                model.a = i
                observer.catchUp()
            }
        }
        benchmark.stopMeasurement()
        blackHole(accumulator.sum)
    }
}
