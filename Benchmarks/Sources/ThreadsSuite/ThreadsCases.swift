// The threads suite (issue 14): five hooked cases and Swift Observation's
// peer, each run by N threads at once, each thread in its own loop. The hook
// points of the first two are shared by every thread (one hook point called
// from all threads); the others are private to each thread (nothing shared).
// Used by the package-benchmark suite (`threads*/...`) and by `threads-probe`.
//
// The loops and the types they work on are in this module, as the per-call
// cases' are in theirs, so that the optimizer sees them the same way.
import CBenchSupport
import Foundation
import Hook
import HookBind
import Observation
import ThreadsTable

/// One case of the suite.
public struct ThreadsCase: Sendable {
    /// Its id and label (ThreadsTable's list).
    public let info: ThreadsCaseInfo
    /// Operations each thread runs per sample (about 5 ms on one thread of the 2-core VM).
    public let opsPerThread: Int
    /// Makes what the threads share, once per thread count, and returns what
    /// each thread calls on itself to make its own objects and its loop.
    public let prepare: @Sendable () -> @Sendable () -> (Int) -> Int
}

/// A value handed to the threads whose type does not say it is Sendable
/// (a hooked closure: ClosureHook's own machinery makes calling it from many
/// threads safe).
struct Shared<T>: @unchecked Sendable {
    let value: T
}

/// Hides a value from the optimizer (a closure known at compile time is then
/// called through its context like any closure value).
@_optimize(none) func opaque<T>(_ value: T) -> T { value }

@inline(never) func closureLoop(_ f: (Int, Int) -> Int, _ n: Int) -> Int {
    var sum = 0
    for i in 0..<n { sum &+= f(i, 1) }
    return sum
}

final class HookedValue {
    @Hooked var value = 0
    /// 128 bytes in all: two threads' objects, allocated one after the other,
    /// would otherwise share a cache line, and each thread's sets write its
    /// own (the case is about what the library shares, not malloc's layout).
    private let padding: (Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int) = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
}

@inline(never) func setHooked(_ m: HookedValue, _ v: Int) { m.value = v }

final class Accumulator {
    var sum = 0
}

@Observable
final class ObservedCounter {
    var value = 0
}

/// An Observation subscriber: `withObservationTracking` fires once, before the
/// change, so after each write it reads the new value and tracks again (what
/// every Observation client does to keep hearing changes).
final class Tracker: @unchecked Sendable {
    var dirty = true
    let box: ObservedCounter
    let accumulator = Accumulator()

    init(_ box: ObservedCounter) { self.box = box }

    func catchUp() {
        guard dirty else { return }
        dirty = false
        withObservationTracking {
            accumulator.sum &+= box.value
        } onChange: { [unowned self] in
            self.dirty = true
        }
    }
}

func info(_ id: String) -> ThreadsCaseInfo { threadsCaseInfos.first { $0.id == id }! }

typealias BinaryOp = @convention(c) (Int64, Int64) -> Int64

public let threadsCases: [ThreadsCase] = [
    ThreadsCase(
        info: info("direct"), opsPerThread: 1_000_000,
        prepare: {
            return {
                let entry: BinaryOp = bench_add
                return { n in Int(bench_call_loop(entry, Int64(n))) }
            }
        }),
    ThreadsCase(
        info: info("function"), opsPerThread: 30_000,
        prepare: {
            let signature = Signature(returning: Int64.self, arguments: Int64.self, Int64.self)
            let hook = try! FunctionHook(cFunction: bench_add as BinaryOp, signature: signature, name: "add")
            hook.after { call in
                if try call.result(as: Int64.self) == -1 { print("unreachable") }
            }
            return {
                let entry = hook.entry(as: BinaryOp.self)
                return { n in
                    let sum = Int(bench_call_loop(entry, Int64(n)))
                    withExtendedLifetime(hook) {}
                    return sum
                }
            }
        }),
    ThreadsCase(
        info: info("closure"), opsPerThread: 50_000,
        prepare: {
            let hook = ClosureHook(name: "add") { (a: Int, b: Int) in a &+ b }
            hook.after { call in
                if try call.result(as: Int.self) == -1 { print("unreachable") }
            }
            let function = Shared(value: hook.function)
            return {
                let f = function.value
                return { n in
                    let sum = closureLoop(f, n)
                    withExtendedLifetime(hook) {}
                    return sum
                }
            }
        }),
    ThreadsCase(
        info: info("binding"), opsPerThread: 6_000,
        prepare: {
            return {
                let a = HookedValue(), b = HookedValue(), c = HookedValue()
                try! Binding.bind([.both(a, \.value), .both(b, \.value), .both(c, \.value)])
                return { n in
                    for i in 0..<n { setHooked(a, i) }
                    precondition(c.value == n - 1)
                    withExtendedLifetime(b) {}
                    return c.value
                }
            }
        }),
    ThreadsCase(
        info: info("observable"), opsPerThread: 30_000,
        prepare: {
            return {
                let observable = Observable(0)
                let accumulator = Accumulator()
                observable.subscribe { _, new in accumulator.sum &+= new }
                return { n in
                    for i in 0..<n { observable.value = i }
                    return accumulator.sum
                }
            }
        }),
    ThreadsCase(
        info: info("hooked"), opsPerThread: 60_000,
        prepare: {
            return {
                let object = HookedValue()
                try! PropertyHook.of(object, \.value).after { call in
                    if try call.argument(0, as: Int.self) == -1 { print("unreachable") }
                }
                return { n in
                    for i in 0..<n { setHooked(object, i) }
                    return object.value
                }
            }
        }),
    ThreadsCase(
        info: info("observation"), opsPerThread: 2_000,
        prepare: {
            return {
                let box = ObservedCounter()
                let tracker = Tracker(box)
                tracker.catchUp()
                return { n in
                    for i in 0..<n {
                        box.value = i
                        tracker.catchUp()
                    }
                    return tracker.accumulator.sum
                }
            }
        }),
]

/// 1, 2 and every available core (`ProcessInfo.activeProcessorCount`), without repeats.
public func defaultThreadCounts(cores: Int = ProcessInfo.processInfo.activeProcessorCount) -> [Int] {
    var counts: [Int] = []
    for n in [1, 2, cores] where n >= 1 && !counts.contains(n) { counts.append(n) }
    return counts
}
