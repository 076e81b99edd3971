import CHookTestSupport
import Foundation
import HookBind
import Observation
import HookMacros
import Synchronization
import Testing

/// Methods inside `#if`: the compiler hooks those of the clauses it
/// compiles, named beside the members outside.
@Hookable
final class ConditionalLog {
    var lines: [String] = []
    func write(_ text: String) { lines.append(text) }
    #if os(Linux)
    func write(_ code: Int) { lines.append("#\(code)") }
    #endif
    #if os(Linux)
    func flush() { lines.append("flushed on Linux") }
    #else
    func flush() { lines.append("flushed") }
    #endif
}

/// An inlinable method of an internal class: its body refers to its slot,
/// which the expansion makes usable from inline code.
@Hookable
class Meter {
    @inlinable func read() -> Int { 1 }
}

/// An `@Observable` model whose hooked property `@Observable` ignores.
@Observable
@Hookable
final class ObservedCounter {
    @ObservationIgnored
    var count = 0
    @Unhooked var label = ""
}

@Hookable
final class Account {
    var balance = 0
    var owner: String
    init(owner: String) { self.owner = owner }
    func deposit(_ amount: Int) -> Int { balance += amount; return balance }
    func withdraw(_ amount: Int) throws -> Int {
        guard amount <= balance else { throw Refusal.insufficient }
        balance -= amount
        return balance
    }
    func move(to place: String) -> String { "to \(place)" }
    func move(by steps: Int) -> String { "by \(steps)" }
    func scale(_ x: Int) -> Int { x * 2 }
    func check(_ x: Int) throws -> Int { if x < 0 { throw Refusal.insufficient }; return x }
    func scale(_ x: Double) -> Double { x * 2 }
    func total(_ values: Int...) -> Int { values.reduce(0, +) }
    func countdown(_ n: Int) -> Int { n == 0 ? 0 : 1 + countdown(n - 1) }
    @Unhooked func plain() -> Int { 1 }
    @Unhooked var note = ""
    let id = 7
    var computed: Int { balance * 2 }
}

enum Refusal: Error, Equatable { case insufficient, vetoed }

@Hookable
final class Box<Element> {
    var item: Element
    init(_ item: Element) { self.item = item }
    func replace(with new: Element) -> Element {
        let old = item
        item = new
        return old
    }
}

@Hookable
class Shape {
    var name = "shape"
    func area() -> Double { 0 }
    func describe(_ prefix: String) -> String { "\(prefix) \(name)" }
}

@Hookable
final class Square: Shape {
    var side = 2.0
    override func area() -> Double { side * side }
    override func describe(_ prefix: String) -> String { "[" + super.describe(prefix) + "]" }
}

/// Overloads in the base class (named by labels, then by types), overridden
/// one at a time by a subclass that sees none of the others.
@Hookable
class Printer {
    func print(_ text: String) -> String { "text " + text }
    func print(_ number: Int) -> String { "number \(number)" }
    func print(page: Int) -> String { "page \(page)" }
}

@Hookable
class LabelPrinter: Printer {
    override func print(_ number: Int) -> String { "label " + super.print(number) }
    override func print(page: Int) -> String { "label page \(page)" }
}

/// A counter ThreadSanitizer can see.
final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var _value = 0
    private var _log: [String] = []
    func add(_ n: Int = 1) { lock.lock(); _value += n; lock.unlock() }
    func note(_ s: String) { lock.lock(); _log.append(s); lock.unlock() }
    var value: Int { lock.lock(); defer { lock.unlock() }; return _value }
    var log: [String] { lock.lock(); defer { lock.unlock() }; return _log }
}

/// Members named with keywords, in backticks: the names the macro makes
/// from them (`$default`, `_$default`, the selector `default`) go without
/// the backticks (they broke the expansion: `_$ \`default\``).
@Hookable
class Keyworded {
    var `class` = "c"
    func `default`(_ x: Int) -> Int { x + 1 }
    func `return`(`in` value: Int) -> Int { value * 2 }
}

@Hookable
final class KeywordedChild: Keyworded {
    override func `default`(_ x: Int) -> Int { super.default(x) + 10 }
}

@Hookable
actor KeywordActor {
    var `for`: Int = 1
    func `switch`() -> Int { `for` }
    @Unhooked func setFor(_ value: Int) { `for` = value }
}

/// A class isolated to the main actor, with a `nonisolated` method: its
/// hook point's slot is `nonisolated(unsafe)` (isolated, the method could
/// not reach it: "cannot form key path to main actor-isolated property").
@MainActor @Hookable
final class ScreenModel {
    var title = ""
    func load(_ n: Int) -> Int { n + 1 }
    nonisolated func format(_ x: Int) -> String { "#\(x)" }
}

@Suite("@Hookable classes")
struct HookableClassTests {
    @Test func methodsInsideIfConfigAreHookedAndNamedAsOverloads() {
        let log = ConditionalLog()
        var seen: [String] = []
        log.$write_String.before { call in seen.append(try call.argument(0, as: String.self)) }
        log.$write_Int.before { call in seen.append("\(try call.argument(0, as: Int.self))") }
        log.$flush.after { _ in seen.append("flush") }
        log.write("a")
        log.write(7)
        log.flush()
        #expect(seen == ["a", "7", "flush"])
        #expect(log.lines == ["a", "#7", "flushed on Linux"])
    }

    /// (A test build, with testing enabled, lets inline code refer to
    /// internal declarations: see the expansion test for the slot.)
    @Test func anInlinableMethodIsHooked() throws {
        let meter = Meter()
        meter.$read.after { call in try call.setResult(try call.result(as: Int.self) + 41) }
        #expect(meter.read() == 42)
    }

    @Test func aPropertyAnObservableTypeIgnoresIsHooked() {
        let counter = ObservedCounter()
        var seen: [Int] = []
        counter.$count.after { call in seen.append(try call.argument(0, as: Int.self)) }
        counter.count = 3
        counter.label = "x"
        #expect(seen == [3] && counter.count == 3 && counter.label == "x")
    }

    @Test func methodsAndPropertiesAreHookedPerInstance() throws {
        let a = Account(owner: "Ada"), b = Account(owner: "Bob")
        a.$deposit.before { call in
            if try call.argument(0, as: Int.self) < 0 { try call.setArgument(0, to: 0) }
        }
        let seen = Counter()
        a.$balance.after { call in seen.note("\(try call.oldValue(as: Int.self))->\(try call.argument(0, as: Int.self))") }
        #expect(a.deposit(-5) == 0)
        #expect(b.deposit(-5) == -5)          // b has no hooks
        #expect(a.deposit(3) == 3)
        #expect(seen.log == ["0->0", "0->3"])
        a.owner = "Ada L."                    // a stored var without type annotation is hooked too
        #expect(a.$owner.name == "owner")
    }

    @Test func callBackNamesTheInstanceAndTheMethod() throws {
        let account = Account(owner: "Ada")
        var target: AnyObject?
        var selector = ""
        var description = ""
        // The hook keeps `target`, which keeps the account, which keeps its
        // hooks: a cycle, let go of at the end (LeakSanitizer checks).
        defer { account.$deposit.removeAllHooks() }
        account.$deposit.after { call in
            target = call.target
            selector = call.selector
            description = call.description
        }
        _ = account.deposit(4)
        #expect(target === account)
        #expect(selector == "deposit")
        #expect(description == "deposit(4) -> 4")
        #expect(account.$deposit === account.$deposit)   // made once
    }

    @Test func insteadAndVeto() throws {
        let account = Account(owner: "Ada")
        let token = account.$deposit.instead { call in
            try call.setArgument(0, to: try call.argument(0, as: Int.self) * 10)
            try call.invokeOriginal()
        }
        #expect(account.deposit(1) == 10)
        token.remove()
        account.$deposit.before { call in
            try call.setResult(-1)
            try call.veto()
        }
        #expect(account.deposit(100) == -1)
        #expect(account.balance == 10)
    }

    @Test func throwingMethodsRecordAndReplaceErrors() throws {
        let account = Account(owner: "Ada")
        _ = account.deposit(5)
        var recorded: (any Error)?
        account.$withdraw.after { call in
            recorded = call.error
            if try call.argument(0, as: Int.self) == 1000 { try call.setResult(-1) }
        }
        #expect(throws: Refusal.insufficient) { try account.withdraw(50) }
        #expect(recorded as? Refusal == .insufficient)
        #expect(try account.withdraw(1000) == -1)      // the after hook turned the error into a result
        account.$withdraw.before { call in try call.setError(Refusal.vetoed) }
        #expect(throws: Refusal.vetoed) { try account.withdraw(1) }
        // A method that cannot throw refuses an error.
        var refusal: HookError?
        account.$deposit.before { call in
            do { try call.setError(Refusal.vetoed) } catch { refusal = error as? HookError }
        }
        _ = account.deposit(1)
        #expect(refusal?.kind == .invalidValue)
    }

    @Test func overloadsGetDistinctHookPoints() throws {
        let account = Account(owner: "Ada")
        account.$move_to.after { call in try call.setResult("went " + (try call.result(as: String.self))) }
        #expect(account.move(to: "Paris") == "went to Paris")
        #expect(account.move(by: 3) == "by 3")
        #expect(account.$move_to.name == "move(to:)")
        #expect(account.$move_by.name == "move(by:)")
        account.$scale_Double.after { call in try call.setResult(-1.0) }
        #expect(account.scale(2.0) == -1)
        #expect(account.scale(2) == 4)
        #expect(account.$scale_Int.name == "scale(_:)")
    }

    @Test func variadicParametersArriveAsAnArray() throws {
        let account = Account(owner: "Ada")
        account.$total.before { call in
            let values = try call.argument(0, as: [Int].self)
            try call.setArgument(0, to: values + [100])
        }
        #expect(account.total(1, 2, 3) == 106)
    }

    @Test func recursionIsHookedAgainButHooksAreNotReentered() throws {
        let account = Account(owner: "Ada")
        let calls = Counter()
        account.$countdown.before { _ in calls.add() }
        #expect(account.countdown(3) == 3)
        #expect(calls.value == 4)                    // 3, 2, 1, 0
        // The original an instead hook runs is hooked again too.
        let around = Counter()
        let insteadToken = account.$countdown.instead { call in
            around.add()
            try call.invokeOriginal()
        }
        #expect(account.countdown(3) == 3)
        #expect(around.value == 4)
        #expect(calls.value == 8)
        insteadToken.remove()
        let inner = Counter()
        // A hook that captures its object: a cycle, let go of at the end.
        defer { account.$deposit.removeAllHooks() }
        account.$deposit.before { _ in
            inner.add()
            _ = account.deposit(0)                   // from its own hook: the original only
        }
        _ = account.deposit(1)
        #expect(inner.value == 1)
    }

    @Test func genericClasses() throws {
        let box = Box("a")
        box.$replace.after { call in try call.setResult("was " + (try call.result(as: String.self))) }
        #expect(box.replace(with: "b") == "was a")
        let seen = Counter()
        box.$item.after { _ in seen.add() }
        box.item = "c"
        #expect(seen.value == 1)
        let numbers = Box(1)
        #expect(numbers.replace(with: 2) == 1)       // another instance, another type: unhooked
    }

    @Test func subclassHooksRunOnceAroundTheMostDerivedMethod() throws {
        let square = Square()
        let calls = Counter()
        square.$describe.before { call in calls.note(try call.argument(0, as: String.self)) }
        square.$describe.after { call in try call.setResult((try call.result(as: String.self)) + "!") }
        #expect(square.describe("a") == "[a shape]!")      // the override and its super call: hooks once
        #expect(calls.log == ["a"])
        square.$area.after { call in try call.setResult(100.0) }
        #expect(square.area() == 100)
        let shape = Shape()
        #expect(shape.area() == 0)
        shape.$area.after { call in try call.setResult(1.0) }
        #expect(shape.area() == 1)
        // Through the base type, the dynamic method is hooked.
        let asShape: Shape = square
        #expect(asShape.area() == 100)
        // Stored properties of both classes.
        square.$side.before { call in try call.setArgument(0, to: 3.0) }
        square.side = 10
        #expect(square.side == 3)
    }

    @Test func anOverrideOfOneOverloadUsesTheBasesHookPoint() throws {
        let printer = LabelPrinter()
        let seen = Counter()
        printer.$print_Int.before { call in seen.note("Int \(call.args[0])") }
        printer.$print_Int.after { call in try call.setResult((try call.result(as: String.self)) + "!") }
        printer.$print_page.after { call in seen.note("page \(call.args[0])") }
        printer.$print_String.after { call in seen.note("String \(call.args[0])") }
        #expect(printer.print(3) == "label number 3!")        // hooked once, around the override
        #expect(printer.print(page: 4) == "label page 4")
        #expect(printer.print("x") == "text x")               // inherited, not overridden
        #expect(seen.log == ["Int 3", "page 4", "String x"])
        let plain = Printer()
        #expect(plain.print(3) == "number 3")
    }

    @Test func keyPaths() throws {
        let account = Account(owner: "Ada")
        let balance = try PropertyHook.of(account, \.balance)
        #expect(balance === account.$balance)
        let deposit = MethodHook.of(account, \.$deposit)          // a method is named by its hook point
        #expect(deposit === account.$deposit)
        #expect(MethodHook.of(account, \.$move_to) === account.$move_to)
        #expect(MethodHook.of(account, \.$move_to) !== MethodHook.of(account, \.$move_by))
        // Generic code that takes the key path gets the typed point.
        func point<Object: AnyObject, each A, R>(_ object: Object, _ method: KeyPath<Object, MethodHook<repeat each A, R>>) -> HookPoint {
            MethodHook.of(object, method)
        }
        #expect(point(account, \.$scale_Int) === account.$scale_Int)
        #expect(throws: HookError.self) { try PropertyHook.of(account, \.note) }     // @Unhooked
    }

    @Test func fishesAndBindings() throws {
        let a = Account(owner: "Ada"), b = Account(owner: "Bob")
        try Binding.bind([.post(a, \.owner), .observer(b, \.owner)])
        a.owner = "Grace"
        #expect(b.owner == "Grace")
        let seen = Counter()
        try Binding.bind([
            .post(a, \.$deposit),
            .observer(b) { call, _ in seen.note("\(call.selector) \(call.args[0]) -> \(call.result!)") },
        ])
        _ = a.deposit(5)
        #expect(seen.log == ["deposit 5 -> 5"])
    }

    @Test func hookPointsDoNotKeepTheirObjectAlive() throws {
        weak var gone: Account?
        var point: MethodHook<Int, Int>?
        do {
            let account = Account(owner: "Ada")
            gone = account
            point = account.$deposit
            account.$deposit.after { [weak account] _ in _ = account?.balance }
            account.$balance.after { _ in }
            _ = account.deposit(1)
            #expect(point?.target === account)
        }
        #expect(gone == nil)
        #expect(point?.target == nil)
        #expect(point?.name == "deposit")
    }

    @Test func eightThreadsCallWhileHooksChange() throws {
        // The calls and the hook changes are what is shared; the account's
        // own stored state is not touched by these methods.
        nonisolated(unsafe) let account = Account(owner: "Ada")
        // Unoptimized, the first call of each member on a class learns its
        // storage's offset through a key path access; do it before the threads.
        _ = account.scale(0)
        _ = account.move(by: 0)
        _ = account.$scale_Int
        _ = account.$move_by
        let ran = Counter()
        let threads = (0..<9).map { index in
            Thread {
                if index == 8 {
                    for _ in 0..<300 {
                        let token = account.$scale_Int.after { _ in ran.add() }
                        let other = account.$move_by.before { _ in ran.add() }
                        token.remove()
                        other.remove()
                    }
                } else {
                    for i in 0..<3_000 {
                        _ = account.scale(i)
                        _ = account.move(by: i)
                    }
                }
                ran.note("done")
            }
        }
        threads.forEach { $0.start() }
        while ran.log.count < 9 { Thread.sleep(forTimeInterval: 0.01) }
        account.$scale_Int.after { call in try call.setResult(0) }
        #expect(account.scale(3) == 0)
        #expect(account.$scale_Int.hookCount == 1)
    }

    @Test(.enabled(if: hk_test_malloc_counting_available(), "malloc is owned by the sanitizer"))
    func aCallWithNoHookAllocatesNothing() throws {
        // (A `+=` of a @Hooked property allocates in unoptimized builds, with
        // or without @Hookable: the synthesized modify coroutine's frame.)
        let account = Account(owner: "Ada")
        _ = account.$scale_Int   // a hook point with no hook: the next load and test
        var total = 0.0
        for i in 0..<10 { total += account.scale(Double(i)) + Double(account.scale(i)); account.balance = i }
        let before = hk_test_malloc_count()
        for i in 0..<1_000 {
            total += account.scale(Double(i))        // no hook point
            total += Double(account.scale(i))        // a hook point, no hook
            account.balance = i                      // a hooked property, no hook point
        }
        let count = hk_test_malloc_count() - before
        #expect(total != 0)
        #expect(count == 0)
    }

    @Test(.enabled(if: hk_test_malloc_counting_available(), "malloc is owned by the sanitizer"), arguments: [false, true])
    func aHookedCallAllocatesNothing(throwing: Bool) throws {
        // The method's body reaches the call path as a closure on the stack;
        // made escaping, its context (it captures self) would be allocated
        // on every call.
        let account = Account(owner: "Ada")
        // (Bodies that touch no @Hooked property: a `+=` of one allocates
        // in unoptimized builds, hooked or not; see above.)
        account.$scale_Int.after { call in
            if try call.result(as: Int.self) == -1 { Issue.record("unreachable") }
        }
        account.$check.before { call in
            if try call.argument(0, as: Int.self) == -1 { Issue.record("unreachable") }
        }
        var total = 0
        func run(_ n: Int) throws {
            for i in 0..<n {
                total &+= throwing ? try account.check(i) : account.scale(i)
            }
        }
        try run(10)
        let before = hk_test_malloc_count()
        try run(1_000)
        let count = hk_test_malloc_count() - before
        #expect(total != 0)
        #expect(count == 0)
    }

    @Test func membersNamedWithKeywordsAreHooked() async throws {
        let object = Keyworded()
        let seen = Mutex<[String]>([])
        object.$default.before { call in seen.withLock { $0.append(call.selector) } }
        object.$return.after { call in seen.withLock { $0.append(call.selector) } }
        object.$class.after { call in seen.withLock { $0.append(call.selector) } }
        #expect(object.default(1) == 2)
        #expect(object.return(in: 3) == 6)
        object.class = "d"
        let child = KeywordedChild()
        child.$default.before { call in seen.withLock { $0.append("child " + call.selector) } }
        #expect(child.default(1) == 12)
        let actor = KeywordActor()
        actor.$for.after { call in seen.withLock { $0.append("actor " + call.selector) } }
        await actor.setFor(5)
        #expect(await actor.switch() == 5)
        #expect(seen.withLock { $0 } == ["default", "return", "class", "child default", "actor for"])
    }

    @MainActor @Test func aMainActorClassWithANonisolatedMethod() async throws {
        let model = ScreenModel()
        model.$format.before { call in try call.setArgument(0, to: 7) }
        model.$load.after { call in try call.setResult(0) }
        #expect(model.load(1) == 0)
        let formatted = await Task.detached { model.format(1) }.value
        #expect(formatted == "#7")
    }
}
