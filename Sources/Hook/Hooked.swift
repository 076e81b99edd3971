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
    /// The per-instance hook point, which also stores the value: a set then
    /// only reads the object's storage, never writes through a key path.
    @usableFromInline let point: PropertyHook<Value>

    public init(wrappedValue: Value) {
        self.point = PropertyHook(wrappedValue)
    }

    @available(*, unavailable, message: "@Hooked is only for properties of classes")
    public var wrappedValue: Value {
        get { fatalError("unavailable") }
        set { fatalError("unavailable") }
    }

    /// The property's hook point: `object.$name`.
    public var projectedValue: PropertyHook<Value> { point }

    @inlinable
    public static subscript<Object: AnyObject>(
        _enclosingInstance object: Object,
        wrapped wrapped: ReferenceWritableKeyPath<Object, Value>,
        storage storage: ReferenceWritableKeyPath<Object, Hooked<Value>>
    ) -> Value {
        get { object[keyPath: storage].point.value }
        set {
            let point = object[keyPath: storage].point
            if _fastPath(!point.hasHooks) {
                point.value = newValue
            } else {
                point._set(newValue, on: object)
            }
        }
    }
}

/// The hook point of one `@Hooked` property of one object (see ``Hooked``).
///
/// Get it with ``of(_:_:)`` from the object and the property's key path, or
/// from the projection `object.$property`. It holds its object weakly.
public final class PropertyHook<Value>: HookPoint, @unchecked Sendable {
    private let identified = Atomic<Bool>(false)
    /// The property's value (read and written by the object's accessors).
    @usableFromInline var value: Value

    init(_ value: Value) {
        self.value = value
        super.init(name: nil, shape: _CallShape(kind: "property", arguments: Value.self, result: Void.self, canThrow: false), target: nil)
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
        guard let point else {
            throw HookError(.invalidValue, point: "\(Object.self).\(keyPath)", "the key path does not name a @Hooked property of type \(Value.self) of \(Object.self)")
        }
        return point
    }

    /// The slow path of a set: hooks attached, or a key path probe.
    @inlinable
    func _set(_ newValue: Value, on object: AnyObject) {
        if _arrive(object) { return }
        var new = newValue
        let old = value
        let outcome = withUnsafePointer(to: old) { oldPointer in
            withUnsafeMutablePointer(to: &new) { newPointer in
                var slot: UnsafeMutableRawPointer? = UnsafeMutableRawPointer(newPointer)
                return withUnsafeMutablePointer(to: &slot) { slots in
                    let invoker: any _OriginalInvoker = _StoreInvoker(point: self, slots: slots)
                    return withUnsafePointer(to: invoker) { invoker in
                        var nothing: Void = ()
                        return withUnsafeMutablePointer(to: &nothing) { result in
                            _dispatch(slots, UnsafeMutableRawPointer(result), target: .passUnretained(object),
                                      original: UnsafeRawPointer(invoker), oldValue: UnsafeRawPointer(oldPointer))
                        }
                    }
                }
            }
        }
        if outcome == nil { value = new }
    }

    /// Notes the object at the first hooked set, and answers a key path probe.
    /// Returns whether this set was a probe (and must not store).
    @usableFromInline
    func _arrive(_ object: AnyObject) -> Bool {
        if !identified.load(ordering: .relaxed) {
            // Once: the name is the label of this hook point's storage in the object.
            noteIdentity(target: object, name: _KeyPathResolver.name(of: self, in: object))
            identified.store(true, ordering: .relaxed)
        }
        return _KeyPathResolver.answerProbe(self, object)
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
