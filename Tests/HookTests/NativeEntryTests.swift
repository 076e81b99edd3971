import CFFIShim
import CHookTestSupport
import Foundation
import Hook
import Synchronization
import Testing

typealias SixIntsFn = @convention(c) (Int8, UInt16, Int32, Bool, UnsafeRawPointer?, Int64) -> Int64
let sixIntsSignature = Signature(returning: Int64.self, arguments: Int8.self, UInt16.self, Int32.self, Bool.self,
                                 UnsafeRawPointer?.self, Int64.self)

private func makeSixIntsHook() throws -> FunctionHook {
    try FunctionHook(cFunction: abi_six_ints as SixIntsFn, signature: sixIntsSignature, name: "abi_six_ints")
}

/// The permissions of the mapping that holds `address` in /proc/self/maps ("r-xp"), or nil.
private func permissions(at address: UnsafeRawPointer) -> String? {
    // Line by line with stdio: /proc files report size 0, and a whole-file read may stop early.
    guard let file = fopen("/proc/self/maps", "r") else { return nil }
    defer { fclose(file) }
    let target = UInt(bitPattern: address)
    var line: UnsafeMutablePointer<CChar>?
    var capacity = 0
    defer { free(line) }
    while getline(&line, &capacity, file) > 0, let line {
        let fields = String(cString: line).split(separator: " ")
        let range = fields[0].split(separator: "-").compactMap { UInt($0, radix: 16) }
        if range.count == 2, range[0] <= target, target < range[1] { return String(fields[1]) }
    }
    return nil
}

/// Native entries and typed after hooks of C functions. Serialized: one test
/// sets `HOOK_NO_NATIVE_ENTRY`, which hook points made meanwhile would read.
@Suite("Native entries and typed after hooks of C functions", .serialized)
struct NativeEntryTests {
    @Test(.enabled(if: hk_direct_calls() != 0, "x86-64 System V only"))
    func integerSignaturesGetANativeEntryOthersALibffiClosure() throws {
        #expect(try makeAddHook().usesNativeEntry)
        #expect(try makeSixIntsHook().usesNativeEntry)
        let void = try FunctionHook(cFunction: abi_void as @convention(c) (Int32, Double) -> Void,
                                    signature: Signature(returning: .void, arguments: [.int32, .double]))
        #expect(!void.usesNativeEntry)
        typealias SevenFn = @convention(c) (Int8, UInt16, Int32, Bool, UnsafeRawPointer?, Int64, Int16) -> Int64
        let seven = try FunctionHook(cFunction: abi_seven_ints as SevenFn,
                                     signature: Signature(returning: Int64.self, arguments: Int8.self, UInt16.self, Int32.self,
                                                          Bool.self, UnsafeRawPointer?.self, Int64.self, Int16.self))
        #expect(!seven.usesNativeEntry, "a seventh argument is on the stack")

        // Turned off, the same signature gets a libffi closure that behaves the same.
        setenv("HOOK_NO_NATIVE_ENTRY", "1", 1)
        defer { unsetenv("HOOK_NO_NATIVE_ENTRY") }
        let closure = try makeSixIntsHook()
        unsetenv("HOOK_NO_NATIVE_ENTRY")
        let native = try makeSixIntsHook()
        #expect(!closure.usesNativeEntry && native.usesNativeEntry)
        for hook in [closure, native] {
            let seen = Shared<[String]>([])
            try hook.afterReturning { (sum: Int64, a: Int8, b: UInt16, c: Int32, d: Bool, e: UnsafeRawPointer?, f: Int64) in
                seen.mutate { $0.append("\(a) \(b) \(c) \(d) \(UInt(bitPattern: e)) \(f) -> \(sum)") }
            }
            hook.before { call in try call.setArgument(5, to: try call.argument(5, as: Int64.self) * 10) }
            let f = hook.entry(as: SixIntsFn.self)
            let expected: Int64 = -3 + 65_000 - 70_000 + 1 + 0x1000 + 70
            #expect(f(-3, 65_000, -70_000, true, UnsafeRawPointer(bitPattern: 0x1000), 7) == expected)
            #expect(seen.value == ["-3 65000 -70000 true 4096 70 -> \(expected)"])
        }
    }

    @Test(.enabled(if: hk_direct_calls() != 0, "x86-64 System V only"))
    func aNativeEntrysCodeIsNeverWritable() throws {
        let hook = try makeAddHook()
        #expect(hook.usesNativeEntry)
        let mapping = try #require(permissions(at: hook.entry))
        #expect(mapping.hasPrefix("r-x"), "\(mapping)")
        #expect(hook.entry(as: AddFn.self)(2, 3) == 5)
    }

    @Test func aLoneTypedAfterHookSeesTheArgumentsAndResult() throws {
        let hook = try makeSixIntsHook()
        let seen = Shared<[String]>([])
        let token = try hook.afterReturning { (sum: Int64, a: Int8, b: UInt16, c: Int32, d: Bool, e: UnsafeRawPointer?, f: Int64) in
            seen.mutate { $0.append("\(a) \(b) \(c) \(d) \(UInt(bitPattern: e)) \(f) -> \(sum)") }
        }
        let f = hook.entry(as: SixIntsFn.self)
        let big: Int64 = Int64.max - 1_000_000
        let expected: Int64 = -128 + 65_535 + Int64(Int32.min) + big
        #expect(f(-128, 65_535, Int32.min, false, nil, big) == expected)
        // A C caller that leaves garbage above the 32 bits it must extend: the hook reads the values.
        let dirty = abi_call_six_ints_dirty(hook.entry, -1, 2, -3, true, UnsafeRawPointer(bitPattern: 5), 6)
        #expect(dirty == 10)
        #expect(seen.value == [
            "-128 65535 -2147483648 false 0 \(big) -> \(expected)",
            "-1 2 -3 true 5 6 -> 10",
        ])
        token.remove()
        #expect(f(1, 1, 1, true, nil, 1) == 5)
        #expect(seen.value.count == 2)
    }

    @Test func aTypedAfterHookAmongOthersSeesWhatTheyChanged() throws {
        let hook = try makeAddHook()
        var log: [String] = []
        hook.before { call in
            log.append("before")
            try call.setArgument(0, to: try call.argument(0, as: Int32.self) + 100)
        }
        hook.after { call in
            log.append("after")
            try call.setResult(try call.result(as: Int32.self) * 2)
        }
        try hook.afterReturning { (sum: Int32, a: Int32, b: Int32) in log.append("typed \(a) \(b) -> \(sum)") }
        #expect(hook.entry(as: AddFn.self)(1, 2) == 206)
        #expect(log == ["before", "after", "typed 101 2 -> 206"])
    }

    @Test func typedAfterHooksOnLibffiEntriesAndNarrowOrVoidResults() throws {
        let void = try FunctionHook(cFunction: abi_void as @convention(c) (Int32, Double) -> Void,
                                    signature: Signature(returning: .void, arguments: [.int32, .double]))
        let seen = Shared<[String]>([])
        try void.afterReturning { (_: Void, a: Int32, b: Double) in seen.mutate { $0.append("\(a) \(b)") } }
        void.entry(as: (@convention(c) (Int32, Double) -> Void).self)(4, 2.5)
        #expect(seen.value == ["4 2.5"])
        #expect(abi_seen_void_a() == 4)

        // Seven arguments: the variadic afterReturning (the others take at most six).
        typealias SevenFn = @convention(c) (Int8, UInt16, Int32, Bool, UnsafeRawPointer?, Int64, Int16) -> Int64
        let seven = try FunctionHook(cFunction: abi_seven_ints as SevenFn,
                                     signature: Signature(returning: Int64.self, arguments: Int8.self, UInt16.self, Int32.self,
                                                          Bool.self, UnsafeRawPointer?.self, Int64.self, Int16.self))
        try seven.afterReturning { (sum: Int64, a: Int8, _: UInt16, _: Int32, d: Bool, _: UnsafeRawPointer?, _: Int64, g: Int16) in
            seen.mutate { $0.append("\(a) \(d) \(g) -> \(sum)") }
        }
        #expect(seven.entry(as: SevenFn.self)(-1, 2, 3, true, nil, 5, -300) == -290)
        #expect(seen.value.last == "-1 true -300 -> -290")

        let narrow = try FunctionHook(cFunction: abi_narrow_result as @convention(c) (Int32) -> Int8,
                                      signature: Signature(returning: Int8.self, arguments: Int32.self))
        let results = Shared<[Int8]>([])
        try narrow.afterReturning { (result: Int8, _: Int32) in results.mutate { $0.append(result) } }
        #expect(narrow.entry(as: (@convention(c) (Int32) -> Int8).self)(50) == -106)
        #expect(results.value == [-106])
    }

    @Test func typesThatAreNotTheSignaturesAreRefusedByName() throws {
        let hook = try makeAddHook()
        do {
            try hook.afterReturning { (_: Int64, _: Int32, _: Int32) in }
            Issue.record("an Int64 result of an int32 function was accepted")
        } catch {
            #expect(error.kind == .typeMismatch)
            #expect(error.point == "test_add")
            #expect(error.description.contains("types int64_t (int32_t, int32_t) are not the signature's int32_t (int32_t, int32_t)"), "\(error)")
        }
        do {
            try hook.afterReturning { (_: Int32, _: Int32) in }
            Issue.record("one argument of two was accepted")
        } catch {
            #expect(error.kind == .typeMismatch)
            #expect(error.description.contains("types int32_t (int32_t) are not"), "\(error)")
        }
        do {
            try hook.afterReturning { (_: String, _: Int32, _: Int32) in }
            Issue.record("a String result was accepted")
        } catch {
            #expect(error.kind == .typeMismatch)
            #expect(error.description.contains("String is not CRepresentable"), "\(error)")
        }
        #expect(hook.hookCount == 0)
    }

    @Test func reentrantCallsOwnersAndErrorsAsEverywhere() throws {
        let hook = try makeCountedAddHook()
        let f = hook.entry(as: AddFn.self)
        var inner: [Int32] = []
        final class Owner {}
        var owner: Owner? = Owner()
        try hook.afterReturning(owner: owner) { (sum: Int32, a: Int32, _: Int32) in
            // A call of the hooked entry from inside the hook runs the original only.
            inner.append(f(sum, 1000))
            if a < 0 { throw CocoaError(.featureUnsupported) }
        }
        let reported = Shared<[String]>([])
        hook.hookErrorHandler = { _, position in reported.mutate { $0.append("\(position)") } }
        let calls = test_counter_calls()
        #expect(f(1, 2) == 3)
        #expect(inner == [1003])
        #expect(test_counter_calls() == calls + 2)
        #expect(f(-5, 1) == -4)
        #expect(reported.value == ["after"])
        owner = nil
        #expect(f(1, 1) == 2)
        #expect(inner.count == 2)
        #expect(hook.hookCount == 0, "a hook whose owner is gone is detached")
    }

    @Test func eightThreadsCallWhileTypedHooksComeAndGo() async throws {
        let hook = try makeAddHook()
        let counted = Atomic<Int>(0)
        let wrong = Atomic<Int>(0)
        try hook.afterReturning { (sum: Int32, a: Int32, b: Int32) in
            counted.add(1, ordering: .relaxed)
            if sum != a &+ b { wrong.add(1, ordering: .relaxed) }
        }
        let perThread = 20_000
        let stop = Atomic<Bool>(false)
        let churn = Thread {
            // The counting hook is alone (native typed path) or among others (record path) in turn.
            while !stop.load(ordering: .relaxed) {
                let extra = try! hook.afterReturning { (_: Int32, _: Int32, _: Int32) in }
                let plain = hook.after { _ in }
                extra.remove()
                plain.remove()
            }
        }
        churn.start()
        await withTaskGroup(of: Int.self) { group in
            for t in 0..<8 {
                group.addTask {
                    let f = hook.entry(as: AddFn.self)
                    var bad = 0
                    for i in 0..<perThread where f(Int32(i), Int32(t)) != Int32(i + t) { bad += 1 }
                    return bad
                }
            }
            for await bad in group { #expect(bad == 0) }
        }
        stop.store(true, ordering: .relaxed)
        while !churn.isFinished { usleep(1000) }
        #expect(counted.load(ordering: .relaxed) == 8 * perThread)
        #expect(wrong.load(ordering: .relaxed) == 0)
    }
}
