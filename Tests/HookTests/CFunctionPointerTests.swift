import Glibc
import Hook
import Testing

typealias Comparator = @convention(c) (UnsafeRawPointer?, UnsafeRawPointer?) -> Int32

@Suite("Closures as C function pointers")
struct CFunctionPointerTests {
    @Test func qsortSortsWithACapturingClosureAndAHookCountsComparisons() throws {
        var descending = true  // captured state: the C API has no context argument
        let compare = ClosureHook(name: "compare") { (a: UnsafeRawPointer?, b: UnsafeRawPointer?) -> Int32 in
            let x = a!.load(as: Int32.self), y = b!.load(as: Int32.self)
            let order: Int32 = x < y ? -1 : (x > y ? 1 : 0)
            return descending ? -order : order
        }
        var comparisons = 0
        compare.after { _ in comparisons += 1 }
        let c = try compare.cFunction(as: Comparator.self)

        var values: [Int32] = [5, -3, 99, 0, 42, 7, 7, -100]
        withExtendedLifetime(compare) {
            values.withUnsafeMutableBufferPointer { buffer in
                qsort(buffer.baseAddress!, buffer.count, MemoryLayout<Int32>.stride, c)
            }
        }
        #expect(values == [99, 42, 7, 7, 5, 0, -3, -100])
        #expect(comparisons >= values.count - 1)

        descending = false
        let before = comparisons
        withExtendedLifetime(compare) {
            values.withUnsafeMutableBufferPointer { qsort($0.baseAddress!, $0.count, 4, c) }
        }
        #expect(values == [-100, -3, 0, 5, 7, 7, 42, 99])
        #expect(comparisons > before)
        // The same pointer every time.
        #expect(try compare.cFunctionPointer() == unsafeBitCast(c, to: UnsafeRawPointer.self))
    }

    @Test func bsearchFindsWithAHookedComparatorThatCanBeSteered() throws {
        let sorted: [Int64] = [2, 3, 5, 7, 11, 13, 17, 19, 23, 29]
        var probes: [Int64] = []
        let compare = ClosureHook(name: "compare-key") { (key: UnsafeRawPointer?, element: UnsafeRawPointer?) -> Int32 in
            let k = key!.load(as: Int64.self), e = element!.load(as: Int64.self)
            return k < e ? -1 : (k > e ? 1 : 0)
        }
        compare.before { call in
            probes.append(try call.argument(1, as: UnsafeRawPointer?.self)!.load(as: Int64.self))
        }
        let c = try compare.cFunction(as: Comparator.self)
        func find(_ key: Int64) -> Int? {
            var key = key
            let found: UnsafeMutableRawPointer? = withExtendedLifetime(compare) {
                sorted.withUnsafeBufferPointer { buffer in bsearch(&key, buffer.baseAddress!, buffer.count, 8, c) }
            }
            guard let found else { return nil }
            return sorted.firstIndex(of: found.load(as: Int64.self))
        }
        #expect(find(13) == 5)
        #expect(probes.contains(13))
        #expect(probes.count <= 4)  // a binary search: log2(10) rounded up
        #expect(find(4) == nil)
        // An instead hook decides every comparison: "equal" finds the first probe, the middle.
        compare.instead { call in try call.setResult(Int32(0)) }
        #expect(find(1000) == 5)
    }

    @Test func narrowResultsAndVoidClosuresCrossTheCBoundary() throws {
        let negate = ClosureHook { (x: Int8) -> Int8 in -x }
        let f = try negate.cFunction(as: (@convention(c) (Int8) -> Int8).self)
        #expect(withExtendedLifetime(negate) { f(5) } == -5)

        var total = 0.0
        let add = ClosureHook { (x: Double, flag: Bool) in if flag { total += x } }
        let g = try add.cFunction(as: (@convention(c) (Double, Bool) -> Void).self)
        withExtendedLifetime(add) {
            g(1.5, true)
            g(100, false)
        }
        #expect(total == 1.5)
    }

    @Test func typesWithoutACRepresentationAreRefused() throws {
        let point = ClosureHook(name: "text") { (s: String) in s.count }
        #expect(throws: HookError(.unsupportedType, point: "text", "argument 0 is String, which is not CRepresentable; a C function pointer needs C types")) {
            _ = try point.cFunctionPointer()
        }
        let ok = ClosureHook(name: "ok") { (x: Int32) in x }
        #expect(throws: HookError.self) { _ = try ok.cFunction(as: ((Int32) -> Int32).self) }
    }

    /// A trampoline is made once per ABI and lives as long as the hook
    /// point: asking for another ABI keeps the first pointer valid. (The
    /// second replaced the first, whose closure memory was freed while its
    /// pointer was out.)
    @Test func eachABIsPointerStaysValid() throws {
        typealias Add = @convention(c) (Int32, Int32) -> Int32
        let add = ClosureHook(name: "add") { (a: Int32, b: Int32) in a + b }
        let first = try add.cFunctionPointer()
        let f = try add.cFunction(as: Add.self)
        let win64 = try add.cFunctionPointer(abi: .win64)
        #expect(win64 != first)
        #expect(try add.cFunctionPointer() == first)
        #expect(try add.cFunctionPointer(abi: .win64) == win64)
        // Other closures made since do not take its memory.
        let others = try (0..<20).map { i in
            let other = ClosureHook(name: "other") { (a: Int32, b: Int32) in a * b + Int32(i) }
            return (other, try other.cFunction(as: Add.self))
        }
        withExtendedLifetime((add, others)) { #expect(f(3, 4) == 7) }
    }

    /// `cFunction(as:)` takes only a C function pointer type (or an
    /// `Optional` of one) with the closure's number of arguments: any other
    /// type of a pointer's size was bit-cast (a class reference, released
    /// later, crashed).
    @Test func onlyACFunctionTypeOfTheClosuresArityIsTaken() throws {
        let add = ClosureHook(name: "add") { (a: Int32, b: Int32) in a + b }
        for type in [Int.self, AnyObject.self, Box.self, ((Int32, Int32) -> Int32).self, (@convention(c) (Int32) -> Int32).self] as [Any.Type] {
            func attempt<F>(_: F.Type) throws { _ = try add.cFunction(as: F.self) }
            #expect(throws: HookError.self, "\(type)") { try _openExistential(type, do: attempt) }
        }
        let optional = try add.cFunction(as: (@convention(c) (Int32, Int32) -> Int32)?.self)
        withExtendedLifetime(add) { #expect(optional?(2, 5) == 7) }
    }
}
