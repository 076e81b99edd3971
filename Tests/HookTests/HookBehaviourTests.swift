import CHookTestSupport
import Hook
import Synchronization
import Testing

typealias AddFn = @convention(c) (Int32, Int32) -> Int32
let addSignature = Signature(returning: Int32.self, arguments: Int32.self, Int32.self)

func makeAddHook(_ name: String = "test_add", target: AnyObject? = nil) throws -> FunctionHook {
    try FunctionHook(cFunction: test_add as AddFn, signature: addSignature, name: name, target: target)
}

func makeCountedAddHook(_ name: String = "test_counted_add") throws -> FunctionHook {
    try FunctionHook(cFunction: test_counted_add as AddFn, signature: addSignature, name: name)
}

@Suite("Positions, ordering, arguments and results")
struct HookBehaviourTests {
    @Test func beforeHookReplacesArgumentsTheOriginalSees() throws {
        let hook = try makeCountedAddHook()
        hook.before { call in
            try call.setArgument(0, to: try call.argument(0, as: Int32.self) * 100)
        }
        let seen = Shared<[Int32]>([])
        hook.after { call in
            seen.value = [try call.argument(0, as: Int32.self), try call.argument(1, as: Int32.self), try call.result(as: Int32.self)]
        }
        #expect(hook.entry(as: AddFn.self)(3, 4) == 304)
        #expect(seen.value == [300, 4, 304])
    }

    @Test func afterHookReplacesTheResultTheCallerGets() throws {
        let hook = try makeAddHook()
        hook.after { call in try call.setResult(try call.result(as: Int32.self) * -1) }
        #expect(hook.entry(as: AddFn.self)(20, 22) == -42)
        // Narrow integers are widened for libffi: a negative Int8 result stays negative.
        let i8 = try FunctionHook(cFunction: abi_i8 as @convention(c) (Int8, Int8) -> Int8,
                                  signature: Signature(returning: Int8.self, arguments: Int8.self, Int8.self))
        i8.after { call in try call.setResult(Int8(-5)) }
        #expect(i8.entry(as: (@convention(c) (Int8, Int8) -> Int8).self)(1, 1) == -5)
    }

    @Test func insteadHookCallsTheOriginalTwiceWithDifferentArguments() throws {
        let hook = try makeCountedAddHook()
        hook.instead { call in
            try call.setArgument(1, to: Int32(1))
            try call.invokeOriginal()
            let first = try call.result(as: Int32.self)
            try call.setArgument(1, to: Int32(1000))
            try call.invokeOriginal()
            let second = try call.result(as: Int32.self)
            try call.setResult(first * 10_000 + second)
        }
        let calls = test_counter_calls()
        #expect(hook.entry(as: AddFn.self)(5, 0) == 6 * 10_000 + 1005)
        #expect(test_counter_calls() == calls + 2)
    }

    @Test func insteadHookThatSkipsTheOriginalReturnsItsResult() throws {
        let hook = try makeCountedAddHook()
        hook.instead { call in try call.setResult(Int32(7)) }
        let calls = test_counter_calls()
        #expect(hook.entry(as: AddFn.self)(100, 100) == 7)
        #expect(test_counter_calls() == calls)
        // One that neither calls the original nor sets a result gives zero.
        hook.removeAllHooks()
        hook.instead { _ in }
        #expect(hook.entry(as: AddFn.self)(100, 100) == 0)
    }

    /// A result a before hook set (without vetoing) is the call's result
    /// where no instead hook runs the original, for a C function as for a
    /// closure (the instead phase zeroed it: the caller got 0).
    @Test func aResultABeforeHookSetStaysWhereNoInsteadHookRunsTheOriginal() throws {
        let hook = try makeAddHook()
        hook.before { call in try call.setResult(Int32(77)) }
        let instead = hook.instead { _ in }  // runs no original
        #expect(hook.entry(as: AddFn.self)(2, 3) == 77)
        instead.remove()
        #expect(hook.entry(as: AddFn.self)(2, 3) == 5)  // the original's result replaces it
    }

    @Test func severalHooksPerPositionRunInTheOrderAdded() throws {
        let hook = try makeAddHook()
        let log = Shared<[String]>([])
        for name in ["b1", "b2", "b3"] { hook.before { _ in log.mutate { $0.append(name) } } }
        for name in ["a1", "a2"] { hook.after { _ in log.mutate { $0.append(name) } } }
        hook.instead { call in
            log.mutate { $0.append("i1 in") }
            try call.invokeOriginal()
            log.mutate { $0.append("i1 out") }
        }
        hook.instead { call in
            log.mutate { $0.append("i2 in") }
            try call.setResult(try call.result(as: Int32.self) + 1)  // throws: no result yet
        }
        hook.hookErrorHandler = { error, position in log.mutate { $0.append("error in \(position)") } }
        // i2 throws before reaching the original, so the original runs in its place.
        #expect(hook.entry(as: AddFn.self)(1, 2) == 3)
        #expect(log.value == ["b1", "b2", "b3", "i1 in", "i2 in", "error in instead", "i1 out", "a1", "a2"])
    }

    @Test func nestedInsteadHooksWrapEachOther() throws {
        let hook = try makeAddHook()
        hook.instead { call in
            try call.invokeOriginal()
            try call.setResult(try call.result(as: Int32.self) * 2)
        }
        hook.instead { call in
            try call.invokeOriginal()
            try call.setResult(try call.result(as: Int32.self) + 1)
        }
        // first added is outermost: (1 + 2 + 1) * 2
        #expect(hook.entry(as: AddFn.self)(1, 2) == 8)
    }

    @Test func throwingBeforeHookIsReportedAndTheCallGoesOn() throws {
        struct Boom: Error {}
        let hook = try makeAddHook()
        let reported = Shared<[String]>([])
        hook.hookErrorHandler = { error, position in reported.mutate { $0.append("\(position): \(error)") } }
        hook.before { _ in throw Boom() }
        #expect(hook.entry(as: AddFn.self)(2, 2) == 4)
        #expect(reported.value == ["before: Boom()"])
    }

    @Test func callBackRecordShowsTargetSelectorArgsAndResult() throws {
        final class Owner: Sendable {}
        let owner = Owner()
        let hook = try makeAddHook("add", target: owner)
        let record = Shared<String>("")
        hook.after { call in
            let target = call.target as? Owner
            let args = call.args.map { "\($0)" }
            record.value = "\(target === owner) \(call.selector) \(args) \(call.result.map { "\($0)" } ?? "nil") \(call)"
        }
        _ = hook.entry(as: AddFn.self)(3, 4)
        #expect(record.value == "true add [\"3\", \"4\"] 7 add(3, 4) -> 7")
    }

    @Test func hookPointDoesNotKeepItsTargetAlive() throws {
        final class Owner: Sendable {}
        var owner: Owner? = Owner()
        weak let weakOwner = owner
        let hook = try makeAddHook("add", target: owner)
        #expect(hook.target === owner)
        owner = nil
        #expect(weakOwner == nil)
        #expect(hook.target == nil)
        let sawNil = Shared(false)
        hook.after { call in sawNil.value = call.target == nil }
        #expect(hook.entry(as: AddFn.self)(1, 1) == 2)
        #expect(sawNil.value)
    }

    @Test func originalStaysCallableWithoutHooks() throws {
        let hook = try makeCountedAddHook()
        let runs = Shared(0)
        hook.before { _ in runs.mutate { $0 += 1 } }
        #expect(hook.original(as: AddFn.self)(2, 3) == 5)
        #expect(try hook.callOriginal(with: [.int32(2), .int32(3)]) == .int32(5))
        #expect(runs.value == 0)
        #expect(try hook.callEntry(with: [.int32(2), .int32(3)]) == .int32(5))
        #expect(runs.value == 1)
    }
}

@Suite("Tokens")
struct TokenTests {
    @Test func removeIsIdempotentAndStopsTheHook() throws {
        let hook = try makeAddHook()
        let runs = Shared(0)
        let token = hook.after { _ in runs.mutate { $0 += 1 } }
        let f = hook.entry(as: AddFn.self)
        _ = f(1, 1)
        #expect(token.isActive)
        token.remove()
        token.remove()
        #expect(!token.isActive)
        _ = f(1, 1)
        #expect(runs.value == 1)
        #expect(hook.hookCount == 0)
    }

    @Test func hookCanRemoveItselfWhileRunning() throws {
        let hook = try makeAddHook()
        let runs = Shared(0)
        let token = Shared<HookToken?>(nil)
        token.value = hook.before { _ in
            runs.mutate { $0 += 1 }
            token.value?.remove()
        }
        let other = Shared(0)
        hook.after { _ in other.mutate { $0 += 1 } }
        let f = hook.entry(as: AddFn.self)
        for _ in 0..<5 { #expect(f(2, 2) == 4) }
        #expect(runs.value == 1)
        #expect(other.value == 5)
        token.value = nil  // the hook holds the box that holds its token: break the cycle
    }

    @Test func droppingTheTokenKeepsTheHook() throws {
        let hook = try makeAddHook()
        let runs = Shared(0)
        do { _ = hook.after { _ in runs.mutate { $0 += 1 } } }
        _ = hook.entry(as: AddFn.self)(1, 1)
        #expect(runs.value == 1)
    }

    @Test func aTokenDoesNotKeepItsHookPointAlive() throws {
        var hook: FunctionHook? = try makeAddHook()
        weak let weakHook = hook
        let token = hook!.after { _ in }
        #expect(weakHook?.hookCount == 1)
        hook = nil
        #expect(weakHook == nil)  // the hooks went with their point
        token.remove()            // reaches nothing, does nothing
        #expect(!token.isActive)
    }
}

@Suite("Reentrancy guard and withoutHooks")
struct ReentrancyTests {
    @Test func afterHookCallingTheHookedEntryDoesNotRecurse() throws {
        let hook = try makeCountedAddHook()
        let f = hook.entry(as: AddFn.self)
        let runs = Shared(0)
        let inner = Shared<Int32>(0)
        hook.after { call in
            runs.mutate { $0 += 1 }
            inner.value = f(10, 10)  // runs the original only
            try call.setResult(try call.result(as: Int32.self) + inner.value)
        }
        let calls = test_counter_calls()
        #expect(f(1, 2) == 23)
        #expect(runs.value == 1)
        #expect(inner.value == 20)
        #expect(test_counter_calls() == calls + 2)
    }

    /// Hook points "a" and "b" whose before hooks log their names.
    func twoLoggingHookPoints() throws -> (a: FunctionHook, b: FunctionHook, log: Shared<[String]>) {
        let a = try makeAddHook("a")
        let b = try makeAddHook("b")
        let log = Shared<[String]>([])
        a.before { _ in log.mutate { $0.append("a") } }
        b.before { _ in log.mutate { $0.append("b") } }
        return (a, b, log)
    }

    @Test func withoutHooksSuppressesEveryHookOnThisThread() throws {
        let (a, b, runs) = try twoLoggingHookPoints()
        let fa = a.entry(as: AddFn.self), fb = b.entry(as: AddFn.self)
        withoutHooks {
            #expect(hooksAreSuppressed)
            #expect(fa(1, 1) == 2)
            #expect(fb(1, 1) == 2)
        }
        #expect(!hooksAreSuppressed)
        _ = fa(1, 1)
        #expect(runs.value == ["a"])
        withExtendedLifetime((a, b)) {}
    }

    @Test func withoutHooksOnOneHookPointLeavesOthersRunning() throws {
        let (a, b, runs) = try twoLoggingHookPoints()
        let fa = a.entry(as: AddFn.self), fb = b.entry(as: AddFn.self)
        a.withoutHooks {
            _ = fa(1, 1)
            _ = fb(1, 1)
        }
        _ = fa(1, 1)
        #expect(runs.value == ["b", "a"])
        withExtendedLifetime((a, b)) {}
    }

    @Test func hookOfOnePointCallingAnotherHookedPointRunsItsHooks() throws {
        let a = try makeAddHook("a")
        let b = try makeAddHook("b")
        let fb = b.entry(as: AddFn.self)
        let runs = Shared<[String]>([])
        a.after { _ in runs.mutate { $0.append("a") }; _ = fb(0, 0) }
        b.after { _ in runs.mutate { $0.append("b") } }
        _ = a.entry(as: AddFn.self)(1, 1)
        #expect(runs.value == ["a", "b"])
    }
}
