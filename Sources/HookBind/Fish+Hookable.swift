import Hook

// Fishes on the methods of `@Hookable` types, named by the key path of their
// hook point: `.post(account, \.$deposit)`. (Properties of `@Hookable`
// classes are `@Hooked` properties: `.post(account, \.balance)` as before.)
extension Fish {
    /// Sends every call of `object`'s `@Hookable` method (FishBind's `post:selector:`).
    public static func post<Object: AnyObject, each A, R>(_ object: Object, _ method: KeyPath<Object, MethodHook<repeat each A, R>>) -> Fish {
        Fish(.post, _CallEndpoint(object, object[keyPath: method], value: _PostedValue.typed(repeat (each A).self, result: R.self)))
    }

    /// Sends every call of `object`'s `@Hookable` method and receives changes
    /// through `callBack` (FishBind's `both:selector:callBack:`).
    public static func both<Object: AnyObject, each A, R>(
        _ object: Object, _ method: KeyPath<Object, MethodHook<repeat each A, R>>,
        callBack: @escaping (CallBack, Object) throws -> Void
    ) -> Fish {
        let endpoint = _CallEndpoint(object, object[keyPath: method], value: _PostedValue.typed(repeat (each A).self, result: R.self))
        return Fish(.both, endpoint, callback: callback(_Weak(object), callBack))
    }
}
