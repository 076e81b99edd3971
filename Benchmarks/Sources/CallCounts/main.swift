// The call paths of the per-call benchmarks, one at a time, for counting
// instructions under callgrind (stable where wall clock on a shared VM is
// not): `call-counts.sh` runs a case at two call counts and prints the
// difference per call. `call-counts CASE CALLS`.
import CBenchSupport
import Hook
import CallCountsGraph
import HookBind
import BenchSwiftSample
#if canImport(Glibc)
import Glibc
#endif

final class Model { @Hooked var value = 0 }

@inline(never) func closureLoop(_ f: (Int, Int) -> Int, _ n: Int) -> Int {
    var sum = 0
    for i in 0..<n { sum &+= f(i, 1) }
    return sum
}

typealias Add = @convention(c) (Int64, Int64) -> Int64
@inline(never) func cLoop(_ f: Add, _ n: Int) -> Int {
    var sum: Int64 = 0
    for i in 0..<n { sum &+= f(Int64(i), 1) }
    return Int(sum)
}

func addHook() -> FunctionHook {
    try! FunctionHook(cFunction: bench_add as Add, signature: Signature(returning: Int64.self, arguments: Int64.self, Int64.self), name: "add")
}

/// Hides a closure from the optimizer (as the benchmarks do).
@_optimize(none) func opaque<T>(_ value: T) -> T { value }

/// The floor of any hook point over a closure of any type: the closure
/// stored in a generic class (as `ClosureHook` keeps its original) and
/// called through it, with nothing else.
final class GenericBox<each A, R> {
    let original: (repeat each A) -> R
    init(_ original: @escaping (repeat each A) -> R) { self.original = original }
    @inline(never) var function: (repeat each A) -> R { { (args: repeat each A) in self.original(repeat each args) } }
}

let cases: [String: (Int) -> Int] = [
    "closure-plain": { n in
        let plain: (Int, Int) -> Int = opaque { a, b in a &+ b }
        return closureLoop(plain, n)
    },
    "closure-floor": { n in
        let box = GenericBox { (a: Int, b: Int) in a &+ b }
        return closureLoop(box.function, n)
    },
    "closure-after": { n in
        let hook = ClosureHook(name: "add") { (a: Int, b: Int) in a &+ b }
        hook.after { call in if try call.result(as: Int.self) == -1 { print("unreachable") } }
        return closureLoop(hook.function, n)
    },
    "closure-typed": { n in
        let hook = ClosureHook(name: "add") { (a: Int, b: Int) in a &+ b }
        hook.afterReturning { sum, _, _ in if sum == -1 { print("unreachable") } }
        return closureLoop(hook.function, n)
    },
    "closure-none": { n in
        let hook = ClosureHook(name: "add") { (a: Int, b: Int) in a &+ b }
        return closureLoop(hook.function, n)
    },
    "property-after": { n in
        let model = Model()
        model.$value.after { _ in }
        var i = 0
        while i < n { model.value = i; i += 1 }
        return model.value
    },
    "property-read": { n in
        // As the benchmark's: the hook reads the new value, typed.
        let model = Model()
        model.$value.after { call in if try call.argument(0, as: Int.self) == -1 { print("unreachable") } }
        var i = 0
        while i < n { model.value = i; i += 1 }
        return model.value
    },
    "property-typed": { n in
        // As the benchmark's: a didSet hook reading the new value.
        let model = Model()
        model.$value.didSet { _, new in if new == -1 { print("unreachable") } }
        var i = 0
        while i < n { model.value = i; i += 1 }
        return model.value
    },
    "property-idle": { n in
        let model = Model()
        _ = model.$value
        var i = 0
        while i < n { model.value = i; i += 1 }
        return model.value
    },
    "c-none": { n in
        let hook = addHook()
        return withExtendedLifetime(hook) { cLoop(hook.entry(as: Add.self), n) }
    },
    "c-both": { n in
        let hook = addHook()
        hook.before { call in if try call.argument(0, as: Int64.self) == -1 { print("unreachable") } }
        hook.after { call in if try call.result(as: Int64.self) == -1 { print("unreachable") } }
        return withExtendedLifetime(hook) { cLoop(hook.entry(as: Add.self), n) }
    },
    "c-direct": { n in cLoop(bench_add, n) },
    "c-typed": { n in
        let hook = addHook()
        try! hook.afterReturning { (sum: Int64, _: Int64, _: Int64) in if sum == -1 { print("unreachable") } }
        return withExtendedLifetime(hook) { cLoop(hook.entry(as: Add.self), n) }
    },
    "binding": { n in
        let a = Model(), b = Model(), c = Model()
        let binding = try! Binding.bind([.both(a, \.value), .both(b, \.value), .both(c, \.value)])
        var i = 0
        while i < n { a.value = i; i += 1 }
        return withExtendedLifetime(binding) { c.value }
    },
    "observable": { n in
        let observable = Observable(0)
        let seen = Counter()
        let subscription = observable.subscribe { _, new in seen.add(new) }
        var i = 0
        while i < n { observable.value = i; i += 1 }
        return withExtendedLifetime(subscription) { seen.total }
    },
    // A subscriber comes and goes while 1,000 others stay: one subscribe and
    // one dispose a call (a hook change, no hook call).
    "subscribe-1k": { n in
        let observable = Observable(0)
        let seen = Counter()
        let staying = (0..<1_000).map { _ in observable.subscribe { _, new in seen.add(new) } }
        var i = 0
        while i < n { observable.subscribe { _, new in seen.add(new) }.dispose(); i += 1 }
        observable.value = 1
        return withExtendedLifetime(staying) { seen.total }
    },
    // An ObservableArray of 1,000 elements, a change subscriber: an append
    // and a removal of the first element a call (two changes).
    "array-1k": { n in
        let array = ObservableArray(Array(0..<1_000))
        let seen = Counter()
        let subscription = array.subscribeChanges { change in seen.add(change.insertions.count &+ change.deletions.count) }
        var i = 0
        while i < n { array.append(i); _ = try? array.remove(at: 0); i += 1 }
        return withExtendedLifetime(subscription) { seen.total }
    },
    // A binding of 300 objects' @Hooked properties made and ended (the
    // group's checks, its hooks added and removed) a call.
    "bind-300": { n in
        let models = (0..<300).map { _ in Model() }
        let fishes = models.map { Fish.both($0, \.value) }
        var i = 0
        while i < n { (try? Binding.bind(fishes))?.unbind(); i += 1 }
        models[0].value = 1
        return models[1].value
    },
    // A computed's first evaluation over 300 computeds, each over an
    // observable of its own (each of a group of its own until read), made
    // a call: the locks taken and the groups merged.
    "first-300": { n in
        var total = 0
        var i = 0
        while i < n {
            let mids = (0..<300).map { k in let source = Observable(k); return Computed { source.value &+ 1 } }
            let top = Computed { mids.reduce(0) { $0 &+ $1.value } }
            total &+= top.value
            i += 1
        }
        return total
    },
    // 1,000 computeds over one observable made, read and released, the
    // last made first, a call.
    "release-1k": { n in
        let shared = Observable(1)
        var total = 0
        var i = 0
        while i < n {
            var computeds = (0..<1_000).map { k in Computed { shared.value &+ k } }
            for computed in computeds { total &+= computed.value }
            while !computeds.isEmpty { computeds.removeLast() }
            i += 1
        }
        return total
    },
    // 1,000 subscriptions of one observable stored in a bag, and the bag
    // gone, a call.
    "bag-1k": { n in
        let observable = Observable(0)
        let seen = Counter()
        var i = 0
        while i < n {
            let bag = HookBag()
            for _ in 0..<1_000 { observable.subscribe { _, new in seen.add(new) }.store(in: bag) }
            i += 1
        }
        observable.value = 1
        return seen.total
    },
    // A read of an observable outside any evaluation (its node made: a computed reads it).
    "observable-read": { n in
        let observable = Observable(1)
        let doubled = Computed { observable.value &* 2 }
        var total = 0
        var i = 0
        while i < n { total &+= observable.value; i += 1 }
        return withExtendedLifetime(doubled) { total &+ doubled.value }
    },
    // A Swift method of another module hooked by name (SwiftEntryHook), called through its vtable.
    "swift-entry-plain": { n in swiftLoop(opaqueWorker(BenchWorker()), n) },
    "swift-entry-none": { n in
        let hook = workHook()
        return withExtendedLifetime(hook) { swiftLoop(opaqueWorker(BenchWorker()), n) }
    },
    "swift-entry-typed": { n in
        let hook = workHook()
        try! hook.afterReturning { (result: Int, _: BenchWorker, _: Int) in if result == -1 { print("unreachable") } }
        return withExtendedLifetime(hook) { swiftLoop(opaqueWorker(BenchWorker()), n) }
    },
    "swift-entry-other": { n in
        let hook = workHook()
        let other = BenchWorker()
        _ = try! hook.after(for: other) { call in if try call.result(as: Int.self) == -1 { print("unreachable") } }
        return withExtendedLifetime((hook, other)) { swiftLoop(opaqueWorker(BenchWorker()), n) }
    },
    // The diamond of the benchmarks: a -> b, c -> d, d subscribed, one write to a
    // (in a module of its own: see CallCountsGraph).
    "diamond": { n in diamondWrites(n) },
    // kairo's deep shape: a chain of 50 computeds, the last subscribed, one write.
    "deep": { n in deepWrites(n) },
    // kairo's broad shape: 50 computeds over one source, each subscribed, one write.
    "broad": { n in broadWrites(n) },
    // kairo's repeated shape: one computed reading its source 30 times, one write.
    "repeated": { n in repeatedWrites(n) },
    // kairo's unstable shape: dependencies that change with the source's parity, one write.
    "unstable": { n in unstableWrites(n) },
    // A computed over 1,000 sources whose reads change on every write (one left out in turn), subscribed.
    "unstable-wide": { n in wideUnstableWrites(n) },
    // 1,000 computeds over one shared value, whose reads all change on every write, subscribed.
    "fan-toggle": { n in fanToggleWrites(n) },
    // kairo's triangle shape: a chain of 10 and the sum of all ten, subscribed, one write.
    "triangle": { n in triangleWrites(n) },
    // kairo's mux shape: 100 sources into one computed, split into 100, each subscribed, one write.
    "mux": { n in muxWrites(n) },
]

@inline(never) func opaqueWorker(_ worker: BenchWorker) -> BenchWorker { worker }

@inline(never) func swiftLoop(_ worker: BenchWorker, _ n: Int) -> Int {
    var sum = 0
    for i in 0..<n { sum &+= worker.work(i) }
    return sum
}

func workHook() -> SwiftEntryHook<BenchWorker, Int, Int> {
    try! SwiftEntryHook.named("BenchSwiftSample.BenchWorker.work(_:)", as: ((BenchWorker, Int) -> Int).self)
}

/// A subscriber's sum (a class: a captured `var` would add an exclusivity check per write).
final class Counter: @unchecked Sendable {
    var total = 0
    func add(_ value: Int) { total &+= value }
}

let arguments = CommandLine.arguments
guard arguments.count == 3, let run = cases[arguments[1]], let calls = Int(arguments[2]) else {
    print("usage: call-counts CASE CALLS; cases: \(cases.keys.sorted().joined(separator: ", "))")
    exit(2)
}
if run(calls) == 42 { print("") }
