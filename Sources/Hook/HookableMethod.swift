import CHookThreads
import Synchronization

/// Makes a method of a class a hook point of each instance, in one line at
/// its declaration (FishBind's `post:selector:`).
///
/// ```swift
/// final class Account {
///     private(set) var balance = 0
///     @HookableMethod(Account.depositBody) var deposit    // the one line
///     private func depositBody(_ amount: Int) -> Int { balance += amount; return balance }
/// }
/// let account = Account()
/// try MethodHook.of(account, \.deposit).before { call in   // or account.$deposit
///     if try call.argument(0, as: Int.self) < 0 { try call.setArgument(0, to: 0) }
/// }
/// account.deposit(-5)                                      // 0
/// ```
///
/// `deposit` has the method's type, `(Int) -> Int`, and calling it runs the
/// hooks of that instance's hook point around the method, a function value
/// taken before the point was made (`button.onTap = account.deposit`) too. In its CallBacks
/// `target` is the instance and `selector` the property's name ("deposit").
/// The body is any method of the class (or any function taking the instance
/// first): `Account.depositBody` is `(Account) -> (Int) -> Int`.
@propertyWrapper
public struct HookableMethod<Object: AnyObject, each A, R> {
    @usableFromInline let method: (Object) -> (repeat each A) -> R
    /// The hook point, nil until first needed (see `Hooked._point`).
    @usableFromInline var _point: MethodHook<repeat each A, R>?

    public init(_ method: @escaping (Object) -> (repeat each A) -> R) {
        self.method = method
        self._point = nil
    }

    @available(*, unavailable, message: "@HookableMethod is only for properties of classes")
    public var wrappedValue: (repeat each A) -> R { fatalError("unavailable") }

    @available(*, unavailable, message: "$method of @HookableMethod is only for properties of classes")
    public var projectedValue: MethodHook<repeat each A, R> { fatalError("unavailable") }

    /// The offset of `_point` in the struct (after the method's closure).
    @inlinable
    static var _pointOffset: Int { MemoryLayout<(Object) -> (repeat each A) -> R>.stride }

    /// The storage's address in `object`: the object's plus the offset
    /// remembered for the class and key path (the accessors of an
    /// unoptimized build).
    @usableFromInline
    static func _cellByOffset(_ object: Object, _ storage: ReferenceWritableKeyPath<Object, HookableMethod<Object, repeat each A, R>>) -> UnsafeRawPointer {
        UnsafeRawPointer(Unmanaged.passUnretained(object).toOpaque()) + _KeyPathResolver.cellOffset(object, storage)
    }

    /// The method's hook point: `object.$deposit` (made on first need).
    public static subscript(
        _enclosingInstance object: Object,
        projected projected: KeyPath<Object, MethodHook<repeat each A, R>>,
        storage storage: ReferenceWritableKeyPath<Object, HookableMethod<Object, repeat each A, R>>
    ) -> MethodHook<repeat each A, R> {
        _typedPoint(in: object, cellOffset: _KeyPathResolver.cellOffset(object, storage))
    }

    @inlinable
    public static subscript(
        _enclosingInstance object: Object,
        wrapped wrapped: KeyPath<Object, (repeat each A) -> R>,
        storage storage: ReferenceWritableKeyPath<Object, HookableMethod<Object, repeat each A, R>>
    ) -> (repeat each A) -> R {
        let method = object[keyPath: storage].method
        // The word is read atomically: another thread may be making the point.
        // The storage's address in an access of its own; unoptimized, where
        // ThreadSanitizer takes that access for a write (two threads calling
        // the method raced), by the offset remembered for the class and key
        // path, as `@Hookable`'s slots and `@Hooked`'s accessors.
        let cell: UnsafeRawPointer
        if _isDebugAssertConfiguration() {
            cell = _cellByOffset(object, storage)
        } else {
            cell = withUnsafeMutablePointer(to: &object[keyPath: storage]) { UnsafeRawPointer($0) }
        }
        let bits = hk_word_load(cell + _pointOffset)
        guard bits != 0 else {
            // No point yet, but one may be made before this function value
            // is called (`button.onTap = model.refresh`, hooked later: the
            // bare method it was never ran the hooks): the call looks again.
            // (The closure holds the object, so the cell stays valid.)
            return { (args: repeat each A) -> R in
                let body = method(object)
                let bits = hk_word_load(cell + _pointOffset)
                guard bits != 0 else { return body(repeat each args) }
                let point = Unmanaged<MethodHook<repeat each A, R>>.fromOpaque(UnsafeRawPointer(bitPattern: bits).unsafelyUnwrapped).takeUnretainedValue()
                guard point._hasHooks else { return body(repeat each args) }
                return try! _typedCall(point, target: .passUnretained(object), body, escapable: body, repeat each args)
            }
        }
        let point = Unmanaged<MethodHook<repeat each A, R>>.fromOpaque(UnsafeRawPointer(bitPattern: bits).unsafelyUnwrapped).takeUnretainedValue()
        if point._isProbed, _KeyPathResolver.answerProbe(point) { return method(object) }
        return { (args: repeat each A) -> R in
            let body = method(object)
            guard point._hasHooks else { return body(repeat each args) }
            // Cannot throw: the method does not, and CallBack.setError refuses it.
            return try! _typedCall(point, target: .passUnretained(object), body, escapable: body, repeat each args)
        }
    }
}

/// A `HookableMethod` of any type, as reflection meets it in a class's fields.
protocol _AnyHookableMethod {
    /// The hook point of the storage at `cellOffset` in `object`, made if needed.
    static func _point(in object: AnyObject, cellOffset: Int) -> HookPoint
}

extension HookableMethod: _AnyHookableMethod {
    static func _point(in object: AnyObject, cellOffset: Int) -> HookPoint {
        _typedPoint(in: object, cellOffset: cellOffset)
    }

    /// The hook point of the storage at `cellOffset` in `object`, made if needed.
    static func _typedPoint(in object: AnyObject, cellOffset: Int) -> MethodHook<repeat each A, R> {
        // The offset the call path computes is the layout's: `_point`, last, ends the
        // struct (checked in debug builds; a key path into a type with a pack is
        // refused at run time, so the size says it).
        assert(MemoryLayout<Self>.size == _pointOffset + MemoryLayout<UnsafeRawPointer?>.size,
               "HookableMethod._pointOffset is not the offset of _point")
        return _pointInWord(Unmanaged.passUnretained(object).toOpaque() + cellOffset + _pointOffset) {
            MethodHook<repeat each A, R>(object: object, cellOffset: cellOffset)
        }
    }
}

/// The hook point of one hookable method of one object (see ``HookableMethod``).
public final class MethodHook<each A, R>: HookPoint, _TupleArguments, @unchecked Sendable {
    /// The object's class and the offset of the method's storage in it, which name the method.
    private let objectType: AnyClass
    let cellOffset: Int
    /// The object, by an unowned reference.
    private let object: _UnownedReference

    /// `name`: given for `@Hookable` methods; nil for `@HookableMethod`, named by its storage's label.
    init(object: AnyObject, cellOffset: Int, name: String? = nil, canThrow: Bool = false) {
        objectType = type(of: object)
        self.cellOffset = cellOffset
        self.object = _UnownedReference(object)
        super.init(name: name, shape: .typed(kind: .method, arguments: repeat (each A).self, result: R.self, canThrow: canThrow), target: nil)
    }

    /// The object the method belongs to, if it is still alive.
    public override var target: AnyObject? { object.object }

    override func findLateName() -> String? { _KeyPathResolver.label(at: cellOffset, in: objectType) }

    /// The hook point of `object`'s hookable method at `keyPath`: `try MethodHook.of(account, \.deposit)`.
    /// - Throws: ``HookError`` if the key path does not name a `@HookableMethod` of `object`.
    public static func of<Object: AnyObject>(_ object: Object, _ keyPath: KeyPath<Object, (repeat each A) -> R>) throws(HookError) -> MethodHook<repeat each A, R> {
        guard let point: MethodHook<repeat each A, R> = _KeyPathResolver.methodPoint(object, keyPath) else {
            let written = _KeyPathResolver.describe(keyPath, of: Object.self, valueType: ((repeat each A) -> R).self)
            throw HookError(.invalidValue, point: written, "\(written) is not a @HookableMethod of \(Object.self) (declare the method's property with @HookableMethod(\(Object.self).body))")
        }
        return point
    }

    var _tupleID: ObjectIdentifier { ObjectIdentifier((repeat each A).self) }
    func _copyArguments(_ pointers: UnsafeMutablePointer<UnsafeMutableRawPointer?>, to tuple: UnsafeMutableRawPointer) {
        _TypedLayout.copyTuple(repeat (each A).self, slots: pointers, to: tuple)
    }
    func _assignArguments(_ pointers: UnsafeMutablePointer<UnsafeMutableRawPointer?>, from tuple: UnsafeRawPointer) {
        _TypedLayout.assignTuple(repeat (each A).self, slots: pointers, from: tuple)
    }
}
