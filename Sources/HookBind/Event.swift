import Hook

/// Broadcasts values to its subscribers (Fisticuffs' `Event`).
///
/// ```swift
/// let event = Event<String>()
/// event.subscribe { _, str in
///     print(str)
/// }
/// event.fire("Hello, world")             // prints "Hello, world"
/// ```
///
/// Firing is a call at ``hookPoint`` (a `ClosureHook`) and each subscriber
/// is a hook on it, in the order they subscribed; the old value a subscriber
/// gets is always `nil`. A subscriber added while the event fires hears the
/// next fire. Firing the same event from inside one of its subscribers
/// delivers nothing (Hook's reentrancy guard): no recursion. An event has no
/// current value, so ``SubscriptionOptions/notifyOnSubscription`` calls nothing.
/// Events fire on the calling thread, outside any of HookBind's locks.
///
/// An event nobody subscribes to is its name and a word: the hook point is
/// made the first time it is needed, and firing without it does nothing.
public final class Event<Value>: Subscribable, @unchecked Sendable {
    private let point = _OnDemand<ClosureHook<Value, Void>>()
    /// The selector of the calls at ``hookPoint``.
    public let name: String

    public init(name: String = "event") {
        self.name = name
    }

    /// The hook point each ``fire(_:)`` calls (made on first need).
    public var hookPoint: ClosureHook<Value, Void> {
        point.get { ClosureHook(name: name) { (_: Value) in } }
    }

    /// Delivers `value` to every subscriber.
    public func fire(_ value: Value) {
        point.withExisting { $0(value) }
    }

    /// Calls `block` with `nil` and the value of each fire; `.beforeChange`
    /// subscribers run before the `.afterChange` ones.
    @discardableResult
    public func subscribe(_ options: SubscriptionOptions, _ block: @escaping (Value?, Value) -> Void) -> Subscription {
        Subscription(hookPoint.add(options.when == .beforeChange ? .before : .after) { call in
            guard !call.isVetoed else { return }
            block(nil, try call.argument(0, as: Value.self))
        })
    }

    /// The number of subscribers: the hooks on ``hookPoint`` (any other
    /// hook added to it, and each `values` stream, counted too).
    public var subscriberCount: Int { point.withExisting(\.hookCount) ?? 0 }
}
