import CHookThreads

// What the expansions of `@Hookable` (the HookMacros product) call. Public
// because the expansions are compiled in the user's module; underscored
// because nobody else should.

/// The storage a `@Hookable` method keeps in its object, `_$name`: one word,
/// the method's hook point once made (a +1 reference written once, by a
/// compare-and-exchange, released with the object), 0 until then. The same
/// design as `Hooked._point`.
@_documentation(visibility: internal)
public struct _HookableSlot<Point: HookPoint> {
    @usableFromInline var _point: Point?

    @inlinable
    public init() { _point = nil }
}

/// The address of a slot in its object. Optimized, the key path folds to the
/// field and the access ends at once: the word is loaded outside it (a C
/// load inside an access would make Swift track the access at run time).
/// Unoptimized, where a key path access allocates and ThreadSanitizer takes
/// the access for a write, the offset remembered for the class and key path.
@_documentation(visibility: internal)
@inlinable @inline(__always)
public func _hookableAddress<Object: AnyObject, Point>(
    _ object: Object, _ slot: ReferenceWritableKeyPath<Object, _HookableSlot<Point>>
) -> UnsafeMutableRawPointer {
    if _isDebugAssertConfiguration() { return _hookableAddressByOffset(object, slot) }
    return withUnsafeMutablePointer(to: &object[keyPath: slot]) { UnsafeMutableRawPointer($0) }
}

/// The address of a slot of an actor, whose key paths do not reach the
/// storage in place: an access of its own (the actor's methods that take it
/// run one at a time on the actor; its `nonisolated` `$name` takes it too).
@_documentation(visibility: internal)
@inlinable @inline(__always)
public func _hookableAddress<Point>(_ slot: inout _HookableSlot<Point>) -> UnsafeMutableRawPointer {
    withUnsafeMutablePointer(to: &slot) { UnsafeMutableRawPointer($0) }
}

/// `_hookableAddress` of an unoptimized build: the object's address plus the remembered offset.
@usableFromInline
func _hookableAddressByOffset<Object: AnyObject, Point>(
    _ object: Object, _ slot: ReferenceWritableKeyPath<Object, _HookableSlot<Point>>
) -> UnsafeMutableRawPointer {
    Unmanaged.passUnretained(object).toOpaque() + _KeyPathResolver.cellOffset(object, slot)
}

/// The slot's word, loaded atomically (another thread may be making the point): 0 while there is no hook point.
@_documentation(visibility: internal)
@inlinable @inline(__always)
public func _hookableLoad(_ address: UnsafeMutableRawPointer) -> UInt {
    hk_word_load(address)
}

extension MethodHook {
    /// `object.$name` of a `@Hookable` method: the point in the slot at `address`, made if needed.
    @_documentation(visibility: internal)
    public static func _hookablePoint(_ address: UnsafeMutableRawPointer, object: AnyObject, name: String, canThrow: Bool) -> MethodHook {
        _pointInWord(address) { MethodHook(object: object, cellOffset: -1, name: name, canThrow: canThrow) }
    }

    /// Whether the point in a slot's word (not 0) has hooks.
    @_documentation(visibility: internal)
    @inlinable @inline(__always)
    public static func _hookableIsHooked(_ bits: UInt) -> Bool {
        Unmanaged<MethodHook>.fromOpaque(UnsafeRawPointer(bitPattern: bits).unsafelyUnwrapped)._withUnsafeGuaranteedRef { $0._hasHooks }
    }

    /// A call of a `@Hookable` method whose hook point exists (`bits`, the
    /// slot's word). The body (the method's own, a nested function that
    /// captures `self`) is taken non-escaping down to the call path, so that
    /// it is a closure on the stack: made escaping, it would allocate its
    /// context on every call.
    @_documentation(visibility: internal)
    @inlinable
    public static func _hookableCall(_ bits: UInt, _ object: AnyObject, _ body: (repeat each A) -> R, _ args: repeat each A) -> R {
        let point = Unmanaged<MethodHook>.fromOpaque(UnsafeRawPointer(bitPattern: bits).unsafelyUnwrapped)
        return point._withUnsafeGuaranteedRef { point in
            guard point._hasHooks else { return body(repeat each args) }
            // Cannot throw: the method does not, and CallBack.setError refuses it.
            return try! _typedCall(point, target: .passUnretained(object), body, escapable: nil, repeat each args)
        }
    }

    /// A call of a throwing `@Hookable` method whose hook point exists.
    @_documentation(visibility: internal)
    @inlinable
    public static func _hookableThrowingCall(_ bits: UInt, _ object: AnyObject, _ body: (repeat each A) throws -> R, _ args: repeat each A) throws -> R {
        let point = Unmanaged<MethodHook>.fromOpaque(UnsafeRawPointer(bitPattern: bits).unsafelyUnwrapped)
        return try point._withUnsafeGuaranteedRef { point in
            guard point._hasHooks else { return try body(repeat each args) }
            return try _typedCall(point, target: .passUnretained(object), body, escapable: nil, repeat each args)
        }
    }

    /// An override's `super.name(...)`: runs with this method's hooks
    /// suppressed on the thread, since they run around the override already.
    @_documentation(visibility: internal)
    @inlinable
    public static func _hookableUnhooked<T, E: Error>(_ address: UnsafeMutableRawPointer, _ body: () throws(E) -> T) throws(E) -> T {
        let bits = hk_word_load(address)
        guard bits != 0 else { return try body() }
        let point = Unmanaged<MethodHook>.fromOpaque(UnsafeRawPointer(bitPattern: bits).unsafelyUnwrapped).takeUnretainedValue()
        return try point.withoutHooks(body)
    }
}

// A stored `var` of a `@Hookable` actor: the actor's key paths do not reach
// its isolated properties, so `@Hooked`'s enclosing-instance accessors cannot
// serve it. The expansion keeps a `Hooked<Value>` in a peer `_name`
// (`nonisolated(unsafe)`, reached only by these helpers and the actor's own
// accessors) and spells the accessors itself.
extension Hooked {
    /// The stored value (the actor's getter).
    @_documentation(visibility: internal)
    @inlinable
    public var _hookableValue: Value { _value }

    /// The address of a `Hooked` peer of an actor, in an access of its own.
    @_documentation(visibility: internal)
    @inlinable @inline(__always)
    public static func _hookableAddress(_ cell: inout Hooked<Value>) -> UnsafeMutableRawPointer {
        withUnsafeMutablePointer(to: &cell) { UnsafeMutableRawPointer($0) }
    }

    /// A set from the actor's setter (isolated, so sets of one actor run
    /// one at a time): a load, a test and the store while there is no hook
    /// point; else through the hooks.
    @_documentation(visibility: internal)
    @inlinable @inline(__always)
    public static func _hookableSet(_ cell: UnsafeMutableRawPointer, _ newValue: Value) {
        let bits = hk_word_load(cell + _pointOffset)
        if _fastPath(bits == 0) {
            cell.assumingMemoryBound(to: Value.self).pointee = newValue
            return
        }
        Unmanaged<PropertyHook<Value>>.fromOpaque(UnsafeRawPointer(bitPattern: bits).unsafelyUnwrapped)
            ._withUnsafeGuaranteedRef { $0._setAsProperty(newValue) }
    }

    /// `actor.$name`: the hook point of the `Hooked` at `cell` in `object`, made if needed.
    @_documentation(visibility: internal)
    public static func _hookablePoint(_ cell: UnsafeMutableRawPointer, object: AnyObject, name: String) -> PropertyHook<Value> {
        let offset = cell - UnsafeMutableRawPointer(Unmanaged.passUnretained(object).toOpaque())
        return _HookedCell<Value>.point(in: object, cellOffset: offset, name: name)
    }
}

extension MethodHook {
    /// The hook point of a `@Hookable` method named by its key path:
    /// `MethodHook.of(account, \.$deposit)`, the same as `account.$deposit`.
    /// (Swift 6.3 cannot form a key path to a method itself, `\.deposit`:
    /// method key paths, SE-0479, are an experimental feature of this compiler.)
    public static func of<Object: AnyObject>(_ object: Object, _ keyPath: KeyPath<Object, MethodHook<repeat each A, R>>) -> MethodHook<repeat each A, R> {
        object[keyPath: keyPath]
    }
}

/// The address of the stored field `field` (a peer the macro made: `_name`,
/// `_$name`) of an actor, for its `nonisolated` `$name`: found by the
/// runtime's field reflection, once per type and field, and never by an
/// access of the field, which would be a Swift access on another thread than
/// the actor's own accessors (ThreadSanitizer reports the two as a race, and
/// the language makes no promise for them).
@_documentation(visibility: internal)
public func _hookableFieldAddress(_ object: AnyObject, _ field: StaticString) -> UnsafeMutableRawPointer {
    let offset = _FieldOffsets.offset(of: field, in: type(of: object))
    return UnsafeMutableRawPointer(Unmanaged.passUnretained(object).toOpaque()) + offset
}

/// The address of a method's slot in an actor, from the method's body (on
/// the actor). Optimized, an access of its own (`access`: a load and a test
/// more than the plain method, as in a class). Unoptimized, the builds
/// ThreadSanitizer checks, by the field's offset: the slot's word is also
/// read and exchanged atomically off the actor by `$name`, and an access of
/// the slot there would be reported as a race with those.
@_documentation(visibility: internal)
@inlinable @inline(__always)
public func _hookableActorSlot(_ object: AnyObject, _ field: StaticString, _ access: () -> UnsafeMutableRawPointer) -> UnsafeMutableRawPointer {
    // A switch, not `if`: the build configuration is a constant, and a
    // return after `if` would be reported as never executed in debug builds.
    switch _isDebugAssertConfiguration() {
    case true: return _hookableFieldAddress(object, field)
    case false: return access()
    }
}

// MARK: - Codable models
//
// `@Hookable` gives each method a stored slot (`_$name`), and Swift
// synthesizes `Codable` over every stored property. A slot encodes nothing
// and decodes as empty (no hook point yet): these keyed-container overloads,
// more specific than the generic ones, are what the synthesized code calls,
// so the JSON of a `@Hookable` model is the plain class's.

extension _HookableSlot: Codable {
    /// Encodes nothing: a slot holds the instance's hook point, not its value.
    public func encode(to encoder: any Encoder) throws {}
    /// An empty slot.
    public init(from decoder: any Decoder) throws { self.init() }
}

extension KeyedEncodingContainer {
    /// A `@Hookable` method's slot writes no key.
    public mutating func encode<Point>(_ value: _HookableSlot<Point>, forKey key: Key) throws {}
}

extension KeyedDecodingContainer {
    /// A `@Hookable` method's slot reads no key: it starts empty.
    public func decode<Point>(_ type: _HookableSlot<Point>.Type, forKey key: Key) throws -> _HookableSlot<Point> {
        _HookableSlot()
    }
}
