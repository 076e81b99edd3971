@testable import Hook
import Glibc
import SwiftEntrySample
import Testing

/// One payload case, floating-point: passed as the payload's xmm register and a tag.
enum OnePayload { case value(Double), none }

/// Every error names what the user wrote.
extension SwiftEntrySuites {
@Suite struct SwiftEntryErrorTests {
    func expectError(_ kind: HookError.Kind, containing parts: [String], _ body: () throws -> Void,
                     sourceLocation: SourceLocation = #_sourceLocation) {
        do {
            try body()
            Issue.record("no error thrown", sourceLocation: sourceLocation)
        } catch let error as HookError {
            #expect(error.kind == kind, "\(error)", sourceLocation: sourceLocation)
            for part in parts { #expect("\(error)".contains(part), "\(error) lacks \(part)", sourceLocation: sourceLocation) }
        } catch {
            Issue.record("\(error)", sourceLocation: sourceLocation)
        }
    }

    @Test func namesThatFindNothingOrTooMuch() {
        expectError(.symbolNotFound, containing: ["SwiftEntrySample.Person.wave()", "no loaded Swift function"]) {
            _ = try SwiftEntryHook.named("SwiftEntrySample.Person.wave()", as: ((Person) -> Void).self)
        }
        expectError(.symbolNotFound, containing: ["the name is empty"]) {
            _ = try SwiftEntryHook.named("  ", as: (() -> Void).self)
        }
        // The property's getter, setter and modify: the message lists them.
        expectError(.ambiguousSymbol, containing: ["SwiftEntrySample.Person.name", "names 3 functions", "SwiftEntrySample.Person.name.getter", "SwiftEntrySample.Person.name.setter"]) {
            _ = try SwiftEntryHook.named("SwiftEntrySample.Person.name", as: ((Person) -> String).self)
        }
        expectError(.symbolNotFound, containing: ["in libnothing.so"]) {
            _ = try SwiftEntryHook.named("SwiftEntrySample.shout(_:)", as: ((String) -> String).self, in: "libnothing.so")
        }
        // Similar names: the same name elsewhere under the module, else
        // the other members of the type written.
        expectError(.symbolNotFound, containing: ["similar names: SwiftEntrySample.Person.greet(_:)"]) {
            _ = try SwiftEntryHook.named("SwiftEntrySample.greet(_:)", as: ((Person, String) -> String).self)
        }
        expectError(.symbolNotFound, containing: ["similar names: SwiftEntrySample.Person.age, ", "SwiftEntrySample.Person.greet(_:)"]) {
            _ = try SwiftEntryHook.named("SwiftEntrySample.Person.wave()", as: ((Person) -> Void).self)
        }
        expectError(.symbolNotFound, containing: ["'SwiftEntrySample.Person.height'", "SwiftEntrySample.Person.age, "]) {
            _ = try SwiftModifyHook.named("SwiftEntrySample.Person.height", of: Person.self, as: Int.self)
        }
    }

    /// An enum of several payload cases is integer chunks, a floating-point
    /// payload among them too (the compiler's multi-payload schema); one of
    /// one floating-point payload case is refused (its payload is in an xmm
    /// register).
    @Test func enumsOfFloatingPointPayloads() throws {
        let several = try _SwiftLowering(Result<Double, any Error>.self, point: "settle")
        #expect(several.registers.map(\.isFloat) == [false, false])
        #expect(throws: HookError.self) { try _SwiftLowering(OnePayload.self, point: "one") }
    }

    /// The patterns of the similar names take what was written literally:
    /// a generic argument's `[` is no bracket expression of `fnmatch`.
    @Test func similarNamesTakeWhatWasWrittenLiterally() {
        let similar = _SwiftNames.Query("Model.Cache<[Swift.String]>.lod()").similar
        #expect(similar.count == 2)
        #expect(similar.count == 2 && fnmatch(similar[1].text, "Model.Cache<[Swift.String]>.load()", 0) == 0)
        #expect(similar.count == 2 && fnmatch(similar[1].text, "Model.Cache<S>.load()", 0) != 0)
    }

    /// An error raised while patching names the function as it was
    /// written, not as the lookup found it (demangled, with its types).
    @Test func errorsWhilePatchingNameWhatWasWritten() throws {
        let trace = try SwiftTrace("SwiftEntrySample.shout(_:)") { _ in }
        defer { trace.stop() }
        do {
            _ = try SwiftEntryHook.named("SwiftEntrySample.shout", as: ((String) -> String).self)
            Issue.record("no error thrown")
        } catch {
            #expect(error.kind == .signatureMismatch && error.point == "SwiftEntrySample.shout", "\(error)")
        }
    }

    @Test func typesThatAreNotTheFunctions() {
        expectError(.typeMismatch, containing: ["argument 1", "Swift.String", "stated Swift.Int"]) {
            _ = try SwiftEntryHook.named("SwiftEntrySample.Person.greet(_:)", as: ((Person, Int) -> String).self)
        }
        expectError(.typeMismatch, containing: ["(self first)", "stated (Swift.String) -> Swift.String"]) {
            _ = try SwiftEntryHook.named("SwiftEntrySample.Person.greet(_:)", as: ((String) -> String).self)
        }
        expectError(.typeMismatch, containing: ["returns Swift.String", "stated Swift.Int"]) {
            _ = try SwiftEntryHook.named("SwiftEntrySample.shout(_:)", as: ((String) -> Int).self)
        }
        expectError(.typeMismatch, containing: ["throws", "(...) throws -> R"]) {
            _ = try SwiftEntryHook.named("SwiftEntrySample.parseNumber(_:)", as: ((String) -> Int).self)
        }
        expectError(.typeMismatch, containing: ["does not throw"]) {
            _ = try SwiftEntryHook.named("SwiftEntrySample.shout(_:)", as: ((String) throws -> String).self)
        }
        expectError(.typeMismatch, containing: ["self of", "UnsafeMutablePointer<SwiftEntrySample.Point>"]) {
            _ = try SwiftEntryHook.named("SwiftEntrySample.Point.move(dx:dy:)", as: ((Counter, Double, Double) -> Void).self)
        }
    }

    @Test func whatTypedAccessCannotDo() throws {
        expectError(.unsupportedType, containing: ["modify coroutine", "SwiftModifyHook"]) {
            _ = try SwiftEntryHook.named("SwiftEntrySample.Person.age.modify", as: ((Person) -> Int).self)
        }
        // A hook for one object needs a class self.
        let shouting = try SwiftEntryHook.named("SwiftEntrySample.shout(_:)", as: ((String) -> String).self)
        defer { try? shouting.restore() }
        expectError(.invalidValue, containing: ["SwiftEntrySample.shout(_:)", "no class instance as self"]) {
            _ = try shouting.before(for: Person(name: "x")) { _ in }
        }
        // A function a trace follows has no typed hook point meanwhile.
        try shouting.restore()
        let trace = try SwiftTrace("SwiftEntrySample.shout(_:)") { _ in }
        expectError(.signatureMismatch, containing: ["SwiftEntrySample.shout", "already has an entry hook point of a trace"]) {
            _ = try SwiftEntryHook.named("SwiftEntrySample.shout(_:)", as: ((String) -> String).self)
        }
        trace.stop()
        // Typed throws, a SIMD vector, Float80, a static property's modify.
        expectError(.unsupportedType, containing: ["SwiftEntrySample.strictNumber", "throws SwiftEntrySample.SampleError (typed throws)"]) {
            _ = try SwiftEntryHook.named("SwiftEntrySample.strictNumber(_:)", as: ((String) throws -> Int).self)
        }
        #expect(throws: SampleError.notANumber("x")) { try strictNumber("x") }
        expectError(.unsupportedType, containing: ["SIMD2<Swift.Float>", "a SIMD vector"]) {
            _ = try SwiftEntryHook.named("SwiftEntrySample.length(_:)", as: ((SIMD2<Float>) -> Float).self)
        }
        // An existential of any type is passed indirectly; a 16-byte integer
        // is aligned to 16 (it was called a vector).
        expectError(.unsupportedType, containing: ["SwiftEntrySample.anything", "an existential of any type"]) {
            _ = try SwiftEntryHook.named("SwiftEntrySample.anything(_:)", as: ((Any) -> String).self)
        }
        // An enum whose payload is passed indirectly is too (read as
        // integer chunks, its payload was garbage).
        expectError(.unsupportedType, containing: ["SwiftEntrySample.unbox", "SwiftEntrySample.Boxed", "a case's payload is Any"]) {
            _ = try SwiftEntryHook.named("SwiftEntrySample.unbox(_:)", as: ((Boxed) -> String).self)
        }
        expectError(.unsupportedType, containing: ["SwiftEntrySample.doubled", "an integer of 16 bytes (Builtin.Int128), aligned to 16"]) {
            _ = try SwiftEntryHook.named("SwiftEntrySample.doubled(_:)", as: ((UInt128) -> UInt128).self)
        }
        expectError(.typeMismatch, containing: ["SwiftEntrySample.Person.census", "static property"]) {
            _ = try SwiftModifyHook.named("SwiftEntrySample.Person.census", of: Person.self, as: Int.self)
        }
        // A static stored property's getter, which nothing calls (its reads
        // go through its addressor): hooked, it heard nothing.
        expectError(.cannotPatch, containing: ["SwiftEntrySample.Person.census.getter", "read through its addressor"]) {
            _ = try SwiftEntryHook.named("SwiftEntrySample.Person.census.getter", as: (() -> Int).self)
        }
        let again = try SwiftEntryHook.named("SwiftEntrySample.shout(_:)", as: ((String) -> String).self)
        again.instead { call in try call.setResult("typed again") }
        #expect(shout("a") == "typed again")
        try again.restore()
    }

    /// A `get async` demangles as a plain getter: the async function pointer
    /// beside it (its symbol + `Tu`), or a class's method descriptor, says it
    /// is async, and it is refused as async functions are (a hook read its
    /// result from registers it does not return in).
    @Test func asyncGettersAreRefusedAsAsync() throws {
        expectError(.unsupportedType, containing: ["SwiftEntrySample.Remote.answer.getter", "is async"]) {
            _ = try SwiftEntryHook.named("SwiftEntrySample.Remote.answer.getter", as: ((Remote) -> Int).self)
        }
        // A struct's: no method descriptor, the async function pointer alone.
        expectError(.unsupportedType, containing: ["SwiftEntrySample.Gauge.level.getter", "is async"]) {
            _ = try SwiftEntryHook.named("SwiftEntrySample.Gauge.level.getter", as: ((Gauge) -> Int).self)
        }
        // As in a stripped module: the method descriptor's flags alone.
        expectError(.unsupportedType, containing: ["SwiftEntrySample.Remote.answer.getter", "is async"]) {
            try _SwiftNames.$descriptorsOnly.withValue(true) {
                _ = try SwiftEntryHook.named("SwiftEntrySample.Remote.answer.getter", as: ((Remote) -> Int).self)
            }
        }
        // An async method of a class: one function, though its descriptor leads to its
        // async function pointer, not its code (it was a second function of the name).
        expectError(.unsupportedType, containing: ["SwiftEntrySample.Remote.fetch()", "is async"]) {
            _ = try SwiftEntryHook.named("SwiftEntrySample.Remote.fetch()", as: ((Remote) -> Int).self)
        }
        // A plain getter is not taken for one.
        let title = try SwiftEntryHook.named("SwiftEntrySample.Person.title.getter", as: ((Person) -> String).self)
        try title.restore()
    }
}
}
