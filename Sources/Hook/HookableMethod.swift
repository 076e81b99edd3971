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
/// hooks of that instance's hook point around the method. In its CallBacks
/// `target` is the instance and `selector` the property's name ("deposit").
/// The body is any method of the class (or any function taking the instance
/// first): `Account.depositBody` is `(Account) -> (Int) -> Int`.
@propertyWrapper
public struct HookableMethod<Object: AnyObject, each A, R>: _HookPointStorage {
    @usableFromInline let method: (Object) -> (repeat each A) -> R
    @usableFromInline let point: MethodHook<repeat each A, R>

    public init(_ method: @escaping (Object) -> (repeat each A) -> R) {
        self.method = method
        self.point = MethodHook()
    }

    @available(*, unavailable, message: "@HookableMethod is only for properties of classes")
    public var wrappedValue: (repeat each A) -> R { fatalError("unavailable") }

    /// The method's hook point: `object.$deposit`.
    public var projectedValue: MethodHook<repeat each A, R> { point }

    var _hookPoint: HookPoint { point }

    @inlinable
    public static subscript(
        _enclosingInstance object: Object,
        wrapped wrapped: KeyPath<Object, (repeat each A) -> R>,
        storage storage: KeyPath<Object, HookableMethod<Object, repeat each A, R>>
    ) -> (repeat each A) -> R {
        let this = object[keyPath: storage]
        let method = this.method
        let point = this.point
        _ = point._arrive(object)
        return { (args: repeat each A) -> R in
            let body = method(object)
            guard point.hasHooks else { return body(repeat each args) }
            // Cannot throw: the method does not, and CallBack.setError refuses it.
            return try! _typedCall(point, target: .passUnretained(object), body, repeat each args)
        }
    }
}

/// The hook point of one hookable method of one object (see ``HookableMethod``).
public final class MethodHook<each A, R>: HookPoint, _TupleArguments, @unchecked Sendable {
    private let identified = Atomic<Bool>(false)

    init() {
        super.init(name: nil, shape: .typed(kind: "method", arguments: repeat (each A).self, result: R.self, canThrow: false), target: nil)
    }

    /// The hook point of `object`'s hookable method at `keyPath`: `try MethodHook.of(account, \.deposit)`.
    /// - Throws: ``HookError`` if the key path does not name a `@HookableMethod` of `object`.
    public static func of<Object: AnyObject>(_ object: Object, _ keyPath: KeyPath<Object, (repeat each A) -> R>) throws(HookError) -> MethodHook<repeat each A, R> {
        let point: MethodHook<repeat each A, R>? = _KeyPathResolver.resolve(object, keyPath, kind: "method") { _ in
            // Through AnyKeyPath: generic code cannot hold a value of a variadic function type.
            _ = object[keyPath: keyPath as AnyKeyPath]
        }
        guard let point else {
            throw HookError(.invalidValue, point: "\(Object.self).\(keyPath)", "the key path does not name a @HookableMethod of \(Object.self)")
        }
        return point
    }

    /// Notes the object at its first call, and answers a key path probe.
    @usableFromInline
    func _arrive(_ object: AnyObject) -> Bool {
        if !identified.load(ordering: .relaxed) {
            // Once: the name is the label of this hook point's storage in the object.
            noteIdentity(target: object, name: _KeyPathResolver.name(of: self, in: object))
            identified.store(true, ordering: .relaxed)
        }
        return _KeyPathResolver.answerProbe(self)
    }

    var _tupleID: ObjectIdentifier { ObjectIdentifier((repeat each A).self) }
    func _copyArguments(_ pointers: UnsafeMutablePointer<UnsafeMutableRawPointer?>, to tuple: UnsafeMutableRawPointer) {
        _TypedLayout.copyTuple(repeat (each A).self, slots: pointers, to: tuple)
    }
    func _assignArguments(_ pointers: UnsafeMutablePointer<UnsafeMutableRawPointer?>, from tuple: UnsafeRawPointer) {
        _TypedLayout.assignTuple(repeat (each A).self, slots: pointers, from: tuple)
    }
}
