import Hook

/// What ``Observable``, ``Computed``, ``ObservableArray`` and ``Event`` have
/// in common (Fisticuffs' `Subscribable`): subscribers hear each change.
///
/// ```swift
/// func show<S: Subscribable>(_ source: S) -> Subscription where S.Value == String {
///     source.subscribe { _, new in print(new) }
/// }
/// ```
///
/// The block gets the old value and the new one; the old value is `nil` for
/// an ``Event`` and for the notification made at subscription
/// (``SubscriptionOptions/notifyOnSubscription``).
public protocol Subscribable<Value>: AnyObject {
    associatedtype Value

    /// Calls `block` with the old and new value of each change, as `options` say.
    ///
    /// - Returns: A ``Subscription`` whose ``Subscription/dispose()`` stops the
    ///   calls. Dropping it does not (store it in a `HookBag` to end it with an owner).
    @discardableResult
    func subscribe(_ options: SubscriptionOptions, _ block: @escaping (Value?, Value) -> Void) -> Subscription
}

extension Subscribable {
    /// Calls `block` after each change, with the old and new value.
    @discardableResult
    public func subscribe(_ block: @escaping (Value?, Value) -> Void) -> Subscription {
        subscribe(SubscriptionOptions(), block)
    }
}

/// When a subscriber hears of a change (Fisticuffs' `SubscriptionOptions`).
public struct SubscriptionOptions: Sendable, Equatable {
    /// Before the new value is stored, or after.
    public enum When: Sendable, Equatable {
        /// The subscriber runs while the value is still the old one.
        case beforeChange
        /// The subscriber runs once the new value is stored (the default).
        case afterChange
    }

    /// Whether subscribing calls the block at once with the current value (old value `nil`).
    public var notifyOnSubscription: Bool
    /// Before or after the change.
    public var when: When

    public init(notifyOnSubscription: Bool = false, when: When = .afterChange) {
        self.notifyOnSubscription = notifyOnSubscription
        self.when = when
    }
}

/// What subscribing returns: ``dispose()`` stops delivery (a disposal token).
public final class Subscription: @unchecked Sendable {
    /// The hooks, by unowned references (each one's memory kept, see
    /// `_UnownedReference.keepMemory(of:)`; a hook point holds the hooks
    /// attached to it). A hook is its block: held strongly here, the block
    /// and what it captured outlived `dispose()` as long as the
    /// subscription did (a model that kept its own subscription, whose
    /// block captured the model, was never freed).
    /// (One or two: a subscription is one hook, a one-way bind two. Two
    /// words, not an array: an array of them was an allocation more a
    /// subscription.)
    private let hook: UnsafeMutableRawPointer
    private let secondHook: UnsafeMutableRawPointer?

    @usableFromInline
    init(_ token: HookToken) {
        hook = _UnownedReference.keepMemory(of: token)
        secondHook = nil
    }

    @usableFromInline
    init(_ token: HookToken, _ second: HookToken) {
        hook = _UnownedReference.keepMemory(of: token)
        secondHook = _UnownedReference.keepMemory(of: second)
    }

    deinit {
        _UnownedReference.dropMemory(hook)
        if let secondHook { _UnownedReference.dropMemory(secondHook) }
    }

    /// Calls `body` with each hook that still exists.
    private func forEachHook(_ body: (HookToken) -> Void) {
        if let token = _UnownedReference.object(at: hook) { body(unsafeDowncast(token, to: HookToken.self)) }
        if let secondHook, let token = _UnownedReference.object(at: secondHook) { body(unsafeDowncast(token, to: HookToken.self)) }
    }

    /// Stops delivery from the next change on. Idempotent, from any
    /// thread, also from inside the block. A change being delivered when it
    /// is disposed still reaches the block (its hooks were taken when the
    /// change's call began): another subscriber that disposes this one
    /// during a delivery does not stop that delivery. The block, and what
    /// it captured, is released with the next batch of removed hooks (a
    /// call may still be running it; `HookPoint.reclaimRetiredHooks()` runs
    /// a batch now).
    public func dispose() {
        forEachHook { $0.remove() }
    }

    /// Whether delivery stopped: ``dispose()`` was called, or the hooks
    /// were removed otherwise (by a `HookBag`, `removeAllHooks()`) or went
    /// with their hook point.
    public var isDisposed: Bool {
        var active = false
        forEachHook { if $0.isActive { active = true } }
        return !active
    }

    /// Puts the subscription in `bag`: it is disposed of when the bag goes
    /// (with its `HookOwner`) or by `bag.removeAll()`.
    @discardableResult
    public func store(in bag: HookBag) -> Subscription {
        forEachHook { $0.store(in: bag) }
        return self
    }
}

extension PropertyHook {
    /// A subscriber of the value kept in this hook point: after each set
    /// that stores a value (not a vetoed one), or before each set that is
    /// not vetoed, with the old and new value.
    ///
    /// After a change, a typed after hook (``PropertyHook/didSet(owner:_:)``):
    /// a point whose only hook it is sets without a ``CallBack``, and among
    /// other hooks it runs as any after hook, in the order added. Before a
    /// change, a before hook that reads the call's values.
    @inlinable
    func _subscribe(_ options: SubscriptionOptions, _ block: @escaping (Value?, Value) -> Void) -> HookToken {
        if options.when == .afterChange { return didSet { old, new in block(old, new) } }
        return add(.before) { call in
            guard !call.isVetoed else { return }
            // The hook runs inside a set of this point, which holds a `Value`.
            let values = call._unsafePropertyValues(Value.self)
            block(values.old, values.new)
        }
    }
}
