import Foundation
import Hook
import HookBind
import Testing

// Random mixes of the binding models on the same values, against a model:
// observables bound both ways to `@Hooked` properties (Fisticuffs'
// `bind(_:_:)`), properties bound to each other (`Binding.bind` with `.both`
// fishes, or a pair of `PropertyBinding`s, one each way, fired by
// `HookTrigger`s; setter closures are bound by `Binding`s too), computeds over the observables, writes to either end, bindings
// ended, objects dropped. The documentation's promises, stated plainly: every
// write counts, so a write of `v` to an observable or a property reaches,
// through the hooks of each endpoint it sets, every endpoint connected to it
// by live bindings, which then all hold `v`, and nothing else changes; an
// observable bound to a property sets it, through its hooks, to its value
// (reaching what the property was bound to before), a binding of two
// properties sets nothing when made, and a pair of property bindings sets
// both ends (and what they reach) to the first one's value; a computed over the observables, and
// its subscriber, hold their sum after every step. And each binding
// delivers a write at most once (the reentrancy flag): the sets of all the
// endpoints one write makes are at most one more than the bindings. Seeded; a failure names
// its seed and step, `MIXED_SEED=<seed>` prints that run's every step.

/// Counts the sets of every endpoint.
private final class MixedCounter: @unchecked Sendable {
    var sets = 0
    var trace = false
    var names: [ObjectIdentifier: Int] = [:]
}

private final class MixedBox {
    @Hooked var value = 0
    init(_ counter: MixedCounter) { $value.didSet { [unowned self] _, new in counter.sets += 1; if counter.trace { print("  set box \(counter.names[ObjectIdentifier(self)] ?? -1) \(new)") } } }
}

/// A setter closure as an endpoint (bound by `Binding` only): its value is
/// the last argument its original got.
private final class MixedSetter: @unchecked Sendable {
    var value = 0
    var hook: ClosureHook<Int, Void>!
    init(_ counter: MixedCounter) {
        hook = ClosureHook(name: "set") { [unowned self, counter] in
            value = $0
            counter.sets += 1
        }
    }
}

/// An owner of hooks whose bindings end as soon as it goes.
private final class MixedOwnedBox: HookOwner {
    let hookBag = HookBag()
    @Hooked var value = 0
    init(_ counter: MixedCounter) { $value.didSet { [unowned self] _, new in counter.sets += 1; if counter.trace { print("  set owned box \(counter.names[ObjectIdentifier(self)] ?? -1) \(new)") } } }
}

/// A binding between two endpoints: observable `o` and box `b`, or boxes `b` and `c`.
private struct MixedEdge {
    enum Ends: Equatable { case observableBox(Int, Int), boxes(Int, Int), propertyPair(Int, Int) }
    let ends: Ends
    var subscription: Subscription? = nil
    var binding: Binding? = nil
    var pair: [PropertyBinding<Int>] = []

    /// How many bindings deliver a change along it.
    var bindings: Int { pair.isEmpty ? 1 : 2 }

    func end() {
        subscription?.dispose()
        binding?.unbind()
        for binding in pair { binding.invalidate() }
    }
}

private final class MixedRun {
    let seed: UInt64
    let verbose: Bool
    var random: SeededGenerator
    var observables: [Observable<Int>] = []
    /// Boxes: plain or `HookOwner`s; nil once dropped.
    var boxes: [AnyObject?] = []
    var edges: [MixedEdge] = []
    /// The model: every endpoint's value (observables first, then boxes).
    var expected: [Int] = []
    var sum: Computed<Int>!
    var heard: Int?
    var subscription: Subscription?
    var failures: [String] = []

    init(seed: UInt64, verbose: Bool) {
        self.seed = seed
        self.verbose = verbose
        random = SeededGenerator(state: seed)
    }

    func say(_ line: String) { if verbose { print("[\(seed)] \(line)") } }

    var observableCount: Int { observables.count }
    func node(observable o: Int) -> Int { o }
    func node(box b: Int) -> Int { observableCount + b }

    func value(ofBox b: Int) -> Int? {
        switch boxes[b] {
        case let box as MixedBox: box.value
        case let box as MixedOwnedBox: box.value
        case let setter as MixedSetter: setter.value
        default: nil
        }
    }

    func set(box b: Int, to value: Int) {
        switch boxes[b] {
        case let box as MixedBox: box.value = value
        case let box as MixedOwnedBox: box.value = value
        case let setter as MixedSetter: setter.hook(value)
        default: break
        }
    }

    let counter = MixedCounter()
    var observers: [Subscription] = []

    func newBox() -> AnyObject {
        let box: AnyObject = switch Int.random(in: 0..<5, using: &random) {
        case 0, 1: MixedOwnedBox(counter)
        case 2, 3: MixedBox(counter)
        default: MixedSetter(counter)
        }
        counter.names[ObjectIdentifier(box)] = counter.names.count
        return box
    }

    /// One write's sets: at most one more than the bindings.
    func checkSets(_ what: String) {
        let bindings = edges.reduce(0) { $0 + $1.bindings }
        if counter.sets > bindings + 1 {
            failures.append("seed \(seed): \(what) set the endpoints \(counter.sets) times, over \(bindings) bindings")
        }
    }

    func bound(_ object: AnyObject) -> BoundProperty<Int> {
        switch object {
        case let box as MixedBox: BoundProperty(box, \.value)
        case let box as MixedOwnedBox: BoundProperty(box, \.value)
        default: preconditionFailure()
        }
    }

    /// The endpoints connected to `start` by live bindings.
    func component(of start: Int) -> Set<Int> {
        var seen: Set<Int> = [start]
        var work = [start]
        while let next = work.popLast() {
            for edge in edges {
                let (x, y): (Int, Int)
                switch edge.ends {
                case .observableBox(let o, let b): (x, y) = (node(observable: o), node(box: b))
                case .boxes(let b, let c), .propertyPair(let b, let c): (x, y) = (node(box: b), node(box: c))
                }
                for (from, to) in [(x, y), (y, x)] where from == next && !seen.contains(to) {
                    seen.insert(to)
                    work.append(to)
                }
            }
        }
        return seen
    }

    /// A write of `value` at `node` in the model.
    func write(_ value: Int, at node: Int) {
        for member in component(of: node) { expected[member] = value }
    }

    func check(_ what: String) {
        for o in 0..<observableCount where observables[o].value != expected[node(observable: o)] {
            failures.append("seed \(seed): after \(what), observable \(o) is \(observables[o].value), the model says \(expected[node(observable: o)])")
            return
        }
        for b in boxes.indices {
            guard let value = value(ofBox: b) else { continue }
            if value != expected[node(box: b)] {
                failures.append("seed \(seed): after \(what), box \(b) is \(value), the model says \(expected[node(box: b)])")
                return
            }
        }
        let total = (0..<observableCount).reduce(0) { $0 &+ expected[node(observable: $1)] }
        if sum.value != total || heard != total {
            failures.append("seed \(seed): after \(what), the sum is \(sum.value) and its subscriber heard \(heard.map(String.init) ?? "nothing"), the model says \(total)")
        }
    }

    func run(steps: Int) -> [String] {
        observables = (0..<3).map { Observable($0 * 100, name: "o\($0)") }
        boxes = (0..<4).map { _ in newBox() }
        expected = observables.map(\.value) + boxes.map { _ in 0 }
        let observed = observables
        sum = Computed { observed.reduce(0) { $0 &+ $1.value } }
        observers = observables.map { o in o.subscribe { [counter, name = o.name] _, new in
            counter.sets += 1
            if counter.trace { print("  write \(name) \(new)") }
        } }
        counter.trace = verbose
        subscription = sum.subscribe(SubscriptionOptions(notifyOnSubscription: true)) { [unowned self] _, new in heard = new }
        defer {
            for edge in edges { edge.end() }
            subscription?.dispose()
        }
        for step in 0..<steps {
            var what: String
            switch Int.random(in: 0..<100, using: &random) {
            case 0..<20:
                let o = Int.random(in: 0..<observableCount, using: &random)
                let b = Int.random(in: 0..<boxes.count, using: &random)
                guard let box = boxes[b], !(box is MixedSetter) else { continue }
                what = "step \(step): bind observable \(o) to box \(b)"
                // The property is set to the observable's value through its
                // hooks, before the new binding's hooks exist.
                write(observables[o].value, at: node(box: b))
                let made: Subscription
                switch box {
                case let box as MixedBox: made = try! observables[o].bind(box, \.value)
                case let box as MixedOwnedBox: made = try! observables[o].bind(box, \.value)
                default: continue
                }
                edges.append(MixedEdge(ends: .observableBox(o, b), subscription: made))
            case 20..<35:
                let b = Int.random(in: 0..<boxes.count, using: &random)
                let c = Int.random(in: 0..<boxes.count, using: &random)
                guard b != c, let first = boxes[b], let second = boxes[c] else { continue }
                what = "step \(step): bind box \(b) and box \(c)"
                func fish(_ object: AnyObject) -> Fish {
                    switch object {
                    case let box as MixedBox: .both(box, \.value)
                    case let box as MixedOwnedBox: .both(box, \.value)
                    case let setter as MixedSetter:
                        // Receives by calling the setter (weakly: it may go first).
                        .both(setter.hook) { [weak setter] call in setter?.hook(try call.argument(0, as: Int.self)) }
                    default: preconditionFailure()
                    }
                }
                if Bool.random(using: &random) || first is MixedSetter || second is MixedSetter {
                    let binding = try! Binding.bind([fish(first), fish(second)])
                    edges.append(MixedEdge(ends: .boxes(b, c), binding: binding))
                } else {
                    // Each fires at once: the second end, then the first, get the first's value.
                    what += " by a pair of property bindings"
                    let value = value(ofBox: b)!
                    let forth = PropertyBinding(source: bound(first), destination: bound(second))
                    let back = PropertyBinding(source: bound(second), destination: bound(first))
                    for binding in [forth, back] { binding.errorHandler = { _ in } }  // a gone end
                    edges.append(MixedEdge(ends: .propertyPair(b, c), pair: [forth, back]))
                    write(value, at: node(box: b))
                    try! forth.addTrigger(HookTrigger(bound(first)))
                    try! back.addTrigger(HookTrigger(bound(second)))
                }
            case 35..<45:
                guard !edges.isEmpty else { continue }
                let index = Int.random(in: 0..<edges.count, using: &random)
                what = "step \(step): end \(edges[index].ends)"
                edges[index].end()
                edges.remove(at: index)
            case 45..<50:
                let b = Int.random(in: 0..<boxes.count, using: &random)
                guard boxes[b] != nil else { continue }
                what = "step \(step): drop box \(b)"
                boxes[b] = nil
                // Its bindings end with it (a plain object's at the next
                // write of a point its hooks are on: they are skipped).
                edges.removeAll { edge in
                    switch edge.ends {
                    case .observableBox(_, let x): return x == b
                    case .boxes(let x, let y), .propertyPair(let x, let y): return x == b || y == b
                    }
                }
                boxes.append(newBox())
                expected.append(0)
            case 50..<75:
                let o = Int.random(in: 0..<observableCount, using: &random)
                let value = Int.random(in: 0..<1000, using: &random)
                what = "step \(step): observable \(o) = \(value)"
                write(value, at: node(observable: o))
                counter.sets = 0
                observables[o].value = value
                checkSets(what)
            default:
                let b = Int.random(in: 0..<boxes.count, using: &random)
                let value = Int.random(in: 0..<1000, using: &random)
                guard boxes[b] != nil else { continue }
                what = "step \(step): box \(b) = \(value)"
                write(value, at: node(box: b))
                counter.sets = 0
                set(box: b, to: value)
                checkSets(what)
            }
            say(what)
            check(what)
            if !failures.isEmpty { return failures }
        }
        return failures
    }
}

@Suite("Mixed bindings against a model")
struct MixedBindingModelTests {
    /// 200 seeds of 150 steps.
    @Test(arguments: 0..<20)
    func mixedBindingsDoWhatTheModelSays(batch: Int) {
        if let seed = ProcessInfo.processInfo.environment["MIXED_SEED"].flatMap(UInt64.init) {
            if batch == 0 { _ = MixedRun(seed: seed, verbose: true).run(steps: 150) }
            return
        }
        expectSeededRunsPass(batch: batch) { MixedRun(seed: $0, verbose: false).run(steps: 150) }
    }
}
