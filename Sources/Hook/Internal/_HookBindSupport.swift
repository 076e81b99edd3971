import CHookThreads
import Synchronization

// What HookBind needs from Hook and nothing else may rely on: the value of
// a `@Hooked` property as a hook point standing on its own (HookBind's
// observables) or set through its hooks. `package`: visible to the modules
// of this package only, never part of Hook's public API; `@inlinable`
// package members may be used by HookBind's inlinable code, which Swift
// specializes in the caller's module.

extension PropertyHook {
    /// A hook point holding `value` for an object that is not a `@Hooked`
    /// property's owner (HookBind's `Observable`, `Computed`), named `name`.
    package static func _standalone(_ value: Value, name: String) -> PropertyHook<Value> {
        PropertyHook(value, name: name)
    }

    /// Makes `object` the target of this point's calls. The object must own
    /// the point and be the only one to set it (it is not retained).
    package func _adopt(by object: AnyObject) { _setTarget(object) }

    /// Where the property's storage is in its object (-1 for a standalone point).
    package var _cellOffset: Int { cellOffset }

    /// The name of the `@Hooked` property whose storage is at `offset` in
    /// objects of `type` (its point's name), found without an object.
    package static func _propertyName(at offset: Int, in type: AnyClass) -> String? {
        _KeyPathResolver.label(at: offset, in: type)
    }

    /// Stores `newValue` without a call: no hook sees it.
    package func _storeSilently(_ newValue: Value) { storage.pointee = newValue }

    /// The stored value. Only while the object is alive.
    @inlinable
    package var _currentValue: Value { storage.pointee }

    /// Sets the value as `object.property = newValue` does: through the hooks.
    /// Only while the object is alive (hooks see it as the call's target).
    @inlinable
    package func _setThroughHooks(_ newValue: Value) {
        // No hook is ever at address 0: only "no hooks" stores plainly.
        _setThroughHooks(newValue, unlessOnlyHookIs: 0)
    }

    /// Sets the value like ``_setThroughHooks(_:)``, but stores it plainly
    /// when the only hook is the one at address `hook`: a binding's own
    /// hook, which would only store the value, since that binding is
    /// delivering this very change. The address is compared, never
    /// followed; the caller keeps the hook's memory (an unowned reference),
    /// so no other hook can be at that address.
    @inlinable
    package func _setThroughHooks(_ newValue: Value, unlessOnlyHookIs hook: UInt) {
        let bits = current.load(ordering: .relaxed)
        // (A lone hook's word is its address with bit 1, and bit 2 if it
        // is an after hook: the binding's is not.)
        if _fastPath(bits == 0 || bits == Int(bitPattern: hook) | _Hooks.singleBit) {
            storage.pointee = newValue
        } else {
            _set(newValue)
        }
    }
}

// A value kept inline in an object with its hook point made on first need:
// HookBind's `Observable` keeps a `Hooked` as a plain stored property and
// reaches it through these (underscored, not for users).
extension Hooked {
    /// A cell holding `value`, with no hook point.
    @inlinable
    package init(_storing value: Value) { self.init(wrappedValue: value) }

    /// The value, read or stored without any call at the hook point.
    @inlinable
    package var _storedValue: Value {
        get { _value }
        set { _value = newValue }
    }

    /// The unretained hook point if it is made and has a hook (an atomic
    /// load; valid while the object that holds this cell is alive).
    @inlinable
    package mutating func _hookedPoint() -> Unmanaged<PropertyHook<Value>>? {
        let bits = _pointBits()
        guard bits != 0 else { return nil }
        let point = Unmanaged<PropertyHook<Value>>.fromOpaque(UnsafeRawPointer(bitPattern: bits).unsafelyUnwrapped)
        return point._withUnsafeGuaranteedRef { $0._hasHooks } ? point : nil
    }

    /// The hook point if it is made.
    @inlinable
    package mutating func _madePoint() -> PropertyHook<Value>? {
        let bits = _pointBits()
        guard bits != 0 else { return nil }
        return Unmanaged<PropertyHook<Value>>.fromOpaque(UnsafeRawPointer(bitPattern: bits).unsafelyUnwrapped).takeUnretainedValue()
    }

    /// The hook point of the cell stored as `object`'s property `label`,
    /// named `name`, made if there is none yet (once, however many threads race).
    package static func _point(in object: AnyObject, label: String, name: String) -> PropertyHook<Value> {
        guard let field = _KeyPathResolver.hookedFields(of: type(of: object)).first(where: { $0.label == label }) else {
            preconditionFailure("\(type(of: object)) has no Hooked<\(Value.self)> property '\(label)'")
        }
        return _HookedCell<Value>.point(in: object, cellOffset: field.offset, name: name)
    }
}

/// An object held without keeping it alive and without a weak reference:
/// an unowned reference keeps its memory, and ``object`` retains it only if
/// it is not deinitializing (HookBind's endpoints). A weak reference would
/// give the object a side table, after which every retain and release of it
/// takes the runtime's slow path.
@usableFromInline package final class _ObjectReference<Object: AnyObject>: @unchecked Sendable {
    private let reference: _UnownedReference

    package init(_ object: Object) { reference = _UnownedReference(object) }

    /// The object, or nil once it has begun to deinitialize.
    package var object: Object? { reference.object.map { unsafeDowncast($0, to: Object.self) } }
}

extension CallBack {
    /// The old and the new value of a property set, read without checks:
    /// only for a hook of a `PropertyHook<Value>`, from inside its call
    /// (HookBind's subscribers, whose record is live by construction; the
    /// checked `oldValue(as:)` and `argument(_:as:)` ask the thread's frame
    /// each).
    @inlinable @inline(__always)
    package func _unsafePropertyValues<Value>(_ type: Value.Type) -> (old: Value, new: Value) {
        (oldValuePointer.unsafelyUnwrapped.assumingMemoryBound(to: Value.self).pointee,
         argumentPointers.pointee.unsafelyUnwrapped.assumingMemoryBound(to: Value.self).pointee)
    }

    /// The identity of the hook point the call is at (no reference counting).
    package var _hookPointID: ObjectIdentifier { ObjectIdentifier(point) }
}
