// hook-demo: a tour of Hook and HookBind: `swift run hook-demo`. (What a hook
// costs: `cd Benchmarks && swift run -c release hook-overhead`.)
import CHookDemoSupport
import Foundation
import Hook
import HookBind
import HookMacros

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
    add.hookErrorHandler = { error, position in print("\(position == .before ? "a" : "an") \(position) hook threw: \(error)") }
    _ = hooked(1, 1)
    withExtendedLifetime(add) {}  // `hooked` points into `add`: keep it alive until here

    try swiftTour()
    try importTour()
    try entryTour()
    try swiftByNameTour()
    try fishBindTour()
    try xkvoTour()
    try fisticuffsTour()
    try iqDataBindingTour()
    try bindingsTour()
}

/// Classes for the Swift half of the tour.
final class Person: CustomStringConvertible {
    @Hooked var name = "nobody"
    @Hooked var age = 0
    var description: String { "Person(\(name))" }
}

@Hookable
final class Account {
    private(set) var balance = 0
    func deposit(_ amount: Int) -> Int {
        balance += amount
        return balance
    }
}

final class Screen: HookOwner {
    let hookBag = HookBag()
    let label: String
    init(_ label: String) { self.label = label }
    deinit { print("\(label) deinitialized; its hooks went with it") }
}

func swiftTour() throws {
    section("A typed hook over a Swift closure: (String, Int) -> String")
    let greet = ClosureHook(name: "greet") { (name: String, times: Int) in
        String(repeating: "Hello, \(name)! ", count: times)
    }
    greet.before { call in
        let (name, times) = try call.arguments(as: (String, Int).self)
        print("before  \(call)   args as a tuple: \((name, times))")
        try call.setArgument(0, to: name.capitalized)
    }
    greet.after { call in
        print("after   \(call)")
        try call.setResult(try call.result(as: String.self).uppercased())
    }
    let function: (String, Int) -> String = greet.function  // the original's type
    print("greet(\"ada\", 2) = \(function("ada", 2))")

    section("A throwing closure: the hooks see the error, and may replace it")
    let parse = ThrowingClosureHook(name: "parse") { (text: String) throws -> Int in
        guard let n = Int(text) else { throw CocoaError(.formatting) }
        return n
    }
    parse.after { call in
        if let error = call.error {
            print("after   \(call.selector)(\(call.args[0])) threw \(type(of: error)); result replaced by -1")
            try call.setResult(-1)
        }
    }
    print("parse(\"42\") = \(try parse("42")), parse(\"forty-two\") = \(try parse("forty-two"))")

    section("A capturing Swift closure as a C function pointer: qsort")
    var comparisons = 0
    let descending = true  // captured: qsort's comparator has no context argument
    let compare = ClosureHook(name: "compare") { (a: UnsafeRawPointer?, b: UnsafeRawPointer?) -> Int32 in
        let x = a!.load(as: Int32.self), y = b!.load(as: Int32.self)
        let order: Int32 = x < y ? -1 : (x > y ? 1 : 0)
        return descending ? -order : order
    }
    compare.after { _ in comparisons += 1 }
    let comparator = try compare.cFunction(as: (@convention(c) (UnsafeRawPointer?, UnsafeRawPointer?) -> Int32).self)
    var numbers: [Int32] = [5, 1, 4, 2, 3]
    withExtendedLifetime(compare) {  // the pointer is valid while `compare` lives
        numbers.withUnsafeMutableBufferPointer { qsort($0.baseAddress!, $0.count, 4, comparator) }
    }
    print("qsort with a hooked Swift comparator: \(numbers), \(comparisons) comparisons counted by a hook")

    section("@Hooked properties: each set of each instance is a hook point")
    let ada = Person(), bob = Person()
    let name = try PropertyHook.of(ada, \.name)  // by key path (or ada.$name)
    name.before { call in
        let new = try call.argument(0, as: String.self)
        if new.isEmpty {
            print("before  veto: an empty name")
            try call.veto()
        }
    }
    name.after { call in  // runs once a value is stored: not for the vetoed set
        let old = try call.oldValue(as: String.self)
        print("after   target: \(call.target!), selector: \(call.selector), \(old) -> \(call.args[0])")
    }
    ada.name = "Ada"
    ada.name = ""
    bob.name = "Bob"  // another instance: not hooked
    print("ada.name = \(ada.name), bob.name = \(bob.name)")

    section("A @Hookable class: its methods and stored properties are hook points")
    let account = Account()
    let deposit = account.$deposit
    deposit.before { call in
        if try call.argument(0, as: Int.self) < 0 {
            print("before  \(call): negative deposit set to 0")
            try call.setArgument(0, to: 0)
        }
    }
    deposit.after { call in print("after   \(call), target balance \((call.target as! Account).balance)") }
    _ = account.deposit(100)
    _ = account.deposit(-5)

    section("Owners: hooks that end with an object")
    var screen: Screen? = Screen("screen")
    ada.$age.add(.after, owner: screen!) { screen, call in
        print("\(screen.label) shows age \(call.args[0])")
    }
    ada.age = 36
    screen = nil
    ada.age = 37
    print("hooks on ada.age now: \(ada.$age.hookCount)")
}

/// An actor whose async method is hooked per instance.
@Hookable
actor Inbox {
    @Unhooked private var messages: [String] = []
    func receive(_ text: String) async -> Int {
        await Task.yield()
        messages.append(text)
        return messages.count
    }
}

func asyncTour() async throws {
    section("async: an AsyncClosureHook with async hooks, calls as an AsyncSequence")
    let fetch = AsyncClosureHook(name: "fetch") { (id: Int) async throws -> String in
        try await Task.sleep(nanoseconds: 1_000_000)
        return "item \(id)"
    }
    fetch.before { call in
        try await Task.sleep(nanoseconds: 1_000_000)     // a hook may suspend
        call.arguments += 100                             // one argument: its own type
    }
    var calls = fetch.calls().makeAsyncIterator()
    print("try await fetch(1) = \(try await fetch(1))")
    if let call = await calls.next() { print("for await call in fetch.calls(): \(call)") }

    section("async: an async method of a @Hookable actor")
    let inbox = Inbox()
    inbox.$receive.after { call in
        print("after   \(call.selector)(\(call.arguments)) -> \(call.result ?? 0)")
    }
    _ = await inbox.receive("hello")
    _ = await inbox.receive("world")
}

/// Runs the async tour from the synchronous top level, the main thread
/// waiting: a top-level `await` would make the program end in
/// `dispatch_main`, which valgrind (CI's leak check) cannot follow.
func runAsyncTour() throws {
    let done = DispatchSemaphore(value: 0)
    nonisolated(unsafe) var failure: (any Error)?
    Task.detached {
        do { try await asyncTour() } catch { failure = error }
        done.signal()
    }
    done.wait()
    if let failure { throw failure }
}

do {
    try tour()
    try runAsyncTour()
} catch {
    print("hook-demo: \(error)")
}
