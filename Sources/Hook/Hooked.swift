import CHookThreads
import Synchronization

/// Makes every set of a class property a hook point of that instance.
///
/// ```swift
/// final class Person {
///     @Hooked var name = ""
/// }
/// let ada = Person()
/// let name = try PropertyHook.of(ada, \.name)     // or ada.$name
/// name.before { call in                           // veto or replace the new value
///     if try call.argument(0, as: String.self).isEmpty { try call.veto() }
/// }
/// name.after { call in
///     print(call.target!, call.selector, try call.oldValue(as: String.self), "->", call.args[0])
/// }
/// ada.name = "Ada"                                // Person name  -> Ada
/// ```
///
/// In a CallBack of a set, `target` is the instance, `selector` the property
/// name, `args` the one new value, ``CallBack/oldValue(as:)`` the value before
/// the set, and the result is `Void`. `before` hooks may replace the new value
/// (``CallBack/setArgument(_:to:)-7i94p``) or ``CallBack/veto()`` the set; `after`
/// hooks run once the value is stored, and not for a vetoed set; an `instead`
/// hook stores it by calling ``CallBack/invokeOriginal()`` (or not).
///
/// Each instance has its own hook point, made the first time something needs
/// it (a hook, ``PropertyHook/of(_:_:)``, `$name`, a fish, a binding), exactly
/// once however many threads race to make it: hooking one object's property
/// leaves every other object alone. Until then the property costs its value
/// plus one word (where the hook point will be), and making the object
/// allocates nothing more. Reading the property is one plain load; a set with
/// no hook point is a load, a test and the store, with no dynamic
/// exclusivity check; with a hook point and no hook, a call more. Neither
/// allocates.
///
/// The hooks of a set run outside any access to the property's storage, so
/// they may read and set the property. `@Hooked` is for properties of
/// classes (its accessors need the object).
///
/// A hook that sets the same property of the same object is not re-entered:
/// that set is stored without hooks.
///
/// ## Threads
/// The hook point is thread-safe: sets on any thread run the hooks while
/// hooks are added and removed. The stored value itself is as safe as any
/// stored property: sets of one instance from several threads need the same
/// synchronization a plain `var` would.
@propertyWrapper
public struct Hooked<Value> {
    /// The value, stored inline in the object.
    @usableFromInline var _value: Value
    /// The hook point, `nil` until first needed. Written once, by a
    /// compare-and-exchange (`_pointInWord`), and read without retaining
    /// it; released with the object.
    @usableFromInline var _point: PropertyHook<Value>?

    public init(wrappedValue: Value) {
        _value = wrappedValue
        _point = nil
    }

    @available(*, unavailable, message: "@Hooked is only for properties of classes")
    public var wrappedValue: Value {
        get { fatalError("unavailable") }
        set { fatalError("unavailable") }
    }

    /// The property's accessors. Inlined into the class's own accessors, the
    /// two key paths fold away: a get is one load, a set with no hook point is
    /// a load, a test and a store. Each touches the storage in one short
    /// access of its own, so hooks run outside any access to it (they may read
    /// and set the property) and nothing is tracked at run time.
    @inlinable
    public static subscript<Object: AnyObject>(
        _enclosingInstance object: Object,
        wrapped wrapped: ReferenceWritableKeyPath<Object, Value>,
        storage storage: ReferenceWritableKeyPath<Object, Hooked<Value>>
    ) -> Value {
        @inline(__always) get {
            // Unoptimized, a key path access allocates: go by the remembered offset.
            // (A switch: after `if`, debug builds would call the second return never executed.)
            switch _isDebugAssertConfiguration() {
            case true: return _KeyPathResolver.cell(object, storage).pointee._value
            case false: return object[keyPath: storage]._value
            }
        }
        @inline(__always) set {
            // The word is read atomically: another thread may be making the point.
            let bits: UInt
            if _isDebugAssertConfiguration() {
                let cell = _KeyPathResolver.cell(object, storage)
                bits = hk_word_load(UnsafeRawPointer(cell) + _pointOffset)
                if bits == 0 { cell.pointee._value = newValue }
            } else {
                // The storage's address (a class's stored property does not
                // move), taken in an access of its own; the load is a C call,
                // which inside an access would make Swift track the access.
                let cell = withUnsafeMutablePointer(to: &object[keyPath: storage]) { UnsafeRawPointer($0) }
                bits = hk_word_load(cell + _pointOffset)
                if bits == 0 { object[keyPath: storage]._value = newValue }
            }
            if _fastPath(bits == 0) { return }
            Unmanaged<PropertyHook<Value>>.fromOpaque(UnsafeRawPointer(bitPattern: bits).unsafelyUnwrapped)
                ._withUnsafeGuaranteedRef { $0._setAsProperty(newValue) }
        }
    }

    /// The word of `_point`, loaded atomically: another thread may be making
    /// the hook point. Reached through `self` rather than an access of
    /// `_point` itself, which ThreadSanitizer would take for a write racing
    /// with that thread.
    @inlinable @inline(__always)
    mutating func _pointBits() -> UInt {
        withUnsafeMutablePointer(to: &self) { hk_word_load(UnsafeRawPointer($0) + Self._pointOffset) }
    }

    /// The offset of `_point` (`_value` is at 0): Swift lays a struct's
    /// stored properties out in order, each at its alignment (an optional
    /// class reference's is a pointer's; spelt so, unspecialized code needs
    /// no metadata of `PropertyHook<Value>?` to compute it).
    @inlinable
    static var _pointOffset: Int {
        let alignment = MemoryLayout<UnsafeRawPointer?>.alignment
        return (MemoryLayout<Value>.size + alignment - 1) & ~(alignment - 1)
    }

    @available(*, unavailable, message: "$property of @Hooked is only for properties of classes")
    public var projectedValue: PropertyHook<Value> { fatalError("unavailable") }

    /// The property's hook point: `object.$name` (made on first need).
    public static subscript<Object: AnyObject>(
        _enclosingInstance object: Object,
        projected projected: KeyPath<Object, PropertyHook<Value>>,
        storage storage: ReferenceWritableKeyPath<Object, Hooked<Value>>
    ) -> PropertyHook<Value> {
        _HookedCell<Value>.point(in: object, cellOffset: _KeyPathResolver.cellOffset(object, storage))
    }
}

/// The hook point kept in the word at `word`, made by `make` if the word is
/// 0: exactly one of several racing threads installs its point (a +1
/// reference, released with the storage); the others release theirs unseen.
func _pointInWord<Point: AnyObject>(_ word: UnsafeMutableRawPointer, _ make: () -> Point) -> Point {
    let existing = hk_word_load(word)
    if existing != 0 { return Unmanaged<Point>.fromOpaque(UnsafeRawPointer(bitPattern: existing)!).takeUnretainedValue() }
    let desired = Unmanaged.passRetained(make()).toOpaque()
    let previous = hk_word_compare_exchange(word, 0, UInt(bitPattern: desired))
    if previous == 0 { return Unmanaged<Point>.fromOpaque(desired).takeUnretainedValue() }
    Unmanaged<Point>.fromOpaque(desired).release()
    return Unmanaged<Point>.fromOpaque(UnsafeRawPointer(bitPattern: previous)!).takeUnretainedValue()
}

/// The making of a `Hooked<Value>`'s hook point.
enum _HookedCell<Value> {
    /// The hook point of the `Hooked<Value>` at `cellOffset` bytes into `object`, made if needed.
    static func point(in object: AnyObject, cellOffset: Int, name: String? = nil) -> PropertyHook<Value> {
        let cell = Unmanaged.passUnretained(object).toOpaque() + cellOffset
        // The offset the call path computes without metadata is the layout's:
        // `_point`, last, ends the struct (checked in debug builds; by size,
        // since `offset(of:)` would make a key path, an allocation, per point).
        assert(MemoryLayout<Hooked<Value>>.size == Hooked<Value>._pointOffset + MemoryLayout<UnsafeRawPointer?>.size,
               "Hooked<\(Value.self)>._pointOffset is not the offset of _point")
        return _pointInWord(cell + Hooked<Value>._pointOffset) {
            PropertyHook<Value>(storage: cell.assumingMemoryBound(to: Value.self), object: object, cellOffset: cellOffset, name: name)
        }
    }
}

/// A `Hooked` of any value type, as reflection meets it in a class's fields.
protocol _AnyHooked {}
extension Hooked: _AnyHooked {}

/// The hook point of one `@Hooked` property of one object (see ``Hooked``).
///
/// Get it with ``of(_:_:)`` from the object and the property's key path, or
/// from the projection `object.$property`. It holds its object weakly; the
/// object holds it (from its first need until the object deinitializes).
public final class PropertyHook<Value>: HookPoint, @unchecked Sendable {
    /// Where the value lives: inline in the object (`@Hooked`), or owned by
    /// this point (a standalone point, HookBind's observables).
    @usableFromInline let storage: UnsafeMutablePointer<Value>
    /// The object, unretained (nil for a standalone point until adopted): a set runs on its live object.
    @usableFromInline let objectBits = Atomic<Int>(0)
    /// The offset of the `Hooked` storage in the object; -1 for a standalone point.
    let cellOffset: Int
    /// The object's class, which names the property (kept: the name is asked for after the object is gone too).
    private let objectType: AnyClass?
    /// The object, by an unowned reference (nil for a standalone point).
    private let objectReference: _UnownedReference?

    /// The point of a `@Hooked` property whose storage is in `object`.
    init(storage: UnsafeMutablePointer<Value>, object: AnyObject, cellOffset: Int, name: String? = nil) {
        self.storage = storage
        self.cellOffset = cellOffset
        self.objectType = type(of: object)
        self.objectReference = _UnownedReference(object)
        super.init(name: name, shape: .typed(kind: .property, arguments: Value.self, result: Void.self, canThrow: false), target: nil)
        _setTarget(object)
    }

    /// A standalone point that owns its storage, holding `value`.
    init(_ value: Value, name: String) {
        storage = .allocate(capacity: 1)
        storage.initialize(to: value)
        cellOffset = -1
        objectType = nil
        objectReference = nil
        super.init(name: name, shape: .typed(kind: .property, arguments: Value.self, result: Void.self, canThrow: false), target: nil)
    }

    deinit {
        if cellOffset < 0 {
            storage.deinitialize(count: 1)
            storage.deallocate()
        }
    }

    /// The object the property belongs to, if it is still alive.
    public override var target: AnyObject? {
        switch objectReference {
        case .some(let reference): reference.object
        case .none: super.target
        }
    }

    override func findLateName() -> String? {
        guard let objectType else { return nil }
        return _KeyPathResolver.label(at: cellOffset, in: objectType)
    }

    /// The hook point of `object`'s `@Hooked` property at `keyPath`.
    ///
    /// ```swift
    /// let point = try PropertyHook.of(model, \.title)
    /// ```
    ///
    /// The first lookup of a key path on a class learns which property it
    /// names by making one set of the current value (which the property's own
    /// hooks do not see); it is remembered per class and key path, so a
    /// lookup on any other object of the class goes straight to its storage.
    /// A key path must name the `@Hooked` property itself, not a computed property.
    ///
    /// - Throws: ``HookError`` if the key path does not name a `@Hooked` property of `object`.
    public static func of<Object: AnyObject>(_ object: Object, _ keyPath: ReferenceWritableKeyPath<Object, Value>) throws(HookError) -> PropertyHook<Value> {
        guard let point = _KeyPathResolver.propertyPoint(object, keyPath) else {
            let written = _KeyPathResolver.describe(keyPath, of: Object.self, valueType: Value.self)
            throw HookError(.invalidValue, point: written, "\(written) is not a @Hooked property of \(Object.self) (only a property declared @Hooked var has a hook point)")
        }
        return point
    }

    /// A set from the property's setter once the hook point exists: through
    /// the hooks if there are any, else a plain store. Inlined into the
    /// setter: the test and the store are a few instructions, and a hooked
    /// set is one call (to `_set`, which stays out of line).
    @inlinable @inline(__always)
    final func _setAsProperty(_ newValue: Value) {
        if _fastPath(!_hasHooks) {
            storage.pointee = newValue
        } else {
            _set(newValue)
        }
    }

    /// The slow path of a set: hooks attached, or a key path probe.
    ///
    /// One stack allocation holds the old and the new value, the new value's
    /// slot and the call's record: a binding's delivery runs this code
    /// unspecialized, where each `withUnsafePointer` would be a call into a
    /// generic function with a closure of its own.
    @inlinable @inline(never)
    func _set(_ newValue: Value) {
        if _isProbed, _KeyPathResolver.answerProbe(self) { return }
        if _Hooks(bits: current.load(ordering: .relaxed)).isLoneTypedAfter, _setWithTypedAfter(newValue) { return }
        let slotOffset = _align(2 * MemoryLayout<Value>.stride, MemoryLayout<UnsafeMutableRawPointer?>.alignment)
        let recordAlignment = MemoryLayout<CallBack>.alignment
        let recordOffset = _align(slotOffset + MemoryLayout<UnsafeMutableRawPointer?>.stride, recordAlignment)
        // Unprotected: the buffer is only written through typed pointers of
        // known size, and a stack canary costs every hooked set a check.
        _propertySet(self, newValue, byteCount: recordOffset + MemoryLayout<CallBack>.size,
                     alignment: Swift.max(MemoryLayout<Value>.alignment, recordAlignment),
                     slotOffset: slotOffset, recordOffset: recordOffset)
    }

    /// A set whose one hook is a typed after hook (`_TypedSetHook`), for a
    /// caller that saw one (a racy hint): the value is stored in a frame
    /// without a serial, then the hook runs with the old and the new value,
    /// with no record. `false`, with nothing done and the frame left, when
    /// the hooks changed meanwhile: the caller takes the general path.
    @inlinable @inline(__always)
    final func _setWithTypedAfter(_ newValue: Value) -> Bool {
        let thread = hk_thread_self().unsafelyUnwrapped
        let frame = hk_thread_enter_unrecorded(thread, pointID)
        guard frame >= 0 else {
            // Reentrant or suppressed: the store only.
            storage.pointee = newValue
            return true
        }
        let hooks = _Hooks(bits: current.load(ordering: .sequentiallyConsistent))
        guard hooks.isLoneTypedAfter else {
            hk_thread_leave_unrecorded(thread, frame)
            return false
        }
        // Moved out and in: no copy of either value.
        let old = storage.move()
        storage.initialize(to: newValue)
        _runTyped(hooks.single, as: _TypedSetHook<Value>.self) { hook in try hook.typedBody(old, newValue) }
        hk_thread_leave_unrecorded(thread, frame)
        return true
    }

    /// Adds a typed after hook: it receives the value before the set and
    /// the value stored, after each set that stores one.
    ///
    /// ```swift
    /// model.$title.didSet { old, new in print("title: \(old) -> \(new)") }
    /// ```
    ///
    /// The cheapest way to observe a property: when it is the hook point's
    /// only hook, a set makes no ``CallBack``. Among other hooks it runs as
    /// an after hook in the order added, and sees the value a before hook
    /// chose; it does not run for a vetoed set. It observes: to change or
    /// refuse a value, use ``HookPoint/before(owner:_:)``.
    ///
    /// Like any hook it runs on the setting thread, under the reentrancy
    /// guard (a set of this property from inside it stores only), and not
    /// inside ``HookPoint/withoutHooks(_:)``; an error it throws goes to
    /// ``HookPoint/hookErrorHandler``.
    ///
    /// - Parameters:
    ///   - owner: If given, the hook is tied to it, as with ``HookPoint/after(owner:_:)``.
    ///   - body: The hook: the old value, then the new one.
    /// - Returns: A token whose `remove()` detaches the hook.
    @discardableResult
    public func didSet(owner: AnyObject? = nil, _ body: @escaping (_ oldValue: Value, _ newValue: Value) throws -> Void) -> HookToken {
        _addTyped(_TypedSetHook<Value>(point: self, owner: owner, body), owner: owner)
    }

    /// The body of ``_set(_:)``, forced into the closure of `_propertySet`,
    /// which is inlined in turn: one function per set.
    @inlinable @inline(__always)
    func _set(_ newValue: Value, in base: UnsafeMutableRawPointer, slotOffset: Int, recordOffset: Int) {
        let old = base.bindMemory(to: Value.self, capacity: 2)
        let new = old + 1
        old.initialize(to: storage.pointee)
        new.initialize(to: newValue)
        let slots = (base + slotOffset).bindMemory(to: UnsafeMutableRawPointer?.self, capacity: 1)
        slots.initialize(to: UnsafeMutableRawPointer(new))
        let call = (base + recordOffset).bindMemory(to: CallBack.self, capacity: 1)
        // The result of a set is Void: nothing is ever stored at its address.
        if _begin(call, slots, base, target: _object, oldValue: UnsafeRawPointer(old)) {
            if call.pointee._runsPlainOriginal {
                storage.pointee = new.pointee
                call.pointee._hasResult = true
            } else {
                _runInsteadHooks(&call.pointee, original: nil)  // invokeOriginal() reaches _invokeOriginal below
            }
            _finish(call, isCFunction: false)
            // `move()`, not `deinitialize(count:)`: unspecialized, that one
            // is a call to the runtime's array destroy.
            _ = new.move()
        } else {
            storage.pointee = new.move()
        }
        _ = old.move()
    }

    /// The object this property belongs to, unretained (alive while its property is set).
    @inlinable
    var _object: Unmanaged<AnyObject>? {
        let bits = objectBits.load(ordering: .acquiring)
        return bits == 0 ? nil : Unmanaged.fromOpaque(UnsafeRawPointer(bitPattern: bits)!)
    }

    /// The original of a set, for `invokeOriginal()`: stores the (possibly
    /// replaced) new value. A class method, so that a set hands no invoker
    /// to the instead hooks.
    override func _invokeOriginal(_ call: inout CallBack) {
        storage.pointee = call.argumentPointers.pointee.unsafelyUnwrapped.assumingMemoryBound(to: Value.self).pointee
        call._hasResult = true
    }

    /// Records `object` as the target of this point's calls, unretained.
    func _setTarget(_ object: AnyObject) {
        objectBits.store(Int(bitPattern: Unmanaged.passUnretained(object).toOpaque()), ordering: .releasing)
    }
}

/// An object named without keeping it alive and without a weak reference:
/// an unowned reference keeps its memory (not the object), and ``object``
/// retains it only if it is not deinitializing. A weak reference would give
/// the object a side table, and every later retain and release of it would
/// take the runtime's slow path.
///
/// Noncopyable, so that every keep has its drop: made by keeping the
/// object's memory, copied only by `init(copying:)` (one more keep),
/// dropped in its `deinit`. One pointer wide.
@usableFromInline
package struct _UnownedReference: ~Copyable, @unchecked Sendable {
    /// The object's address (compared, never followed without `object`).
    @usableFromInline package let memory: UnsafeMutableRawPointer

    package init(_ object: AnyObject) {
        memory = Unmanaged.passUnretained(object).toOpaque()
        hk_object_keep_memory(memory)
    }

    /// One more unowned reference to the same object.
    package init(copying other: borrowing _UnownedReference) {
        memory = other.memory
        hk_object_keep_memory(memory)
    }

    deinit { hk_object_drop_memory(memory) }

    /// The object, or nil once it has begun to deinitialize. (Inlinable:
    /// a binding asks on every delivery.)
    @inlinable
    package var object: AnyObject? { Self.object(at: memory) }

    // For the one holder that cannot be a value of this type: an unowned
    // reference set after its holder is made, in an atomic word (a binding
    // endpoint's hook). Each `keepMemory` needs one `dropMemory`.
    package static func keepMemory(of object: AnyObject) -> UnsafeMutableRawPointer {
        let memory = Unmanaged.passUnretained(object).toOpaque()
        hk_object_keep_memory(memory)
        return memory
    }
    package static func dropMemory(_ memory: UnsafeMutableRawPointer) { hk_object_drop_memory(memory) }
    @inlinable
    package static func object(at memory: UnsafeMutableRawPointer) -> AnyObject? {
        guard let strong = hk_object_try_retain(memory) else { return nil }
        return Unmanaged<AnyObject>.fromOpaque(strong).takeRetainedValue()
    }
}

/// The stack block of a hooked set, and its body run in it. A free function,
/// not a method: the closure of a method of the generic class was left out
/// of line (a second function per set), this one is inlined.
@inlinable @inline(__always)
func _propertySet<Value>(_ point: PropertyHook<Value>, _ newValue: Value, byteCount: Int, alignment: Int, slotOffset: Int, recordOffset: Int) {
    _withUnprotectedUnsafeTemporaryAllocation(byteCount: byteCount, alignment: alignment) { memory in
        point._set(newValue, in: memory.baseAddress.unsafelyUnwrapped, slotOffset: slotOffset, recordOffset: recordOffset)
    }
}

// MARK: - Conformances that follow the value's
//
// A `@Hooked` property stores a `Hooked<Value>`, and what Swift synthesizes
// for the enclosing type (a `Codable` model, a `@Hookable` class that is
// `Codable`) goes through it: each conformance is the value's, and the hook
// point (the object's, not part of its value) takes no part.

extension Hooked: Encodable where Value: Encodable {
    /// Encodes the value alone: the JSON of a `@Hooked` property is the plain property's.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(_value)
    }
}

extension Hooked: Decodable where Value: Decodable {
    /// Decodes the value alone; the hook point is made on first need, as for any instance.
    public init(from decoder: any Decoder) throws {
        self.init(wrappedValue: try decoder.singleValueContainer().decode(Value.self))
    }
}

extension Hooked: Equatable where Value: Equatable {
    /// The values compared; hook points (each object's own) are not.
    public static func == (lhs: Hooked, rhs: Hooked) -> Bool { lhs._value == rhs._value }
}

extension Hooked: Hashable where Value: Hashable {
    /// The value's hash.
    public func hash(into hasher: inout Hasher) { hasher.combine(_value) }
}

/// The value and a hook point, which is `Sendable` (it synchronizes itself).
extension Hooked: Sendable where Value: Sendable {}

// An optional `@Hooked` property keeps the plain optional's JSON: left out
// when nil, and nil when its key is missing (synthesized code calls these,
// more specific than the generic `encode`/`decode`, for a `Hooked<T?>`).
extension KeyedEncodingContainer {
    /// Encodes an optional `@Hooked` property as `encodeIfPresent` does a plain optional.
    public mutating func encode<T: Encodable>(_ value: Hooked<T?>, forKey key: Key) throws {
        try encodeIfPresent(value._value, forKey: key)
    }
}

extension KeyedDecodingContainer {
    /// Decodes an optional `@Hooked` property as `decodeIfPresent` does a plain optional.
    public func decode<T: Decodable>(_ type: Hooked<T?>.Type, forKey key: Key) throws -> Hooked<T?> {
        Hooked(wrappedValue: try decodeIfPresent(T.self, forKey: key))
    }
}
