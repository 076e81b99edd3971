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
}
