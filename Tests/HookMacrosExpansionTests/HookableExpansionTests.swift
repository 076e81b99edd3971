import HookMacrosPlugin
import SwiftSyntaxMacroExpansion
import SwiftSyntaxMacros
import SwiftSyntaxMacrosGenericTestSupport
import Testing

let macros: [String: MacroSpec] = [
    "Hookable": MacroSpec(type: HookableMacro.self),
    "_HookableMethod": MacroSpec(type: HookableMethodMacro.self),
    "_HookableProperty": MacroSpec(type: HookablePropertyMacro.self),
    "Unhooked": MacroSpec(type: UnhookedMacro.self),
]

/// swift-syntax's assertMacroExpansion, reporting to Swift Testing.
func expand(_ source: String, _ expected: String, diagnostics: [DiagnosticSpec] = [],
            sourceLocation: SourceLocation = #_sourceLocation) {
    assertMacroExpansion(source, expandedSource: expected, diagnostics: diagnostics, macroSpecs: macros,
                         failureHandler: { Issue.record(Comment(rawValue: $0.message), sourceLocation: sourceLocation) })
}

/// One diagnostic of @Hookable, expected at `line`:`column` of the source.
func error(_ message: String, _ line: Int, _ column: Int) -> DiagnosticSpec {
    DiagnosticSpec(message: message, line: line, column: column, severity: .error)
}

@Suite("@Hookable expansions")
struct HookableExpansionTests {
    @Test func propertiesAndAMethod() {
        expand("""
            @Hookable
            final class Account {
                var balance = 0
                func deposit(_ amount: Int) -> Int { balance += amount; return balance }
            }
            """, """
            final class Account {
                @Hook.Hooked
                var balance = 0
                func deposit(_ amount: Int) -> Int {
                    func _hookableOriginal(_ amount: Int) -> Int {
                        balance += amount;
                        return balance
                    }
                    let _hookableBits = Hook._hookableLoad(Hook._hookableAddress(self, \\Account._$deposit))
                    if _hookableBits == 0 || !Hook.MethodHook<Int, Int>._hookableIsHooked(_hookableBits) {
                        return _hookableOriginal(amount)
                    }
                    return Hook.MethodHook<Int, Int>._hookableCall(_hookableBits, self, _hookableOriginal, amount)
                }

                /// Where `$deposit` keeps its hook point, once made.
                nonisolated(unsafe) final var _$deposit = Hook._HookableSlot<Hook.MethodHook<Int, Int>>()

                /// The hook point of `deposit` of this instance (made on first need).
                final var $deposit: Hook.MethodHook<Int, Int> {
                    Hook.MethodHook<Int, Int>._hookablePoint(Hook._hookableAddress(self, \\Account._$deposit), object: self, name: "deposit", canThrow: false)
                }
            }
            """)
    }

    @Test func throwingAsyncVoidAndVariadicMethods() {
        expand("""
            @Hookable
            public final class Loader {
                public func load(_ id: Int) async throws -> String { try await fetch(id) }
                func reset() { count = 0 }
                private func total(_ values: Int...) throws -> Int { values.reduce(0, +) }
            }
            """, """
            public final class Loader {
                public func load(_ id: Int) async throws -> String {
                    func _hookableOriginal(_ id: Int) async throws -> String {
                        try await fetch(id)
                    }
                    let _hookableBits = Hook._hookableLoad(Hook._hookableAddress(self, \\Loader._$load))
                    if _hookableBits == 0 || !Hook.AsyncMethodHook<Int, String>._hookableIsHooked(_hookableBits) {
                        return try await _hookableOriginal(id)
                    }
                    return try await Hook.AsyncMethodHook<Int, String>._hookableThrowingCall(_hookableBits, self, _hookableOriginal, id)
                }

                /// Where `$load` keeps its hook point, once made.
                public nonisolated(unsafe) final var _$load = Hook._HookableSlot<Hook.AsyncMethodHook<Int, String>>()

                /// The hook point of `load` of this instance (made on first need).
                public final var $load: Hook.AsyncMethodHook<Int, String> {
                    Hook.AsyncMethodHook<Int, String>._hookablePoint(Hook._hookableAddress(self, \\Loader._$load), object: self, name: "load", canThrow: true)
                }
                func reset() {
                    func _hookableOriginal() -> Void {
                        count = 0
                    }
                    let _hookableBits = Hook._hookableLoad(Hook._hookableAddress(self, \\Loader._$reset))
                    if _hookableBits == 0 || !Hook.MethodHook<Void>._hookableIsHooked(_hookableBits) {
                        return _hookableOriginal()
                    }
                    return Hook.MethodHook<Void>._hookableCall(_hookableBits, self, _hookableOriginal)
                }

                /// Where `$reset` keeps its hook point, once made.
                nonisolated(unsafe) final var _$reset = Hook._HookableSlot<Hook.MethodHook<Void>>()

                /// The hook point of `reset` of this instance (made on first need).
                final var $reset: Hook.MethodHook<Void> {
                    Hook.MethodHook<Void>._hookablePoint(Hook._hookableAddress(self, \\Loader._$reset), object: self, name: "reset", canThrow: false)
                }
                private func total(_ values: Int...) throws -> Int {
                    func _hookableOriginal(_ values: [Int]) throws -> Int {
                        values.reduce(0, +)
                    }
                    let _hookableBits = Hook._hookableLoad(Hook._hookableAddress(self, \\Loader._$total))
                    if _hookableBits == 0 || !Hook.MethodHook<[Int], Int>._hookableIsHooked(_hookableBits) {
                        return try _hookableOriginal(values)
                    }
                    return try Hook.MethodHook<[Int], Int>._hookableThrowingCall(_hookableBits, self, _hookableOriginal, values)
                }

                /// Where `$total` keeps its hook point, once made.
                private nonisolated(unsafe) final var _$total = Hook._HookableSlot<Hook.MethodHook<[Int], Int>>()

                /// The hook point of `total` of this instance (made on first need).
                private final var $total: Hook.MethodHook<[Int], Int> {
                    Hook.MethodHook<[Int], Int>._hookablePoint(Hook._hookableAddress(self, \\Loader._$total), object: self, name: "total", canThrow: true)
                }
            }
            """)
    }

    @Test func overloadsByLabelsThenTypes() {
        expand("""
            @Hookable
            final class Mover {
                func move(to place: String) {}
                func move(by steps: Int) {}
                func scale(_ x: Int) -> Int { x }
                func scale(_ x: Double) -> Double { x }
            }
            """, """
            final class Mover {
                func move(to place: String) {
                    func _hookableOriginal(_ place: String) -> Void {
                    }
                    let _hookableBits = Hook._hookableLoad(Hook._hookableAddress(self, \\Mover._$move_to))
                    if _hookableBits == 0 || !Hook.MethodHook<String, Void>._hookableIsHooked(_hookableBits) {
                        return _hookableOriginal(place)
                    }
                    return Hook.MethodHook<String, Void>._hookableCall(_hookableBits, self, _hookableOriginal, place)
                }

                /// Where `$move_to` keeps its hook point, once made.
                nonisolated(unsafe) final var _$move_to = Hook._HookableSlot<Hook.MethodHook<String, Void>>()

                /// The hook point of `move(to:)` of this instance (made on first need).
                final var $move_to: Hook.MethodHook<String, Void> {
                    Hook.MethodHook<String, Void>._hookablePoint(Hook._hookableAddress(self, \\Mover._$move_to), object: self, name: "move(to:)", canThrow: false)
                }
                func move(by steps: Int) {
                    func _hookableOriginal(_ steps: Int) -> Void {
                    }
                    let _hookableBits = Hook._hookableLoad(Hook._hookableAddress(self, \\Mover._$move_by))
                    if _hookableBits == 0 || !Hook.MethodHook<Int, Void>._hookableIsHooked(_hookableBits) {
                        return _hookableOriginal(steps)
                    }
                    return Hook.MethodHook<Int, Void>._hookableCall(_hookableBits, self, _hookableOriginal, steps)
                }

                /// Where `$move_by` keeps its hook point, once made.
                nonisolated(unsafe) final var _$move_by = Hook._HookableSlot<Hook.MethodHook<Int, Void>>()

                /// The hook point of `move(by:)` of this instance (made on first need).
                final var $move_by: Hook.MethodHook<Int, Void> {
                    Hook.MethodHook<Int, Void>._hookablePoint(Hook._hookableAddress(self, \\Mover._$move_by), object: self, name: "move(by:)", canThrow: false)
                }
                func scale(_ x: Int) -> Int {
                    func _hookableOriginal(_ x: Int) -> Int {
                        x
                    }
                    let _hookableBits = Hook._hookableLoad(Hook._hookableAddress(self, \\Mover._$scale_Int))
                    if _hookableBits == 0 || !Hook.MethodHook<Int, Int>._hookableIsHooked(_hookableBits) {
                        return _hookableOriginal(x)
                    }
                    return Hook.MethodHook<Int, Int>._hookableCall(_hookableBits, self, _hookableOriginal, x)
                }

                /// Where `$scale_Int` keeps its hook point, once made.
                nonisolated(unsafe) final var _$scale_Int = Hook._HookableSlot<Hook.MethodHook<Int, Int>>()

                /// The hook point of `scale(_:)` of this instance (made on first need).
                final var $scale_Int: Hook.MethodHook<Int, Int> {
                    Hook.MethodHook<Int, Int>._hookablePoint(Hook._hookableAddress(self, \\Mover._$scale_Int), object: self, name: "scale(_:)", canThrow: false)
                }
                func scale(_ x: Double) -> Double {
                    func _hookableOriginal(_ x: Double) -> Double {
                        x
                    }
                    let _hookableBits = Hook._hookableLoad(Hook._hookableAddress(self, \\Mover._$scale_Double))
                    if _hookableBits == 0 || !Hook.MethodHook<Double, Double>._hookableIsHooked(_hookableBits) {
                        return _hookableOriginal(x)
                    }
                    return Hook.MethodHook<Double, Double>._hookableCall(_hookableBits, self, _hookableOriginal, x)
                }

                /// Where `$scale_Double` keeps its hook point, once made.
                nonisolated(unsafe) final var _$scale_Double = Hook._HookableSlot<Hook.MethodHook<Double, Double>>()

                /// The hook point of `scale(_:)` of this instance (made on first need).
                final var $scale_Double: Hook.MethodHook<Double, Double> {
                    Hook.MethodHook<Double, Double>._hookablePoint(Hook._hookableAddress(self, \\Mover._$scale_Double), object: self, name: "scale(_:)", canThrow: false)
                }
            }
            """)
    }

    @Test func overrideUsesTheInheritedHookPointAndCallsSuperUnhooked() {
        expand("""
            @Hookable
            final class Square: Shape {
                override func describe(_ prefix: String) -> String { "[" + super.describe(prefix) + "]" }
            }
            """, """
            final class Square: Shape {
                override func describe(_ prefix: String) -> String {
                    func _hookableOriginal(_ prefix: String) -> String {
                        "[" + (Hook.MethodHook<String, String>._hookableUnhooked(self._hookableSlot_describe_(((String) -> String).self)) {
                                super.describe(prefix)
                            }) + "]"
                    }
                    let _hookableBits = Hook._hookableLoad(self._hookableSlot_describe_(((String) -> String).self))
                    if _hookableBits == 0 || !Hook.MethodHook<String, String>._hookableIsHooked(_hookableBits) {
                        return _hookableOriginal(prefix)
                    }
                    return Hook.MethodHook<String, String>._hookableCall(_hookableBits, self, _hookableOriginal, prefix)
                }
            }
            """)
    }

    @Test func aClassThatCanBeSubclassedTellsOverridesWhereItsSlotsAre() {
        expand("""
            @Hookable
            open class Shape {
                open func scale(_ x: Int, by factor: Double) throws -> Int { x }
            }
            """, """
            open class Shape {
                open func scale(_ x: Int, by factor: Double) throws -> Int {
                    func _hookableOriginal(_ x: Int, _ factor: Double) throws -> Int {
                        x
                    }
                    let _hookableBits = Hook._hookableLoad(Hook._hookableAddress(self, \\Shape._$scale))
                    if _hookableBits == 0 || !Hook.MethodHook<Int, Double, Int>._hookableIsHooked(_hookableBits) {
                        return try _hookableOriginal(x, factor)
                    }
                    return try Hook.MethodHook<Int, Double, Int>._hookableThrowingCall(_hookableBits, self, _hookableOriginal, x, factor)
                }

                /// Where `$scale` keeps its hook point, once made.
                public nonisolated(unsafe) final var _$scale = Hook._HookableSlot<Hook.MethodHook<Int, Double, Int>>()

                /// The hook point of `scale` of this instance (made on first need).
                public final var $scale: Hook.MethodHook<Int, Double, Int> {
                    Hook.MethodHook<Int, Double, Int>._hookablePoint(Hook._hookableAddress(self, \\Shape._$scale), object: self, name: "scale", canThrow: true)
                }

                /// Where an override of `scale` finds `_$scale`.
                public nonisolated final func _hookableSlot_scale__by(_: ((Int, Double) throws -> Int).Type) -> UnsafeMutableRawPointer {
                    Hook._hookableAddress(self, \\Shape._$scale)
                }
            }
            """)
    }

    @Test func actorMethods() {
        expand("""
            @Hookable
            actor Counter {
                func increment(by step: Int) async -> Int { step }
            }
            """, """
            actor Counter {
                func increment(by step: Int) async -> Int {
                    func _hookableOriginal(_ step: Int) async -> Int {
                        step
                    }
                    let _hookableBits = Hook._hookableLoad(Hook._hookableActorSlot(self, "_$increment") {
                            Hook._hookableAddress(&self._$increment)
                        })
                    if _hookableBits == 0 || !Hook.AsyncMethodHook<Int, Int>._hookableIsHooked(_hookableBits) {
                        return await _hookableOriginal(step)
                    }
                    return await Hook.AsyncMethodHook<Int, Int>._hookableCall(_hookableBits, self, _hookableOriginal, step)
                }

                /// Where `$increment` keeps its hook point, once made.
                nonisolated(unsafe) var _$increment = Hook._HookableSlot<Hook.AsyncMethodHook<Int, Int>>()

                /// The hook point of `increment` of this instance (made on first need).
                nonisolated var $increment: Hook.AsyncMethodHook<Int, Int> {
                    Hook.AsyncMethodHook<Int, Int>._hookablePoint(Hook._hookableFieldAddress(self, "_$increment"), object: self, name: "increment", canThrow: false)
                }
            }
            """)
    }

    @Test func membersLeftAlone() {
        expand("""
            @Hookable
            final class Plain {
                @Unhooked var note = ""
                @Unhooked func helper() {}
                let id = 1
                static var shared = 0
                var computed: Int { 1 }
                var both: Int { get { 1 } set {} }
                static func make() -> Plain { Plain() }
                init() {}
                subscript(i: Int) -> Int { i }
            }
            """, """
            final class Plain {
                var note = ""
                func helper() {}
                let id = 1
                static var shared = 0
                var computed: Int { 1 }
                var both: Int { get { 1 } set {} }
                static func make() -> Plain { Plain() }
                init() {}
                subscript(i: Int) -> Int { i }
            }
            """)
    }

    @Test func structsAndEnumsAreRefused() {
        expand("""
            @Hookable
            struct Point {
                var x = 0
            }
            @Hookable
            enum Mode {
                case a
            }
            """, """
            struct Point {
                var x = 0
            }
            enum Mode {
                case a
            }
            """, diagnostics: [
            error("@Hookable applies to classes and actors; 'Point' is a struct (a hook point belongs to one instance, and a struct has no identity)", 1, 1),
            error("@Hookable applies to classes and actors; 'Mode' is an enum", 5, 1),
        ])
    }

    @Test func extensionsAreRefused() {
        expand("""
            @Hookable
            extension Account {
                func audit() {}
            }
            """, """
            extension Account {
                func audit() {}
            }
            """, diagnostics: [
            error("@Hookable applies to classes and actors, not to extensions: members in an extension of 'Account' cannot be hooked (an extension cannot hold the per-instance storage of a hook point); declare them in the class, or hook them with a ClosureHook", 1, 1),
        ])
    }

    @Test func methodsItCannotTake() {
        expand("""
            @Hookable
            final class Bad {
                func generic<T>(_ value: T) {}
                func change(_ value: inout Int) {}
                func opaque(_ value: some Equatable) {}
                func result() -> some Equatable { 1 }
                func callback(_ done: @escaping () -> Void) {}
                func typed() throws(MyError) {}
                func copy() -> Self { self }
                func unnamed(_: Int) {}
            }
            """, """
            final class Bad {
                func generic<T>(_ value: T) {}
                func change(_ value: inout Int) {}
                func opaque(_ value: some Equatable) {}
                func result() -> some Equatable { 1 }
                func callback(_ done: @escaping () -> Void) {}
                func typed() throws(MyError) {}
                func copy() -> Self { self }
                func unnamed(_: Int) {}
            }
            """, diagnostics: [
            error("@Hookable cannot hook method 'generic(_:)' of 'Bad': it is generic, and a hook point has one type of arguments and result; mark it @Unhooked to leave it a plain method", 3, 10),
            error("@Hookable cannot hook method 'change(_:)' of 'Bad': parameter 'value' is inout, and the hooks see a copy of the arguments; mark it @Unhooked to leave it a plain method", 4, 10),
            error("@Hookable cannot hook method 'opaque(_:)' of 'Bad': parameter 'value' has an opaque 'some' type, which a hook point cannot name; mark it @Unhooked to leave it a plain method", 5, 10),
            error("@Hookable cannot hook method 'result()' of 'Bad': its result has an opaque 'some' type, which a hook point cannot name; mark it @Unhooked to leave it a plain method", 6, 10),
            error("@Hookable cannot hook method 'callback(_:)' of 'Bad': parameter 'done' has a closure type (Swift 6.3.1 crashes emitting a reabstraction thunk for closure-typed values in a parameter pack); mark it @Unhooked to leave it a plain method", 7, 10),
            error("@Hookable cannot hook method 'typed()' of 'Bad': it uses typed throws, and hooks may throw any error (declare it 'throws'); mark it @Unhooked to leave it a plain method", 8, 10),
            error("@Hookable cannot hook method 'copy()' of 'Bad': its result names 'Self', which differs in each subclass while the hook point's type is fixed; mark it @Unhooked to leave it a plain method", 9, 10),
            error("@Hookable cannot hook method 'unnamed(_:)' of 'Bad': parameter #1 has no name inside the method ('_'), so the method cannot hand its value to the hooks; give it one; mark it @Unhooked to leave it a plain method", 10, 10),
        ])
    }

    @Test func propertiesItCannotTake() {
        expand("""
            @Hookable
            final class Bad {
                lazy var cache = [Int]()
                weak var delegate: AnyObject?
                var observed = 0 { didSet { print(observed) } }
                var a = 1, b = 2
                @Published var wrapped = 0
            }
            """, """
            final class Bad {
                lazy var cache = [Int]()
                weak var delegate: AnyObject?
                var observed = 0 { didSet { print(observed) } }
                var a = 1, b = 2
                @Published var wrapped = 0
            }
            """, diagnostics: [
            error("@Hookable cannot hook property 'cache' of 'Bad': it is lazy, and its first read would store without a hook; mark it @Unhooked to leave it a plain property", 3, 5),
            error("@Hookable cannot hook property 'delegate' of 'Bad': it is a weak or unowned reference, which a hook point's storage cannot hold; mark it @Unhooked to leave it a plain property", 4, 5),
            error("@Hookable cannot hook property 'observed' of 'Bad': it is observed (willSet/didSet), and a set would run the observer inside the hook's storage; use an after hook instead; mark it @Unhooked to leave it a plain property", 5, 5),
            error("@Hookable cannot hook property 'a, b' of 'Bad': several properties are declared together; declare one per line; mark it @Unhooked to leave it a plain property", 6, 5),
            error("@Hookable cannot hook property 'wrapped' of 'Bad': it already has the attribute @Published, and two storages cannot wrap one property; mark it @Unhooked to leave it a plain property", 7, 5),
        ])
    }

    /// A tuple pattern, and a property of an `@Observable` type (which that
    /// macro makes computed), are refused by name; one `@ObservationIgnored`
    /// is hooked. (Both were expanded, and the compiler's errors were
    /// inside the expansions.)
    @Test func tuplesAndObservablePropertiesAreRefusedByName() {
        expand("""
            @Hookable
            final class Pair {
                var (x, y) = (0, 0)
            }
            """, """
            final class Pair {
                var (x, y) = (0, 0)
            }
            """, diagnostics: [
            error("@Hookable cannot hook property '(x, y)' of 'Pair': it is not a single name; mark it @Unhooked to leave it a plain property", 3, 5),
        ])
        expand("""
            @Observable
            @Hookable
            final class Model {
                var name = ""
                @ObservationIgnored
                var count = 0
            }
            """, """
            @Observable
            final class Model {
                var name = ""
                @ObservationIgnored
                @Hook.Hooked
                var count = 0
            }
            """, diagnostics: [
            error("@Hookable cannot hook property 'name' of 'Model': 'Model' is @Observable, whose macro makes the property computed, with a storage of its own that @Hooked cannot wrap; mark it @ObservationIgnored to hook it instead of observing it; mark it @Unhooked to leave it a plain property", 4, 5),
        ])
    }

    /// Members inside `#if` count: an overload there names both methods'
    /// hook points as overloads, one in another clause of the same `#if`
    /// does not, and an actor's synchronous init there that assigns a
    /// property refuses it. (Only the members outside `#if` were looked at:
    /// both `write`s got `$write`, an "invalid redeclaration" in the
    /// expansions, and the init went unseen.)
    @Test func membersInsideIfConfigCount() {
        expand("""
            @Hookable
            final class Log {
                func write(_ t: String) {}
                #if DEBUG
                func write(_ c: Int) {}
                #endif
                #if os(Linux)
                func flush() {}
                #else
                func flush() {}
                #endif
            }
            """, """
            final class Log {
                func write(_ t: String) {
                    func _hookableOriginal(_ t: String) -> Void {
                    }
                    let _hookableBits = Hook._hookableLoad(Hook._hookableAddress(self, \\Log._$write_String))
                    if _hookableBits == 0 || !Hook.MethodHook<String, Void>._hookableIsHooked(_hookableBits) {
                        return _hookableOriginal(t)
                    }
                    return Hook.MethodHook<String, Void>._hookableCall(_hookableBits, self, _hookableOriginal, t)
                }

                /// Where `$write_String` keeps its hook point, once made.
                nonisolated(unsafe) final var _$write_String = Hook._HookableSlot<Hook.MethodHook<String, Void>>()

                /// The hook point of `write(_:)` of this instance (made on first need).
                final var $write_String: Hook.MethodHook<String, Void> {
                    Hook.MethodHook<String, Void>._hookablePoint(Hook._hookableAddress(self, \\Log._$write_String), object: self, name: "write(_:)", canThrow: false)
                }
                #if DEBUG
                func write(_ c: Int) {}
                #endif
                #if os(Linux)
                func flush() {}
                #else
                func flush() {}
                #endif
            }
            """)
        expand("""
            @Hookable
            actor Store {
                var name: String
                #if os(Linux)
                init(name: String) { self.name = name }
                #endif
            }
            """, """
            actor Store {
                var name: String
                #if os(Linux)
                init(name: String) { self.name = name }
                #endif
            }
            """, diagnostics: [
            error("@Hookable cannot hook property 'name' of 'Store': the synchronous init(name:) uses it, and Swift 6.3 treats that use (an assignment through the property's init accessor, a change, a read) as actor-isolated from a nonisolated context; give the property an initial value and leave it alone in that init, or make that init async; mark it @Unhooked to leave it a plain property", 3, 5),
        ])
    }

    /// An inlinable method that is not public: its slot (and projection)
    /// are usable from inline code, which its body refers to. (The compiler
    /// said "property '_$read' is internal and cannot be referenced from an
    /// '@inlinable' function", in a build without testing enabled.)
    @Test func anInlinableMethodsSlotIsUsableFromInline() {
        expand("""
            @Hookable
            public final class Meter {
                @inlinable func read() -> Int { 1 }
            }
            """, """
            public final class Meter {
                @inlinable
                func read() -> Int {
                    func _hookableOriginal() -> Int {
                        1
                    }
                    let _hookableBits = Hook._hookableLoad(Hook._hookableAddress(self, \\Meter._$read))
                    if _hookableBits == 0 || !Hook.MethodHook<Int>._hookableIsHooked(_hookableBits) {
                        return _hookableOriginal()
                    }
                    return Hook.MethodHook<Int>._hookableCall(_hookableBits, self, _hookableOriginal)
                }

                /// Where `$read` keeps its hook point, once made.
                @usableFromInline nonisolated(unsafe) final var _$read = Hook._HookableSlot<Hook.MethodHook<Int>>()

                /// The hook point of `read` of this instance (made on first need).
                @usableFromInline final var $read: Hook.MethodHook<Int> {
                    Hook.MethodHook<Int>._hookablePoint(Hook._hookableAddress(self, \\Meter._$read), object: self, name: "read", canThrow: false)
                }
            }
            """)
    }

    /// A generic parameter that may be noncopyable, in a property's type
    /// or a method's signature, is refused by name (the expansion failed:
    /// "'T' does not conform to 'Copyable'"); a method that does not use
    /// it is hooked.
    @Test func noncopyableGenericParametersAreRefusedByName() {
        expand("""
            @Hookable
            final class Holder<T: ~Copyable> {
                var item: T
                func take(_ value: consuming T) {}
                func peek() -> T? { nil }
                init(_ item: consuming T) { self.item = item }
            }
            """, """
            final class Holder<T: ~Copyable> {
                var item: T
                func take(_ value: consuming T) {}
                func peek() -> T? { nil }
                init(_ item: consuming T) { self.item = item }
            }
            """, diagnostics: [
            error("@Hookable cannot hook property 'item' of 'Holder': its type uses 'T', which may be noncopyable (~Copyable), and a hook point's storage copies the value; mark it @Unhooked to leave it a plain property", 3, 5),
            error("@Hookable cannot hook method 'take(_:)' of 'Holder': parameter 'value' is consuming, and the hooks see a copy of the arguments; mark it @Unhooked to leave it a plain method", 4, 10),
            error("@Hookable cannot hook method 'peek()' of 'Holder': its result uses 'T', which may be noncopyable (~Copyable), and the hooks see a copy of it; mark it @Unhooked to leave it a plain method", 5, 10),
        ])
    }

    @Test func overloadsThatCannotBeTold() {
        expand("""
            @Hookable
            final class Twins {
                func f(_ x: Int) -> Int { x }
                func f(_ x: Int) -> String { "" }
            }
            """, """
            final class Twins {
                func f(_ x: Int) -> Int { x }
                func f(_ x: Int) -> String { "" }
            }
            """, diagnostics: [
            error("@Hookable cannot name a hook point for method 'f(_:)' of 'Twins': another overload has the same labels and parameter types; mark one of them @Unhooked", 3, 10),
            error("@Hookable cannot name a hook point for method 'f(_:)' of 'Twins': another overload has the same labels and parameter types; mark one of them @Unhooked", 4, 10),
        ])
    }

    @Test func actorProperties() {
        expand("""
            @Hookable
            actor Store {
                var count = 0
                public var name: String
                init(name: String) async { self.name = name }
            }
            """, """
            actor Store {
                var count {
                    @storageRestrictions(initializes: _count)
                    init(initialValue) {
                        _count = Hook.Hooked<Int>(wrappedValue: initialValue)
                    }
                    get {
                        _count._hookableValue
                    }
                    set {
                        Hook.Hooked<Int>._hookableSet(Hook.Hooked<Int>._hookableAddress(&_count), newValue)
                    }
                }

                /// Where `count` keeps its value and, once made, its hook point.
                @exclusivity(unchecked) nonisolated(unsafe) private var _count: Hook.Hooked<Int>

                /// The hook point of `count` of this instance (made on first need).
                nonisolated var $count: Hook.PropertyHook<Int> {
                    Hook.Hooked<Int>._hookablePoint(Hook._hookableFieldAddress(self, "_count"), object: self, name: "count")
                }
                public var name: String {
                    @storageRestrictions(initializes: _name)
                    init(initialValue) {
                        _name = Hook.Hooked<String>(wrappedValue: initialValue)
                    }
                    get {
                        _name._hookableValue
                    }
                    set {
                        Hook.Hooked<String>._hookableSet(Hook.Hooked<String>._hookableAddress(&_name), newValue)
                    }
                }

                /// Where `name` keeps its value and, once made, its hook point.
                @exclusivity(unchecked) nonisolated(unsafe) private var _name: Hook.Hooked<String>

                /// The hook point of `name` of this instance (made on first need).
                public nonisolated var $name: Hook.PropertyHook<String> {
                    Hook.Hooked<String>._hookablePoint(Hook._hookableFieldAddress(self, "_name"), object: self, name: "name")
                }
                init(name: String) async { self.name = name }
            }
            """)
    }

    @Test func actorPropertiesItCannotTake() {
        expand("""
            @Hookable
            actor Store {
                var mode = Mode.idle
                var name: String
                nonisolated(unsafe) var shared = 0
                init(name: String) { self.name = name }
                var port = Int("8080")
                var slots = Array(repeating: 0, count: 3)
                var level = Level(rawValue: 2)
            }
            """, """
            actor Store {
                var mode = Mode.idle
                var name: String
                nonisolated(unsafe) var shared = 0
                init(name: String) { self.name = name }
                var port = Int("8080")
                var slots = Array(repeating: 0, count: 3)
                var level = Level(rawValue: 2)
            }
            """, diagnostics: [
            error("@Hookable cannot hook property 'mode' of 'Store': its type cannot be told from its initializer `Mode.idle`, and the hook point `$mode` of an actor's property is spelt with it; write the type (`var mode: Type = ...`); mark it @Unhooked to leave it a plain property", 3, 5),
            error("@Hookable cannot hook property 'name' of 'Store': the synchronous init(name:) uses it, and Swift 6.3 treats that use (an assignment through the property's init accessor, a change, a read) as actor-isolated from a nonisolated context; give the property an initial value and leave it alone in that init, or make that init async; mark it @Unhooked to leave it a plain property", 4, 5),
            error("@Hookable cannot hook property 'shared' of 'Store': it is nonisolated, so its sets do not run one at a time on the actor; mark it @Unhooked to leave it a plain property", 5, 5),
            // (An Int?, an Array<Int> and a Level?: spelt as Int, Array and
            // Level, the expansion did not compile.)
            error("@Hookable cannot hook property 'port' of 'Store': its type cannot be told from its initializer `Int(\"8080\")`, and the hook point `$port` of an actor's property is spelt with it; write the type (`var port: Type = ...`); mark it @Unhooked to leave it a plain property", 7, 5),
            error("@Hookable cannot hook property 'slots' of 'Store': its type cannot be told from its initializer `Array(repeating: 0, count: 3)`, and the hook point `$slots` of an actor's property is spelt with it; write the type (`var slots: Type = ...`); mark it @Unhooked to leave it a plain property", 8, 5),
            error("@Hookable cannot hook property 'level' of 'Store': its type cannot be told from its initializer `Level(rawValue: 2)`, and the hook point `$level` of an actor's property is spelt with it; write the type (`var level: Type = ...`); mark it @Unhooked to leave it a plain property", 9, 5),
        ])
    }

    /// A synchronous init that changes or reads a property (`+=`, a
    /// mutating call, bare or through `self`): refused as an assignment
    /// is. (A parameter of the same name is not the property: the actor
    /// `Seeded` of HookableTests compiles.)
    @Test func anActorPropertyChangedByASynchronousInit() {
        expand("""
            @Hookable
            actor Tally {
                var total = 0
                var items: [Int] = []
                init(seed: Int) { items.append(seed); self.total += seed }
            }
            """, """
            actor Tally {
                var total = 0
                var items: [Int] = []
                init(seed: Int) { items.append(seed); self.total += seed }
            }
            """, diagnostics: [
            error("@Hookable cannot hook property 'total' of 'Tally': the synchronous init(seed:) uses it, and Swift 6.3 treats that use (an assignment through the property's init accessor, a change, a read) as actor-isolated from a nonisolated context; give the property an initial value and leave it alone in that init, or make that init async; mark it @Unhooked to leave it a plain property", 3, 5),
            error("@Hookable cannot hook property 'items' of 'Tally': the synchronous init(seed:) uses it, and Swift 6.3 treats that use (an assignment through the property's init accessor, a change, a read) as actor-isolated from a nonisolated context; give the property an initial value and leave it alone in that init, or make that init async; mark it @Unhooked to leave it a plain property", 4, 5),
        ])
    }

    /// A name in backticks, assigned by a synchronous init as `self.for`:
    /// found (the comparison is of the bare names).
    @Test func anActorPropertyNamedWithAKeywordAssignedByASynchronousInit() {
        expand("""
            @Hookable
            actor Loop {
                var `for`: Int
                init(count: Int) { self.for = count }
            }
            """, """
            actor Loop {
                var `for`: Int
                init(count: Int) { self.for = count }
            }
            """, diagnostics: [
            error("@Hookable cannot hook property '`for`' of 'Loop': the synchronous init(count:) uses it, and Swift 6.3 treats that use (an assignment through the property's init accessor, a change, a read) as actor-isolated from a nonisolated context; give the property an initial value and leave it alone in that init, or make that init async; mark it @Unhooked to leave it a plain property", 3, 5),
        ])
    }

    /// A parameter whose inner name is a keyword (`in`, `for`, `default`):
    /// in backticks where the expansion declares and passes it.
    @Test func parametersNamedWithKeywordsAreEscaped() {
        expand("""
            @Hookable
            final class Canvas {
                func draw(in: Rect) {}
                func pick(for key: Int, default: Int, _ `where`: Int) -> Int { key + `default` + `where` }
            }
            """, """
            final class Canvas {
                func draw(in: Rect) {
                    func _hookableOriginal(_ `in`: Rect) -> Void {
                    }
                    let _hookableBits = Hook._hookableLoad(Hook._hookableAddress(self, \\Canvas._$draw))
                    if _hookableBits == 0 || !Hook.MethodHook<Rect, Void>._hookableIsHooked(_hookableBits) {
                        return _hookableOriginal(`in`)
                    }
                    return Hook.MethodHook<Rect, Void>._hookableCall(_hookableBits, self, _hookableOriginal, `in`)
                }

                /// Where `$draw` keeps its hook point, once made.
                nonisolated(unsafe) final var _$draw = Hook._HookableSlot<Hook.MethodHook<Rect, Void>>()

                /// The hook point of `draw` of this instance (made on first need).
                final var $draw: Hook.MethodHook<Rect, Void> {
                    Hook.MethodHook<Rect, Void>._hookablePoint(Hook._hookableAddress(self, \\Canvas._$draw), object: self, name: "draw", canThrow: false)
                }
                func pick(for key: Int, default: Int, _ `where`: Int) -> Int {
                    func _hookableOriginal(_ key: Int, _ `default`: Int, _ `where`: Int) -> Int {
                        key + `default` + `where`
                    }
                    let _hookableBits = Hook._hookableLoad(Hook._hookableAddress(self, \\Canvas._$pick))
                    if _hookableBits == 0 || !Hook.MethodHook<Int, Int, Int, Int>._hookableIsHooked(_hookableBits) {
                        return _hookableOriginal(key, `default`, `where`)
                    }
                    return Hook.MethodHook<Int, Int, Int, Int>._hookableCall(_hookableBits, self, _hookableOriginal, key, `default`, `where`)
                }

                /// Where `$pick` keeps its hook point, once made.
                nonisolated(unsafe) final var _$pick = Hook._HookableSlot<Hook.MethodHook<Int, Int, Int, Int>>()

                /// The hook point of `pick` of this instance (made on first need).
                final var $pick: Hook.MethodHook<Int, Int, Int, Int> {
                    Hook.MethodHook<Int, Int, Int, Int>._hookablePoint(Hook._hookableAddress(self, \\Canvas._$pick), object: self, name: "pick", canThrow: false)
                }
            }
            """)
    }

    /// A raw identifier in a method's name or labels would make a hook
    /// point's name that is not an identifier (`$do thing`): refused.
    @Test func methodsNamedWithRawIdentifiersAreRefused() {
        expand("""
            @Hookable
            final class Odd {
                func `do thing`() {}
                func f(`a b` x: Int) {}
                func f(c x: Int) {}
            }
            """, """
            final class Odd {
                func `do thing`() {}
                func f(`a b` x: Int) {}
                func f(c x: Int) {
                    func _hookableOriginal(_ x: Int) -> Void {
                    }
                    let _hookableBits = Hook._hookableLoad(Hook._hookableAddress(self, \\Odd._$f_c))
                    if _hookableBits == 0 || !Hook.MethodHook<Int, Void>._hookableIsHooked(_hookableBits) {
                        return _hookableOriginal(x)
                    }
                    return Hook.MethodHook<Int, Void>._hookableCall(_hookableBits, self, _hookableOriginal, x)
                }

                /// Where `$f_c` keeps its hook point, once made.
                nonisolated(unsafe) final var _$f_c = Hook._HookableSlot<Hook.MethodHook<Int, Void>>()

                /// The hook point of `f(c:)` of this instance (made on first need).
                final var $f_c: Hook.MethodHook<Int, Void> {
                    Hook.MethodHook<Int, Void>._hookablePoint(Hook._hookableAddress(self, \\Odd._$f_c), object: self, name: "f(c:)", canThrow: false)
                }
            }
            """, diagnostics: [
            error("@Hookable cannot hook method 'do thing()' of 'Odd': it would declare `$do thing`, which is not an identifier (a raw identifier in its name or labels); mark it @Unhooked to leave it a plain method", 3, 10),
            error("@Hookable cannot hook method 'f(a b:)' of 'Odd': it would declare `$f_a b`, which is not an identifier (a raw identifier in its name or labels); mark it @Unhooked to leave it a plain method", 4, 10),
        ])
    }

    /// `@escaping`, `@autoclosure` or `@Sendable` on a parameter whose type
    /// is a type alias (no function type written): a closure type all the
    /// same; and specifiers no hook point's type can spell (`sending`,
    /// `isolated`, `__owned`), on a parameter or the result.
    @Test func parameterAttributesAndSpecifiersItCannotTake() {
        expand("""
            @Hookable
            final class Bad {
                func load(_ done: @escaping Completion) {}
                func lazy(_ value: @autoclosure Producer) {}
                func later(_ work: @Sendable Work) {}
                func send(_ box: sending Box) {}
                func on(_ worker: isolated Worker) {}
                func keep(_ box: __owned Box) {}
                func make() -> sending Box { Box() }
            }
            """, """
            final class Bad {
                func load(_ done: @escaping Completion) {}
                func lazy(_ value: @autoclosure Producer) {}
                func later(_ work: @Sendable Work) {}
                func send(_ box: sending Box) {}
                func on(_ worker: isolated Worker) {}
                func keep(_ box: __owned Box) {}
                func make() -> sending Box { Box() }
            }
            """, diagnostics: [
            error("@Hookable cannot hook method 'load(_:)' of 'Bad': parameter 'done' is marked @escaping, so its type is a closure type (here behind a type alias), and Swift 6.3.1 crashes emitting a reabstraction thunk for closure-typed values in a parameter pack; mark it @Unhooked to leave it a plain method", 3, 10),
            error("@Hookable cannot hook method 'lazy(_:)' of 'Bad': parameter 'value' is marked @autoclosure, so its type is a closure type (here behind a type alias), and Swift 6.3.1 crashes emitting a reabstraction thunk for closure-typed values in a parameter pack; mark it @Unhooked to leave it a plain method", 4, 10),
            error("@Hookable cannot hook method 'later(_:)' of 'Bad': parameter 'work' is marked @Sendable, so its type is a closure type (here behind a type alias), and Swift 6.3.1 crashes emitting a reabstraction thunk for closure-typed values in a parameter pack; mark it @Unhooked to leave it a plain method", 5, 10),
            error("@Hookable cannot hook method 'send(_:)' of 'Bad': parameter 'box' is marked 'sending', which the hook point's type cannot carry; mark it @Unhooked to leave it a plain method", 6, 10),
            error("@Hookable cannot hook method 'on(_:)' of 'Bad': parameter 'worker' is marked 'isolated', which the hook point's type cannot carry; mark it @Unhooked to leave it a plain method", 7, 10),
            error("@Hookable cannot hook method 'keep(_:)' of 'Bad': parameter 'box' is __owned, and the hooks see a copy of the arguments; mark it @Unhooked to leave it a plain method", 8, 10),
            error("@Hookable cannot hook method 'make()' of 'Bad': its result is marked 'sending', which the hook point's type cannot carry; mark it @Unhooked to leave it a plain method", 9, 10),
        ])
    }

    /// A method named as a stored property (`var count`, `func count(of:)`):
    /// `$count` is the property's, so the method is named as an overload
    /// is. A computed property or an @Unhooked one has no `$size`, `$total`.
    @Test func aMethodNamedAsAStoredPropertyIsNamedAsAnOverload() {
        expand("""
            @Hookable
            final class Bag {
                var count = 0
                func count(of x: Int) -> Int { x }
                var size: Int { 1 }
                func size(of x: Int) -> Int { x }
            }
            """, """
            final class Bag {
                @Hook.Hooked
                var count = 0
                func count(of x: Int) -> Int {
                    func _hookableOriginal(_ x: Int) -> Int {
                        x
                    }
                    let _hookableBits = Hook._hookableLoad(Hook._hookableAddress(self, \\Bag._$count_of))
                    if _hookableBits == 0 || !Hook.MethodHook<Int, Int>._hookableIsHooked(_hookableBits) {
                        return _hookableOriginal(x)
                    }
                    return Hook.MethodHook<Int, Int>._hookableCall(_hookableBits, self, _hookableOriginal, x)
                }

                /// Where `$count_of` keeps its hook point, once made.
                nonisolated(unsafe) final var _$count_of = Hook._HookableSlot<Hook.MethodHook<Int, Int>>()

                /// The hook point of `count(of:)` of this instance (made on first need).
                final var $count_of: Hook.MethodHook<Int, Int> {
                    Hook.MethodHook<Int, Int>._hookablePoint(Hook._hookableAddress(self, \\Bag._$count_of), object: self, name: "count(of:)", canThrow: false)
                }
                var size: Int { 1 }
                func size(of x: Int) -> Int {
                    func _hookableOriginal(_ x: Int) -> Int {
                        x
                    }
                    let _hookableBits = Hook._hookableLoad(Hook._hookableAddress(self, \\Bag._$size))
                    if _hookableBits == 0 || !Hook.MethodHook<Int, Int>._hookableIsHooked(_hookableBits) {
                        return _hookableOriginal(x)
                    }
                    return Hook.MethodHook<Int, Int>._hookableCall(_hookableBits, self, _hookableOriginal, x)
                }

                /// Where `$size` keeps its hook point, once made.
                nonisolated(unsafe) final var _$size = Hook._HookableSlot<Hook.MethodHook<Int, Int>>()

                /// The hook point of `size` of this instance (made on first need).
                final var $size: Hook.MethodHook<Int, Int> {
                    Hook.MethodHook<Int, Int>._hookablePoint(Hook._hookableAddress(self, \\Bag._$size), object: self, name: "size", canThrow: false)
                }
            }
            """)
    }

    /// A property isolated to a global actor in a class that is not:
    /// `@Hooked` storage (a global actor's attribute is not a wrapper).
    @Test func aPropertyIsolatedToAGlobalActorIsHooked() {
        expand("""
            @Hookable
            final class Panel {
                @MainActor var title = ""
                @DatabaseActor var rows = 0
            }
            """, """
            final class Panel {
                @MainActor
                @Hook.Hooked var title = ""
                @DatabaseActor
                @Hook.Hooked var rows = 0
            }
            """)
    }

    /// `nonisolated(unsafe)` would have no effect on the computed property
    /// `@Hooked` makes (and a Sendable class refuses its storage); a global
    /// actor's property in a Sendable class that is not isolated, or in an
    /// actor, is refused too.
    @Test func classPropertiesItCannotTakeForIsolation() {
        expand("""
            @Hookable
            final class Cache: Sendable {
                nonisolated(unsafe) var hits = 0
                @MainActor var title = ""
            }
            @Hookable
            actor Store {
                @MainActor var label: String = ""
            }
            """, """
            final class Cache: Sendable {
                nonisolated(unsafe) var hits = 0
                @MainActor var title = ""
            }
            actor Store {
                @MainActor var label: String = ""
            }
            """, diagnostics: [
            error("@Hookable cannot hook property 'hits' of 'Cache': it is nonisolated(unsafe), which has no effect once @Hooked's storage makes it a computed property (and a Sendable class refuses that storage as mutable); mark it @Unhooked to leave it a plain property", 3, 5),
            error("@Hookable cannot hook property 'title' of 'Cache': it is isolated to @MainActor while its Sendable class is not, and @Hooked's storage would be mutable state of a Sendable class; isolate the whole class to @MainActor instead; mark it @Unhooked to leave it a plain property", 4, 5),
            error("@Hookable cannot hook property 'label' of 'Store': it is isolated to @MainActor, not to the actor, whose accessors the macro spells; mark it @Unhooked to leave it a plain property", 8, 5),
        ])
    }
}
