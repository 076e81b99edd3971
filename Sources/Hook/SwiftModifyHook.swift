import CEntryHooks
import CHookThreads

/// In-place changes of a property of a class that did not opt in (`+=`,
/// `append`, any `inout` use), observed when each access ends: the
/// property's `modify` coroutine hooked by name.
///
/// ```swift
/// let age = try SwiftModifyHook.named("Model.Person.age", of: Person.self, as: Int.self)
/// try age.afterAccess(for: ada) { person, value in print("\(person.name) is now \(value)") }
/// ada.age += 1          // prints "Ada is now 37"
/// ```
///
/// A `+=` from another module does not call the setter: it calls the
/// property's `modify` coroutine, which yields the value's address, lets the
/// caller change it in place, and ends the access when the caller resumes
/// it. The hooked coroutine hands the caller a continuation of its own that
/// runs the hooks with the value the access leaves (read at the yielded
/// address, before a computed property's setter stores it) and then the
/// real continuation. An access that ends by an error thrown through it
/// (unwinding) runs no hook.
///
/// A hook runs on the accessing thread, under the reentrancy guard: an
/// access the hook itself makes runs no hook.
public final class SwiftModifyHook<Object: AnyObject, Value>: SwiftEntryPoint, @unchecked Sendable {
    fileprivate init(function: _SwiftFunction, stub: UnsafeRawPointer) throws(HookError) {
        try super.init(function: function, stub: stub, shape: .typed(kind: .property, arguments: Object.self, Value.self, result: Void.self, canThrow: false),
                       isModify: true)
        point.pointee.modify = { point, mode, address, object, value in
            Unmanaged<SwiftEntryPoint>.fromOpaque(point.unsafelyUnwrapped.pointee.context)._withUnsafeGuaranteedRef {
                $0._accessEnds(mode, address, object, value.unsafelyUnwrapped)
            }
        }
    }

    /// Hooks the `modify` coroutine of the property `name` (`"Model.Person.age"`)
    /// of the class `Object`, whose value is a `Value`, or returns the hook
    /// point it already has.
    ///
    /// - Throws: ``HookError`` naming what was written: `.symbolNotFound`,
    ///   `.ambiguousSymbol`, `.typeMismatch` (the property is not of `Object`
    ///   or not a `Value`; `Object` is not a class), `.cannotPatch`,
    ///   `.signatureMismatch`.
    public static func named(_ name: String, of object: Object.Type, as value: Value.Type,
                             in library: String? = nil) throws(HookError) -> SwiftModifyHook<Object, Value> {
        let property = name.hasSuffix(".modify") ? name : name + ".modify"
        let function: _SwiftFunction
        do { function = try SwiftEntryPoint.find(property, object: library) } catch { throw error.named(name) }
        let objectName = _typeName(Object.self, qualified: true), valueName = _typeName(Value.self, qualified: true)
        guard function.kind == .modify, let type = function.type, let valueType = function.valueType else {
            throw HookError(.typeMismatch, point: name, "'\(function.demangled)' is not a property's modify coroutine")
        }
        guard !function.isStatic else {
            throw HookError(.typeMismatch, point: name, "'\(function.demangled)' is a static property's: its accesses have the type, not an object of \(objectName), as self")
        }
        guard _SwiftNames.canonical(type) == _SwiftNames.canonical(objectName) else {
            throw HookError(.typeMismatch, point: name, "'\(function.demangled)' is a property of \(type); stated \(objectName)")
        }
        guard _SwiftNames.canonical(valueType) == _SwiftNames.canonical(valueName) else {
            throw HookError(.typeMismatch, point: name, "'\(function.demangled)' is a \(valueType); stated \(valueName)")
        }
        // (Its errors name what was written: the registry's name the function found.)
        let point: AnyObject
        do {
            point = try _EntryRegistry.shared.installSwift(
                symbol: function.demangled, address: function.address, size: function.size, object: function.object,
                key: "modify of \(objectName) as \(valueName)"
            ) { (stub) throws(HookError) -> (AnyObject, UnsafeRawPointer) in
                let point = try SwiftModifyHook<Object, Value>(function: function, stub: stub)
                return (point, point.entry)
            }
        } catch {
            throw error.named(name)
        }
        return point as! SwiftModifyHook<Object, Value>
    }

    /// Adds a hook that runs when an access ends, with the object and the
    /// value the access leaves; with `for:`, only for accesses of that
    /// object's property (held weakly; the hook goes with it).
    @discardableResult
    public func afterAccess(for object: Object? = nil, owner: AnyObject? = nil,
                            _ body: @escaping (Object, Value) throws -> Void) -> HookToken {
        let only = object.map { UInt(bitPattern: Unmanaged.passUnretained($0).toOpaque()) } ?? 0
        // With `for:`, the hook goes with the object (a later object at its
        // address must not get it) and with the owner too, if one is given.
        let ownerBox = object != nil ? owner.map(_HookOwner.init) : nil
        let native: (UnsafeMutableRawPointer) -> (any Error)? = { access in
            let bits = access.load(fromByteOffset: 8, as: UInt.self)
            if only != 0, bits != only { return nil }
            if let ownerBox, ownerBox.object == nil { return nil }
            let object = Unmanaged<Object>.fromOpaque(UnsafeRawPointer(bitPattern: bits).unsafelyUnwrapped).takeUnretainedValue()
            do {
                try body(object, access.load(as: UnsafeRawPointer.self).assumingMemoryBound(to: Value.self).pointee)
            } catch {
                return error
            }
            return nil
        }
        let token = _SwiftTypedAfterHook(point: self, owner: object ?? owner, native: native, onlyFor: only) { _ in }
        _ = _addTyped(token, owner: object ?? owner)
        if object != nil, let bag = (owner as? HookOwner)?.hookBag { bag.insert(token) }
        return token
    }

    /// Not for a modify coroutine: an access has no ``CallBack`` (no
    /// arguments, no result to read or change), so its hook point runs only
    /// ``afterAccess(for:owner:_:)`` hooks. A `before`, `instead` or `after`
    /// hook given here is not added: the error goes to the point's error
    /// handler (standard error without one), and the token returned is
    /// inactive.
    public override func add(_ position: HookPosition, owner: AnyObject? = nil, _ body: @escaping HookBody) -> HookToken {
        let token = HookToken(point: self, position: position, owner: nil, runsWhenVetoed: true, body: body)
        token.remove()
        report(HookError(.invalidValue, point: name, "a modify coroutine's hook point runs afterAccess hooks only (an access has no CallBack); the \(position) hook was not added"), at: position)
        return token
    }

    /// An access ends: mode 0 copies the value (in `storage`, or a box whose
    /// address is there if it is larger), 1 if the hooks are to see it;
    /// mode 1, once the access ended, runs them on the copy and destroys it.
    override func _accessEnds(_ mode: Int32, _ address: UnsafeMutableRawPointer?, _ object: UInt64, _ storage: UnsafeMutableRawPointer) -> Int32 {
        let inline = MemoryLayout<Value>.size <= Int(HK_MODIFY_VALUE) && MemoryLayout<Value>.alignment <= 16
        if mode == 0 {
            // Not from inside this point's own hooks, and only if there are hooks.
            guard _hasHooks, let address, !hk_thread_current().map({ hk_thread_depth($0) > 0 && _isInside($0) }).isTrue else { return 0 }
            let value = address.assumingMemoryBound(to: Value.self).pointee
            if inline {
                storage.initializeMemory(as: Value.self, to: value)
            } else {
                let box = UnsafeMutablePointer<Value>.allocate(capacity: 1)
                box.initialize(to: value)
                storage.storeBytes(of: UnsafeMutableRawPointer(box), as: UnsafeMutableRawPointer.self)
            }
            return 1
        }
        let copy = inline ? storage.assumingMemoryBound(to: Value.self)
            : storage.load(as: UnsafeMutableRawPointer.self).assumingMemoryBound(to: Value.self)
        defer {
            copy.deinitialize(count: 1)
            if !inline { copy.deallocate() }
        }
        _accessEnded(UnsafeMutableRawPointer(copy), object)
        return 0
    }

    /// A call of the ramp: it runs, and the caller gets the continuation that ends the access through the hooks.
    override func _handle(_ frame: UnsafeMutablePointer<hk_swift_frame>) {
        hk_swift_call(relocated, frame)
        let buffer = UnsafeMutableRawPointer(bitPattern: UInt(frame.pointee.gp.0))
        let resume = UnsafeRawPointer(bitPattern: UInt(frame.pointee.result.0))
        let address = UnsafeMutableRawPointer(bitPattern: UInt(frame.pointee.result.1))
        guard let buffer, let resume, let address else { return }
        // In a task, the access may end on another thread (see hk_swift_modify_began).
        let inTask = withUnsafeCurrentTask { $0 != nil }
        frame.pointee.result.0 = UInt64(UInt(bitPattern: hk_swift_modify_began(point, buffer, resume, address, frame.pointee.r13, inTask ? 1 : 0)))
    }
}

extension SwiftEntryPoint {
    /// Whether `thread` is inside this point's hooks now.
    func _isInside(_ thread: UnsafeMutablePointer<hk_thread>) -> Bool {
        let depth = hk_thread_enter_unrecorded(thread, pointID)
        guard depth >= 0 else { return true }
        hk_thread_leave_unrecorded(thread, depth)
        return false
    }

    /// The hooks of an access that ended run with the value's copy at
    /// `address` and the object (unless this thread is inside them).
    func _accessEnded(_ address: UnsafeMutableRawPointer, _ object: UInt64) {
        let thread = hk_thread_self().unsafelyUnwrapped
        let depth = hk_thread_enter_unrecorded(thread, pointID)
        guard depth >= 0 else { return }
        defer { hk_thread_leave_unrecorded(thread, depth) }
        let bits = current.load(ordering: .sequentiallyConsistent) & ~_Hooks.probedBit
        guard bits != 0 else { return }
        var access = (address, UInt(object))
        withUnsafeMutableBytes(of: &access) { access in
            let hooks = _Hooks(bits: bits)
            for i in 0..<hooks.count(.after) {
                _runTyped(hooks.entry(.after, i), as: _SwiftTypedAfterHook.self) { hook in if let error = hook.native(access.baseAddress.unsafelyUnwrapped) { throw error } }
            }
        }
    }
}

private extension Optional where Wrapped == Bool {
    var isTrue: Bool { self == true }
}
