import Hook
import Testing

/// A small class for closure arguments of reference type.
final class Box: CustomStringConvertible {
    var value: Int
    init(_ value: Int) { self.value = value }
    var description: String { "Box(\(value))" }
}

struct Failure: Error, Equatable { let code: Int }

@Suite("Typed closure hooks")
struct ClosureHookTests {
    /// A closure of one tuple argument has one argument, whatever a
    /// closure of that tuple's elements made first: the description of a
    /// point's calls was shared by its arguments' tuple type, which a single
    /// argument is (its own type), so `((Int, Int))` was taken for
    /// `(Int, Int)`, two arguments, and the second read a slot that was not
    /// there.
    @Test func aSingleTupleArgumentIsOneArgument() throws {
        let two = ClosureHook(name: "two") { (a: Int, b: Int) in a + b }
        let one = ClosureHook(name: "one") { (pair: (Int, Int)) in pair.0 * pair.1 }
        var seen: [String] = []
        two.before { call in seen.append("\(call.argumentCount) \(call.args)") }
        one.before { call in
            seen.append("\(call.argumentCount) \(call.args)")
            let pair = try call.argument(0, as: (Int, Int).self)
            try call.setArgument(0, to: (pair.0 + 1, pair.1))
        }
        #expect(two(1, 2) == 3)
        #expect(one((3, 4)) == 16)
        #expect(seen == ["2 [1, 2]", "1 [(3, 4)]"])
        // No arguments and one `Void` argument, the same way.
        let none = ClosureHook(name: "none") { () in 1 }
        let void = ClosureHook(name: "void") { (_: Void) in 2 }
        var counts: [Int] = []
        none.before { call in counts.append(call.argumentCount) }
        void.before { call in counts.append(call.argumentCount) }
        #expect(none() == 1 && void(()) == 2)
        #expect(counts == [0, 1])
    }

    @Test func closuresOfZeroToSixArgumentsOfMixedTypes() throws {
        let h0 = ClosureHook(name: "zero") { 42 }
        let h1 = ClosureHook(name: "one") { (s: String) in s.count }
        let h2 = ClosureHook(name: "two") { (a: Int8, b: Double) in Double(a) + b }
        let h3 = ClosureHook(name: "three") { (a: Bool, b: [Int], c: Box) -> String in "\(a) \(b.count) \(c.value)" }
        let h4 = ClosureHook(name: "four") { (a: UInt16, b: Float, c: String?, d: Int) in Int(a) + Int(b) + (c?.count ?? 0) + d }
        let h5 = ClosureHook(name: "five") { (a: Int, b: Int, c: Int, d: Int, e: String) in "\(a + b + c + d)\(e)" }
        let h6 = ClosureHook(name: "six") { (a: Int32, b: Int64, c: Double, d: Character, e: [String: Int], f: Box) -> Double in
            Double(a) + Double(b) + c + Double(String(d))! + Double(e["k"]!) + Double(f.value)
        }
        var seen: [String] = []
        for point in [h0, h1, h2, h3, h4, h5, h6] as [HookPoint] {
            point.after { call in seen.append("\(call)") }
        }
        #expect(h0() == 42)
        #expect(h1("four") == 4)
        #expect(h2(2, 0.5) == 2.5)
        #expect(h3(true, [1, 2], Box(7)) == "true 2 7")
        #expect(h4(1, 2, "abc", 4) == 10)
        #expect(h5(1, 2, 3, 4, "!") == "10!")
        #expect(h6(1, 2, 3, "4", ["k": 5], Box(6)) == 21)
        #expect(seen == [
            "zero() -> 42",
            #"one("four") -> 4"#,
            "two(2, 0.5) -> 2.5",
            #"three(true, [1, 2], Box(7)) -> "true 2 7""#,
            #"four(1, 2.0, Optional("abc"), 4) -> 10"#,
            #"five(1, 2, 3, 4, "!") -> "10!""#,
            #"six(1, 2, 3.0, "4", ["k": 5], Box(6)) -> 21.0"#,
        ])
    }

    @Test func functionHasTheOriginalsTypeAndKeepsThePointAlive() throws {
        weak var weakPoint: ClosureHook<Int, Int>?
        let f: (Int) -> Int
        do {
            let point = ClosureHook { (x: Int) in x + 1 }
            point.after { call in try call.setResult(try call.result(as: Int.self) * 10) }
            weakPoint = point
            f = point.function
        }
        #expect(weakPoint != nil)
        #expect(f(1) == 20)
    }

    @Test func beforeReplacesArgumentsByIndexAndAsATuple() throws {
        let point = ClosureHook(name: "greet") { (name: String, times: Int) in
            String(repeating: "Hi \(name). ", count: times)
        }
        var tuples: [String] = []
        point.before { call in
            let (name, times) = try call.arguments(as: (String, Int).self)
            tuples.append("\(name)x\(times)")
            try call.setArgument(0, to: name.uppercased())
        }
        point.before { call in
            try call.setArguments((try call.argument(0, as: String.self) + "!", 2))
        }
        #expect(point("ada", 1) == "Hi ADA!. Hi ADA!. ")
        #expect(tuples == ["adax1"])
    }

    @Test func afterSeesAndReplacesTheResultInsteadReplacesTheCall() throws {
        let point = ClosureHook { (a: Int, b: Int) in a * b }
        point.instead { call in
            try call.setArgument(1, to: try call.argument(1, as: Int.self) + 1)
            try call.invokeOriginal()
            let first = try call.result(as: Int.self)
            try call.invokeOriginal()  // the original may run again
            try call.setResult(first + (try call.result(as: Int.self)))
        }
        point.after { call in try call.setResult(-(try call.result(as: Int.self))) }
        #expect(point(3, 4) == -30)

        let replaced = ClosureHook { (s: String) in s }
        replaced.instead { call in try call.setResult("replaced") }
        #expect(replaced("x") == "replaced")
    }

    @Test func hooksRunInTheOrderAddedAndInsteadHooksNest() throws {
        let point = ClosureHook { (s: String) -> String in s + "o" }
        point.before { call in try call.setArgument(0, to: try call.argument(0, as: String.self) + "b1") }
        point.before { call in try call.setArgument(0, to: try call.argument(0, as: String.self) + "b2") }
        point.instead { call in
            try call.setArgument(0, to: try call.argument(0, as: String.self) + "i1")
            try call.invokeOriginal()
        }
        point.instead { call in
            try call.setArgument(0, to: try call.argument(0, as: String.self) + "i2")
            try call.invokeOriginal()
        }
        point.after { call in try call.setResult(try call.result(as: String.self) + "a1") }
        point.after { call in try call.setResult(try call.result(as: String.self) + "a2") }
        #expect(point("") == "b1b2i1i2oa1a2")
    }

    @Test func throwingClosureErrorsReachHooksAndCaller() throws {
        let parse = ThrowingClosureHook(name: "parse") { (text: String) throws -> Int in
            guard let n = Int(text) else { throw Failure(code: 1) }
            return n
        }
        var errors: [String] = []
        parse.after { call in
            if let error = call.error { errors.append("\(error)") }
        }
        #expect(try parse("12") == 12)
        #expect(throws: Failure(code: 1)) { try parse("x") }
        #expect(errors == ["Failure(code: 1)"])

        // An after hook can turn an error into a result, or a result into an error.
        let rescue = parse.after { call in
            if call.error != nil { try call.setResult(0) }
        }
        #expect(try parse("x") == 0)
        rescue.remove()
        parse.after { call in
            if try call.argument(0, as: String.self) == "13" { try call.setError(Failure(code: 13)) }
        }
        #expect(throws: Failure(code: 13)) { try parse("13") }
        let f: (String) throws -> Int = parse.function
        #expect(try f("5") == 5)
    }

    /// A before hook's error fails the call: the original does not run,
    /// with or without an instead hook (it ran, and with a pass-through
    /// instead hook, whose `invokeOriginal()` cleared the error, the caller
    /// got the result); `veto()` after `setError` needs no result.
    @Test func aBeforeHooksErrorFailsTheCallWithoutTheOriginal() throws {
        struct Refused: Error, Equatable {}
        let ran = Shared(0)
        let point = ThrowingClosureHook(name: "charge") { (x: Int) throws -> Int in
            ran.mutate { $0 += 1 }
            return x
        }
        let charge = point.function
        let refuse = point.before { call in if try call.argument(0, as: Int.self) < 0 { try call.setError(Refused()) } }
        #expect(throws: Refused()) { try charge(-1) }
        #expect(try charge(2) == 2)
        #expect(ran.value == 1)
        let passing = point.instead { call in try call.invokeOriginal() }
        #expect(throws: Refused()) { try charge(-1) }
        #expect(ran.value == 1)
        passing.remove()
        refuse.remove()
        var problem: HookError?
        point.before { call in
            try call.setError(Refused())
            do { try call.veto() } catch { problem = error as? HookError }
        }
        #expect(throws: Refused()) { try charge(3) }
        #expect(problem == nil && ran.value == 1)
    }

    @Test func nonThrowingClosuresRefuseErrorsAndVetoNeedsAResult() throws {
        let point = ClosureHook(name: "square") { (x: Int) in x * x }
        var problems: [HookError.Kind] = []
        point.before { call in
            do { try call.setError(Failure(code: 0)) } catch let error as HookError { problems.append(error.kind) }
            do { try call.veto() } catch let error as HookError { problems.append(error.kind) }
            if try call.argument(0, as: Int.self) < 0 {
                try call.setResult(-1)
                try call.veto()
            }
        }
        #expect(point(3) == 9)
        #expect(point(-3) == -1)
        #expect(problems == [.invalidValue, .resultUnavailable, .invalidValue, .resultUnavailable])
    }

    @Test func wrongTypesAreErrorsThatNameThePoint() throws {
        let point = ClosureHook(name: "label") { (n: Int, s: String) in "\(n)\(s)" }
        var messages: [String] = []
        point.before { call in
            do { _ = try call.argument(1, as: Int.self) } catch let error as HookError { messages.append(error.description) }
            do { _ = try call.argument(2, as: Int.self) } catch let error as HookError { messages.append(error.description) }
            do { _ = try call.arguments(as: (Int, Int).self) } catch let error as HookError { messages.append(error.description) }
            do { _ = try call.result(as: String.self) } catch let error as HookError { messages.append(error.description) }
            do { _ = try call.argument(0, as: Int32.self) } catch let error as HookError { messages.append(error.description) }
        }
        #expect(point(1, "a") == "1a")
        #expect(messages == [
            "hook point 'label': type mismatch: argument 1 is String, not Int",
            "hook point 'label': argument index out of range: argument 2 of a closure with 2 arguments",
            "hook point 'label': type mismatch: the arguments are (Int, String), not (Int, Int)",
            "hook point 'label': result unavailable: the result is read in a before hook before the original ran",
            "hook point 'label': type mismatch: argument 0 is Int, not Int32",
        ])
    }

    @Test func insteadHookWithoutAResultFallsBackToTheOriginalAndReports() throws {
        let point = ClosureHook(name: "id") { (s: String) in s }
        let reported = Shared<[String]>([])
        point.hookErrorHandler = { error, position in reported.mutate { $0.append("\(position): \(error)") } }
        point.instead { _ in }
        #expect(point("kept") == "kept")
        #expect(reported.value == ["instead: hook point 'id': result unavailable: no instead hook ran the original or set a result of type String; the original ran"])
        // A Void closure needs no result: an instead hook that does nothing replaces the call.
        var ran = false
        let void = ClosureHook { ran = true }
        void.instead { _ in }
        void()
        #expect(!ran)
    }

    @Test func tokensRemoveHooks() throws {
        let point = ClosureHook { (x: Int) in x }
        let token = point.after { call in try call.setResult(0) }
        #expect(point(5) == 0)
        token.remove()
        token.remove()
        #expect(!token.isActive)
        #expect(point(5) == 5)
        #expect(point.hookCount == 0)
    }

    @Test func reentrantCallsRunTheOriginalOnly() throws {
        var calls = 0
        let point = ClosureHook(name: "twice") { (x: Int) in x * 2 }
        // The hook gets the hooked function through an unowned reference: the
        // function holds the hook point, which holds the hook.
        point.after { [unowned point] call in
            calls += 1
            // Calling the hooked function from its own hook: no recursion into the hooks.
            let f = point.function
            try call.setResult(f(try call.result(as: Int.self)))
        }
        #expect(point(1) == 4)
        #expect(calls == 1)
        #expect(withoutHooks { point(1) } == 2)
        #expect(point.withoutHooks { point(1) } == 2)
        #expect(calls == 1)
    }

    @Test func recursiveOriginalsAreHookedAtEveryLevel() throws {
        var depthSeen: [Int] = []
        var factorial: ((Int) -> Int)!
        let point = ClosureHook(name: "factorial") { (n: Int) -> Int in n <= 1 ? 1 : n * factorial(n - 1) }
        factorial = point.function
        point.before { call in depthSeen.append(try call.argument(0, as: Int.self)) }
        #expect(factorial(4) == 24)
        #expect(depthSeen == [4, 3, 2, 1])
        factorial = nil  // break the cycle through the function
    }

    /// The original an instead hook runs (`invokeOriginal()`) is hooked
    /// again where it calls itself, as one run without instead hooks is;
    /// the instead hook's own calls still run the original only.
    @Test func aRecursiveOriginalRunByAnInsteadHookIsHookedAtEveryLevel() throws {
        var levels: [Int] = []
        var factorial: ((Int) -> Int)!
        let point = ClosureHook(name: "factorial") { (n: Int) -> Int in n <= 1 ? 1 : n * factorial(n - 1) }
        factorial = point.function
        point.instead { call in
            let n = try call.argument(0, as: Int.self)
            levels.append(n)
            try call.invokeOriginal()
            if n == 3 { levels.append(-factorial(2)) }  // from the hook: the original only (2! = 2, no level)
        }
        #expect(factorial(4) == 24)
        #expect(levels == [4, 3, 2, 1, -2])
        factorial = nil  // break the cycle through the function
    }

    @Test func boxedViewsAndTargets() throws {
        let owner = Box(1)
        let point = ClosureHook(name: "pair", target: owner) { (a: String, b: Box) -> [Int] in [a.count, b.value] }
        var seen: [String] = []
        point.after { call in
            seen.append("\(call.args.count) \(call.args[0]) \(call.result!) \(call.target === owner) \(call.selector)")
            #expect(call.signature == nil)
        }
        _ = point("ab", Box(3))
        #expect(seen == ["2 ab [2, 3] true pair"])
    }

    // MARK: afterReturning, the typed after hook

    @Test func afterReturningGetsTheResultAndTheArgumentsTyped() throws {
        var seen: [String] = []
        let add = ClosureHook(name: "add") { (a: Int, b: Int) in a + b }
        let token = add.afterReturning { sum, a, b in seen.append("\(a)+\(b)=\(sum)") }
        let f = add.function
        #expect(f(2, 3) == 5)         // through the function
        #expect(add(4, 5) == 9)       // through callAsFunction
        #expect(add.hookCount == 1)
        token.remove()
        #expect(f(1, 1) == 2)
        #expect(seen == ["2+3=5", "4+5=9"])
        #expect(add.hookCount == 0)

        // No arguments, a Void result, a reference type.
        var count = 0
        let zero = ClosureHook(name: "zero") { 42 }
        zero.afterReturning { value in count += value }
        #expect(zero() == 42)
        let log = ClosureHook(name: "log") { (box: Box, text: String) in box.value += text.count }
        log.afterReturning { (_: Void, box: Box, text: String) in seen.append("\(text) -> \(box.value)") }
        let box = Box(1)
        log(box, "abc")
        #expect(count == 42)
        #expect(seen.last == "abc -> 4")
    }

    @Test func afterReturningAmongOtherHooksSeesTheirChanges() throws {
        var order: [String] = []
        let add = ClosureHook(name: "add") { (a: Int, b: Int) in a + b }
        add.before { call in
            order.append("before")
            try call.setArgument(0, to: try call.argument(0, as: Int.self) * 10)
        }
        add.afterReturning { sum, a, b in order.append("typed \(a) \(b) \(sum)") }
        add.after { call in
            order.append("after")
            try call.setResult(try call.result(as: Int.self) + 1)
        }
        // The typed hook runs where it was added, sees the changed argument,
        // and the result as the hooks before it left it.
        let f = add.function
        #expect(f(1, 2) == 13)
        #expect(order == ["before", "typed 10 2 12", "after"])

        // An instead hook's result.
        let twice = ClosureHook(name: "twice") { (x: Int) in x * 2 }
        twice.instead { call in try call.setResult(-1) }
        twice.afterReturning { result, x in order.append("instead \(x) \(result)") }
        #expect(twice(5) == -1)
        #expect(order.last == "instead 5 -1")
    }

    @Test func afterReturningDoesNotRunWhenTheCallThrows() throws {
        var seen: [Int] = []
        let parse = ThrowingClosureHook(name: "parse") { (text: String) throws -> Int in
            guard let value = Int(text) else { throw Failure(code: 1) }
            return value
        }
        parse.afterReturning { value, _ in seen.append(value) }
        #expect(try parse("7") == 7)
        #expect(throws: Failure(code: 1)) { try parse("x") }
        let f = parse.function
        #expect(try f("8") == 8)
        // Among other hooks too.
        parse.before { _ in }
        #expect(throws: Failure(code: 1)) { try f("y") }
        #expect(try parse("9") == 9)
        #expect(seen == [7, 8, 9])
    }

    @Test func afterReturningErrorsGoToTheHandler() throws {
        let errors = Shared<[String]>([])
        let square = ClosureHook(name: "square") { (x: Int) in x * x }
        square.hookErrorHandler = { error, position in errors.mutate { $0.append("\(position) \(error)") } }
        square.afterReturning { result, _ in if result > 10 { throw Failure(code: result) } }
        #expect(square(3) == 9)
        let f = square.function
        #expect(f(4) == 16)   // the caller still gets the result
        #expect(errors.value == ["after Failure(code: 16)"])
    }

    @Test func afterReturningIsGuardedAgainstReentryAndSuppressed() throws {
        var calls = 0
        let point = ClosureHook(name: "twice") { (x: Int) in x * 2 }
        var inner: [Int] = []
        point.afterReturning { [unowned point] result, _ in
            calls += 1
            // Calling the hook point from its own hook runs the original only.
            let f = point.function
            inner.append(f(result))
        }
        #expect(point(1) == 2)
        #expect(calls == 1)
        #expect(inner == [4])
        let f = point.function
        #expect(withoutHooks { f(1) } == 2)
        #expect(point.withoutHooks { point(1) } == 2)
        #expect(calls == 1)
    }

    @Test func afterReturningSeesEveryLevelOfARecursiveOriginal() throws {
        var seen: [String] = []
        var factorial: ((Int) -> Int)!
        let point = ClosureHook(name: "factorial") { (n: Int) -> Int in n <= 1 ? 1 : n * factorial(n - 1) }
        factorial = point.function
        point.afterReturning { result, n in seen.append("\(n)! = \(result)") }
        #expect(factorial(4) == 24)
        #expect(seen == ["1! = 1", "2! = 2", "3! = 6", "4! = 24"])
        factorial = nil  // break the cycle through the function
    }

    @Test func afterReturningStopsWithItsOwner() throws {
        var seen: [Int] = []
        let point = ClosureHook(name: "id") { (x: Int) in x }
        var owner: Box? = Box(0)
        point.afterReturning(owner: owner) { result, _ in seen.append(result) }
        let f = point.function
        #expect(f(1) == 1)
        owner = nil
        #expect(f(2) == 2)
        #expect(point(3) == 3)
        #expect(seen == [1])
        #expect(point.hookCount == 0)   // detached by the call that found the owner gone
        // An owner with a bag detaches its hooks as it goes.
        var bagOwner: BaggedObserver? = BaggedObserver()
        point.afterReturning(owner: bagOwner) { result, _ in seen.append(result) }
        #expect(point(4) == 4)
        #expect(point.hookCount == 1)
        bagOwner = nil
        #expect(point.hookCount == 0)
        #expect(point(5) == 5)
        #expect(seen == [1, 4])
    }
}
