// hook-demo: a tour of Hook. `swift run hook-demo` runs the tour;
// `swift run -c release hook-demo overhead` measures what a hook costs.
import CHookDemoSupport
import Foundation
import Hook

typealias BinaryOp = @convention(c) (Int64, Int64) -> Int64

func section(_ title: String) { print("\n== \(title)") }

func tour() throws {
    section("A hook point over a C function: int64_t add(int64_t, int64_t)")
    let add = try FunctionHook(cFunction: demo_add as BinaryOp,
                               signature: Signature(returning: Int64.self, arguments: Int64.self, Int64.self),
                               name: "add")
    print(add)

    // before: sees the CallBack and replaces an argument.
    let before = add.before { call in
        print("before  \(call)   target: \(call.target.map { "\($0)" } ?? "nil"), selector: \(call.selector), args: \(call.args)")
        let a = try call.argument(0, as: Int64.self)
        try call.setArgument(0, to: a * 10)
        print("before  changed argument 0 from \(a) to \(a * 10)")
    }
    // instead: runs in place of the original, calls it, may call it again.
    let instead = add.instead { call in
        print("instead \(call)   calling the original...")
        try call.invokeOriginal()
        print("instead \(call)")
    }
    // after: sees the result and replaces it.
    let after = add.after { call in
        let result = try call.result(as: Int64.self)
        print("after   \(call)   result: \(call.result.map { "\($0)" } ?? "nil")")
        try call.setResult(result + 1)
        print("after   changed the result from \(result) to \(result + 1)")
    }

    let hooked = add.entry(as: BinaryOp.self)
    print("hooked entry add(3, 4) = \(hooked(3, 4))   (original: \(add.original(as: BinaryOp.self)(3, 4)))")

    section("Installing the entry where the original lived (a C table of function pointers)")
    let previous = demo_set_operation(0, hooked)
    print("demo_apply(0, 1, 2) through the table = \(demo_apply(0, 1, 2))")
    _ = demo_set_operation(0, previous)

    section("Removing hooks (tokens; remove() is idempotent)")
    instead.remove()
    instead.remove()
    print("without the instead hook: add(3, 4) = \(hooked(3, 4))")
    before.remove()
    after.remove()
    print("without any hook: add(3, 4) = \(hooked(3, 4)), hooks attached: \(add.hookCount)")

    section("Reentrancy: an after hook that calls the function it observes")
    let reentrant = add.after { call in
        let inner = hooked(100, 100)  // runs the original only: no recursion
        print("after   \(call); inner call add(100, 100) = \(inner) ran without hooks")
    }
    print("add(1, 2) = \(hooked(1, 2))")
    print("inside withoutHooks { }: add(1, 2) = \(withoutHooks { hooked(1, 2) }) (no hook printed)")
    reentrant.remove()

    section("Errors name the hook point and the cause")
    let bad: [(String, Signature)] = [
        ("union", Signature(returning: .int32, arguments: [.union([.int32, .float])])),
        ("empty struct", Signature(returning: .structure([]), arguments: [])),
        ("variadic", .variadic(returning: .int32, fixed: [.pointer], variadic: [.double])),
    ]
    for (label, signature) in bad {
        do {
            _ = try FunctionHook(cFunction: demo_add as BinaryOp, signature: signature, name: "add(\(label))")
        } catch {
            print(error)
        }
    }
    do {
        _ = try FunctionHook(function: nil, signature: Signature(returning: .void, arguments: []), name: "missing")
    } catch {
        print(error)
    }
    add.before { call in _ = try call.argument(0, as: Double.self) }
    add.hookErrorHandler = { error, position in print("a \(position) hook threw: \(error)") }
    _ = hooked(1, 1)
    withExtendedLifetime(add) {}  // `hooked` points into `add`: keep it alive until here
}

/// ns per call of `fn` over `iterations` calls made from a C loop; best of 5 runs.
func nanosecondsPerCall(_ fn: BinaryOp, iterations: Int64) -> Double {
    var best = Double.infinity
    for _ in 0..<5 {
        let clock = ContinuousClock()
        var sum: Int64 = 0
        let elapsed = clock.measure { sum = demo_call_loop(fn, iterations) }
        precondition(sum == iterations * (iterations - 1) / 2 + iterations, "wrong sum: \(sum)")
        let (seconds, attoseconds) = elapsed.components
        let ns = (Double(seconds) * 1e9 + Double(attoseconds) / 1e9) / Double(iterations)
        best = min(best, ns)
    }
    return best
}

func overhead() throws {
    let iterations: Int64 = CommandLine.arguments.count > 2 ? Int64(CommandLine.arguments[2]) ?? 10_000_000 : 10_000_000
    let signature = Signature(returning: Int64.self, arguments: Int64.self, Int64.self)
    guard let passthrough = demo_make_passthrough(unsafeBitCast(demo_add as BinaryOp, to: UnsafeMutableRawPointer.self)) else {
        print("libffi refused a closure for the floor")
        return
    }
    let floor = unsafeBitCast(passthrough, to: BinaryOp.self)
    let bare = try FunctionHook(cFunction: demo_add as BinaryOp, signature: signature, name: "add")
    let typed = try FunctionHook(cFunction: demo_add as BinaryOp, signature: signature, name: "add")
    typed.before { call in
        let a = try call.argument(0, as: Int64.self)
        let b = try call.argument(1, as: Int64.self)
        if a == -1, b == -1 { print("unreachable") }
    }
    typed.after { call in
        let r = try call.result(as: Int64.self)
        if r == -1 { print("unreachable") }
    }

    print("Overhead: int64_t add(int64_t, int64_t), \(iterations) calls from a C loop, best of 5 (ns per call)")
    let direct = nanosecondsPerCall(demo_add, iterations: iterations)
    let floorNs = nanosecondsPerCall(floor, iterations: iterations)
    // The hook points must outlive every call of their entries.
    let none = withExtendedLifetime(bare) { nanosecondsPerCall(bare.entry(as: BinaryOp.self), iterations: iterations) }
    let both = withExtendedLifetime(typed) { nanosecondsPerCall(typed.entry(as: BinaryOp.self), iterations: iterations) }
    func row(_ name: String, _ ns: Double, target: String) {
        let ratio = ns / floorNs
        print("| \(name.padding(toLength: 52, withPad: " ", startingAt: 0)) | \(String(format: "%7.2f", ns)) | \(String(format: "%4.2fx", ratio)) | \(target.padding(toLength: 8, withPad: " ", startingAt: 0)) |")
    }
    print("| case                                                 |   ns    | floor | target   |")
    print("| ---------------------------------------------------- | ------- | ----- | -------- |")
    row("direct call through a pointer", direct, target: "")
    row("bare libffi closure + ffi_call (the floor, in C)", floorNs, target: "1.00x")
    row("FunctionHook, no hooks", none, target: "<= 1.10x")
    row("FunctionHook, before + after reading typed arguments", both, target: "<= 1.50x")
}

do {
    if CommandLine.arguments.dropFirst().first == "overhead" {
        try overhead()
    } else {
        try tour()
    }
} catch {
    print("hook-demo: \(error)")
}
