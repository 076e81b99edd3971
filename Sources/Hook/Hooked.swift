import CFFIShim
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
/// (``CallBack/setArgument(_:to:)``) or ``CallBack/veto()`` the set; `after`
/// hooks run once the value is stored; an `instead` hook stores it by calling
/// ``CallBack/invokeOriginal()`` (or not).
///
/// Each instance has its own hook point, made with the instance (one small
/// object per property, which also holds the value): hooking one object's
/// property leaves every other object alone. Reading the property is two
/// plain loads (the hook point, its value); a set with no hook attached adds
/// one relaxed atomic load to the store and allocates nothing.
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
    /// The per-instance hook point, which also stores the value, so that the
    /// accessors are plain inlinable code: no key path, no enclosing-instance
    /// subscript on the hot path.
    @usableFromInline let owned: PropertyHook<Value>
    /// The same object, for the accessors: reaching it unowned costs no
    /// reference counting (`owned` keeps it alive as long as the property).
    @usableFromInline unowned(unsafe) let point: PropertyHook<Value>

    public init(wrappedValue: Value) {
        self.owned = PropertyHook(wrappedValue)
        self.point = owned
    }

    @inlinable
    public var wrappedValue: Value {
        get { point.value }
        nonmutating set {
            if _fastPath(!point.hasHooks) {
                point.value = newValue
            } else {
                point._set(newValue)
            }
        }
    }

    @available(*, unavailable, message: "$property of @Hooked is only for properties of classes")
    public var projectedValue: PropertyHook<Value> { fatalError("unavailable") }

    /// The property's hook point: `object.$name`.
    public static subscript<Object: AnyObject>(
        _enclosingInstance object: Object,
        projected projected: KeyPath<Object, PropertyHook<Value>>,
        storage storage: KeyPath<Object, Hooked<Value>>
    ) -> PropertyHook<Value> {
        let point = object[keyPath: storage].owned
        point._noteObject(object)
        return point
    }
}

/// The hook point of one `@Hooked` property of one object (see ``Hooked``).
///
/// Get it with ``of(_:_:)`` from the object and the property's key path, or
/// from the projection `object.$property`. It holds its object weakly.
public final class PropertyHook<Value>: HookPoint, @unchecked Sendable {
    /// The object, unretained, once known (0 before): a set runs on its live object.
    private let objectBits = Atomic<Int>(0)
    /// The property's value (read and written by the object's accessors).
    @exclusivity(unchecked) @usableFromInline var value: Value

    init(_ value: Value, name: String? = nil) {
        self.value = value
        super.init(name: name, shape: _CallShape(kind: "property", arguments: Value.self, result: Void.self, canThrow: false), target: nil)
    }

    /// The hook point of `object`'s `@Hooked` property at `keyPath`.
    ///
    /// ```swift
    /// let point = try PropertyHook.of(model, \.title)
    /// ```
    ///
    /// The first lookup of a key path on a class learns which property it
    /// names by making one set of the current value (which the property's own
    /// hooks do not see); later lookups go by the remembered name. A key path
    /// must name the `@Hooked` property itself, not a computed property.
    ///
    /// - Throws: ``HookError`` if the key path does not name a `@Hooked` property of `object`.
    public static func of<Object: AnyObject>(_ object: Object, _ keyPath: ReferenceWritableKeyPath<Object, Value>) throws(HookError) -> PropertyHook<Value> {
        let point: PropertyHook<Value>? = _KeyPathResolver.resolve(object, keyPath, kind: "property") { candidates in
            for candidate in candidates { candidate.setProbing(true) }
            defer { for candidate in candidates { candidate.setProbing(false) } }
            object[keyPath: keyPath] = object[keyPath: keyPath]
        }
        point?._noteObject(object)
        guard let point else {
            throw HookError(.invalidValue, point: "\(Object.self).\(keyPath)", "the key path does not name a @Hooked property of type \(Value.self) of \(Object.self)")
        }
        return point
    }

    /// The slow path of a set: hooks attached, or a key path probe.
    @inlinable
    func _set(_ newValue: Value) {
        if _KeyPathResolver.answerProbe(self) { return }
        var new = newValue
        let old = value
        let stored = withUnsafePointer(to: old) { oldPointer in
            withUnsafeMutablePointer(to: &new) { newPointer in
                var slot: UnsafeMutableRawPointer? = UnsafeMutableRawPointer(newPointer)
                return withUnsafeMutablePointer(to: &slot) { slots in
                    var nothing: Void = ()
                    return withUnsafeMutablePointer(to: &nothing) { result in
                        guard var call = _begin(slots, UnsafeMutableRawPointer(result), target: _object,
                                                oldValue: UnsafeRawPointer(oldPointer)) else { return false }
                        if call._runsPlainOriginal {
                            value = newPointer.pointee
                            call._hasResult = true
                        } else {
                            let invoker: any _OriginalInvoker = _StoreInvoker(point: self, slots: slots)
                            withUnsafePointer(to: invoker) { _runInsteadHooks(&call, original: UnsafeRawPointer($0)) }
                        }
                        _ = _end(&call)
                        return true
                    }
                }
            }
        }
        if !stored { value = new }
    }

    /// The object this property belongs to, unretained (alive while its property is set).
    @usableFromInline
    var _object: Unmanaged<AnyObject>? {
        let bits = objectBits.load(ordering: .acquiring)
        return bits == 0 ? nil : Unmanaged.fromOpaque(UnsafeRawPointer(bitPattern: bits)!)
    }

    /// Records `object` as the target of this point's calls, unretained and
    /// without reflection (a point made by its object, named at creation).
    func _setTarget(_ object: AnyObject) {
        objectBits.store(Int(bitPattern: Unmanaged.passUnretained(object).toOpaque()), ordering: .releasing)
    }

    /// Learns the object (and the property's name) when the hook point is
    /// reached from it: by ``of(_:_:)`` or the `$property` projection.
    func _noteObject(_ object: AnyObject) {
        guard objectBits.load(ordering: .acquiring) == 0 else { return }
        noteIdentity(target: object, name: _KeyPathResolver.name(of: self, in: object))
        _setTarget(object)
    }
}

/// The original of a property set: store the (possibly replaced) new value.
@usableFromInline
struct _StoreInvoker<Value>: _OriginalInvoker {
    @usableFromInline unowned(unsafe) let point: PropertyHook<Value>
    @usableFromInline let slots: UnsafeMutablePointer<UnsafeMutableRawPointer?>

    @inlinable
    init(point: PropertyHook<Value>, slots: UnsafeMutablePointer<UnsafeMutableRawPointer?>) {
        self.point = point
        self.slots = slots
    }

    @inlinable
    func invoke(_ call: inout CallBack) {
        point.value = slots.pointee.unsafelyUnwrapped.assumingMemoryBound(to: Value.self).pointee
        call._hasResult = true
    }
}
