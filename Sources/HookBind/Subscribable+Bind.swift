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
    /// is a `HookOwner`), or with ``Subscription/dispose()``. A change does
    /// not come back to where it started (Hook's reentrancy guard).
    ///
    /// - Throws: ``BindError`` `.notHookable` if `keyPath` is not a `@Hooked` property.
    @discardableResult
    public func bind<Object: AnyObject>(_ object: Object, _ keyPath: ReferenceWritableKeyPath<Object, Value>) throws(BindError) -> Subscription {
        let property = try _propertyPoint(object, keyPath)
        // The property joins this observable's group (and its bindings' group).
        _Groups.merge([_group, property._attachedObject(orAttach: { _Group() })])
        return _Graph.locked(_group) {
            property._setThroughHooks(hookPoint._currentValue)
            let toProperty = hookPoint.add(.after, owner: object) { object, call in
                guard !call.isVetoed else { return }
                object[keyPath: keyPath] = try call.argument(0, as: Value.self)
            }
            let fromProperty = property.add(.after, owner: object) { [weak self] _, call in
                guard !call.isVetoed, let self else { return }
                self.value = try call.argument(0, as: Value.self)
            }
            let subscription = Subscription(toProperty, fromProperty)
            if let owner = object as? HookOwner { subscription.store(in: owner.hookBag) }
            return subscription
        }
    }
}

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
    /// binding ends with it (at once if it is a `HookOwner`), or with
    /// ``Subscription/dispose()``.
    @discardableResult
    public func bind<Object: AnyObject, Property>(_ object: Object, _ keyPath: ReferenceWritableKeyPath<Object, Property>,
                                                  _ handler: @escaping (Value) -> Property) -> Subscription {
        _Graph.locked(_group) {
            let subscription = subscribe(SubscriptionOptions(notifyOnSubscription: true)) { [weak object] _, new in
                object?[keyPath: keyPath] = handler(new)
            }
            if let owner = object as? HookOwner { subscription.store(in: owner.hookBag) }
            return subscription
        }
    }

    /// Sets `object`'s property at `keyPath` to the value now and after each change.
    @discardableResult
    public func bind<Object: AnyObject>(_ object: Object, _ keyPath: ReferenceWritableKeyPath<Object, Value>) -> Subscription {
        bind(object, keyPath) { $0 }
    }
}
