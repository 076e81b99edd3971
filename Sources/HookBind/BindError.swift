import Hook

/// What a binding refuses, with a message naming the fishes involved.
///
/// Every problem of a group of fishes is found by ``Binding/bind(_:)-([Fish])``
/// before any hook is attached: a refused group leaves every object as it was.
public struct BindError: Error, Equatable, CustomStringConvertible, Sendable {
    public enum Kind: Equatable, Sendable {
        /// `bind([])`.
        case emptyGroup
        /// No fish of the group posts changes (all are observers).
        case noPoster
        /// No fish receives what another fish posts.
        case noReceiver
        /// A fish's object deinitialized before the group was bound.
        case objectGone
        /// The same fish, or two fishes of the same hook point, in one group.
        case duplicateFish
        /// A receiver would be set with a value of another type (add a ``Transformer``).
        case typeMismatch
        /// The key path or hook point cannot post or receive (not `@Hooked`, not `@HookableMethod`).
        case notHookable
        /// A `both` fish with a transformer that has no reverse, and no callback to receive with.
        case missingReverse
        /// A transformer could not convert a value (reported while a change is delivered).
        case transformFailed
        /// An offset outside an ``ObservableArray``.
        case indexOutOfRange
    }

    public let kind: Kind
    /// What was wrong, naming the fishes (`TestA.name`, `closure 'sum'`).
    public let message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { "HookBind: \(message)" }
}

/// The hook point of a `@Hooked` property, or a ``BindError`` naming it.
func _propertyPoint<Object: AnyObject, Value>(_ object: Object, _ keyPath: ReferenceWritableKeyPath<Object, Value>) throws(BindError) -> PropertyHook<Value> {
    do {
        return try PropertyHook.of(object, keyPath)
    } catch {
        throw BindError(.notHookable, error.detail)
    }
}
