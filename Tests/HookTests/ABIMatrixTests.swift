import CHookTestSupport
import Foundation
import Hook
import Testing

/// Every C type through a real C function: the original must see exactly the
/// arguments, the caller get exactly the result, and the CallBack show both.
@Suite("ABI matrix over real C functions", .serialized)
struct ABIMatrixTests {
    /// What a hook saw of one call.
    final class Seen: Sendable {
        let arguments = Shared<[CValue]>([])
        let result = Shared<CValue?>(nil)
    }

    /// Hooks `original` with a before hook and an after hook that record the
    /// CallBack's arguments and result (typed and dynamic reads must agree).
    func hook<T: CRepresentable>(_ original: UnsafeRawPointer, _ signature: Signature, name: String, resultType: T.Type) throws -> (FunctionHook, Seen) {
        let hook: FunctionHook
        if let collector = Self.entryHooks {
            // The function itself patched: other suites' calls of it go through these hooks too, and are left out.
            let entry = try EntryHook(address: original, signature: signature, name: name)
            collector.made.append(entry)
            hook = entry
        } else {
            hook = try FunctionHook(function: original, signature: signature, name: name)
        }
        let seen = Seen()
        let me = pthread_self()
        hook.before { call in
            guard pthread_self() == me else { return }
            seen.arguments.value = try (0..<call.argumentCount).map { try call.argumentValue($0) }
        }
        hook.after { call in
            guard pthread_self() == me else { return }
            let typed = try call.result(as: T.self)
            let dynamic = try call.resultValue()
            #expect(CValue(typed) == dynamic)
            seen.result.value = dynamic
        }
        return (hook, seen)
    }

    /// Set by the entry-hook runs of the matrix: `hook(...)` patches the
    /// function's entry instead of making a libffi entry point, and tests call
    /// the function itself (`callable`).
    @TaskLocal static var entryHooks: EntryHookCollector?

    final class EntryHookCollector: @unchecked Sendable { var made: [EntryHook] = [] }

    /// Runs `body` with the matrix's hook points made as entry hooks, restored after.
    func throughEntryHooks(_ body: () throws -> Void) throws {
        let collector = EntryHookCollector()
        defer { for hook in collector.made { try? hook.restore() } }
        try Self.$entryHooks.withValue(collector) { try body() }
    }

    @Test(.enabled(if: EntryHook.isAvailable)) func everyScalarThroughEntryHooks() throws { try throughEntryHooks { try everyScalarAsArgumentAndResult() } }
    @Test(.enabled(if: EntryHook.isAvailable)) func structsThroughEntryHooks() throws { try throughEntryHooks { try structsOfOneToSixtyFourBytesNestedAndReturnedByValue() } }
    @Test(.enabled(if: EntryHook.isAvailable)) func sixteenMixedArgumentsThroughEntryHooks() throws { try throughEntryHooks { try sixteenMixedArgumentsSomeOnTheStack() } }
    @Test(.enabled(if: EntryHook.isAvailable)) func sixthRegisterStructThroughEntryHooks() throws { try throughEntryHooks { try structInSixthIntegerRegisterAfterADouble() } }

    func checkScalar<T: CRepresentable>(
        _ type: T.Type, original: UnsafeRawPointer, a: T, b: T, expected: T,
        call: (UnsafeRawPointer, T, T) -> T, seen: (Int32) -> T
    ) throws {
        let signature = Signature(returning: T.self, arguments: T.self, T.self)
        let (hook, record) = try hook(original, signature, name: "\(T.self)", resultType: T.self)
        let result = call(hook.callable, a, b)
        #expect(CValue(result) == CValue(expected), "caller's result for \(T.self)")
        #expect(CValue(seen(0)) == CValue(a), "original's first argument for \(T.self)")
        #expect(CValue(seen(1)) == CValue(b), "original's second argument for \(T.self)")
        #expect(record.arguments.value == [CValue(a), CValue(b)], "CallBack arguments for \(T.self)")
        #expect(record.result.value == CValue(expected), "CallBack result for \(T.self)")
        // The original stays callable without hooks: it sees the swapped
        // arguments, and the hooks record nothing new.
        _ = call(hook.original, b, a)
        #expect(CValue(seen(0)) == CValue(b))
        #expect(CValue(seen(1)) == CValue(a))
        #expect(record.arguments.value == [CValue(a), CValue(b)])
    }

    @Test func everyScalarAsArgumentAndResult() throws {
        try checkScalar(Bool.self, original: address(of: abi_bool as @convention(c) (Bool, Bool) -> Bool), a: true, b: false, expected: true,
                        call: { unsafeBitCast($0, to: (@convention(c) (Bool, Bool) -> Bool).self)($1, $2) }, seen: abi_seen_bool)
        try checkScalar(Int8.self, original: address(of: abi_i8 as @convention(c) (Int8, Int8) -> Int8), a: -100, b: 57, expected: -100 &- 57,
                        call: { unsafeBitCast($0, to: (@convention(c) (Int8, Int8) -> Int8).self)($1, $2) }, seen: abi_seen_i8)
        try checkScalar(UInt8.self, original: address(of: abi_u8 as @convention(c) (UInt8, UInt8) -> UInt8), a: 3, b: 250, expected: 3 &- 250,
                        call: { unsafeBitCast($0, to: (@convention(c) (UInt8, UInt8) -> UInt8).self)($1, $2) }, seen: abi_seen_u8)
        try checkScalar(Int16.self, original: address(of: abi_i16 as @convention(c) (Int16, Int16) -> Int16), a: -30000, b: 12345, expected: -30000 &- 12345,
                        call: { unsafeBitCast($0, to: (@convention(c) (Int16, Int16) -> Int16).self)($1, $2) }, seen: abi_seen_i16)
        try checkScalar(UInt16.self, original: address(of: abi_u16 as @convention(c) (UInt16, UInt16) -> UInt16), a: 7, b: 65000, expected: 7 &- 65000,
                        call: { unsafeBitCast($0, to: (@convention(c) (UInt16, UInt16) -> UInt16).self)($1, $2) }, seen: abi_seen_u16)
        try checkScalar(Int32.self, original: address(of: abi_i32 as @convention(c) (Int32, Int32) -> Int32), a: .min + 5, b: 99, expected: (.min + 5) &- 99,
                        call: { unsafeBitCast($0, to: (@convention(c) (Int32, Int32) -> Int32).self)($1, $2) }, seen: abi_seen_i32)
        try checkScalar(UInt32.self, original: address(of: abi_u32 as @convention(c) (UInt32, UInt32) -> UInt32), a: 1, b: .max, expected: 1 &- .max,
                        call: { unsafeBitCast($0, to: (@convention(c) (UInt32, UInt32) -> UInt32).self)($1, $2) }, seen: abi_seen_u32)
        try checkScalar(Int64.self, original: address(of: abi_i64 as @convention(c) (Int64, Int64) -> Int64), a: .max - 1, b: -7, expected: (.max - 1) &- -7,
                        call: { unsafeBitCast($0, to: (@convention(c) (Int64, Int64) -> Int64).self)($1, $2) }, seen: abi_seen_i64)
        try checkScalar(UInt64.self, original: address(of: abi_u64 as @convention(c) (UInt64, UInt64) -> UInt64), a: 0x0123_4567_89AB_CDEF, b: .max, expected: 0x0123_4567_89AB_CDEF &- .max,
                        call: { unsafeBitCast($0, to: (@convention(c) (UInt64, UInt64) -> UInt64).self)($1, $2) }, seen: abi_seen_u64)
        try checkScalar(Float.self, original: address(of: abi_float as @convention(c) (Float, Float) -> Float), a: 1.5, b: -0.25, expected: 1.75,
                        call: { unsafeBitCast($0, to: (@convention(c) (Float, Float) -> Float).self)($1, $2) }, seen: abi_seen_float)
        try checkScalar(Double.self, original: address(of: abi_double as @convention(c) (Double, Double) -> Double), a: 1e300, b: -2.5e-300, expected: 1e300 - -2.5e-300,
                        call: { unsafeBitCast($0, to: (@convention(c) (Double, Double) -> Double).self)($1, $2) }, seen: abi_seen_double)
        let p = UnsafeMutableRawPointer(bitPattern: 0x1000)
        let q = UnsafeMutableRawPointer(bitPattern: 0x7fff_1234_5678)
        try checkScalar(UnsafeMutableRawPointer?.self, original: address(of: abi_ptr as @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer?),
                        a: p, b: q, expected: q! + 1,
                        call: { unsafeBitCast($0, to: (@convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer?).self)($1, $2) },
                        seen: abi_seen_ptr)
    }

    func checkStruct<S: CRepresentable>(
        _ type: S.Type, original: UnsafeRawPointer, a: S, b: S,
        call: (UnsafeRawPointer, S, Int32, S) -> S, seen: (Int32) -> S, seenTag: () -> Int32
    ) throws {
        #expect(S.cType.size == MemoryLayout<S>.size, "C layout of \(S.self)")
        #expect(S.cType.alignment == MemoryLayout<S>.alignment, "C alignment of \(S.self)")
        let signature = Signature(returning: S.self, arguments: S.self, Int32.self, S.self)
        let (hook, record) = try hook(original, signature, name: "\(S.self)", resultType: S.self)
        let tag: Int32 = -424242
        let result = call(hook.callable, a, tag, b)
        #expect(CValue(result) == CValue(b), "caller's result for \(S.self)")
        #expect(CValue(seen(0)) == CValue(a), "original's first argument for \(S.self)")
        #expect(CValue(seen(1)) == CValue(b), "original's third argument for \(S.self)")
        #expect(seenTag() == tag, "original's int argument between two \(S.self)")
        #expect(record.arguments.value == [CValue(a), .int32(tag), CValue(b)], "CallBack arguments for \(S.self)")
        #expect(record.result.value == CValue(b), "CallBack result for \(S.self)")
    }

    @Test func structsOfOneToSixtyFourBytesNestedAndReturnedByValue() throws {
        typealias F<S> = (UnsafeRawPointer, S, Int32, S) -> S
        try checkStruct(S1.self, original: address(of: abi_struct_S1 as @convention(c) (S1, Int32, S1) -> S1),
                        a: S1(a: -3), b: S1(a: 77),
                        call: { unsafeBitCast($0, to: (@convention(c) (S1, Int32, S1) -> S1).self)($1, $2, $3) }, seen: abi_seen_S1, seenTag: abi_seen_S1_tag)
        try checkStruct(S3.self, original: address(of: abi_struct_S3 as @convention(c) (S3, Int32, S3) -> S3),
                        a: S3(b: (1, 2, 3)), b: S3(b: (250, 251, 252)),
                        call: { unsafeBitCast($0, to: (@convention(c) (S3, Int32, S3) -> S3).self)($1, $2, $3) }, seen: abi_seen_S3, seenTag: abi_seen_S3_tag)
        try checkStruct(S4.self, original: address(of: abi_struct_S4 as @convention(c) (S4, Int32, S4) -> S4),
                        a: S4(a: -1, b: 2, c: -300), b: S4(a: 4, b: 255, c: 32000),
                        call: { unsafeBitCast($0, to: (@convention(c) (S4, Int32, S4) -> S4).self)($1, $2, $3) }, seen: abi_seen_S4, seenTag: abi_seen_S4_tag)
        try checkStruct(S8.self, original: address(of: abi_struct_S8 as @convention(c) (S8, Int32, S8) -> S8),
                        a: S8(f: 1.25, i: -9), b: S8(f: -7.5, i: 123_456),
                        call: { unsafeBitCast($0, to: (@convention(c) (S8, Int32, S8) -> S8).self)($1, $2, $3) }, seen: abi_seen_S8, seenTag: abi_seen_S8_tag)
        try checkStruct(S8F.self, original: address(of: abi_struct_S8F as @convention(c) (S8F, Int32, S8F) -> S8F),
                        a: S8F(x: 0.5, y: -0.75), b: S8F(x: 3e30, y: .infinity),
                        call: { unsafeBitCast($0, to: (@convention(c) (S8F, Int32, S8F) -> S8F).self)($1, $2, $3) }, seen: abi_seen_S8F, seenTag: abi_seen_S8F_tag)
        try checkStruct(S12F.self, original: address(of: abi_struct_S12F as @convention(c) (S12F, Int32, S12F) -> S12F),
                        a: S12F(x: 1, y: 2, z: 3), b: S12F(x: -4, y: -5, z: -6),
                        call: { unsafeBitCast($0, to: (@convention(c) (S12F, Int32, S12F) -> S12F).self)($1, $2, $3) }, seen: abi_seen_S12F, seenTag: abi_seen_S12F_tag)
        try checkStruct(S12A.self, original: address(of: abi_struct_S12A as @convention(c) (S12A, Int32, S12A) -> S12A),
                        a: S12A(a: (1, -2, 3), b: 4, c: 5.5), b: S12A(a: (-32768, 0, 32767), b: 200, c: -1e-3),
                        call: { unsafeBitCast($0, to: (@convention(c) (S12A, Int32, S12A) -> S12A).self)($1, $2, $3) }, seen: abi_seen_S12A, seenTag: abi_seen_S12A_tag)
        try checkStruct(S16.self, original: address(of: abi_struct_S16 as @convention(c) (S16, Int32, S16) -> S16),
                        a: S16(a: 10, b: 20.5, c: 30.25), b: S16(a: -10, b: -20.5, c: -1e200),
                        call: { unsafeBitCast($0, to: (@convention(c) (S16, Int32, S16) -> S16).self)($1, $2, $3) }, seen: abi_seen_S16, seenTag: abi_seen_S16_tag)
        try checkStruct(S16DI.self, original: address(of: abi_struct_S16DI as @convention(c) (S16DI, Int32, S16DI) -> S16DI),
                        a: S16DI(d: .pi, i: .min), b: S16DI(d: -.pi, i: .max),
                        call: { unsafeBitCast($0, to: (@convention(c) (S16DI, Int32, S16DI) -> S16DI).self)($1, $2, $3) }, seen: abi_seen_S16DI, seenTag: abi_seen_S16DI_tag)
        try checkStruct(S16N.self, original: address(of: abi_struct_S16N as @convention(c) (S16N, Int32, S16N) -> S16N),
                        a: S16N(p: S8F(x: 1, y: 2), q: S8F(x: 3, y: 4)), b: S16N(p: S8F(x: -1, y: -2), q: S8F(x: -3, y: -4)),
                        call: { unsafeBitCast($0, to: (@convention(c) (S16N, Int32, S16N) -> S16N).self)($1, $2, $3) }, seen: abi_seen_S16N, seenTag: abi_seen_S16N_tag)
        try checkStruct(S24.self, original: address(of: abi_struct_S24 as @convention(c) (S24, Int32, S24) -> S24),
                        a: S24(a: 1 << 40, b: 2.5, c: -1), b: S24(a: -(1 << 50), b: -9.75, c: 127),
                        call: { unsafeBitCast($0, to: (@convention(c) (S24, Int32, S24) -> S24).self)($1, $2, $3) }, seen: abi_seen_S24, seenTag: abi_seen_S24_tag)
        try checkStruct(S24N.self, original: address(of: abi_struct_S24N as @convention(c) (S24N, Int32, S24N) -> S24N),
                        a: S24N(inner: S8(f: 1, i: 2), d: 3, s: 4), b: S24N(inner: S8(f: -1, i: -2), d: -3, s: -4),
                        call: { unsafeBitCast($0, to: (@convention(c) (S24N, Int32, S24N) -> S24N).self)($1, $2, $3) }, seen: abi_seen_S24N, seenTag: abi_seen_S24N_tag)
        try checkStruct(S40.self, original: address(of: abi_struct_S40 as @convention(c) (S40, Int32, S40) -> S40),
                        a: S40(u: 1, f: S12F(x: 2, y: 3, z: 4), l: 5, t: (6, 7, 8, 9, 10), d: 11),
                        b: S40(u: 65535, f: S12F(x: -2, y: -3, z: -4), l: -5, t: (255, 254, 253, 252, 251), d: -11),
                        call: { unsafeBitCast($0, to: (@convention(c) (S40, Int32, S40) -> S40).self)($1, $2, $3) }, seen: abi_seen_S40, seenTag: abi_seen_S40_tag)
        try checkStruct(S64.self, original: address(of: abi_struct_S64 as @convention(c) (S64, Int32, S64) -> S64),
                        a: S64(d: (1, 2, 3, 4), i: (5, 6, 7), f: 8, u: 9),
                        b: S64(d: (-1, -2, -3, -4), i: (-5, -6, -7), f: -8, u: .max),
                        call: { unsafeBitCast($0, to: (@convention(c) (S64, Int32, S64) -> S64).self)($1, $2, $3) }, seen: abi_seen_S64, seenTag: abi_seen_S64_tag)
    }

    @Test func sixteenMixedArgumentsSomeOnTheStack() throws {
        typealias ManyFn = @convention(c) (Int32, Double, Float, Int64, UInt8, Double, Float, Int16, Double, Int32, Float, Double, UInt64, Double, Float, Int8) -> Double
        let signature = Signature(returning: .double, arguments: [
            .int32, .double, .float, .int64, .uint8, .double, .float, .int16,
            .double, .int32, .float, .double, .uint64, .double, .float, .int8,
        ])
        let (hook, record) = try hook(address(of: abi_many as ManyFn), signature, name: "abi_many", resultType: Double.self)
        let f = hook.callable(as: ManyFn.self)
        let result = f(-1, 2.5, 3.25, -4_000_000_000_000, 250, 6.125, 7.5, -8, 9.0625, 10, 11.75, 12.5, 13, 14.25, 15.5, -16)
        let m = abi_seen_many()
        let expectedArguments: [CValue] = [
            .int32(-1), .double(2.5), .float(3.25), .int64(-4_000_000_000_000), .uint8(250), .double(6.125), .float(7.5), .int16(-8),
            .double(9.0625), .int32(10), .float(11.75), .double(12.5), .uint64(13), .double(14.25), .float(15.5), .int8(-16),
        ]
        let seenByOriginal: [CValue] = [
            .int32(m.a0), .double(m.a1), .float(m.a2), .int64(m.a3), .uint8(m.a4), .double(m.a5), .float(m.a6), .int16(m.a7),
            .double(m.a8), .int32(m.a9), .float(m.a10), .double(m.a11), .uint64(m.a12), .double(m.a13), .float(m.a14), .int8(m.a15),
        ]
        #expect(seenByOriginal == expectedArguments)
        #expect(record.arguments.value == expectedArguments)
        let expected: Double = -1 + 2.5 + 3.25 + -4_000_000_000_000 + 250 + 6.125 + 7.5 + -8 + 9.0625 + 10 + 11.75 + 12.5 + 13 + 14.25 + 15.5 + -16
        #expect(result == expected)
        #expect(record.result.value == .double(expected))
    }

    /// libffi 3.4.4's x86-64 ffi_call overwrote xmm0 for this shape (upstream
    /// d21881f5); Hook passes the struct as two scalars there.
    @Test func structInSixthIntegerRegisterAfterADouble() throws {
        typealias Fn = @convention(c) (UInt8, UInt8, UInt8, UInt8, UInt8, Double, SID) -> Double
        let signature = Signature(returning: Double.self, arguments: UInt8.self, UInt8.self, UInt8.self, UInt8.self, UInt8.self, Double.self, SID.self)
        let (hook, record) = try hook(address(of: abi_sixth_register as Fn), signature, name: "abi_sixth_register", resultType: Double.self)
        let m = SID(i: 7, d: 42.5)
        let result = hook.callable(as: Fn.self)(1, 2, 3, 4, 5, 2.25, m)
        #expect(abi_seen_sixth_register_x() == 2.25)
        #expect(CValue(abi_seen_sixth_register_m()) == CValue(m))
        #expect(result == 2.25 + 42.5 + 7 + 15)
        #expect(record.arguments.value == [.uint8(1), .uint8(2), .uint8(3), .uint8(4), .uint8(5), .double(2.25), CValue(m)])
        // The dynamic caller goes through ffi_call too.
        let dynamic = try hook.callEntry(with: [.uint8(1), .uint8(1), .uint8(1), .uint8(1), .uint8(1), .double(-1), CValue(m)])
        let expectedDynamic: Double = -1 + 42.5 + 7 + 5
        #expect(dynamic == .double(expectedDynamic))
        #expect(abi_seen_sixth_register_x() == -1)
    }

    @Test func microsoftX64CallingConvention() throws {
        let signature = Signature(returning: .int64, arguments: [.int32, .double, S24.cType, .int64, .float], abi: .win64)
        let hook = try FunctionHook(function: address(of: abi_ms_mix as @convention(c) (Int32, Double, S24, Int64, Float) -> Int64),
                                    signature: signature, name: "abi_ms_mix")
        let seen = Shared<[CValue]>([])
        hook.before { call in
            seen.value = try (0..<call.argumentCount).map { try call.argumentValue($0) }
            try call.setArgument(3, to: Int64(1000))
        }
        hook.after { call in try call.setResult(try call.result(as: Int64.self) * 2) }
        let s24 = S24(a: 10, b: 20.5, c: 3)
        let arguments: [CValue] = [.int32(1), .double(2.75), CValue(s24), .int64(4), .float(5.5)]
        // Called through libffi with the same ABI (Swift cannot call ms_abi pointers directly).
        let result = try hook.callEntry(with: arguments)
        #expect(seen.value == arguments)
        let expected: Int64 = (1 + 2 + 10 + 20 + 3 + 1000 + 5) * 2
        #expect(result == .int64(expected))
    }

    @Test func variadicFunctionsCanBeCalledDynamically() throws {
        let snprintfAddress = try #require(dlsym(UnsafeMutableRawPointer(bitPattern: 0), "snprintf"))  // RTLD_DEFAULT
        let signature = Signature.variadic(returning: .int32, fixed: [.pointer, .uint64, .pointer], variadic: [.int32, .double])
        var buffer = [CChar](repeating: 0, count: 64)
        let written = try buffer.withUnsafeMutableBufferPointer { out in
            try "%d and %.2f".withCString { format in
                try signature.call(snprintfAddress, with: [.pointer(UnsafeRawPointer(out.baseAddress)), .uint64(64), .pointer(UnsafeRawPointer(format)), .int32(42), .double(3.14159)])
            }
        }
        #expect(written == .int32(11))
        #expect(buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) } == "42 and 3.14")
    }

    @Test func voidResult() throws {
        typealias VoidFn = @convention(c) (Int32, Double) -> Void
        let hook = try FunctionHook(function: address(of: abi_void as VoidFn), signature: Signature(arguments: Int32.self, Double.self), name: "abi_void")
        let seen = Shared<[CValue]>([])
        let resultSeen = Shared<CValue?>(nil)
        hook.after { call in
            seen.value = try [call.argumentValue(0), call.argumentValue(1)]
            resultSeen.value = try call.resultValue()
            #expect(call.result == nil)
            #expect(throws: HookError.self) { try call.result(as: Int32.self) }
        }
        let calls = abi_void_calls()
        hook.entry(as: VoidFn.self)(-77, 0.125)
        #expect(abi_void_calls() == calls + 1)
        #expect(abi_seen_void_a() == -77)
        #expect(abi_seen_void_b() == 0.125)
        #expect(seen.value == [.int32(-77), .double(0.125)])
        #expect(resultSeen.value == .void)
    }

    @Test func pointerArgumentsAndResult() throws {
        typealias PtrFn = @convention(c) (UnsafePointer<CChar>?, UnsafePointer<CChar>?) -> UnsafePointer<CChar>?
        let hook = try FunctionHook(function: address(of: abi_pointer_offset as PtrFn),
                                    signature: Signature(returning: .pointer, arguments: [.pointer, .pointer]), name: "abi_pointer_offset")
        let texts = Shared<[String]>([])
        hook.after { call in
            let base = try call.argument(0, as: UnsafePointer<CChar>?.self)
            let text = try call.argument(1, as: UnsafePointer<CChar>?.self)
            let result = try call.result(as: UnsafePointer<CChar>?.self)
            texts.value = [String(cString: base!), String(cString: text!), String(cString: result!)]
        }
        let f = hook.entry(as: PtrFn.self)
        "hello, world".withCString { base in
            "hello".withCString { text in
                let r = f(base, text)
                #expect(r == base + 5)
            }
        }
        #expect(texts.value == ["hello, world", "hello", ", world"])
    }

    // MARK: The original called without libffi

    typealias SixInts = @convention(c) (Int8, UInt16, Int32, Bool, UnsafeRawPointer?, Int64) -> Int64
    typealias SevenInts = @convention(c) (Int8, UInt16, Int32, Bool, UnsafeRawPointer?, Int64, Int16) -> Int64

    @Test func integerSignaturesCallTheOriginalDirectly() throws {
        let six = try FunctionHook(cFunction: abi_six_ints as SixInts,
                                   signature: Signature(returning: .int64, arguments: [.int8, .uint16, .int32, .bool, .pointer, .int64]))
        #expect(six.callsOriginalDirectly)
        let narrow = try FunctionHook(cFunction: abi_narrow_result as @convention(c) (Int32) -> Int8,
                                      signature: Signature(returning: Int8.self, arguments: Int32.self))
        #expect(narrow.callsOriginalDirectly)
        // A seventh argument, a floating-point one, a struct, another ABI: libffi calls it.
        let seven = try FunctionHook(cFunction: abi_seven_ints as SevenInts,
                                     signature: Signature(returning: .int64, arguments: [.int8, .uint16, .int32, .bool, .pointer, .int64, .int16]))
        #expect(!seven.callsOriginalDirectly)
        let double = try FunctionHook(cFunction: abi_double as @convention(c) (Double, Double) -> Double,
                                      signature: Signature(returning: Double.self, arguments: Double.self, Double.self))
        #expect(!double.callsOriginalDirectly)
        let structs = try FunctionHook(cFunction: abi_struct_S24 as @convention(c) (S24, Int32, S24) -> S24,
                                       signature: Signature(returning: S24.cType, arguments: [S24.cType, .int32, S24.cType]))
        #expect(!structs.callsOriginalDirectly)
        let windows = try FunctionHook(cFunction: abi_i64 as @convention(c) (Int64, Int64) -> Int64,
                                       signature: Signature(returning: .int64, arguments: [.int64, .int64], abi: .win64))
        #expect(!windows.callsOriginalDirectly)
    }

    /// A before hook writes only the bytes of a narrow argument; the register
    /// the original gets must hold the new value extended by its type, with or
    /// without libffi (six arguments are called directly, seven through libffi).
    @Test func narrowArgumentsAHookChangesReachTheOriginalExtended() throws {
        let marker = UnsafeRawPointer(bitPattern: 0x1000)!
        func changeEveryArgument(_ hook: FunctionHook) {
            hook.before { call in
                try call.setArgument(0, to: -100 as Int8)
                try call.setArgument(1, to: 65000 as UInt16)
                try call.setArgument(2, to: -7 as Int32)
                try call.setArgument(3, to: true)
                if call.argumentCount == 7 { try call.setArgument(6, to: -2 as Int16) }
            }
        }
        let expected: Int64 = -100 + 65000 - 7 + 1 + 0x1000 + 5
        let six = try FunctionHook(cFunction: abi_six_ints as SixInts,
                                   signature: Signature(returning: .int64, arguments: [.int8, .uint16, .int32, .bool, .pointer, .int64]))
        changeEveryArgument(six)
        // The caller's values fill each register: a write of the narrow bytes alone would keep their upper bits.
        #expect(six.entry(as: SixInts.self)(100, 1, .max, false, marker, 5) == expected)
        #expect(six.entry(as: SixInts.self)(-1, .max, -1, false, marker, 5) == expected)
        let seven = try FunctionHook(cFunction: abi_seven_ints as SevenInts,
                                     signature: Signature(returning: .int64, arguments: [.int8, .uint16, .int32, .bool, .pointer, .int64, .int16]))
        changeEveryArgument(seven)
        #expect(seven.entry(as: SevenInts.self)(-1, .max, -1, false, marker, 5, .max) == expected - 2)
    }

    /// A narrow result is widened for libffi by its type, whatever the
    /// original left in the rest of the register.
    @Test func aNarrowResultOfADirectCallIsExtendedByItsType() throws {
        let hook = try FunctionHook(cFunction: abi_narrow_result as @convention(c) (Int32) -> Int8,
                                    signature: Signature(returning: Int8.self, arguments: Int32.self))
        let seen = Shared<[CValue]>([])
        hook.after { call in seen.value.append(try call.resultValue()) }
        let entry = hook.entry(as: (@convention(c) (Int32) -> Int8).self)
        #expect(entry(100) == Int8(truncatingIfNeeded: 300))
        #expect(entry(-50) == Int8(truncatingIfNeeded: -150))
        #expect(seen.value == [CValue(Int8(truncatingIfNeeded: 300)), CValue(Int8(truncatingIfNeeded: -150))])
    }
}

extension FunctionHook {
    /// What a test calls: a FunctionHook's entry, or for an EntryHook the patched function itself.
    var callable: UnsafeRawPointer { (self as? EntryHook)?.address ?? entry }
    func callable<F>(as type: F.Type) -> F { unsafeBitCast(callable, to: F.self) }
}
