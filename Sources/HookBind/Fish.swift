import Hook

/// An endpoint of a binding (FishBind's `IIFish`), made from a hook point.
///
/// - `post` fishes send changes: a `@Hooked` property (each set), a
///   `@HookableMethod`, a `ClosureHook` or a `FunctionHook` (each call).
/// - `observer` fishes receive: a property that is set to the new value, or
///   a callback that gets the poster's `CallBack` and the observer's object.
/// - `both` fishes do both.
///
/// ```swift
/// try Binding.bind([
///     .both(a, \.name),                         // set to the new value
///     .both(b, \.title) { call, b in            // or told, with the CallBack
///         b.title = "Title: " + (try call.argument(0, as: String.self))
///     },
///     .observer { call in print(call) },
/// ])
/// ```
///
/// A fish never keeps its object alive. Making a fish does not throw: a key
/// path that is not hookable, or an object that is gone, is reported by
/// ``Binding/bind(_:)-([Fish])``, which checks the whole group first.
///
/// ## What a change carries
/// A property posts its new value (as stored, after any `before` hook
/// replaced it). A method, closure or C function posts its result (as its
/// original returned it, before the point's `after` hooks; nothing for a
/// call that threw or was vetoed), or, when it returns `Void`, its one
/// argument (a setter); a call with no result and no argument or several,
/// or whose value would be a C struct, posts no value and can only reach
/// callbacks.
///
/// A callback gets the call that posted, as it was made (transformers
/// change what is set, not what a callback gets): read the value where that
/// call holds it. A property's set (`@Hooked`, a key path) and a
/// `Void` method's or closure's has it at `call.argument(0, as:)`; a setter
/// hooked by name (``post(_:_:as:)``) has the object first and the value at
/// `call.argument(1, as:)`; a method, closure or C function that returns a
/// value posts its result, `call.result(as:)`.
public struct Fish: CustomStringConvertible {
    @usableFromInline
    enum Role { case post, observer, both }

    let role: Role
    let endpoint: _Endpoint
    /// Set: the fish receives through this instead of being set.
    let callback: _FishCallBack?
    /// Conversions from the endpoint's value to what the binding carries.
    var postSteps: [_Step] = []
    /// Conversions from what the binding carries to the endpoint's value.
    var receiveSteps: [_Step] = []
    var refusal: BindError?

    init(_ role: Role, _ endpoint: _Endpoint, callback: _FishCallBack? = nil) {
        self.role = role
        self.endpoint = endpoint
        self.callback = callback
    }

    /// The fish a bound member was made from.
    init(member: _Endpoint) {
        self.init(member.role, member, callback: member.callback)
        postSteps = member.extras?.postSteps ?? []
        receiveSteps = member.extras?.receiveSteps ?? []
    }

    /// `post TestA.name`, `both closure 'sum'`.
    public var description: String { "\(role) \(endpoint.description)" }

    var posts: Bool { role != .observer }
    var receives: Bool { role != .post }
    /// Receives by having its value set (no callback).
    var receivesValues: Bool { receives && callback == nil }

    /// The type this fish puts on the binding, after its transformers.
    var carriedType: Any.Type? { postSteps.last?.output ?? endpoint.postType }
    /// The type this fish takes from the binding, before its transformers.
    var acceptedType: Any.Type? { receiveSteps.first?.input ?? endpoint.receiveType }

    // MARK: Transformers

    /// This fish with `transformer` applied to the values it sends and receives.
    ///
    /// Transformers act in the direction of the flow and chain in the order
    /// they are added. A `post` fish converts its value with `forward` before
    /// sending it; an `observer` converts what it receives with `forward`
    /// before being set; a `both` fish sends through `forward` and receives
    /// through `reverse` (so the transformer goes from the fish's own value
    /// to the binding's). Types are checked by ``Binding/bind(_:)-([Fish])``.
    /// A fish with a callback receives through it, which gets the call as
    /// it was made: its transformers change only what it sends.
    public func transformed<Input, Output>(by transformer: Transformer<Input, Output>) -> Fish {
        var fish = self
        switch role {
        case .post:
            fish.postSteps.append(_Step(transformer.forward))
        case .observer:
            fish.receiveSteps.append(_Step(transformer.forward))
        case .both:
            fish.postSteps.append(_Step(transformer.forward))
            if let reverse = transformer.reverse {
                fish.receiveSteps.insert(_Step(reverse), at: 0)
            } else if callback == nil, fish.refusal == nil {
                fish.refusal = BindError(.missingReverse, "\(self) has a transformer \(Input.self) -> \(Output.self) without a reverse, so it cannot receive \(Output.self); give the transformer a reverse, or the fish a callback")
            }
        }
        return fish
    }

    // MARK: Properties

    // The property fishes are inlinable so that the closures that set the
    // property and read its value (`_PropertyAccess`) are specialized in
    // the caller's module.

    /// Sends every set of `object`'s `@Hooked` property (FishBind's `post:property:`).
    @inlinable
    public static func post<Object: AnyObject, Value>(_ object: Object, _ property: ReferenceWritableKeyPath<Object, Value>) -> Fish {
        _property(.post, object, property, _PropertyAccess(Value.self), callBack: nil)
    }

    /// Sets `object`'s `@Hooked` property to each value received (FishBind's `observer:property:`).
    @inlinable
    public static func observer<Object: AnyObject, Value>(_ object: Object, _ property: ReferenceWritableKeyPath<Object, Value>) -> Fish {
        _property(.observer, object, property, _PropertyAccess(Value.self), callBack: nil)
    }

    /// Sends every set of `object`'s `@Hooked` property and receives changes
    /// (FishBind's `both:property:callBack:`): without a callback by being set
    /// to the new value, with one by the callback, which gets the poster's
    /// `CallBack` and `object` (FishBind's `deadFish`). Writes the callback
    /// makes, to `object` or anything else, are not sent back by this binding.
    @inlinable
    public static func both<Object: AnyObject, Value>(
        _ object: Object, _ property: ReferenceWritableKeyPath<Object, Value>,
        callBack: ((CallBack, Object) throws -> Void)? = nil
    ) -> Fish {
        _property(.both, object, property, _PropertyAccess(Value.self), callBack: callBack)
    }

    /// A property fish: `access` sets the property and reads its value.
    @usableFromInline
    static func _property<Object: AnyObject, Value>(
        _ role: Role, _ object: Object, _ property: ReferenceWritableKeyPath<Object, Value>, _ access: _PropertyAccess,
        callBack: ((CallBack, Object) throws -> Void)?
    ) -> Fish {
        let endpoint: _Endpoint
        do {
            endpoint = _PropertyEndpoint(object, try _propertyPoint(object, property), access)
        } catch {
            endpoint = _RefusedEndpoint(description: "\(Object.self) key path", error)
        }
        guard let callBack else { return Fish(role, endpoint) }
        return Fish(role, endpoint, callback: callback(_Weak(object), callBack))
    }

    // MARK: Properties of objects that did not opt in

    /// Sends every set of `object`'s property named `property`, a property of
    /// a class that did not opt in (no `@Hooked`): its setter is hooked at
    /// its entry by name (`SwiftEntryHook`), and the sets whose `self` is
    /// `object` post.
    ///
    /// ```swift
    /// try Binding.bind(.both(label, "text", as: String.self), .both(model, \.title))
    /// ```
    ///
    /// It sees the sets that call the setter: every set through a
    /// non-`final` class's property from another module, and the sets of a
    /// debug build; a `final` class's stored property is stored to directly
    /// by other modules, and an optimized build may inline a setter (see
    /// the article "Hooking Swift code by name").
    public static func post<Object: AnyObject, Value>(_ object: Object, _ property: String, as type: Value.Type) -> Fish {
        _named(.post, object, property, Value.self, callBack: nil)
    }

    /// Sets `object`'s property named `property` to each value received, by
    /// calling its setter (see ``post(_:_:as:)``).
    public static func observer<Object: AnyObject, Value>(_ object: Object, _ property: String, as type: Value.Type) -> Fish {
        _named(.observer, object, property, Value.self, callBack: nil)
    }

    /// Sends every set of `object`'s property named `property` and receives
    /// changes, by being set or through `callBack` (see ``post(_:_:as:)``).
    public static func both<Object: AnyObject, Value>(_ object: Object, _ property: String, as type: Value.Type,
                                                      callBack: ((CallBack, Object) throws -> Void)? = nil) -> Fish {
        _named(.both, object, property, Value.self, callBack: callBack)
    }

    static func _named<Object: AnyObject, Value>(_ role: Role, _ object: Object, _ property: String, _ type: Value.Type,
                                                 callBack: ((CallBack, Object) throws -> Void)?) -> Fish {
        let typeName = _typeName(Object.self, qualified: true)
        let name = "\(typeName).\(property)"
        let endpoint: _Endpoint
        do {
            let setter = try SwiftEntryHook.named(name + ".setter", as: ((Object, Value) -> Void).self)
            endpoint = _NamedPropertyEndpoint(object, setter, name: name)
        } catch {
            let kind: BindError.Kind = error.kind == .typeMismatch ? .typeMismatch : .notHookable
            endpoint = _RefusedEndpoint(description: name, BindError(kind, "\(name) (\(Value.self)) cannot be bound: \(error.detail)"))
        }
        guard let callBack else { return Fish(role, endpoint) }
        return Fish(role, endpoint, callback: callback(_Weak(object), callBack))
    }

    // MARK: Methods

    /// Sends every call of `object`'s `@HookableMethod` (FishBind's `post:selector:`).
    public static func post<Object: AnyObject, each A, R>(_ object: Object, _ method: KeyPath<Object, (repeat each A) -> R>) -> Fish {
        Fish(.post, methodEndpoint(object, method))
    }

    /// Sends every call of `object`'s `@HookableMethod` and receives changes
    /// through `callBack` (FishBind's `both:selector:callBack:`).
    public static func both<Object: AnyObject, each A, R>(
        _ object: Object, _ method: KeyPath<Object, (repeat each A) -> R>,
        callBack: @escaping (CallBack, Object) throws -> Void
    ) -> Fish {
        Fish(.both, methodEndpoint(object, method), callback: callback(_Weak(object), callBack))
    }

    // MARK: Closures and C functions

    /// Sends every call of a hooked closure (FishBind's `postBlock:`).
    public static func post<each A, R>(_ closure: ClosureHook<repeat each A, R>) -> Fish {
        Fish(.post, _CallEndpoint(closure, kind: "closure", value: _PostedValue.typed(repeat (each A).self, result: R.self)))
    }

    /// Sends every call of a hooked throwing closure that returns (a call that throws sends nothing).
    public static func post<each A, R>(_ closure: ThrowingClosureHook<repeat each A, R>) -> Fish {
        Fish(.post, _CallEndpoint(closure, kind: "closure", value: _PostedValue.typed(repeat (each A).self, result: R.self)))
    }

    /// Sends every call of a hooked C function.
    public static func post(_ function: FunctionHook) -> Fish {
        Fish(.post, _CallEndpoint(function, kind: "function", value: _PostedValue.c(function.signature)))
    }

    /// Sends every call of a hooked closure and receives changes through `callBack`.
    public static func both<each A, R>(_ closure: ClosureHook<repeat each A, R>, callBack: @escaping (CallBack) throws -> Void) -> Fish {
        Fish(.both, _CallEndpoint(closure, kind: "closure", value: _PostedValue.typed(repeat (each A).self, result: R.self)), callback: callBack)
    }

    /// Sends every call of a hooked C function and receives changes through `callBack`.
    public static func both(_ function: FunctionHook, callBack: @escaping (CallBack) throws -> Void) -> Fish {
        Fish(.both, _CallEndpoint(function, kind: "function", value: _PostedValue.c(function.signature)), callback: callBack)
    }

    // MARK: Callbacks

    /// Receives changes through `callBack`, with `object` (held weakly; once
    /// it is gone the callback is no longer called) (FishBind's `observer:callBack:`).
    public static func observer<Object: AnyObject>(_ object: Object, callBack: @escaping (CallBack, Object) throws -> Void) -> Fish {
        let box = _Weak(object)
        let endpoint = _CallbackEndpoint(description: "callback of \(Object.self)") { [box] in box.object != nil }
        return Fish(.observer, endpoint, callback: callback(box, callBack))
    }

    /// Receives changes through `callBack`.
    public static func observer(callBack: @escaping (CallBack) throws -> Void) -> Fish {
        Fish(.observer, _CallbackEndpoint(description: "callback") { true }, callback: callBack)
    }

    // MARK: Making endpoints

    static func methodEndpoint<Object: AnyObject, each A, R>(_ object: Object, _ method: KeyPath<Object, (repeat each A) -> R>) -> _Endpoint {
        do {
            let point = try MethodHook.of(object, method)
            return _CallEndpoint(object, point, value: _PostedValue.typed(repeat (each A).self, result: R.self))
        } catch {
            return _RefusedEndpoint(description: "\(Object.self) key path", BindError(.notHookable, error.detail))
        }
    }

    /// A callback that gets the object from the endpoint's own weak reference (one per fish).
    static func callback<Object: AnyObject>(_ box: _Weak<Object>, _ body: @escaping (CallBack, Object) throws -> Void) -> _FishCallBack {
        { call in
            guard let object = box.object else { return }
            try body(call, object)
        }
    }
}
