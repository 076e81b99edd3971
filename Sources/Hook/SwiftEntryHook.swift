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
/// optimizer inlined into its caller never calls it, and a function an
/// optimized build merged other functions into (identical bodies: theirs
/// became a jump to it) is refused, as its hooks would run for their calls
/// too (see the article "Hooking Swift code by name").
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
/// object; other types are `.signatureMismatch`. ``SwiftEntryPoint/restore()`` puts the
/// function's bytes back and removes every hook; asking again reinstalls it.
public final class SwiftEntryHook<each A, R>: SwiftEntryPoint, _TupleArguments, @unchecked Sendable {
    /// Where each argument and the result live in the registers.
    @usableFromInline let layout: _SwiftFrameLayout
    /// Per argument: whether the function takes ownership of it (a setter's
    /// value, an initializer's arguments, `__owned`).
    private let owned: [Bool]
    /// Whether the first argument is `self`, a class reference in r13: the
    /// call's ``CallBack/target``, what ``add(_:for:_:)`` filters on.
    private let selfIsObject: Bool

    fileprivate init(function: _SwiftFunction, stub: UnsafeRawPointer, layout: _SwiftFrameLayout, owned: [Bool],
                     selfIsObject: Bool, selfMayBeConsumed: Bool) throws(HookError) {
        self.layout = layout
        self.owned = owned
        self.selfIsObject = selfIsObject
        try super.init(function: function, stub: stub,
                       shape: .typed(kind: .function, arguments: repeat (each A).self, result: R.self, canThrow: function.canThrow),
                       // (A getter that may throw only as stated: not read
                       // after the call, which does not clear r12; see `_handle`.)
                       ownsArguments: owned.contains(true) || (function.kind == .getter && function.canThrow) || selfMayBeConsumed)
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
    ///   lower, an async function or getter), `.cannotPatch` (the entry
    ///   cannot be patched safely, or an optimized build merged other
    ///   functions into this one: the message names them), `.signatureMismatch`
    ///   (the function has a hook point of other types).
    public static func named(_ name: String, as type: ((repeat each A) -> R).Type, in object: String? = nil) throws(HookError) -> SwiftEntryHook<repeat each A, R> {
        try make(name, object: object, canThrow: false)
    }

    /// Hooks a throwing Swift function (see the non-throwing `named(_:as:in:)`): the error it
    /// throws is visible to after hooks (``CallBack/error``) and an instead
    /// or after hook may throw one in its place (``CallBack/setError(_:)``).
    public static func named(_ name: String, as type: ((repeat each A) throws -> R).Type, in object: String? = nil) throws(HookError) -> SwiftEntryHook<repeat each A, R> {
        try make(name, object: object, canThrow: true)
    }

    private static func make(_ name: String, object: String?, canThrow: Bool) throws(HookError) -> SwiftEntryHook<repeat each A, R> {
        var types: [Any.Type] = []
        for type in repeat (each A).self { types.append(type) }
        // Overloads that differ in their types: the one of the stated types.
        var function = try SwiftEntryPoint.find(name, object: object) { candidate in
            (try? _SwiftEntryPlan(function: candidate, written: name, arguments: types, result: R.self, canThrow: canThrow)) != nil
        }
        // A getter's name does not say whether it throws (`get throws`): as stated.
        if function.kind == .getter, canThrow { function.canThrow = true }
        let plan = try _SwiftEntryPlan(function: function, written: name, arguments: types, result: R.self, canThrow: canThrow)
        let key = "\(((repeat each A) -> R).self)"
        // (Its errors name what was written: the registry's name the function found.)
        let point: AnyObject
        do {
            point = try _EntryRegistry.shared.installSwift(
                symbol: function.demangled, address: function.address, size: function.size, object: function.object, key: key
            ) { (stub) throws(HookError) -> (AnyObject, UnsafeRawPointer) in
                let point = try SwiftEntryHook<repeat each A, R>(function: function, stub: stub, layout: plan.layout, owned: plan.owned,
                                                                selfIsObject: plan.selfIsObject, selfMayBeConsumed: plan.selfMayBeConsumed)
                return (point, point.entry)
            }
        } catch {
            throw error.named(name)
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
    ///
    /// The cheapest way to observe calls: alone on the hook point (and not
    /// for one object), a call makes no ``CallBack``; the hook reads the
    /// values from the registers after the function returned (code
    /// specialized where you add the hook).
    ///
    /// - Throws: ``HookError`` `.typeMismatch` if the types are not the hook
    ///   point's; `.invalidValue` for `for:` on a function without a class `self`.
    @inlinable @discardableResult
    public func afterReturning<each B>(for object: AnyObject? = nil, owner: AnyObject? = nil,
                                       _ body: @escaping (R, repeat each B) throws -> Void) throws(HookError) -> HookToken {
        // Generic, like the fixed-arity overloads below, so that the compiler prefers those.
        try _checkArguments((repeat each B).self)
        let layout = self.layout
        let native: (UnsafeMutableRawPointer) -> (any Error)? = { frame in
            var i = 0
            do {
                try body(_SwiftValues.read(R.self, frame, layout.result, whole: layout.whole[layout.whole.count - 1], take: false),
                         repeat _SwiftValues.next((each B).self, frame, layout.arguments, &i))
            } catch {
                return error
            }
            return nil
        }
        return try _addSwiftTypedAfter(for: object, owner: owner, native: native) { (result: R, arguments: repeat each A) in
            var i = 0
            try body(result, repeat _SwiftValues.element(_SwiftValues.count(&i), (each B).self, repeat each arguments))
        }
    }

    // The same for each number of arguments up to five (`self` counts): the
    // compiler prefers these to the variadic one and specializes them where
    // they are called (it does not specialize the variadic closure's pack,
    // whose values it then copies through type metadata: 86 ns a call, not a few).

    @_documentation(visibility: internal) @inlinable @discardableResult
    public func afterReturning(for object: AnyObject? = nil, owner: AnyObject? = nil,
                               _ body: @escaping (R) throws -> Void) throws(HookError) -> HookToken {
        try _checkArguments(Void.self)
        let layout = self.layout
        // What the closure reads, as constants (no array look-up on a call).
        let cr = layout.result, wr = layout.whole[layout.whole.count - 1]
        let native: (UnsafeMutableRawPointer) -> (any Error)? = { frame in
            let s = frame + _SwiftValues.scratch
            let pr = _SwiftValues.place(R.self, frame, cr, whole: wr, s)
            // Moved out and back: the hook borrows the caller's values, no retain, no release.
            let r = pr.move()
            var failure: (any Error)?
            do { try body(r) } catch { failure = error }
            pr.initialize(to: consume r)
            return failure
        }
        return try _addSwiftTypedAfter(for: object, owner: owner, native: native) { (result: R, arguments: repeat each A) in
            try body(result)
        }
    }

    @_documentation(visibility: internal) @inlinable @discardableResult
    public func afterReturning<A0>(for object: AnyObject? = nil, owner: AnyObject? = nil,
                               _ body: @escaping (R, A0) throws -> Void) throws(HookError) -> HookToken {
        try _checkArguments(A0.self)
        let layout = self.layout
        // What the closure reads, as constants (no array look-up on a call).
        let cr = layout.result, wr = layout.whole[layout.whole.count - 1]
        let c0 = layout.arguments[0], w0 = layout.whole[0]
        let native: (UnsafeMutableRawPointer) -> (any Error)? = { frame in
            let s = frame + _SwiftValues.scratch
            let pr = _SwiftValues.place(R.self, frame, cr, whole: wr, s)
            let p0 = _SwiftValues.place(A0.self, frame, c0, whole: w0, s + 32)
            // Moved out and back: the hook borrows the caller's values, no retain, no release.
            let r = pr.move(), a0 = p0.move()
            var failure: (any Error)?
            do { try body(r, a0) } catch { failure = error }
            pr.initialize(to: consume r)
            p0.initialize(to: consume a0)
            return failure
        }
        return try _addSwiftTypedAfter(for: object, owner: owner, native: native) { (result: R, arguments: repeat each A) in
            try body(result, _SwiftValues.element(0, A0.self, repeat each arguments))
        }
    }

    @_documentation(visibility: internal) @inlinable @discardableResult
    public func afterReturning<A0, A1>(for object: AnyObject? = nil, owner: AnyObject? = nil,
                               _ body: @escaping (R, A0, A1) throws -> Void) throws(HookError) -> HookToken {
        try _checkArguments((A0, A1).self)
        let layout = self.layout
        // What the closure reads, as constants (no array look-up on a call).
        let cr = layout.result, wr = layout.whole[layout.whole.count - 1]
        let c0 = layout.arguments[0], w0 = layout.whole[0]
        let c1 = layout.arguments[1], w1 = layout.whole[1]
        let native: (UnsafeMutableRawPointer) -> (any Error)? = { frame in
            let s = frame + _SwiftValues.scratch
            let pr = _SwiftValues.place(R.self, frame, cr, whole: wr, s)
            let p0 = _SwiftValues.place(A0.self, frame, c0, whole: w0, s + 32)
            let p1 = _SwiftValues.place(A1.self, frame, c1, whole: w1, s + 64)
            // Moved out and back: the hook borrows the caller's values, no retain, no release.
            let r = pr.move(), a0 = p0.move(), a1 = p1.move()
            var failure: (any Error)?
            do { try body(r, a0, a1) } catch { failure = error }
            pr.initialize(to: consume r)
            p0.initialize(to: consume a0)
            p1.initialize(to: consume a1)
            return failure
        }
        return try _addSwiftTypedAfter(for: object, owner: owner, native: native) { (result: R, arguments: repeat each A) in
            try body(result, _SwiftValues.element(0, A0.self, repeat each arguments), _SwiftValues.element(1, A1.self, repeat each arguments))
        }
    }

    @_documentation(visibility: internal) @inlinable @discardableResult
    public func afterReturning<A0, A1, A2>(for object: AnyObject? = nil, owner: AnyObject? = nil,
                               _ body: @escaping (R, A0, A1, A2) throws -> Void) throws(HookError) -> HookToken {
        try _checkArguments((A0, A1, A2).self)
        let layout = self.layout
        // What the closure reads, as constants (no array look-up on a call).
        let cr = layout.result, wr = layout.whole[layout.whole.count - 1]
        let c0 = layout.arguments[0], w0 = layout.whole[0]
        let c1 = layout.arguments[1], w1 = layout.whole[1]
        let c2 = layout.arguments[2], w2 = layout.whole[2]
        let native: (UnsafeMutableRawPointer) -> (any Error)? = { frame in
            let s = frame + _SwiftValues.scratch
            let pr = _SwiftValues.place(R.self, frame, cr, whole: wr, s)
            let p0 = _SwiftValues.place(A0.self, frame, c0, whole: w0, s + 32)
            let p1 = _SwiftValues.place(A1.self, frame, c1, whole: w1, s + 64)
            let p2 = _SwiftValues.place(A2.self, frame, c2, whole: w2, s + 96)
            // Moved out and back: the hook borrows the caller's values, no retain, no release.
            let r = pr.move(), a0 = p0.move(), a1 = p1.move(), a2 = p2.move()
            var failure: (any Error)?
            do { try body(r, a0, a1, a2) } catch { failure = error }
            pr.initialize(to: consume r)
            p0.initialize(to: consume a0)
            p1.initialize(to: consume a1)
            p2.initialize(to: consume a2)
            return failure
        }
        return try _addSwiftTypedAfter(for: object, owner: owner, native: native) { (result: R, arguments: repeat each A) in
            try body(result, _SwiftValues.element(0, A0.self, repeat each arguments), _SwiftValues.element(1, A1.self, repeat each arguments), _SwiftValues.element(2, A2.self, repeat each arguments))
        }
    }

    @_documentation(visibility: internal) @inlinable @discardableResult
    public func afterReturning<A0, A1, A2, A3>(for object: AnyObject? = nil, owner: AnyObject? = nil,
                               _ body: @escaping (R, A0, A1, A2, A3) throws -> Void) throws(HookError) -> HookToken {
        try _checkArguments((A0, A1, A2, A3).self)
        let layout = self.layout
        // What the closure reads, as constants (no array look-up on a call).
        let cr = layout.result, wr = layout.whole[layout.whole.count - 1]
        let c0 = layout.arguments[0], w0 = layout.whole[0]
        let c1 = layout.arguments[1], w1 = layout.whole[1]
        let c2 = layout.arguments[2], w2 = layout.whole[2]
        let c3 = layout.arguments[3], w3 = layout.whole[3]
        let native: (UnsafeMutableRawPointer) -> (any Error)? = { frame in
            let s = frame + _SwiftValues.scratch
            let pr = _SwiftValues.place(R.self, frame, cr, whole: wr, s)
            let p0 = _SwiftValues.place(A0.self, frame, c0, whole: w0, s + 32)
            let p1 = _SwiftValues.place(A1.self, frame, c1, whole: w1, s + 64)
            let p2 = _SwiftValues.place(A2.self, frame, c2, whole: w2, s + 96)
            let p3 = _SwiftValues.place(A3.self, frame, c3, whole: w3, s + 128)
            // Moved out and back: the hook borrows the caller's values, no retain, no release.
            let r = pr.move(), a0 = p0.move(), a1 = p1.move(), a2 = p2.move(), a3 = p3.move()
            var failure: (any Error)?
            do { try body(r, a0, a1, a2, a3) } catch { failure = error }
            pr.initialize(to: consume r)
            p0.initialize(to: consume a0)
            p1.initialize(to: consume a1)
            p2.initialize(to: consume a2)
            p3.initialize(to: consume a3)
            return failure
        }
        return try _addSwiftTypedAfter(for: object, owner: owner, native: native) { (result: R, arguments: repeat each A) in
            try body(result, _SwiftValues.element(0, A0.self, repeat each arguments), _SwiftValues.element(1, A1.self, repeat each arguments), _SwiftValues.element(2, A2.self, repeat each arguments), _SwiftValues.element(3, A3.self, repeat each arguments))
        }
    }

    @_documentation(visibility: internal) @inlinable @discardableResult
    public func afterReturning<A0, A1, A2, A3, A4>(for object: AnyObject? = nil, owner: AnyObject? = nil,
                               _ body: @escaping (R, A0, A1, A2, A3, A4) throws -> Void) throws(HookError) -> HookToken {
        try _checkArguments((A0, A1, A2, A3, A4).self)
        let layout = self.layout
        // What the closure reads, as constants (no array look-up on a call).
        let cr = layout.result, wr = layout.whole[layout.whole.count - 1]
        let c0 = layout.arguments[0], w0 = layout.whole[0]
        let c1 = layout.arguments[1], w1 = layout.whole[1]
        let c2 = layout.arguments[2], w2 = layout.whole[2]
        let c3 = layout.arguments[3], w3 = layout.whole[3]
        let c4 = layout.arguments[4], w4 = layout.whole[4]
        let native: (UnsafeMutableRawPointer) -> (any Error)? = { frame in
            let s = frame + _SwiftValues.scratch
            let pr = _SwiftValues.place(R.self, frame, cr, whole: wr, s)
            let p0 = _SwiftValues.place(A0.self, frame, c0, whole: w0, s + 32)
            let p1 = _SwiftValues.place(A1.self, frame, c1, whole: w1, s + 64)
            let p2 = _SwiftValues.place(A2.self, frame, c2, whole: w2, s + 96)
            let p3 = _SwiftValues.place(A3.self, frame, c3, whole: w3, s + 128)
            let p4 = _SwiftValues.place(A4.self, frame, c4, whole: w4, s + 160)
            // Moved out and back: the hook borrows the caller's values, no retain, no release.
            let r = pr.move(), a0 = p0.move(), a1 = p1.move(), a2 = p2.move(), a3 = p3.move(), a4 = p4.move()
            var failure: (any Error)?
            do { try body(r, a0, a1, a2, a3, a4) } catch { failure = error }
            pr.initialize(to: consume r)
            p0.initialize(to: consume a0)
            p1.initialize(to: consume a1)
            p2.initialize(to: consume a2)
            p3.initialize(to: consume a3)
            p4.initialize(to: consume a4)
            return failure
        }
        return try _addSwiftTypedAfter(for: object, owner: owner, native: native) { (result: R, arguments: repeat each A) in
            try body(result, _SwiftValues.element(0, A0.self, repeat each arguments), _SwiftValues.element(1, A1.self, repeat each arguments), _SwiftValues.element(2, A2.self, repeat each arguments), _SwiftValues.element(3, A3.self, repeat each arguments), _SwiftValues.element(4, A4.self, repeat each arguments))
        }
    }

    /// Throws unless `arguments` (a tuple type, or the one type) is the hook point's.
    @usableFromInline
    func _checkArguments(_ arguments: Any.Type) throws(HookError) {
        guard ObjectIdentifier(arguments) == ObjectIdentifier((repeat each A).self) else {
            throw HookError(.typeMismatch, point: name, "afterReturning's arguments \(arguments) are not the hook point's \((repeat each A).self)")
        }
    }

    /// Adds the typed after hook `afterReturning` made.
    @usableFromInline
    func _addSwiftTypedAfter(for object: AnyObject?, owner: AnyObject?, native: @escaping (UnsafeMutableRawPointer) -> (any Error)?,
                             _ body: @escaping (R, repeat each A) throws -> Void) throws(HookError) -> HookToken {
        guard let object else {
            let recorded = _TypedAfterHook(point: self, owner: owner, body)
            return _addTyped(_SwiftTypedAfterHook(point: self, owner: owner, native: native, recorded: recorded.body), owner: owner)
        }
        guard selfIsObject else {
            throw HookError(.invalidValue, point: name, "'\(name)' has no class instance as self: a hook for one object needs an instance method or accessor of a class")
        }
        // The hook goes with the object (a later object at its address must
        // not get it) and, if one is given, with the owner too.
        let ownerBox = owner.map(_HookOwner.init)
        let token = _add(.after, onlyForTarget: UInt(bitPattern: Unmanaged.passUnretained(object).toOpaque()), owner: object) { call in
            guard call._hasResult, ownerBox.map({ $0.object != nil }) ?? true else { return }
            let values = try call.arguments(as: (repeat each A).self)
            try body(try call.result(as: R.self), repeat each values)
        }
        if let bag = (owner as? HookOwner)?.hookBag { bag.insert(token) }
        return token
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
            if canThrow, registers.pointee.r12 != 0 { throw Self.takeError(registers.pointee.r12) }
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
        let original = relocated
        let canThrow = self.canThrow
        let layout = self.layout
        let owned = self.owned
        let target: Unmanaged<AnyObject>? = selfIsObject
            ? UnsafeRawPointer(bitPattern: UInt(frame.pointee.r13)).map { Unmanaged<AnyObject>.fromOpaque($0) } : nil
        do {
            // The original, for the hooks: the caller's registers with the
            // arguments as the hooks left them (a closure literal, not escaping:
            // no allocation; an instead hook's invoker holds it while it runs).
            let result = try _typedCall(self, target: target, { (args: repeat each A) throws -> R in
                var registers = frame.pointee
                return try withUnsafeMutablePointer(to: &registers) { (registers) throws -> R in
                    var i = 0
                    repeat Self.writeArgument(each args, UnsafeMutableRawPointer(registers), layout.arguments, owned, &i)
                    // The error register cleared, as a caller of a throwing
                    // function does: a getter stated as throwing (`get
                    // throws` cannot be told from its symbol) that does not
                    // throw leaves it as it was, which was read as an error.
                    if canThrow { registers.pointee.r12 = 0 }
                    hk_swift_call(original, registers)
                    if canThrow, registers.pointee.r12 != 0 { throw Self.takeError(registers.pointee.r12) }
                    return Self.readResult(R.self, UnsafeMutableRawPointer(registers), layout.result)
                }
            }, escapable: nil, repeat each arguments)
            Self.writeResult(result, base, layout.result)
        } catch {
            frame.pointee.r12 = Self.giveError(error)
        }
    }

    private static func readArgument<T>(_ type: T.Type, _ frame: UnsafeMutableRawPointer, _ places: [[_SwiftCopy]],
                                        _ owned: [Bool], _ index: inout Int) -> T {
        defer { index += 1 }
        return _SwiftValues.read(T.self, frame, places[index], take: owned[index])
    }

    private static func writeArgument<T>(_ value: T, _ frame: UnsafeMutableRawPointer, _ places: [[_SwiftCopy]],
                                         _ owned: [Bool], _ index: inout Int) {
        defer { index += 1 }
        _SwiftValues.write(value, frame, places[index], give: owned[index])
    }

    private static func readResult<T>(_ type: T.Type, _ frame: UnsafeMutableRawPointer, _ copies: [_SwiftCopy]) -> T {
        _SwiftValues.read(T.self, frame, copies, take: true)
    }

    private static func writeResult<T>(_ value: T, _ frame: UnsafeMutableRawPointer, _ copies: [_SwiftCopy]) {
        _SwiftValues.write(value, frame, copies, give: true)
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

/// What every Swift entry hook point has, whatever its types: the function
/// it is over, and its patch (see ``SwiftEntryHook``; ``SwiftTrace``'s
/// points are of this class too).
public class SwiftEntryPoint: HookPoint, @unchecked Sendable {
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
    /// Whether the function throws (its error in r12).
    let canThrow: Bool
    /// Whether it is a modify coroutine's ramp (`SwiftModifyHook`): its typed
    /// hooks run when the access ends, not after the ramp.
    let isModify: Bool
    /// Whether a lone typed after hook may read the arguments from the
    /// caller's registers after the function returned: not a modify ramp's,
    /// and not where the function takes ownership of an argument (a setter's
    /// value, an initializer's arguments, `__owned`), which it may have
    /// released by then; those calls take `_handle`, which copies them first.
    let readsArgumentsAfterReturn: Bool

    init(function: _SwiftFunction, stub: UnsafeRawPointer, shape: _Shape, isModify: Bool = false,
         ownsArguments: Bool = false) throws(HookError) {
        var entry: UnsafeRawPointer?
        guard let point = hk_swift_point_make(&entry), let entry else {
            throw HookError(.closureMemoryRefused, point: function.written, "no memory for the entry's stub (errno \(errno))")
        }
        // (Made before the patch: a function whose code is a jump to another is
        // noted as such while the jump is there; see `_SwiftNames.merged(into:)`.)
        _SwiftNames.willPatch(function)
        self.function = function.demangled
        self.symbol = function.mangled
        self.object = function.object
        self.address = function.address
        self.relocated = stub
        self.entry = entry
        self.point = point
        self.canThrow = shape.shape.canThrow
        self.isModify = isModify
        readsArgumentsAfterReturn = !isModify && !ownsArguments
        super.init(name: function.written, shape: shape, target: nil)
        point.pointee.original = stub
        point.pointee.context = Unmanaged.passUnretained(self).toOpaque()
        point.pointee.id = pointID
        point.pointee.can_throw = canThrow ? 1 : 0
        point.pointee.failed = { point, error in
            // What a typed hook threw (+1, released with `error`).
            let error = unsafeBitCast(error.unsafelyUnwrapped, to: (any Error).self)
            Unmanaged<SwiftEntryPoint>.fromOpaque(point.unsafelyUnwrapped.pointee.context)._withUnsafeGuaranteedRef {
                $0.report(error, at: .after)
            }
        }
        point.pointee.handler = { point, frame in
            Unmanaged<SwiftEntryPoint>.fromOpaque(point.unsafelyUnwrapped.pointee.context)._withUnsafeGuaranteedRef {
                $0._dispatch(frame.unsafelyUnwrapped)
            }
        }
    }

    public override var description: String { "SwiftEntryHook '\(name)': \(function) in \(object)" }

    /// Whether the function's entry jumps to the hook point now.
    public var isInstalled: Bool { _EntryRegistry.shared.isInstalled(at: address, point: self) }

    /// Puts the function's first bytes back and removes every hook.
    /// Idempotent; asking for the function again reinstalls this hook point.
    public func restore() throws(HookError) {
        try uninstall()
        removeAllHooks()
    }

    /// Puts the function's first bytes back, keeping the hooks.
    public func uninstall() throws(HookError) {
        try _EntryRegistry.shared.setInstalled(at: address, symbol: function, point: self, false)
    }

    /// ``uninstall()``, unless (`unlessHooked`) a hook is on the point when
    /// the registry's lock is held (`SwiftTrace.stop()`).
    func uninstall(unlessHooked: Bool) throws(HookError) {
        try _EntryRegistry.shared.setInstalled(at: address, symbol: function, point: self, false, unless: unlessHooked ? { self.hookCount > 0 } : nil)
    }

    /// Patches the function's entry again after ``uninstall()`` or ``restore()``.
    public func install() throws(HookError) {
        try _EntryRegistry.shared.setInstalled(at: address, symbol: function, point: self, true)
    }

    /// A call that reached the hooks (the stub found some): a lone typed
    /// after hook here, without the generic subclass (whose unspecialized
    /// code would make its pack's metadata first), the rest in `_handle`.
    final func _dispatch(_ frame: UnsafeMutablePointer<hk_swift_frame>) {
        if readsArgumentsAfterReturn, _Hooks(bits: current.load(ordering: .relaxed)).isLoneTypedAfter, typedAfterCall(frame) { return }
        _handle(frame)
    }

    /// A call whose one hook is a typed after hook (a racy hint, checked
    /// again inside): the original runs on the caller's registers, then the
    /// hook reads the arguments and the result from them; no record. False,
    /// with nothing run, when the hooks changed meanwhile.
    final func typedAfterCall(_ frame: UnsafeMutablePointer<hk_swift_frame>) -> Bool {
        let thread = hk_thread_self().unsafelyUnwrapped
        let depth = hk_thread_enter_unrecorded(thread, pointID)
        guard depth >= 0 else {
            hk_swift_call(relocated, frame)
            return true
        }
        let hooks = _Hooks(bits: current.load(ordering: .sequentiallyConsistent))
        guard hooks.isLoneTypedAfter else {
            hk_thread_leave_unrecorded(thread, depth)
            return false
        }
        // Tagged while the original runs, so that a recursive original is hooked again.
        hk_frame_set_running_original(thread, depth, pointID, 1)
        hk_swift_call(relocated, frame)
        hk_frame_set_running_original(thread, depth, pointID, 0)
        // A call that threw (r12 set by a throwing function) has no result.
        if !canThrow || frame.pointee.r12 == 0 {
            _runTyped(hooks.single, as: _SwiftTypedAfterHook.self) { hook in if let error = hook.native(UnsafeMutableRawPointer(frame)) { throw error } }
        }
        hk_thread_leave_unrecorded(thread, depth)
        return true
    }

    func _handle(_ frame: UnsafeMutablePointer<hk_swift_frame>) {}

    /// A modify access ends (`SwiftModifyHook`; see `hk_swift_point.modify`).
    func _accessEnds(_ mode: Int32, _ address: UnsafeMutableRawPointer?, _ object: UInt64, _ storage: UnsafeMutableRawPointer) -> Int32 { 0 }

    override func _hooksWillPublish(_ hooks: [Unmanaged<HookToken>]) {
        // The stub runs a lone typed after hook itself, unless it has an
        // owner (whose end a call checks) or the call's registers are not
        // all there is (stack arguments, a modify coroutine), or the
        // function takes ownership of an argument (see `readsArgumentsAfterReturn`).
        var typed: UnsafePointer<hk_swift_typed>?
        if readsArgumentsAfterReturn, point.pointee.stack_bytes == 0, hooks.count == 1 {
            let lone = hooks[0].takeUnretainedValue()
            if lone.owner == nil, let hook = lone as? _SwiftTypedAfterHook, hook.target == 0 {
                typed = UnsafePointer(hook.fast)
            }
        }
        hk_swift_point_set_typed(point, typed)
        // The stub's fast path: no hooks, or hooks for one object only.
        let only = hooks.first?._withUnsafeGuaranteedRef { $0.onlyFor } ?? 0
        let filtered = only != 0 && hooks.allSatisfy { $0._withUnsafeGuaranteedRef { $0.onlyFor } == only }
        hk_swift_point_set(point, hooks.isEmpty ? 0 : 1, filtered ? only : 0)
    }

    /// The one function `name` names, or an error listing what it could
    /// mean. Among overloads (functions or initializers of one name, not a
    /// property's accessors), the one that `typed` takes, if one alone.
    static func find(_ name: String, object: String?, typed: ((_SwiftFunction) -> Bool)? = nil) throws(HookError) -> _SwiftFunction {
        try _requireX86_64(name, "Swift entry hooks relocate x86-64 machine code")
        let query = _SwiftNames.Query(name)
        guard !query.text.isEmpty else {
            throw HookError(.symbolNotFound, point: name, "the name is empty")
        }
        let found = _SwiftNames.find(query, object: object)
        guard !found.isEmpty else {
            let similar = _SwiftNames.similarNames(to: query, object: object)
            throw HookError(.symbolNotFound, point: name, "no loaded Swift function is named '\(name)'\(object.map { " in \($0)" } ?? "")\(similar.isEmpty ? "" : "; similar names: " + similar.joined(separator: ", ")) (write it as Module.Type.method(label:), Module.Type.property.setter, Module.Type.init(label:), Module.function(_:))")
        }
        var chosen = found
        if found.count > 1, let typed, found.allSatisfy({ $0.kind == .function || $0.kind == .initializer }) {
            let matching = found.filter(typed)
            if matching.count == 1 { chosen = matching }
        }
        guard chosen.count == 1 else {
            let list = found.prefix(12).map { "\($0.written) (\($0.demangled) in \($0.object.split(separator: "/").last ?? ""))" }
            throw HookError(.ambiguousSymbol, point: name, "'\(name)' names \(found.count) functions: \(list.joined(separator: "; "))\(found.count > 12 ? "; ..." : ""); write the labels, the module, or in:\(typed != nil && found.allSatisfy({ $0.kind == .function || $0.kind == .initializer }) ? " (the stated types are those of \(found.filter(typed!).count) of them)" : "")")
        }
        let function = chosen[0]
        guard !function.isAsync else {
            throw HookError(.unsupportedType, point: name, "'\(function.demangled)' is async: Swift entry hooks do not hook async functions yet")
        }
        // A static stored property's getter (`...vgZ`) beside its addressor
        // (`...vau`): its reads, in its own module and others, go through the
        // addressor, and the getter is called by nothing but a protocol's
        // witness (hooked, it heard nothing, without a word).
        if function.kind == .getter, function.mangled.hasSuffix("vgZ"), Self.isDefined(String(function.mangled.dropLast(3)) + "vau") {
            throw HookError(.cannotPatch, point: name, "'\(function.demangled)' is the getter of a static stored property, which is read through its addressor, not the getter: a hook there would hear nothing (observe its sets with a didSet, or hook the code that reads it)")
        }
        // Functions an optimized build merged into this one jump to its
        // entry: its hooks would run for their calls, with their self and
        // arguments read as this one's (see `_SwiftNames.merged(into:)`).
        if let others = _SwiftNames.merged(into: [function])[UInt(bitPattern: function.address)] {
            throw HookError(.cannotPatch, point: name, Self.sharing(function, others))
        }
        return function
    }

    /// Whether a loaded object defines the symbol `mangled` (its dynamic
    /// symbols, or the symbol table of its file).
    static func isDefined(_ mangled: String) -> Bool {
        var found = hk_entry_definition()
        return hk_entry_find(mangled, &found, 1) > 0
    }

    /// Why a function others were merged into is refused (`SwiftTrace` skips it, for the same reason).
    static func sharing(_ function: _SwiftFunction, _ others: [String]) -> String {
        "'\(function.name)' shares its code with \(others.joined(separator: ", ")) (the optimizer merged identical functions): a hook there would run for their calls too, with their self and arguments read as its own (a build without optimization keeps them apart)"
    }
}


/// A typed after hook of a Swift entry (``SwiftEntryHook/afterReturning(for:owner:_:)``):
/// alone on its hook point, a call runs `native` on the registers after the
/// original returned, with no `CallBack`; among other hooks it runs as an
/// after hook through `body`, which reads the record.
@usableFromInline
final class _SwiftTypedAfterHook: HookToken, @unchecked Sendable {
    /// Reads the values from the frame and runs the hook; returns what it threw.
    let native: (UnsafeMutableRawPointer) -> (any Error)?
    /// How the stub calls `native` (see `hk_swift_typed`).
    let fast: UnsafeMutablePointer<hk_swift_typed>

    let target: UInt

    init(point: HookPoint, owner: AnyObject?, native: @escaping (UnsafeMutableRawPointer) -> (any Error)?, onlyFor: UInt = 0,
         recorded: @escaping HookBody) {
        self.native = native
        target = onlyFor
        fast = .allocate(capacity: 1)
        super.init(point: point, position: .after, owner: owner.map(_HookOwner.init), runsWhenVetoed: true, isTypedAfter: true,
                   body: recorded)
        // `native`'s two words as Swift stores a closure of its type (in a
        // struct: a closure passed as a generic value would be wrapped in a
        // thunk of another convention). No reference taken: `native` keeps
        // the context.
        struct Closure { let native: (UnsafeMutableRawPointer) -> (any Error)? }
        fast.initialize(to: withUnsafeBytes(of: Closure(native: native)) { bytes in
            hk_swift_typed(code: bytes.load(as: UnsafeRawPointer?.self), context: bytes.load(fromByteOffset: 8, as: UnsafeRawPointer?.self))
        })
    }

    override var onlyFor: UInt { target }

    deinit { fast.deallocate() }
}

/// Values put together from the registers of a `hk_swift_frame` and spread
/// back into them (see `_SwiftFrameLayout`). Inlinable: a typed after hook
/// reads its values in code specialized where it was added.
@usableFromInline
enum _SwiftValues {
    /// A value put together from its pieces: a copy (`take`: the caller's +1 taken over).
    @inlinable @inline(__always)
    static func read<T>(_ type: T.Type, _ frame: UnsafeMutableRawPointer, _ copies: [_SwiftCopy], whole: Int = -1, take: Bool) -> T {
        if MemoryLayout<T>.size == 0 { return unsafeBitCast((), to: T.self) }
        if whole >= 0 {
            // One register holds it all (an Int, a Double, a class reference): read in place.
            if T.self == Bool.self { return unsafeBitCast(frame.load(fromByteOffset: whole, as: UInt8.self) & 1 != 0, to: T.self) }
            let typed = (frame + whole).assumingMemoryBound(to: T.self)
            return take ? typed.move() : typed.pointee
        }
        // At most four registers: 32 bytes, on the stack.
        var buffer: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        return withUnsafeMutableBytes(of: &buffer) { bytes in
            let memory = bytes.baseAddress.unsafelyUnwrapped
            for copy in copies {
                // A whole register: one load and store (copyMemory would call memmove).
                if copy.count == 8 {
                    memory.storeBytes(of: frame.load(fromByteOffset: copy.frame, as: UInt64.self), toByteOffset: copy.memory, as: UInt64.self)
                } else {
                    memory.advanced(by: copy.memory).copyMemory(from: frame + copy.frame, byteCount: copy.count)
                }
            }
            if T.self == Bool.self { memory.storeBytes(of: memory.load(as: UInt8.self) & 1, as: UInt8.self) }
            let typed = memory.assumingMemoryBound(to: T.self)
            return take ? typed.move() : typed.pointee
        }
    }

    /// Where a frame's scratch room is (`hk_swift_frame.scratch`: six
    /// values of 32 bytes; C asserts the offset).
    @usableFromInline static var scratch: Int { 336 }

    /// Where a value of the frame is, whole: its register when one holds
    /// it (but a `Bool`, whose register's other bits are not its), else put
    /// together from its registers in `scratch` (32 bytes). The caller moves
    /// it out for a hook's call and back after it: the hook borrows the
    /// caller's value, and no reference count is touched.
    @inlinable @inline(__always)
    static func place<T>(_ type: T.Type, _ frame: UnsafeMutableRawPointer, _ copies: [_SwiftCopy], whole: Int,
                         _ scratch: UnsafeMutableRawPointer) -> UnsafeMutablePointer<T> {
        if whole >= 0 && T.self != Bool.self { return (frame + whole).assumingMemoryBound(to: T.self) }
        for copy in copies {
            if copy.count == 8 {
                scratch.storeBytes(of: frame.load(fromByteOffset: copy.frame, as: UInt64.self), toByteOffset: copy.memory, as: UInt64.self)
            } else {
                scratch.advanced(by: copy.memory).copyMemory(from: frame + copy.frame, byteCount: copy.count)
            }
        }
        if T.self == Bool.self { scratch.storeBytes(of: scratch.load(as: UInt8.self) & 1, as: UInt8.self) }
        return scratch.assumingMemoryBound(to: T.self)
    }

    /// `index`, then one more.
    @inlinable
    static func count(_ index: inout Int) -> Int {
        defer { index += 1 }
        return index
    }

    /// Element `index` of a pack, as `T` (the recorded path of the typed after hooks).
    @inlinable
    static func element<T, each E>(_ index: Int, _ type: T.Type, _ elements: repeat each E) -> T {
        var i = 0
        var found: T?
        for element in repeat each elements {
            if i == index { found = element as? T }
            i += 1
        }
        return found!
    }

    /// The next argument of a pack (`index` counts them).
    @inlinable @inline(__always)
    static func next<T>(_ type: T.Type, _ frame: UnsafeMutableRawPointer, _ places: [[_SwiftCopy]], _ index: inout Int) -> T {
        defer { index += 1 }
        return read(T.self, frame, places[index], take: false)
    }

    /// A value spread into its pieces: borrowed, or (`give`) a +1 copy handed over.
    static func write<T>(_ value: T, _ frame: UnsafeMutableRawPointer, _ copies: [_SwiftCopy], give: Bool) {
        if MemoryLayout<T>.size == 0 { return }
        withUnsafeTemporaryAllocation(of: T.self, capacity: 1) { buffer in
            let typed = buffer.baseAddress!
            typed.initialize(to: value)
            let memory = UnsafeRawPointer(typed)
            for copy in copies {
                let target = frame + copy.frame
                if copy.isGeneral { target.storeBytes(of: 0, as: UInt64.self) }
                target.copyMemory(from: memory + copy.memory, byteCount: copy.count)
            }
            if !give { typed.deinitialize(count: 1) }
        }
    }
}
