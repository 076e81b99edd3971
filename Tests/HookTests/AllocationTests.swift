import CHookTestSupport
import Hook
import Testing

@Suite("Allocations on the call path")
struct AllocationTests {
    @Test(.enabled(if: hk_test_malloc_counting_available(), "malloc is owned by the sanitizer"))
    func mallocCounterCountsThisThread() throws {
        let count = try #require(mallocCount {
            let array = [Int](repeating: 1, count: Int.random(in: 100...200))
            #expect(array.count >= 100)
        })
        #expect(count > 0)
    }

    @Test(.enabled(if: hk_test_malloc_counting_available(), "malloc is owned by the sanitizer"))
    func hookedCallWithTypedBeforeAndAfterHooksAllocatesNothing() throws {
        let hook = try makeAddHook()
        let sum = Shared(0)
        hook.before { call in
            let a = try call.argument(0, as: Int32.self)
            try call.setArgument(0, to: a &+ 1)
        }
        hook.after { call in
            let r = try call.result(as: Int32.self)
            let b = try call.argument(1, as: Int32.self)
            try call.setResult(r &+ b)
        }
        hook.instead { call in try call.invokeOriginal() }
        _ = sum
        let f = hook.entry(as: AddFn.self)
        _ = f(1, 1)  // first call on this thread registers its hook state
        var total: Int32 = 0
        let count = try #require(mallocCount {
            for i in 0..<1_000 { total &+= f(Int32(i), 1) }
        })
        #expect(count == 0)
        #expect(total != 0)
    }

    @Test(.enabled(if: hk_test_malloc_counting_available(), "malloc is owned by the sanitizer"))
    func aCFunctionWithALoneTypedAfterHookAllocatesNothing() throws {
        let hook = try makeAddHook()
        var total: Int64 = 0
        try hook.afterReturning { (sum: Int32, _: Int32, _: Int32) in total &+= Int64(sum) }
        let f = hook.entry(as: AddFn.self)
        _ = f(1, 1)  // first call on this thread registers its hook state
        let count = try #require(mallocCount {
            for i in 0..<1_000 { _ = f(Int32(i), 1) }
        })
        #expect(count == 0)
        #expect(total == 2 + (1...1_000).reduce(0, +))
    }

    @Test(.enabled(if: hk_test_malloc_counting_available(), "malloc is owned by the sanitizer"))
    func callsNeedingLibffiWorkaroundsAllocateNothing() throws {
        typealias Fn = @convention(c) (UInt8, UInt8, UInt8, UInt8, UInt8, Double, SID) -> Double
        let sixth = try FunctionHook(cFunction: abi_sixth_register as Fn,
                                     signature: Signature(returning: Double.self, arguments: UInt8.self, UInt8.self, UInt8.self, UInt8.self, UInt8.self, Double.self, SID.self))
        sixth.after { call in _ = try call.argument(6, as: SID.self) }
        typealias S64Fn = @convention(c) (S64, Int32, S64) -> S64
        let big = try FunctionHook(cFunction: abi_struct_S64 as S64Fn, signature: Signature(returning: S64.self, arguments: S64.self, Int32.self, S64.self))
        big.after { call in _ = try call.argument(2, as: S64.self) }
        let f = sixth.entry(as: Fn.self), g = big.entry(as: S64Fn.self)
        let s = S64(d: (1, 2, 3, 4), i: (5, 6, 7), f: 8, u: 9)
        _ = f(1, 2, 3, 4, 5, 6, SID(i: 1, d: 2))
        _ = g(s, 1, s)
        let count = try #require(mallocCount {
            for _ in 0..<100 {
                _ = f(1, 2, 3, 4, 5, 6, SID(i: 1, d: 2))
                _ = g(s, 1, s)
            }
        })
        #expect(count == 0)
    }

    /// Calls `f`, an `add` whose hooks add 1 to the result, 1,000 times:
    /// no allocation, and every result seen.
    func expectHookedAddAllocatesNothing(_ f: (Int, Int) -> Int) throws {
        var total = f(1, 1)
        let count = try #require(mallocCount {
            for i in 0..<1_000 { total &+= f(i, 1) }
        })
        #expect(count == 0)
        #expect(total == 3 + (0..<1_000).reduce(0) { $0 + $1 + 2 })
    }

    @Test(.enabled(if: hk_test_malloc_counting_available(), "malloc is owned by the sanitizer"))
    func typedClosureCallWithOneTypedAfterHookAllocatesNothing() throws {
        let point = ClosureHook(name: "add") { (a: Int, b: Int) in a &+ b }
        point.after { call in try call.setResult(try call.result(as: Int.self) &+ 1) }
        try expectHookedAddAllocatesNothing(point.function)
    }

    @Test(.enabled(if: hk_test_malloc_counting_available(), "malloc is owned by the sanitizer"))
    func closureCallWithALoneAfterReturningHookAllocatesNothing() throws {
        let point = ClosureHook(name: "add") { (a: Int, b: Int) in a &+ b }
        let seen = Box(0)
        point.afterReturning { sum, a, _ in seen.value &+= sum &- a }
        let f = point.function
        // The first hooked call on a thread registers its hook state (an
        // allocation, once per thread): made here, before counting.
        var total = f(0, 1) &+ point(0, 2)
        let count = try #require(mallocCount {
            // Through the function and through callAsFunction: two call paths.
            for i in 0..<1_000 { total &+= f(i, 1) &+ point(i, 2) }
        })
        #expect(count == 0)
        #expect(seen.value == 3_003)
        #expect(total == 3 + (0..<1_000).reduce(0) { $0 + 2 * $1 + 3 })
    }

    @Test(.enabled(if: hk_test_malloc_counting_available(), "malloc is owned by the sanitizer"))
    func typedClosureCallWithAnInsteadHookCallingTheOriginalAllocatesNothing() throws {
        // The original reaches the instead hooks through an invoker on the
        // stack that holds the closure only while they run.
        let point = ClosureHook(name: "add") { (a: Int, b: Int) in a &+ b }
        point.instead { call in
            try call.invokeOriginal()
            try call.setResult(try call.result(as: Int.self) &+ 1)
        }
        try expectHookedAddAllocatesNothing(point.function)
    }

    @Test(.enabled(if: hk_test_malloc_counting_available(), "malloc is owned by the sanitizer"))
    func hookedPropertySetWithNoHooksAllocatesNothing() throws {
        let person = Person()
        person.$name.after { _ in }.remove()  // the point has been used and is empty again
        let names = ["a", "b"]
        person.age = 1  // the first access instantiates the storage key paths
        person.name = names[0]
        let count = try #require(mallocCount {
            for i in 0..<1_000 { person.age = i; person.name = names[i & 1] }
        })
        #expect(count == 0)
        #expect(person.age == 999)
    }

    @Test(.enabled(if: hk_test_malloc_counting_available(), "malloc is owned by the sanitizer"))
    func hookedPropertySetWithALoneDidSetHookAllocatesNothing() throws {
        let person = Person()
        let names = ["a", "b"]
        person.age = 0
        person.name = names[0]
        var sum = 0
        person.$age.didSet { old, new in sum &+= new &- old }
        person.$name.didSet { old, new in sum &+= old.count &- new.count }
        // The first hooked sets (of the process, of the thread) make what
        // later ones reuse (6 allocations, run alone): made here, adding 0.
        person.age = 0
        person.name = names[0]
        let count = try #require(mallocCount {
            for i in 1...1_000 { person.age = i; person.name = names[i & 1] }
        })
        #expect(count == 0)
        #expect(sum == 1_000)
    }

    @Test(.enabled(if: hk_test_malloc_counting_available(), "malloc is owned by the sanitizer"))
    func hookedPropertySetWithOneTypedAfterHookAllocatesNothing() throws {
        let person = Person()
        var sum = 0
        person.$age.after { call in sum &+= try call.argument(0, as: Int.self) }
        person.age = 1
        let count = try #require(mallocCount {
            for i in 0..<1_000 { person.age = i }
        })
        #expect(count == 0)
        #expect(sum == 1 + (0..<1_000).reduce(0, +))
    }
}
