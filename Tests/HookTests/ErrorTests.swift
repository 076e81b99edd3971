import CHookTestSupport
import Foundation
@testable import Hook
import Testing

@Suite("Bad input yields errors that name the hook point")
struct ErrorTests {
    func expectError(_ kind: HookError.Kind, containing text: String, point: String = "f", _ body: () throws -> Void) {
        do {
            try body()
            Issue.record("expected \(kind)")
        } catch let error as HookError {
            #expect(error.kind == kind)
            #expect(error.point == point)
            #expect(error.description.contains("hook point '\(point)'"), "\(error)")
            #expect(error.description.contains(text), "\(error)")
        } catch {
            Issue.record("expected a HookError, got \(error)")
        }
    }

    var someFunction: UnsafeRawPointer { address(of: test_add as AddFn) }

    /// A Swift enum is no C value: its memory is its case's number, not
    /// its raw value. Typed access refuses it (read, a C 20 was no case,
    /// and printing it crashed; written, `.high` stored 1), and `CValue`
    /// takes its raw value.
    @Test func aSwiftEnumIsNotReadOrWrittenAsItsMemory() throws {
        typealias U8 = @convention(c) (UInt8, UInt8) -> UInt8
        let hook = try FunctionHook(cFunction: abi_u8 as U8, signature: Signature(returning: .uint8, arguments: [.uint8, .uint8]), name: "abi_u8")
        let errors = Shared<[String]>([])
        hook.before { call in
            do { _ = try call.argument(0, as: Level.self) } catch { errors.mutate { $0.append("\(error)") } }
            do { try call.setArgument(1, to: Level.high) } catch { errors.mutate { $0.append("\(error)") } }
        }
        #expect(withExtendedLifetime(hook) { hook.entry(as: U8.self)(20, 5) } == 15)
        #expect(errors.value.count == 2 && errors.value.allSatisfy { $0.contains("Level") }, "\(errors.value)")
        #expect(abi_seen_u8(1) == 5)
        #expect(CValue(Level.high) == .uint8(20))
        #expect(CValue(Wider.two) == .int32(2), "the raw value, as the enum's C type")
        // A typed after hook is refused when it is added.
        expectError(.typeMismatch, containing: "Swift enum", point: "abi_u8") {
            _ = try hook.afterReturning { (_: UInt8, _: Level, _: UInt8) in }
        }
    }

    /// A C function value's own types are checked against the signature
    /// (two `double`s described as `int64_t`s were hooked: the hooks read
    /// other registers, and the caller got another result).
    @Test func aCFunctionValueOfOtherTypesIsRefused() throws {
        expectError(.typeMismatch, containing: "argument 0 of @convention(c) (Double, Double) -> Double is Double (C double); the signature has int64_t there") {
            _ = try FunctionHook(cFunction: abi_double as @convention(c) (Double, Double) -> Double,
                                 signature: Signature(returning: .int64, arguments: [.int64, .int64]), name: "f")
        }
        expectError(.typeMismatch, containing: "the result of @convention(c) (Int32, Int32) -> Int32 is Int32 (C int32_t); the signature has int64_t there") {
            _ = try FunctionHook(cFunction: abi_i32 as @convention(c) (Int32, Int32) -> Int32,
                                 signature: Signature(returning: .int64, arguments: [.int32, .int32]), name: "f")
        }
        // Signedness is not the ABI's concern.
        _ = try FunctionHook(cFunction: abi_i32 as @convention(c) (Int32, Int32) -> Int32,
                             signature: Signature(returning: .uint32, arguments: [.uint32, .int32]), name: "f")
    }

    /// An address that is not code is refused (it made a hook point whose
    /// first call crashed in the "original").
    @Test func anAddressThatIsNotCodeIsRefused() {
        let data = UnsafeMutableRawPointer.allocate(byteCount: 64, alignment: 16)
        defer { data.deallocate() }
        expectError(.invalidValue, containing: "is not in executable code") {
            _ = try FunctionHook(function: data, signature: addSignature, name: "f")
        }
    }

    /// A typed after hook refuses a struct whose Swift size is not its C
    /// type's (it read the C value's neighbour as part of it).
    @Test func afterReturningRefusesAStructOfAnotherSize() throws {
        typealias Structs = @convention(c) (S8, Int32, S8) -> S8
        let hook = try FunctionHook(cFunction: abi_struct_S8 as Structs,
                                    signature: Signature(returning: S8.self, arguments: S8.self, Int32.self, S8.self), name: "S8")
        expectError(.typeMismatch, containing: "Wide is 24 bytes", point: "S8") {
            _ = try hook.afterReturning { (_: S8, _: Wide, _: Int32, _: S8) in }
        }
    }

    @Test func nullFunctionPointer() {
        expectError(.nullFunctionPointer, containing: "NULL") {
            _ = try FunctionHook(function: nil, signature: addSignature, name: "f")
        }
    }

    @Test func unsupportedTypes() {
        let cases: [(CType, String)] = [
            (.union([.int32, .float]), "union"),
            (.structure([.int32, .bitField(.uint32, bits: 3)]), "bit-field"),
            (.structure([]), "empty struct"),
            (.array(.int32, count: 4), "array"),
            (.void, "void"),
            (.structure([.array(.int8, count: 0)]), "0 elements"),
            // Sizes that overflow, or that no value passed by value has
            // (the first trapped computing its layout).
            (.structure([.array(.int64, count: Int.max / 4)]), "larger than 1048576 bytes"),
            (.structure([.array(.array(.int64, count: 1 << 20), count: 1 << 20)]), "larger than 1048576 bytes"),
            (.structure([.array(.int8, count: 2 << 20)]), "pass it by pointer"),
        ]
        for (type, text) in cases {
            expectError(.unsupportedType, containing: text) {
                _ = try FunctionHook(function: someFunction, signature: Signature(returning: .int32, arguments: [.int32, type]), name: "f")
            }
        }
        expectError(.unsupportedType, containing: "result") {
            _ = try FunctionHook(function: someFunction, signature: Signature(returning: .union([.int8]), arguments: []), name: "f")
        }
    }

    /// A struct with an array of arrays is passed as C lays it out: libffi
    /// gets every innermost element. (It got the innermost element type once
    /// per outer element: 8 bytes for `int m[2][3]`'s 24, passed in a
    /// register instead of memory.)
    @Test func aStructOfAnArrayOfArraysIsPassedWhole() throws {
        let grid = CType.structure([.array(.array(.int32, count: 3), count: 2)])
        let signature = Signature(returning: .int32, arguments: [grid])
        let value = CValue.structure([.array([.array([.int32(1), .int32(2), .int32(3)]), .array([.int32(4), .int32(5), .int32(6)])])])
        let sum = try signature.call(unsafeBitCast(grid_sum as @convention(c) (CHookTestSupport.grid) -> Int32, to: UnsafeRawPointer.self), with: [value])
        let expected: Int32 = 91   // 1·1 + 2·2 + 3·3 + 4·4 + 5·5 + 6·6
        #expect(sum == .int32(expected))
    }

    /// A raw-value enum whose `cType` is `int32_t` is one byte (its tag):
    /// typed access through it would write one byte of four, or read three
    /// past it. Refused, named; the argument left alone.
    enum Mode: Int32, CRepresentable {
        case off = 0, on = 7
        static var cType: CType { .int32 }
    }

    @Test func aTypeSmallerThanItsCTypeIsRefused() throws {
        let hook = try makeAddHook()
        var refused: HookError?
        let token = hook.before { call in
            do { try call.setArgument(0, to: Mode.on) } catch { refused = error as? HookError }
        }
        #expect(hook.entry(as: AddFn.self)(0x100, 0) == 0x100)
        token.remove()
        #expect(refused?.kind == .typeMismatch)
        expectError(.typeMismatch, containing: "Mode is a Swift enum, whose memory is the number of its case", point: "test_add") {
            _ = try hook.afterReturning { (_: Int32, _: Mode, _: Int32) in }
        }
        // Read as a CValue: its raw value (its one byte, the case's number,
        // was read, and zeros past it).
        #expect(CValue(Mode.on) == .int32(7))
    }

    @Test func aCFunctionValueIsChecked() {
        expectError(.invalidValue, containing: "Int is not a C function pointer", point: "Int") {
            _ = try FunctionHook(cFunction: 42, signature: Signature(returning: .int32, arguments: []))
        }
        expectError(.invalidValue, containing: "takes 2 arguments; the signature", point: "f") {
            _ = try FunctionHook(cFunction: test_add as AddFn, signature: Signature(returning: .int32, arguments: [.int32]), name: "f")
        }
    }

    @Test func aValueThatDoesNotFitChangesNothing() throws {
        typealias Structs = @convention(c) (S8, Int32, S8) -> S8
        let hook = try FunctionHook(cFunction: abi_struct_S8 as Structs,
                                    signature: Signature(returning: S8.self, arguments: S8.self, Int32.self, S8.self), name: "S8")
        var refused = false
        let token = hook.before { call in
            // Its first member fits, its second does not.
            do { try call.setArgumentValue(2, to: .structure([.float(9), .double(1)])) } catch { refused = true }
        }
        defer { token.remove() }
        let result = hook.entry(as: Structs.self)(S8(f: 1, i: 2), 0, S8(f: -7.5, i: 3))
        #expect(refused)
        #expect(result.f == -7.5 && result.i == 3)
    }

    @Test func typesDescribeAsCWritesThem() {
        #expect(CType.array(.array(.int32, count: 3), count: 2).description == "int32_t[2][3]")
        // Sizes of types `validate` refuses: no trap, no negative size.
        #expect(CType.array(.int64, count: Int.max / 4).size == Int.max)
        #expect(CType.array(.int32, count: -5).size == 0)
    }

    @Test func aVariadicArgumentIsDescribedPromoted() {
        expectError(.unsupportedType, containing: "variadic argument 1 is float; C passes it promoted, as double", point: "call") {
            _ = try Signature.variadic(returning: .int32, fixed: [.pointer], variadic: [.float])
                .call(someFunction, with: [.pointer(nil), .float(1.5)])
        }
    }

    @Test func variadicClosure() {
        expectError(.variadicClosure, containing: "variadic") {
            _ = try FunctionHook(function: someFunction, signature: .variadic(returning: .int32, fixed: [.pointer], variadic: [.double]), name: "f")
        }
    }

    @Test func tooManyArguments() {
        let signature = Signature(returning: .void, arguments: Array(repeating: .int32, count: Signature.maximumArgumentCount + 1))
        expectError(.tooManyArguments, containing: "128 arguments") {
            _ = try FunctionHook(function: someFunction, signature: signature, name: "f")
        }
    }

    @Test func libffiRefusesTheCif() {
        expectError(.libffiRefused, containing: "FFI_BAD_ABI") {
            _ = try FunctionHook(function: someFunction, signature: Signature(returning: .int32, arguments: [.int32], abi: ABI(rawValue: 99)), name: "f")
        }
    }

    @Test func closureMemoryRefused() {
        FunctionHook.$closureAllocationRefused.withValue(true) {
            expectError(.closureMemoryRefused, containing: "read-write-execute") {
                _ = try FunctionHook(function: someFunction, signature: addSignature, name: "f")
            }
        }
    }

    @Test func swiftClosureIsNotACFunctionPointer() {
        let closure: (Int32, Int32) -> Int32 = { $0 + $1 }
        expectError(.invalidValue, containing: "not a C function pointer") {
            _ = try FunctionHook(cFunction: closure, signature: addSignature, name: "f")
        }
    }

    @Test func wrongTypedAccessIsAnErrorNotAReinterpretation() throws {
        let hook = try makeAddHook("f")
        let errors = Shared<[HookError.Kind]>([])
        hook.before { call in
            func record(_ body: () throws -> Void) {
                do { try body() } catch { errors.mutate { $0.append((error as? HookError)?.kind ?? .invalidValue) } }
            }
            record { _ = try call.argument(0, as: Double.self) }
            record { _ = try call.argument(0, as: UInt32.self) }
            record { _ = try call.argument(2, as: Int32.self) }
            record { _ = try call.argument(-1, as: Int32.self) }
            record { _ = try call.result(as: Int32.self) }
            record { _ = try call.result(as: Int64.self) }
            record { try call.invokeOriginal() }
            record { try call.setArgumentValue(1, to: .double(1)) }
        }
        #expect(hook.entry(as: AddFn.self)(1, 2) == 3)
        #expect(errors.value == [.typeMismatch, .typeMismatch, .argumentOutOfRange, .argumentOutOfRange, .resultUnavailable, .typeMismatch, .notInstead, .typeMismatch])
    }

    @Test func callBackUsedAfterItsCallReturnedIsExpired() throws {
        final class Escaped: @unchecked Sendable { var call: CallBack? }
        let hook = try makeAddHook("f")
        let escaped = Escaped()
        hook.before { call in escaped.call = call }
        _ = hook.entry(as: AddFn.self)(1, 2)
        let call = try #require(escaped.call)
        #expect(!call.isLive)
        #expect(call.args.isEmpty)
        #expect(call.result == nil)
        #expect(throws: HookError.self) { try call.argument(0, as: Int32.self) }
        do {
            _ = try call.argument(0, as: Int32.self)
        } catch {
            #expect(error.kind == .callBackExpired)
        }
    }

    /// A `CallBack` kept past its call does not read its hook point, which
    /// may be gone (a CallBack holds it unowned): its selector is empty, its
    /// target, signature and hook point nil, its description and errors say
    /// it expired. (They read the freed point: its name, its shape.)
    @Test func aCallBackKeptPastItsHookPointReadsNothingOfIt() throws {
        final class Kept: @unchecked Sendable { var call: CallBack? }
        let kept = Kept()
        weak var gone: ClosureHook<Int, Int>?
        do {
            let point = ClosureHook(name: "first") { (x: Int) in x + 1 }
            gone = point
            point.after { call in
                #expect(call.selector == "first" && call.hookPoint != nil)
                kept.call = call
            }
            #expect(point(1) == 2)
        }
        #expect(gone == nil)
        // A new point may take the old one's memory.
        let other = ClosureHook(name: "second") { (x: Int) in x }
        let call = try #require(kept.call)
        #expect(!call.isLive)
        #expect(call.selector == "" && call.hookPoint == nil && call.target == nil && call.signature == nil)
        #expect(call.description == "<expired call>")
        #expect(call.args.isEmpty && call.result == nil)
        do {
            _ = try call.argument(0, as: Int.self)
            Issue.record("an expired CallBack was read")
        } catch {
            #expect(error.kind == .callBackExpired)
            #expect(error.point == "<expired call>")
        }
        var copy = call
        #expect(throws: HookError.self) { try copy.setResult(3) }
        #expect(throws: HookError.self) { try copy.invokeOriginal() }
        _ = other(0)
    }

    /// `setArgument` with a `CRepresentable` type that holds a reference (a
    /// conformance the protocol forbids, but one the compiler lets through)
    /// on a closure whose argument is of that exact type assigns it: the new
    /// value is retained, the old one released. (It copied the bytes: the new
    /// object was freed while the argument still pointed at it.)
    @Test func setArgumentOfAValueWithAReferenceAssignsIt() throws {
        final class Count: @unchecked Sendable { var gone = 0 }
        final class Counted: @unchecked Sendable {
            let value: Int
            let count: Count
            init(_ value: Int, _ count: Count) { self.value = value; self.count = count }
            deinit { count.gone += 1 }
        }
        struct Holder: CRepresentable {
            var box: Counted
            static var cType: CType { .pointer }
        }
        let count = Count()
        let read = ClosureHook(name: "read") { (holder: Holder) in holder.box.value }
        read.before { call in try call.setArgument(0, to: Holder(box: Counted(2, count))) }
        for i in 0..<100 {
            #expect(read(Holder(box: Counted(i, count))) == 2)
        }
        #expect(count.gone == 200)
    }

    /// A record is live only in its own call: not in a later call at the same
    /// depth of the same thread (which gets a new serial), still in a call
    /// nested inside it, and not on another thread while it runs.
    @Test func aCallBackIsLiveOnlyInItsOwnCall() throws {
        final class Seen: @unchecked Sendable {
            var first: CallBack?
            var firstLiveInLaterCall: Bool?
            var outerLiveInNestedCall: Bool?
            var liveOnAnotherThread: Bool?
        }
        let seen = Seen()
        let inner = ClosureHook(name: "inner") { (x: Int) in x }
        let outer = ClosureHook(name: "outer") { (x: Int) in inner(x) }
        outer.before { call in
            let x = try call.argument(0, as: Int.self)
            if x == 1 { seen.first = call }
            if x == 2 { seen.firstLiveInLaterCall = seen.first?.isLive }
            if x == 3 {
                nonisolated(unsafe) let copy = call
                let done = DispatchSemaphore(value: 0)
                Thread {
                    seen.liveOnAnotherThread = copy.isLive
                    done.signal()
                }.start()
                done.wait()
            }
        }
        var outerCall: CallBack?
        outer.before { call in outerCall = call }
        inner.before { _ in seen.outerLiveInNestedCall = outerCall?.isLive }
        #expect(outer(1) == 1)
        #expect(seen.first?.isLive == false)
        #expect(outer(2) == 2)
        #expect(seen.firstLiveInLaterCall == false)
        #expect(seen.outerLiveInNestedCall == true)
        #expect(outer(3) == 3)
        #expect(seen.liveOnAnotherThread == false)
        #expect(throws: HookError.self) { try seen.first?.argument(0, as: Int.self) }
    }

    /// A CallBack kept from a call on a thread that has exited is not live in
    /// the first call of a later thread, whose thread record may lie at the
    /// dead one's address (the allocator hands it out again) and whose first
    /// frame is at the same depth: reading it throws, every time, and never
    /// reads the dead thread's stack. (As it was found: before thread records
    /// outlived their threads, 173 to 290 of 300 reads returned a value, and
    /// one crashed.)
    @Test func aCallBackOfAnExitedThreadIsNotLiveInALaterThreadsCall() {
        final class Seen: @unchecked Sendable {
            var kept: CallBack?
            var readAsLive = 0
            var expired = 0
            var tries = 0
        }
        let seen = Seen()
        let hook = ClosureHook(name: "work") { (x: Int) in x + 1 }
        hook.before { call in
            if let kept = seen.kept {
                seen.tries += 1
                if kept.isLive { seen.readAsLive += 1 }
                do {
                    _ = try kept.argument(0, as: Int.self)
                    seen.readAsLive += 1
                } catch let error as HookError {
                    if error.kind == .callBackExpired { seen.expired += 1 }
                } catch {}
                seen.kept = nil
            } else {
                seen.kept = call
            }
        }
        for i in 0..<300 {
            seen.kept = nil
            // Each on a new thread that has exited (joined) before the next starts.
            var first = 0, second = 0
            onNewThreadJoined { first = hook(i) }
            onNewThreadJoined { second = hook(-i) }
            #expect(first == i + 1 && second == -i + 1)
        }
        #expect(seen.tries == 300)
        #expect(seen.readAsLive == 0)
        #expect(seen.expired == 300)
    }

    /// A plain closure property is no @HookableMethod: the message names the
    /// class, the type and the class's properties of that type, with no address.
    @Test func aPlainClosurePropertyIsNoHookableMethod() {
        let node = BNode()
        expectError(.invalidValue, containing: "is not a @HookableMethod of BNode",
                    point: "\\BNode.<a (Int) -> Int property: one of transform, fallback, or a computed one>") {
            _ = try MethodHook.of(node, \.transform)
        }
        do {
            _ = try MethodHook.of(node, \.transform)
        } catch {
            #expect(!"\(error)".contains("0x"), "\(error)")
        }
    }

    /// A property that is not @Hooked, by its name where Swift keeps it (a final class).
    @Test func aPlainPropertyIsNoHookedProperty() {
        let node = BNode()
        expectError(.invalidValue, containing: "\\BNode.count is not a @Hooked property of BNode", point: "\\BNode.count") {
            _ = try PropertyHook.of(node, \.count)
        }
    }

    /// Messages that name a hook position read "an after hook", "an instead hook".
    @Test func messagesNameThePositionWithItsArticle() throws {
        let hook = ClosureHook(name: "double") { (x: Int) in x * 2 }
        var messages: [String] = []
        hook.after { call in
            do { try call.veto() } catch { messages.append("\(error)") }
            do { try call.invokeOriginal() } catch { messages.append("\(error)") }
        }
        #expect(hook(2) == 4)
        #expect(messages == [
            "hook point 'double': invalid value: veto() called from an after hook; only a before hook can veto",
            "hook point 'double': not inside an instead hook: invokeOriginal() called from an after hook",
        ])
    }
}

final class BNode {
    var count = 0
    var transform: (Int) -> Int = { $0 * 2 }
    var fallback: (Int) -> Int = { $0 }
}

/// Runs `body` on a new POSIX thread and returns once that thread has exited
/// (its thread-local destructors have run).
func onNewThreadJoined(_ body: () -> Void) {
    withoutActuallyEscaping(body) { body in
        let box = Unmanaged.passRetained(_ThreadBody(body)).toOpaque()
        var thread = pthread_t()
        let started = pthread_create(&thread, nil, { raw in
            Unmanaged<_ThreadBody>.fromOpaque(raw!).takeRetainedValue().body()
            return nil
        }, box)
        precondition(started == 0, "pthread_create failed: \(started)")
        pthread_join(thread, nil)
    }
}

private final class _ThreadBody: @unchecked Sendable {
    let body: () -> Void
    init(_ body: @escaping () -> Void) { self.body = body }
}

/// A Swift enum with a C raw type (its memory is its case's number).
enum Level: UInt8, CRepresentable {
    case low = 10, high = 20
    static var cType: CType { .uint8 }
}

/// A Swift enum whose raw type is wider than its C type.
enum Wider: Int, CRepresentable {
    case one = 1, two = 2
    static var cType: CType { .int32 }
}

/// A Swift struct larger than the C type it claims.
struct Wide: CRepresentable {
    var x, y, z: Int64
    static var cType: CType { S8.cType }
}
