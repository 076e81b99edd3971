// hook-overhead: a quick measure of what a hook costs, in about a second per
// row, with the targets bench-report checks (BenchTargets). No swift-syntax:
// its first release build compiles Hook and HookBind only.
//
//   cd Benchmarks && swift run -c release hook-overhead [ITERATIONS]
//
// Each row is the best of 5 loops of ITERATIONS calls or sets (default
// 10,000,000). For figures to publish, run the benchmarks (Performance.md):
// package-benchmark's percentiles, allocation counts and the peers.
import BenchTargets
import CBenchSupport
import Foundation
import Hook
import HookBind

let iterations = CommandLine.arguments.count > 1 ? Int(CommandLine.arguments[1]) ?? 10_000_000 : 10_000_000

/// ns per iteration of `body(n)`; best of 5 runs.
func nanoseconds(_ n: Int, _ body: (Int) -> Void) -> Double {
    var best = Double.infinity
    for _ in 0..<5 {
        let elapsed = ContinuousClock().measure { body(n) }
        let (seconds, attoseconds) = elapsed.components
        best = min(best, (Double(seconds) * 1e9 + Double(attoseconds) / 1e9) / Double(n))
    }
    return best
}

/// ns per call of `fn` from a C loop (every pointer is called the same way).
func nanosecondsPerCall(_ fn: bench_binary_op, _ n: Int) -> Double {
    let expected = Int64(n) * Int64(n - 1) / 2 + Int64(n)
    return nanoseconds(n) { precondition(bench_call_loop(fn, Int64($0)) == expected) }
}

func header(_ title: String) {
    print("\n\(title)")
    print("| case | ns | vs floor | target |")
    print("| --- | ---: | ---: | --- |")
}

/// One row: case `id` (its targets from BenchTargets), against `floor` when given.
func row(_ id: String, _ label: String, _ ns: Double, floor: Double? = nil) {
    let vsFloor = floor.map { String(format: "%.2fx, %+.2f ns", ns / $0, ns - $0) } ?? ""
    let target = targets(for: id).map { t in
        t.describe() + (t.isMet(ns: ns, floor: floor, peer: nil).map { $0 ? ": met" : ": not met" } ?? " (peer: see the benchmarks)")
    }.joined(separator: "; ")
    print("| \(label) | \(format(ns)) | \(vsFloor) | \(target) |")
}

// MARK: C functions

typealias BinaryOp = @convention(c) (Int64, Int64) -> Int64

func cRows(_ n: Int) throws {
    let signature = Signature(returning: Int64.self, arguments: Int64.self, Int64.self)
    guard let passthrough = bench_make_add_passthrough(unsafeBitCast(bench_add as BinaryOp, to: UnsafeMutableRawPointer.self)) else {
        print("libffi refused a closure for the floor")
        return
    }
    let bare = try FunctionHook(cFunction: bench_add as BinaryOp, signature: signature, name: "add")
    let typed = try FunctionHook(cFunction: bench_add as BinaryOp, signature: signature, name: "add")
    typed.before { call in
        if try call.argument(0, as: Int64.self) == -1, try call.argument(1, as: Int64.self) == -1 { print("unreachable") }
    }
    typed.after { call in
        if try call.result(as: Int64.self) == -1 { print("unreachable") }
    }
    let afterReturning = try FunctionHook(cFunction: bench_add as BinaryOp, signature: signature, name: "add")
    try afterReturning.afterReturning { (sum: Int64, _: Int64, _: Int64) in if sum == -1 { print("unreachable") } }
    header("C: int64_t add(int64_t, int64_t), called from a C loop (native entries: the floor is libffi's)")
    let floor = nanosecondsPerCall(unsafeBitCast(passthrough, to: bench_binary_op.self), n)
    let direct = nanosecondsPerCall(bench_add, n)
    row("c/direct", "direct call through a pointer", direct, floor: floor)
    row("c/floor", "bare libffi closure + ffi_call (the floor, in C)", floor, floor: floor)
    // The hook points outlive every call of their entries.
    withExtendedLifetime((bare, typed, afterReturning)) {
        row("c/none", "FunctionHook, no hooks", nanosecondsPerCall(bare.entry(as: bench_binary_op.self), n), floor: floor)
        row("c/both", "FunctionHook, before + after reading typed arguments", nanosecondsPerCall(typed.entry(as: bench_binary_op.self), n), floor: floor)
        row("c/typed", "FunctionHook, one typed after hook (afterReturning), vs the direct call",
            nanosecondsPerCall(afterReturning.entry(as: bench_binary_op.self), n), floor: direct)
    }
}

// MARK: Closures and properties

@inline(never) func callLoop(_ f: (Int, Int) -> Int, _ n: Int) -> Int {
    var sum = 0
    for i in 0..<n { sum &+= f(i, 1) }
    return sum
}

final class PlainModel { var value = 0 }
final class HookedModel { @Hooked var value = 0 }
@inline(never) func setPlain(_ m: PlainModel, _ v: Int) { m.value = v }
@inline(never) func setHooked(_ m: HookedModel, _ v: Int) { m.value = v }
@inline(never) func setLoop<M>(_ m: M, _ n: Int, _ set: (M, Int) -> Void) { for i in 0..<n { set(m, i) } }

func swiftRows(_ n: Int) throws {
    header("Swift: a closure (Int, Int) -> Int called in a loop; a stored property set")
    let plain: (Int, Int) -> Int = { $0 &+ $1 }
    let bare = ClosureHook(name: "add") { (a: Int, b: Int) in a &+ b }
    let after = ClosureHook(name: "add") { (a: Int, b: Int) in a &+ b }
    after.after { call in
        if try call.result(as: Int.self) == -1 { print("unreachable") }
    }
    let typed = ClosureHook(name: "add") { (a: Int, b: Int) in a &+ b }
    typed.afterReturning { result, _, _ in if result == -1 { print("unreachable") } }
    let expected = callLoop(plain, n)
    let plainNs = nanoseconds(n) { precondition(callLoop(plain, $0) == expected) }
    row("swift/direct", "plain closure", plainNs, floor: plainNs)
    for (id, label, hook) in [("swift/none", "ClosureHook, no hooks", bare),
                              ("swift/after", "ClosureHook, one after hook reading the result", after),
                              ("swift/typed", "ClosureHook, one typed after hook (afterReturning)", typed)] {
        let function = hook.function
        row(id, label, nanoseconds(n) { precondition(callLoop(function, $0) == expected) }, floor: plainNs)
    }

    let plainModel = PlainModel(), idle = HookedModel(), afterModel = HookedModel(), typedModel = HookedModel()
    try PropertyHook.of(afterModel, \.value).after { call in
        if try call.argument(0, as: Int.self) == -1 { print("unreachable") }
    }
    try PropertyHook.of(typedModel, \.value).didSet { _, new in if new == -1 { print("unreachable") } }
    let storeNs = nanoseconds(n) { setLoop(plainModel, $0, setPlain) }
    row("property/plain", "plain stored property set", storeNs, floor: storeNs)
    row("property/none", "@Hooked set, no hooks", nanoseconds(n) { setLoop(idle, $0, setHooked) }, floor: storeNs)
    row("property/after", "@Hooked set, one after hook reading the new value", nanoseconds(n) { setLoop(afterModel, $0, setHooked) }, floor: storeNs)
    row("property/typed", "@Hooked set, one typed after hook (didSet)", nanoseconds(n) { setLoop(typedModel, $0, setHooked) }, floor: storeNs)
    precondition(plainModel.value == n - 1 && idle.value == n - 1 && afterModel.value == n - 1 && typedModel.value == n - 1)
}

// MARK: HookBind


func bindRows(_ n: Int) throws {
    header("HookBind: one set or write (peers OpenCombine and Observation: in the benchmarks)")
    let group = DidSetNode.Group()
    let p = DidSetNode(group: group), q = DidSetNode(group: group), r = DidSetNode(group: group)
    (p.first, p.second, q.first, q.second, r.first, r.second) = (q, r, p, r, p, q)
    let a = HookedModel(), b = HookedModel(), c = HookedModel()
    let binding = try Binding.bind([.both(a, \.value), .both(b, \.value), .both(c, \.value)])
    let floor = nanoseconds(n) { setLoop(p, $0, setDidSet) }
    let bound = nanoseconds(n) { setLoop(a, $0, setHooked) }
    precondition(q.value == n - 1 && r.value == n - 1 && b.value == n - 1 && c.value == n - 1)
    withExtendedLifetime((p, q, r, binding)) {}
    row("sync3/didset", "three-way sync by hand with didSet (the floor)", floor, floor: floor)
    row("sync3/binding", "three-way Binding of @Hooked properties", bound, floor: floor)

    for subscribers in [1, 100] {
        let observable = Observable(0)
        var sum = 0
        for _ in 0..<subscribers { observable.subscribe { _, new in sum &+= new } }
        let count = max(n / subscribers, 1000)
        let ns = nanoseconds(count) { count in for i in 0..<count { observable.value = i } }
        precondition(sum != 0)
        row("fanout\(subscribers)/observable", "Observable write, \(subscribers) subscriber\(subscribers == 1 ? "" : "s")", ns)
    }
    let source = Observable(0)
    let left = Computed { source.value &* 2 }
    let right = Computed { source.value &* 3 }
    let sum = Computed { left.value &+ right.value }
    var last = 0
    sum.subscribe { _, new in last = new }
    let writes = max(n / 10, 1000)
    let diamondNs = nanoseconds(writes) { count in for i in 0..<count { source.value = i } }
    precondition(last == (writes - 1) * 5)
    row("diamond/computed", "diamond a -> b, c -> d (one subscriber), one write", diamondNs)
}

print("hook-overhead: \(iterations) calls or sets a row, best of 5 (ns per call); targets from BenchTargets, as bench-report checks them")
try cRows(iterations)
try swiftRows(iterations)
try bindRows(iterations)
