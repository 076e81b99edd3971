import Foundation
import Glibc
import Hook

// IQDataBinding: a view binds its view model, then chains the properties it
// shows; its own updates of the model do not come back to it.

extension HookOwner {
    /// Starts binding this view to `model` (IQDataBinding's `bindModel:`).
    ///
    /// ```swift
    /// final class ContentView: HookOwner {
    ///     let hookBag = HookBag()
    ///     let login = TextField(), password = TextField()
    ///     var binding: DataBinding<ContentView, ContentModel>?
    ///
    ///     func bind(to model: ContentModel) throws {
    ///         binding = try bind(model)
    ///             .bind(\.title) { view, value in view.login.text = value }
    ///             .bind(\.content) { view, value in view.password.text = value }
    ///     }
    ///     func textFieldShouldReturn() throws {
    ///         try binding?.update(\.content, password.text).update(\.title, "lobster")
    ///     }
    /// }
    /// ```
    ///
    /// Everything bound is removed the moment the view deinitializes (its
    /// `hookBag`), or by ``DataBinding/unbind()``.
    public func bind<Model: AnyObject>(_ model: Model) -> DataBinding<Self, Model> {
        DataBinding(view: self, model: model)
    }
}

/// A view bound to its model (IQDataBinding's `IQWatchDog`): chain
/// ``bind(_:_:)-(_,(View,Value)->Void)`` to show model properties,
/// ``update(_:_:)`` to write them.
///
/// The model's properties are `@Hooked`; each binding is an `after` hook on
/// the property's hook point, tied to the view: it never keeps the view
/// alive (the two-argument block receives it), never runs once the view is
/// gone, and is removed when the view deinitializes. The binding holds the
/// model (as IQDataBinding's view does through its watchdog).
public final class DataBinding<View: HookOwner, Model: AnyObject>: @unchecked Sendable {
    public let model: Model
    private weak var view: View?
    /// The properties threads are writing through ``update(_:_:)``: this
    /// view's blocks skip those writes (and not what they cause).
    private let updating: _Updating
    /// The hooks of this binding's blocks (also in the view's bag).
    private let tokens = _Tokens()

    init(view: View, model: Model) {
        self.view = view
        self.model = model
        self.updating = _Updating()
    }

    /// Calls `block` with the current value of the model's property at
    /// `keyPath` at once, then after every change of it that this view did
    /// not make with ``update(_:_:)`` (a set that stores nothing, vetoed or
    /// taken over by an `instead` hook that did not run the original, is
    /// no change).
    ///
    /// - Throws: ``BindError`` `.notHookable` if the property is not `@Hooked`,
    ///   `.objectGone` if the view is gone.
    @discardableResult
    public func bind<Value>(_ keyPath: ReferenceWritableKeyPath<Model, Value>,
                            _ block: @escaping (Value) -> Void) throws(BindError) -> DataBinding {
        try bind(keyPath) { (_: View, value: Value) in block(value) }
    }

    /// Calls `block` with the view and the current value at once, then after
    /// every change this view did not make; the block need not capture the view.
    ///
    /// - Throws: ``BindError`` `.notHookable` if the property is not `@Hooked`,
    ///   `.objectGone` if the view is gone.
    @discardableResult
    public func bind<Value>(_ keyPath: ReferenceWritableKeyPath<Model, Value>,
                            _ block: @escaping (View, Value) -> Void) throws(BindError) -> DataBinding {
        guard let view else { throw BindError(.objectGone, "the view bound to \(Model.self) is gone") }
        let point = try _propertyPoint(model, keyPath)
        let property = ObjectIdentifier(point)
        let token = point.add(.after, owner: view) { [updating] view, call in
            // Not for a set that stored nothing (vetoed, or an `instead`
            // hook that did not run the original): the model did not change.
            // Nor for this view's own write of this property; a change it
            // causes (a hook of the model that sets another property) is
            // shown.
            guard !call.isVetoed, call.hasResult, !updating.isWriting(property) else { return }
            block(view, try call.argument(0, as: Value.self))
        }
        // (In the view's bag already: the view is the hook's owner.)
        tokens.append(token)
        block(view, model[keyPath: keyPath])
        return self
    }

    /// Sets the model's property at `keyPath` to `value` through its hooks:
    /// every other observer of the model hears it, this view's block of that
    /// property does not (its blocks of other properties hear what the write
    /// causes: a hook of the model that sets another property).
    ///
    /// - Throws: ``BindError`` `.notHookable` if the property is not `@Hooked`.
    @discardableResult
    public func update<Value>(_ keyPath: ReferenceWritableKeyPath<Model, Value>, _ value: Value) throws(BindError) -> DataBinding {
        let point = try _propertyPoint(model, keyPath)
        updating.run(writing: ObjectIdentifier(point)) { model[keyPath: keyPath] = value }
        return self
    }

    /// Removes the blocks of this binding now (the view's other hooks stay). Idempotent.
    public func unbind() { tokens.removeAll() }
}

/// The properties (hook points) threads are writing through `update`, so
/// that their blocks skip the write (per thread, so that updates on several
/// threads at once each skip their own; per property, so that what a write
/// causes to other properties is shown).
final class _Updating: @unchecked Sendable {
    private struct Write: Hashable {
        let thread: UInt
        let property: ObjectIdentifier
    }
    private let lock = NSLock()
    private var writes: [Write: Int] = [:]

    /// Whether the calling thread is writing `property` through `update`.
    func isWriting(_ property: ObjectIdentifier) -> Bool {
        let write = Write(thread: UInt(pthread_self()), property: property)
        return lock.withLock { writes[write] != nil }
    }

    func run(writing property: ObjectIdentifier, _ body: () -> Void) {
        let write = Write(thread: UInt(pthread_self()), property: property)
        lock.withLock { writes[write, default: 0] += 1 }
        defer {
            lock.withLock {
                writes[write]! -= 1
                if writes[write] == 0 { writes[write] = nil }
            }
        }
        body()
    }
}

/// Tokens removed together, from any thread.
final class _Tokens: @unchecked Sendable {
    private let lock = NSLock()
    private var tokens: [HookToken] = []

    func append(_ token: HookToken) { lock.withLock { tokens.append(token) } }

    func removeAll() {
        for token in lock.withLock({ () -> [HookToken] in defer { tokens = [] }; return tokens }) { token.remove() }
    }
}
