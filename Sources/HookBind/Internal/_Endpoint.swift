@_spi(HookBind) import Hook

/// Reads the value a call posts and hands its address to the body.
typealias _Reader = (CallBack, (UnsafeRawPointer) throws -> Void) throws -> Void

/// A receiving callback with its object checked: returns without calling when the object is gone.
typealias _Callback = (CallBack) throws -> Void

/// Holds an object without keeping it alive (and without giving it a side
/// table); shared by an endpoint and its callbacks.
typealias _Weak<Object: AnyObject> = _ObjectReference<Object>

/// One end of a binding, with its types erased: what a ``Fish`` is made of.
///
/// Endpoints never keep their object alive. Those of an object's property or
/// method hold the object weakly and its hook point unowned (the object owns
/// it, so it is valid whenever the object is); those of a closure or C
/// function hold the hook point weakly.
class _Endpoint: @unchecked Sendable {
    private let fixedDescription: String?

    init(description: String? = nil) {
        fixedDescription = description
    }

    /// How messages name the endpoint: `TestA.name`, `closure 'sum'`. Built
    /// when a message needs it (a type's name costs microseconds to spell).
    var description: String { fixedDescription ?? "" }

    /// A problem found when the fish was made (a key path that is not hookable).
    var error: BindError? { nil }
    /// Whether the object (or the hook point) is still there.
    var isAlive: Bool { true }
    /// The hook point whose calls post, while alive; nil if the endpoint cannot post.
    var postingPoint: HookPoint? { nil }
    /// Whether a post is a store (a property): then the store and its
    /// delivery happen together, under the bindings' lock.
    var postsStores: Bool { false }
    /// The type of the value a call posts; nil if calls post no single value.
    var postType: Any.Type? { nil }
    /// Reads the posted value of `call`.
    func withPostedValue(_ call: CallBack, _ body: (UnsafeRawPointer) throws -> Void) throws {}
    /// The type a received value must have; nil if the endpoint cannot be set.
    var receiveType: Any.Type? { nil }
    /// Sets a received value (of `receiveType`); nothing if the object is gone.
    func receive(_ value: UnsafeRawPointer) {}
    /// Two fishes with the same identity are the same endpoint: the hook point, or this object.
    var identity: ObjectIdentifier { ObjectIdentifier(self) }
}

/// A fish whose key path or hook point was refused when it was made.
final class _RefusedEndpoint: _Endpoint, @unchecked Sendable {
    let refusal: BindError
    init(description: String, _ refusal: BindError) {
        self.refusal = refusal
        super.init(description: description)
    }
    override var error: BindError? { refusal }
}

/// A `@Hooked` property of an object: posts its stores, receives by being set.
final class _PropertyEndpoint<Object: AnyObject, Value>: _Endpoint, @unchecked Sendable {
    let object: _Weak<Object>
    unowned(unsafe) let point: PropertyHook<Value>
    let name: String

    init(_ object: Object, _ point: PropertyHook<Value>) {
        self.object = _Weak(object)
        self.point = point
        name = point.name
        super.init()
    }

    override var description: String { "\(Object.self).\(name)" }

    override var isAlive: Bool { object.object != nil }
    override var postingPoint: HookPoint? { point }
    override var postsStores: Bool { true }
    override var postType: Any.Type? { Value.self }
    override var receiveType: Any.Type? { Value.self }
    override var identity: ObjectIdentifier { ObjectIdentifier(point) }

    override func withPostedValue(_ call: CallBack, _ body: (UnsafeRawPointer) throws -> Void) throws {
        let value = point._currentValue
        try withUnsafePointer(to: value) { try body(UnsafeRawPointer($0)) }
    }

    override func receive(_ value: UnsafeRawPointer) {
        guard let object = object.object else { return }
        withExtendedLifetime(object) {
            point._setThroughHooks(value.assumingMemoryBound(to: Value.self).pointee)
        }
    }
}

/// A hookable method of an object: posts its calls.
final class _MethodEndpoint<Object: AnyObject>: _Endpoint, @unchecked Sendable {
    let object: _Weak<Object>
    unowned(unsafe) let point: HookPoint
    let value: (type: Any.Type, read: _Reader)?

    init(_ object: Object, _ point: HookPoint, value: (type: Any.Type, read: _Reader)?) {
        self.object = _Weak(object)
        self.point = point
        self.value = value
        name = point.name
        super.init()
    }

    let name: String
    override var description: String { "\(Object.self).\(name)" }

    override var isAlive: Bool { object.object != nil }
    override var postingPoint: HookPoint? { point }
    override var postType: Any.Type? { value?.type }
    override var identity: ObjectIdentifier { ObjectIdentifier(point) }

    override func withPostedValue(_ call: CallBack, _ body: (UnsafeRawPointer) throws -> Void) throws {
        try value?.read(call, body)
    }
}

/// A closure or C function hook point: posts its calls.
final class _FreeEndpoint: _Endpoint, @unchecked Sendable {
    weak var point: HookPoint?
    let pointID: ObjectIdentifier
    let value: (type: Any.Type, read: _Reader)?

    init(_ point: HookPoint, kind: String, value: (type: Any.Type, read: _Reader)?) {
        self.point = point
        self.pointID = ObjectIdentifier(point)
        self.value = value
        super.init(description: "\(kind) '\(point.name)'")
    }

    override var isAlive: Bool { point != nil }
    override var postingPoint: HookPoint? { point }
    override var postType: Any.Type? { value?.type }
    override var identity: ObjectIdentifier { pointID }

    override func withPostedValue(_ call: CallBack, _ body: (UnsafeRawPointer) throws -> Void) throws {
        try value?.read(call, body)
    }
}

/// An observer that is only a callback (with or without an object).
final class _CallbackEndpoint: _Endpoint, @unchecked Sendable {
    let alive: () -> Bool
    init(description: String, alive: @escaping () -> Bool) {
        self.alive = alive
        super.init(description: description)
    }
    override var isAlive: Bool { alive() }
}

/// The value a call of a function-like hook point posts, FishBind's way
/// (a setter method posts its argument): the result if it is not `Void`,
/// otherwise the one argument; none for several arguments and no result.
enum _PostedValue {
    static func typed<each A, R>(_ arguments: repeat (each A).Type, result: R.Type) -> (type: Any.Type, read: _Reader)? {
        if R.self != Void.self { return (R.self, resultReader(R.self)) }
        var found: [(type: Any.Type, read: _Reader)] = []
        for argument in repeat each arguments {
            found.append((argument, argumentReader(argument, found.count)))
        }
        return found.count == 1 ? found[0] : nil
    }

    static func resultReader<R>(_ type: R.Type) -> _Reader {
        { call, body in
            let value = try call.result(as: R.self)
            try withUnsafePointer(to: value) { try body(UnsafeRawPointer($0)) }
        }
    }

    static func argumentReader<T>(_ type: T.Type, _ index: Int) -> _Reader {
        { call, body in
            let value = try call.argument(index, as: T.self)
            try withUnsafePointer(to: value) { try body(UnsafeRawPointer($0)) }
        }
    }

    /// C functions: scalars post as their Swift types (`int64_t` as `Int`,
    /// pointers as `UnsafeMutableRawPointer?`); a struct posts no value.
    static func c(_ signature: Signature) -> (type: Any.Type, read: _Reader)? {
        if signature.result != .void { return cReader(signature.result, index: nil) }
        guard signature.arguments.count == 1 else { return nil }
        return cReader(signature.arguments[0], index: 0)
    }

    static func cReader(_ type: CType, index: Int?) -> (type: Any.Type, read: _Reader)? {
        func make<T: CRepresentable>(_ t: T.Type) -> (type: Any.Type, read: _Reader) {
            (T.self, { call, body in
                let value: T = try index.map { i throws(HookError) in try call.argument(i, as: T.self) } ?? call.result(as: T.self)
                try withUnsafePointer(to: value) { try body(UnsafeRawPointer($0)) }
            })
        }
        switch type {
        case .bool: return make(Bool.self)
        case .int8: return make(Int8.self)
        case .uint8: return make(UInt8.self)
        case .int16: return make(Int16.self)
        case .uint16: return make(UInt16.self)
        case .int32: return make(Int32.self)
        case .uint32: return make(UInt32.self)
        case .int64: return make(Int.self)
        case .uint64: return make(UInt.self)
        case .float: return make(Float.self)
        case .double: return make(Double.self)
        case .pointer: return make(UnsafeMutableRawPointer?.self)
        default: return nil
        }
    }
}
