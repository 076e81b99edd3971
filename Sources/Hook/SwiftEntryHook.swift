import CEntryHooks
import CHookThreads
import Glibc
import Synchronization

/// A hook point at the entry of a Swift function, method, initializer or
/// property accessor that did not opt in, found by the name people write:
/// spies and stubs for code you cannot change, tracing a library's class.
///
/// ```swift
/// // Pin UUID() inside a test; the code under test is unchanged.
/// let uuid = try SwiftEntryHook.named("Foundation.UUID.init()", as: (() -> UUID).self)
/// uuid.instead { call in try call.setResult(UUID(uuidString: "00000000-0000-0000-0000-000000000001")!) }
/// defer { try? uuid.restore() }
///
/// // Every greeting of one person, with its argument and result.
/// let greet = try SwiftEntryHook.named("Model.Person.greet(_:)", as: ((Person, String) -> String).self)
/// try greet.afterReturning(for: ada) { (text: String, person: Person, other: String) in print(text) }
/// ```
///
/// The function's first instructions become a jump (``EntryHook``'s patch,
/// safe while other threads run the function), so it sees every call that
/// reaches the function: through a vtable, direct, from any module. Code the
/// optimizer inlined into its caller never calls it (see the article
/// "Hooking Swift code by name").
///
/// ## The types
/// `as:` states the function's type with `self` first for an instance
/// method or accessor: `(Person, String) -> String` for
/// `Person.greet(_:)`, `(Person) -> String` for `Person.name.getter`,
/// `(Person, String) -> Void` for the setter, `(String) -> Person` for
/// `Person.init(name:)`, `(Point, Double) -> Point` for a struct's
/// non-mutating method, `(UnsafeMutablePointer<Point>, Double) -> Void` for a
/// mutating one (its `self` is passed by address). The types are checked
/// against the demangled name; each must be one the Swift calling
/// convention passes in at most four registers and that reflection can
/// lower: integers, `Bool`, `Double`, `Float`, pointers, class references
/// and their `Optional`s, `String`, `Array`, `Dictionary`, `Set`, and
/// structs, tuples and enums of those.
///
/// ## One hook point per function, for the life of the process
/// A second request for the same function and types returns the same
/// object; other types are `.signatureMismatch`. ``restore()`` puts the
/// function's bytes back and removes every hook; asking again reinstalls it.
public final class SwiftEntryHook<each A, R>: _SwiftEntryPoint, _TupleArguments, @unchecked Sendable {
    /// Where each argument and the result live in the registers.
    private let layout: _SwiftFrameLayout
    /// Per argument: whether the function takes ownership of it (a setter's
    /// value, an initializer's arguments, `__owned`).
    private let owned: [Bool]
    /// Whether the first argument is `self`, a class reference in r13: the
    /// call's ``CallBack/target``, what ``add(_:for:_:)`` filters on.
    private let selfIsObject: Bool

    fileprivate init(function: _SwiftFunction, stub: UnsafeRawPointer, layout: _SwiftFrameLayout, owned: [Bool],
                     selfIsObject: Bool) throws(HookError) {
        self.layout = layout
        self.owned = owned
        self.selfIsObject = selfIsObject
        try super.init(function: function, stub: stub,
                       shape: .typed(kind: .function, arguments: repeat (each A).self, result: R.self, canThrow: function.canThrow))
    }

    /// Hooks the Swift function named `name` whose type is `type` (`self`
    /// first for an instance member), or returns the hook point it already has.
    ///
    /// - Parameters:
    ///   - name: As written in Swift, module first: `"Model.Person.greet(_:)"`,
    ///     `"Model.Person.name.setter"`, `"Model.Person.init(name:)"`,
    ///     `"Model.shout(_:)"`, `"Foundation.UUID.init()"`. The labels may be
    ///     left out (`"Model.Person.greet"`) when the name has one overload,
    ///     the module too when the rest is unique.
    ///   - type: The function's type, `self` first for an instance member.
    ///   - object: The defining object's path or file name, when several define it.
    /// - Throws: ``HookError`` naming what was written: `.symbolNotFound`
    ///   (no function of that name; similar names listed), `.ambiguousSymbol`
    ///   (several: the message lists them), `.typeMismatch` (the types are not
    ///   the function's), `.unsupportedType` (a type typed access cannot
    ///   lower, an async function), `.cannotPatch`, `.signatureMismatch`
    ///   (the function has a hook point of other types).
    public static func named(_ name: String, as type: ((repeat each A) -> R).Type, in object: String? = nil) throws(HookError) -> SwiftEntryHook<repeat each A, R> {
        try make(name, object: object, canThrow: false)
    }

    /// Hooks a throwing Swift function (see ``named(_:as:in:)``): the error it
    /// throws is visible to after hooks (``CallBack/error``) and an instead
    /// or after hook may throw one in its place (``CallBack/setError(_:)``).
    public static func named(_ name: String, as type: ((repeat each A) throws -> R).Type, in object: String? = nil) throws(HookError) -> SwiftEntryHook<repeat each A, R> {
        try make(name, object: object, canThrow: true)
    }

    private static func make(_ name: String, object: String?, canThrow: Bool) throws(HookError) -> SwiftEntryHook<repeat each A, R> {
        let function = try _SwiftEntryPoint.find(name, object: object)
        var types: [Any.Type] = []
        for type in repeat (each A).self { types.append(type) }
        let plan = try _SwiftEntryPlan(function: function, written: name, arguments: types, result: R.self, canThrow: canThrow)
        let key = "\(((repeat each A) -> R).self)"
        let point = try _EntryRegistry.shared.installSwift(
            symbol: function.demangled, address: function.address, size: function.size, object: function.object, key: key
        ) { (stub) throws(HookError) -> (AnyObject, UnsafeRawPointer) in
            let point = try SwiftEntryHook<repeat each A, R>(function: function, stub: stub, layout: plan.layout, owned: plan.owned,
                                                            selfIsObject: plan.selfIsObject)
            return (point, point.entry)
        }
        guard let typed = point as? SwiftEntryHook<repeat each A, R> else {
            throw HookError(.signatureMismatch, point: name, "'\(function.demangled)' already has an entry hook point of another kind")
        }
        return typed
    }

    // MARK: Hooks for one object

    /// Adds a hook that runs only for calls whose `self` is `object` (an
    /// instance method or accessor of a class): a comparison at the hook,
    /// the object's class is not changed. The hook is tied to `object`: it
    /// stops when `object` deinitializes (held weakly). Calls on other
    /// objects take the fast path while every hook is for one object.
    ///
    /// - Throws: ``HookError`` `.invalidValue` if the function has no class `self`.
    @discardableResult
    public func add(_ position: HookPosition, for object: AnyObject, _ body: @escaping HookBody) throws(HookError) -> HookToken {
        guard selfIsObject else {
            throw HookError(.invalidValue, point: name, "'\(name)' has no class instance as self: a hook for one object needs an instance method or accessor of a class")
        }
        return _add(position, onlyForTarget: UInt(bitPattern: Unmanaged.passUnretained(object).toOpaque()), owner: object, body)
    }

    /// ``add(_:for:_:)`` before the original.
    @discardableResult
    public func before(for object: AnyObject, _ body: @escaping HookBody) throws(HookError) -> HookToken { try add(.before, for: object, body) }
    /// ``add(_:for:_:)`` in place of the original.
    @discardableResult
    public func instead(for object: AnyObject, _ body: @escaping HookBody) throws(HookError) -> HookToken { try add(.instead, for: object, body) }
    /// ``add(_:for:_:)`` after the original.
    @discardableResult
    public func after(for object: AnyObject, _ body: @escaping HookBody) throws(HookError) -> HookToken { try add(.after, for: object, body) }

    // MARK: Typed after hooks

    /// Adds a typed after hook: the result, then the arguments (`self`
    /// first), after each call that returns. With `for:`, only for calls on
    /// that object (see ``add(_:for:_:)``).
    ///
    /// ```swift
    /// try greet.afterReturning { (text: String, person: Person, other: String) in log(text) }
    /// ```
    @discardableResult
    public func afterReturning(for object: AnyObject? = nil, owner: AnyObject? = nil,
                               _ body: @escaping (R, repeat each A) throws -> Void) throws(HookError) -> HookToken {
        guard let object else {
            return _addTyped(_TypedAfterHook(point: self, owner: owner, body), owner: owner)
        }
        guard selfIsObject else {
            throw HookError(.invalidValue, point: name, "'\(name)' has no class instance as self: a hook for one object needs an instance method or accessor of a class")
        }
        return _add(.after, onlyForTarget: UInt(bitPattern: Unmanaged.passUnretained(object).toOpaque()), owner: owner ?? object) { call in
            guard call._hasResult else { return }
            let values = try call.arguments(as: (repeat each A).self)
            try body(try call.result(as: R.self), repeat each values)
        }
    }

    /// Calls the function through its entry (its hooks run) with `args`,
    /// in the registers its types say. Not for a class's static members and
    /// initializers (their metatype is not passed). HookBind sets a property
    /// of an object that did not opt in with it.
    package func _call(_ args: repeat each A) throws -> R {
        var registers = hk_swift_frame()
        let layout = self.layout, owned = self.owned
        return try withUnsafeMutablePointer(to: &registers) { (registers) throws -> R in
            var i = 0
            repeat Self.writeArgument(each args, UnsafeMutableRawPointer(registers), layout.arguments, owned, &i)
            hk_swift_call(address, registers)
            if shape.canThrow, registers.pointee.r12 != 0 { throw Self.takeError(registers.pointee.r12) }
            return Self.readResult(R.self, UnsafeMutableRawPointer(registers), layout.result)
        }
    }

    // MARK: The call path

    /// A call that reached the hooks: the registers become typed values,
    /// the hooks run around a closure that puts them back and calls the
    /// relocated entry, and the result goes back into the registers.
    override func _handle(_ frame: UnsafeMutablePointer<hk_swift_frame>) {
        let base = UnsafeMutableRawPointer(frame)
        var index = 0
        let arguments = (repeat Self.readArgument((each A).self, base, layout.arguments, owned, &index))
        let entryFrame = frame.pointee
        let original = relocated
        let canThrow = shape.canThrow
        let layout = self.layout
        let owned = self.owned
        let call: (repeat each A) throws -> R = { (args: repeat each A) throws -> R in
            var registers = entryFrame
            return try withUnsafeMutablePointer(to: &registers) { (registers) throws -> R in
                var i = 0
                repeat Self.writeArgument(each args, UnsafeMutableRawPointer(registers), layout.arguments, owned, &i)
                hk_swift_call(original, registers)
                if canThrow, registers.pointee.r12 != 0 {
                    let error = Self.takeError(registers.pointee.r12)
                    throw error
                }
                return Self.readResult(R.self, UnsafeMutableRawPointer(registers), layout.result)
            }
        }
        let target: Unmanaged<AnyObject>? = selfIsObject
            ? UnsafeRawPointer(bitPattern: UInt(frame.pointee.r13)).map { Unmanaged<AnyObject>.fromOpaque($0) } : nil
        do {
            let result = try _typedCall(self, target: target, call, escapable: call, repeat each arguments)
            Self.writeResult(result, base, layout.result)
        } catch {
            frame.pointee.r12 = Self.giveError(error)
        }
    }

    private static func readArgument<T>(_ type: T.Type, _ frame: UnsafeMutableRawPointer, _ places: [_SwiftFrameLayout.Place],
                                        _ owned: [Bool], _ index: inout Int) -> T {
        defer { index += 1 }
        return read(T.self, frame, places[index], result: false, take: owned[index])
    }

    private static func writeArgument<T>(_ value: T, _ frame: UnsafeMutableRawPointer, _ places: [_SwiftFrameLayout.Place],
                                         _ owned: [Bool], _ index: inout Int) {
        defer { index += 1 }
        write(value, frame, places[index], result: false, give: owned[index])
    }

    private static func readResult<T>(_ type: T.Type, _ frame: UnsafeMutableRawPointer, _ place: _SwiftFrameLayout.Place?) -> T {
        guard let place else { return unsafeBitCast((), to: T.self) }
        return read(T.self, frame, place, result: true, take: true)
    }

    private static func writeResult<T>(_ value: T, _ frame: UnsafeMutableRawPointer, _ place: _SwiftFrameLayout.Place?) {
        guard let place else { return }
        write(value, frame, place, result: true, give: true)
    }

    /// Where register `index` (general or xmm) of the arguments or the result is in a frame.
    @inline(__always)
    private static func registerOffset(isFloat: Bool, index: Int, result: Bool) -> Int {
        if result { return isFloat ? 256 + 16 * index : 224 + 8 * index }
        return isFloat ? 96 + 16 * index : hk_swift_frame.generalOffset(index)
    }

    /// A value put together from its registers: a copy (`take`: the caller's +1 taken over).
    private static func read<T>(_ type: T.Type, _ frame: UnsafeMutableRawPointer, _ place: _SwiftFrameLayout.Place,
                                result: Bool, take: Bool) -> T {
        let size = MemoryLayout<T>.size
        return withUnsafeTemporaryAllocation(byteCount: Swift.max(size, 1), alignment: MemoryLayout<T>.alignment) { buffer in
            let memory = buffer.baseAddress!
            memory.initializeMemory(as: UInt8.self, repeating: 0, count: Swift.max(size, 1))
            for (register, at) in zip(place.lowering.registers, place.registers) {
                let count = Swift.min(register.size, size - register.offset)
                guard count > 0 else { continue }
                memory.advanced(by: register.offset).copyMemory(from: frame + registerOffset(isFloat: at.isFloat, index: at.index, result: result), byteCount: count)
            }
            if T.self == Bool.self { memory.storeBytes(of: memory.load(as: UInt8.self) & 1, as: UInt8.self) }
            let typed = memory.assumingMemoryBound(to: T.self)
            return take ? typed.move() : typed.pointee
        }
    }

    /// A value spread into its registers: borrowed, or (`give`) a +1 copy handed over.
    private static func write<T>(_ value: T, _ frame: UnsafeMutableRawPointer, _ place: _SwiftFrameLayout.Place,
                                 result: Bool, give: Bool) {
        let size = MemoryLayout<T>.size
        withUnsafeTemporaryAllocation(of: T.self, capacity: 1) { buffer in
            let typed = buffer.baseAddress!
            typed.initialize(to: value)
            let memory = UnsafeRawPointer(typed)
            for (register, at) in zip(place.lowering.registers, place.registers) {
                let count = Swift.min(register.size, size - register.offset)
                guard count > 0 else { continue }
                let target = frame + registerOffset(isFloat: at.isFloat, index: at.index, result: result)
                if !at.isFloat { target.storeBytes(of: 0, as: UInt64.self) }
                target.copyMemory(from: memory + register.offset, byteCount: count)
            }
            if !give { typed.deinitialize(count: 1) }
        }
    }

    /// The error a callee left in r12 (+1), as a Swift error.
    private static func takeError(_ bits: UInt64) -> any Error {
        withUnsafeTemporaryAllocation(of: UInt64.self, capacity: 1) { word in
            word[0] = bits
            return UnsafeMutableRawPointer(word.baseAddress!).assumingMemoryBound(to: (any Error).self).move()
        }
    }

    /// `error` as the +1 word a throwing function leaves in r12.
    private static func giveError(_ error: any Error) -> UInt64 {
        withUnsafeTemporaryAllocation(of: (any Error).self, capacity: 1) { box in
            box.baseAddress!.initialize(to: error)
            return UnsafeRawPointer(box.baseAddress!).load(as: UInt64.self)
        }
    }

    var _tupleID: ObjectIdentifier { ObjectIdentifier((repeat each A).self) }
    func _copyArguments(_ pointers: UnsafeMutablePointer<UnsafeMutableRawPointer?>, to tuple: UnsafeMutableRawPointer) {
        _TypedLayout.copyTuple(repeat (each A).self, slots: pointers, to: tuple)
    }
    func _assignArguments(_ pointers: UnsafeMutablePointer<UnsafeMutableRawPointer?>, from tuple: UnsafeRawPointer) {
        _TypedLayout.assignTuple(repeat (each A).self, slots: pointers, from: tuple)
    }
}

/// What every Swift entry hook point has, whatever its types: the function,
/// the C point its stub reads, the patch.
public class _SwiftEntryPoint: HookPoint, @unchecked Sendable {
    /// The function's demangled name (`Model.Person.greet(Swift.String) -> Swift.String`).
    public let function: String
    /// Its symbol (`$s5Model6PersonC5greetyS2SF`).
    public let symbol: String
    /// The path of the object that defines it.
    public let object: String
    /// The function's first byte.
    public let address: UnsafeRawPointer
    /// The relocated entry: the original function, without hooks.
    let relocated: UnsafeRawPointer
    /// Where the patched entry jumps: the point's stub.
    let entry: UnsafeRawPointer
    let point: UnsafeMutablePointer<hk_swift_point>

    init(function: _SwiftFunction, stub: UnsafeRawPointer, shape: _Shape) throws(HookError) {
        var entry: UnsafeRawPointer?
        guard let point = hk_swift_point_make(&entry), let entry else {
            throw HookError(.closureMemoryRefused, point: function.written, "no memory for the entry's stub (errno \(errno))")
        }
        self.function = function.demangled
        self.symbol = function.mangled
        self.object = function.object
        self.address = function.address
        self.relocated = stub
        self.entry = entry
        self.point = point
        super.init(name: function.written, shape: shape, target: nil)
        point.pointee.original = stub
        point.pointee.context = Unmanaged.passUnretained(self).toOpaque()
        point.pointee.handler = { point, frame in
            Unmanaged<_SwiftEntryPoint>.fromOpaque(point.unsafelyUnwrapped.pointee.context)._withUnsafeGuaranteedRef {
                $0._handle(frame.unsafelyUnwrapped)
            }
        }
    }

    public override var description: String { "SwiftEntryHook '\(name)': \(function) in \(object)" }

    /// Whether the function's entry jumps to the hook point now.
    public var isInstalled: Bool { _EntryRegistry.shared.isInstalled(at: address) }

    /// Puts the function's first bytes back and removes every hook.
    /// Idempotent; asking for the function again reinstalls this hook point.
    public func restore() throws(HookError) {
        try uninstall()
        removeAllHooks()
    }

    /// Puts the function's first bytes back, keeping the hooks.
    public func uninstall() throws(HookError) {
        try _EntryRegistry.shared.setInstalled(at: address, symbol: function, false)
    }

    /// Patches the function's entry again after ``uninstall()`` or ``restore()``.
    public func install() throws(HookError) {
        try _EntryRegistry.shared.setInstalled(at: address, symbol: function, true)
    }

    func _handle(_ frame: UnsafeMutablePointer<hk_swift_frame>) {}

    override func _hooksWillPublish(_ hooks: [HookToken]) {
        // The stub's fast path: no hooks, or hooks for one object only.
        let only = hooks.first?.onlyFor ?? 0
        let filtered = only != 0 && hooks.allSatisfy { $0.onlyFor == only }
        hk_swift_point_set(point, hooks.isEmpty ? 0 : 1, filtered ? only : 0)
    }

    /// The one function `name` names, or an error listing what it could mean.
    static func find(_ name: String, object: String?) throws(HookError) -> _SwiftFunction {
        try _requireX86_64(name, "Swift entry hooks relocate x86-64 machine code")
        let query = _SwiftNames.Query(name)
        guard !query.text.isEmpty else {
            throw HookError(.symbolNotFound, point: name, "the name is empty")
        }
        let found = _SwiftNames.find(query, object: object)
        guard !found.isEmpty else {
            throw HookError(.symbolNotFound, point: name, "no loaded Swift function is named '\(name)'\(object.map { " in \($0)" } ?? "") (write it as Module.Type.method(label:), Module.Type.property.setter, Module.Type.init(label:), Module.function(_:))")
        }
        guard found.count == 1 else {
            let list = found.prefix(12).map { "\($0.written) (\($0.demangled) in \($0.object.split(separator: "/").last ?? ""))" }
            throw HookError(.ambiguousSymbol, point: name, "'\(name)' names \(found.count) functions: \(list.joined(separator: "; "))\(found.count > 12 ? "; ..." : ""); write the labels, the module, or in:")
        }
        let function = found[0]
        guard !function.isAsync else {
            throw HookError(.unsupportedType, point: name, "'\(function.demangled)' is async: Swift entry hooks do not hook async functions yet")
        }
        return function
    }
}

