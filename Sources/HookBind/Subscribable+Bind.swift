import Hook

// Fisticuffs' property bindings (`usernameField.b_text.bind(username)`):
// a `@Hooked` property of a plain object takes the place of a UIKit control's.

extension Observable {
    /// Binds `object`'s `@Hooked` property at `keyPath` to this observable
    /// both ways: the property is set to ``value`` now, then each change of
    /// either reaches the other (a text field bound to its model).
    ///
    /// ```swift
    /// let username = Observable("")
    /// try username.bind(usernameField, \.text)
    /// usernameField.text = "ada"             // username.value == "ada"
    /// ```
    ///
    /// The object is held weakly and the binding ends with it (at once if it
    /// is a `HookOwner`), or with ``Subscription/dispose()``. As a
    /// ``Binding``'s, a binding made here delivers each change at most once,
    /// in either direction (the reentrancy flag, shared with bindings):
    /// observables and properties bound in a mesh all get a write once
    /// each, and a change does not come back to where it started. A write
    /// that code run by the change makes (a subscriber's) is part of the
    /// change: a binding that delivered it already does not deliver it again.
    /// A write that stores nothing (vetoed, or taken over by an `instead`
    /// hook that does not run the original) is not delivered. In a
    /// ``batch(_:)`` the property's write reaches the observable at once,
    /// and the observable's call at the batch's end, when its last write was
    /// the property's, does not set the property again.
    ///
    /// - Throws: ``BindError`` `.notHookable` if `keyPath` is not a `@Hooked` property.
    @discardableResult
    public func bind<Object: AnyObject>(_ object: Object, _ keyPath: ReferenceWritableKeyPath<Object, Value>) throws(BindError) -> Subscription {
        let property = try _propertyPoint(object, keyPath)
        // The property joins this observable's group (and its bindings' group).
        let group = property._attachedObject(orAttach: { _Group() })
        _Groups.merge([_group, group])
        return _Graph.locked(_group) {
            property._setThroughHooks(hookPoint._currentValue)
            // The binding's identity in a change (`_Change`, as a `Binding`'s):
            // without it, each write went along every path of bindings that
            // did not pass a point twice, and 6 observables each bound to
            // the same 6 properties set them 196,956 times for one write.
            // Each direction an `instead` hook around the store, as a
            // binding's on a property: a point's bindings of both kinds
            // nest, so the change they deliver is one for all of them (as
            // `after` hooks, each began a change of its own once the
            // bindings' instead hooks had ended theirs, and delivered the
            // write again).
            let identity = _DeliveryIdentity()
            let toProperty = hookPoint.add(.instead, owner: object) { object, call in
                try _Change.run(ObjectIdentifier(identity), group) { deliver in
                    try call.invokeOriginal()
                    // Not a write that stored nothing (an `instead` hook
                    // inside this one did not run the original).
                    if deliver, call.hasResult { object[keyPath: keyPath] = try call.argument(0, as: Value.self) }
                }
            }
            let fromProperty = property.add(.instead, owner: object) { [weak self] _, call in
                guard let self else { return try call.invokeOriginal() }
                try _Change.run(ObjectIdentifier(identity), group) { deliver in
                    try call.invokeOriginal()
                    if deliver, call.hasResult { self.value = try call.argument(0, as: Value.self) }
                }
            }
            // (Hooks added with a `HookOwner` as owner are in its bag already.)
            return Subscription(toProperty, fromProperty)
        }
    }
}

/// The identity, in the change a thread delivers (see `_Change`), of what
/// delivers without being a `Binding`: an observable bound to a property
/// (`Observable.bind`), a `HookTrigger`.
final class _DeliveryIdentity: @unchecked Sendable {}

extension Computed {
    /// Sets `object`'s property at `keyPath` to `handler(value)` now and
    /// after each change (Fisticuffs' `loginButton.b_enabled.bind(inputIsValid)`;
    /// `handler` is its binding handler: format, convert).
    ///
    /// ```swift
    /// try inputIsValid.bind(loginButton, \.isEnabled)
    /// try salary.bind(label, \.text) { "\($0 / 1000)k" }
    /// ```
    ///
    /// The property need not be `@Hooked`. The object is held weakly and the
    /// binding ends with it (at once if it is a `HookOwner`; otherwise at
    /// the computed's next change, which no longer reaches it), or with
    /// ``Subscription/dispose()``.
    @discardableResult
    public func bind<Object: AnyObject, Property>(_ object: Object, _ keyPath: ReferenceWritableKeyPath<Object, Property>,
                                                  _ handler: @escaping (Value) -> Property) -> Subscription {
        _Graph.locked(_group) {
            // A subscriber owned by the object: once it is gone the hook is
            // detached (it kept the computed subscribed, evaluating each
            // change, for as long as the computed lived).
            let token = _pointForSubscribing().didSet(owner: object) { [weak object] _, new in
                object?[keyPath: keyPath] = handler(new)
            }
            object[keyPath: keyPath] = handler(_currentValue)
            return Subscription(token)
        }
    }

    /// Sets `object`'s property at `keyPath` to the value now and after each change.
    @discardableResult
    public func bind<Object: AnyObject>(_ object: Object, _ keyPath: ReferenceWritableKeyPath<Object, Value>) -> Subscription {
        bind(object, keyPath) { $0 }
    }
}
