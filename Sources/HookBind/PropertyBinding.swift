import Foundation
import Hook
import Synchronization

// The Bindings seed (BND): a binding copies a source property to a
// destination property whenever one of its triggers fires; transformers
// wrap properties to convert on the way.

/// A property of an object, as a binding reads or writes it (BND's `BNDProperty`).
///
/// A transformer wraps a property (BND's `BNDStringToNumberTransformer
/// initWithProperty:`): the wrapped property reads through the transformer's
/// `reverse` and writes through its `forward`, and wrappers chain.
///
/// ```swift
/// let age = BoundProperty(person, \.age)                          // Double
/// let ageText = age.wrapped(by: Transformer.stringToNumber(formatter).then(.numberToDouble))  // String
/// ```
public struct BoundProperty<Value> {
    /// `Object.property`, or the wrapped property's name with its transformers
    /// (worked out when asked: only errors ask).
    public var name: String { nameOf() }
    let nameOf: () -> String
    let read: () throws -> Value
    let write: (Value) throws -> Void
    /// The hook point of the `@Hooked` property underneath, if any.
    let hookPoint: () throws(BindError) -> HookPoint

    /// The property of `object` at `keyPath`, held weakly.
    public init<Object: AnyObject>(_ object: Object, _ keyPath: ReferenceWritableKeyPath<Object, Value>) {
        // The name, once worked out (while the object lives: asked by an
        // error or a log line), kept for the errors that come once it is
        // gone, which otherwise name its class and the value's type.
        let known = Mutex<String?>(nil)
        let nameOf: () -> String = { [weak object] in
            if let name = known.withLock({ $0 }) { return name }
            guard let object else { return "\(Object.self).<\(Value.self) property>" }
            let name = "\(Object.self).\(_KeyPathName.of(keyPath, in: object))"
            known.withLock { $0 = name }
            return name
        }
        let gone = { BindError(.objectGone, "the object of \(known.withLock { $0 } ?? "a \(Object.self) property of type \(Value.self)") is gone") }
        self.nameOf = nameOf
        read = { [weak object] in
            guard let object else { throw gone() }
            return object[keyPath: keyPath]
        }
        write = { [weak object] value in
            guard let object else { throw gone() }
            object[keyPath: keyPath] = value
        }
        hookPoint = { [weak object] () throws(BindError) -> HookPoint in
            guard let object else { throw gone() }
            return try _propertyPoint(object, keyPath)
        }
    }

    private init(nameOf: @escaping () -> String, read: @escaping () throws -> Value, write: @escaping (Value) throws -> Void,
                 hookPoint: @escaping () throws(BindError) -> HookPoint) {
        self.nameOf = nameOf
        self.read = read
        self.write = write
        self.hookPoint = hookPoint
    }

    /// This property seen through `transformer`: values written go `forward`
    /// into it, values read come back through `reverse` (which a source needs).
    public func wrapped<Outside>(by transformer: Transformer<Outside, Value>) -> BoundProperty<Outside> {
        let (read, write, nameOf) = (self.read, self.write, self.nameOf)
        return BoundProperty<Outside>(
            nameOf: { "\(nameOf()) through a Transformer<\(Outside.self), \(Value.self)>" },
            read: {
                guard let reverse = transformer.reverse else {
                    throw BindError(.missingReverse, "\(nameOf()) is read through a Transformer<\(Outside.self), \(Value.self)> without reverse")
                }
                return try reverse(try read())
            },
            write: { try write(try transformer.forward($0)) },
            hookPoint: hookPoint)
    }

    /// The current value.
    /// - Throws: ``BindError`` if the object is gone or a transformer fails.
    public func get() throws -> Value { try read() }

    /// Sets the value.
    /// - Throws: ``BindError`` if the object is gone or a transformer fails.
    public func set(_ value: Value) throws { try write(value) }
}

/// Copies a source property to a destination property each time one of its
/// triggers fires (BND's `BNDBinding`).
///
/// ```swift
/// let binding = PropertyBinding(source: BoundProperty(person, \.name),
///                               destination: BoundProperty(textField, \.text))
/// try binding.addTrigger(HookTrigger(person, \.name))   // textField.text == person.name now and later
/// ```
///
/// A trigger delivers the current value when it is added, then on each of
/// its events. A failed conversion (a transformer that throws) leaves the
/// destination as it was and goes to ``errorHandler``. The binding holds its
/// triggers and ends with ``invalidate()`` or when it deinitializes; it holds
/// its objects weakly. Its deliveries are serialized (a lock of its own;
/// what setting the destination causes takes the locks it needs), so
/// triggers may fire on any thread.
public final class PropertyBinding<Value>: @unchecked Sendable {
    /// Guards the fields below and serializes deliveries.
    private let group = _Group()
    public let source: BoundProperty<Value>
    public let destination: BoundProperty<Value>
    /// Receives what a delivery could not do (by default, written to standard error).
    public var errorHandler: (@Sendable (any Error) -> Void)? {
        get { _Graph.locked(group) { handler } }
        set { _Graph.locked(group) { handler = newValue } }
    }

    private var handler: (@Sendable (any Error) -> Void)?
    private var triggers: [any BindingTrigger] = []
    private var isValid = true

    public init(source: BoundProperty<Value>, destination: BoundProperty<Value>) {
        self.source = source
        self.destination = destination
        // (Their names are not worked out here: for a plain property that
        // probes its setter, a write of its own value, `didSet` and all.)
    }

    deinit {
        for trigger in triggers { trigger.stop() }
    }

    /// Starts `trigger` for this binding and delivers the current value.
    ///
    /// - Throws: ``BindError`` if the trigger cannot start (`.notHookable`: a
    ///   hook trigger on a property that is not `@Hooked`; `.duplicateFish`: a
    ///   trigger that already serves a binding), or the binding was invalidated.
    public func addTrigger(_ trigger: any BindingTrigger) throws(BindError) {
        let valid = _Graph.locked(group) { isValid }
        guard valid else { throw BindError(.objectGone, "the binding of \(source.name) to \(destination.name) was invalidated") }
        try trigger.start { [weak self] in self?.update() }
        // Invalidated while it started (on another thread): stopped, not kept
        // (appended after `invalidate()` emptied the list, it ran on).
        let kept = _Graph.locked(group) { () -> Bool in
            guard isValid else { return false }
            triggers.append(trigger)
            return true
        }
        guard kept else {
            trigger.stop()
            throw BindError(.objectGone, "the binding of \(source.name) to \(destination.name) was invalidated")
        }
        update()
    }

    /// Copies the source's value to the destination now (what triggers call).
    public func update() {
        _Graph.locked(group) {
            guard isValid else { return }
            do {
                let value: Value
                do { value = try source.get() } catch let error as BindError where error.kind == .objectGone {
                    throw BindError(.objectGone, "source: \(error.message)")
                }
                do { try destination.set(value) } catch let error as BindError where error.kind == .objectGone {
                    throw BindError(.objectGone, "destination: \(error.message)")
                }
            } catch {
                if let handler { handler(error) } else {
                    FileHandle.standardError.write(Data("HookBind: binding \(source.name) -> \(destination.name): \(error)\n".utf8))
                }
            }
        }
    }

    /// Stops every trigger: the destination is no longer updated. Idempotent.
    public func invalidate() {
        let stopped = _Graph.locked(group) { () -> [any BindingTrigger] in
            isValid = false
            defer { triggers = [] }
            return triggers
        }
        for trigger in stopped { trigger.stop() }
    }

    /// Whether ``invalidate()`` has not been called.
    public var isActive: Bool { _Graph.locked(group) { isValid } }
}

/// A collection of bindings that end together (BND's `BNDBindings`), for
/// example the bindings of one screen.
public final class PropertyBindings: @unchecked Sendable {
    private let group = _Group()
    private var bindings: [AnyObject] = []
    private var invalidators: [() -> Void] = []

    public init() {}

    deinit { invalidateAll() }

    /// Keeps `binding` until ``invalidateAll()`` or this collection's deinit.
    public func add<Value>(_ binding: PropertyBinding<Value>) {
        _Graph.locked(group) {
            bindings.append(binding)
            invalidators.append { [weak binding] in binding?.invalidate() }
        }
    }

    /// The number of bindings kept.
    public var count: Int { _Graph.locked(group) { bindings.count } }

    /// Invalidates and releases every binding.
    public func invalidateAll() {
        let all = _Graph.locked(group) { () -> [() -> Void] in
            defer { bindings = []; invalidators = [] }
            return invalidators
        }
        for invalidate in all { invalidate() }
    }
}

// MARK: Triggers

/// What makes a ``PropertyBinding`` deliver (BND's `BNDTrigger`).
public protocol BindingTrigger: AnyObject {
    /// Starts calling `fire` on each event. Called once, by ``PropertyBinding/addTrigger(_:)``.
    func start(_ fire: @escaping @Sendable () -> Void) throws(BindError)
    /// Stops calling it. Idempotent.
    func stop()
}

/// Fires after each set of a `@Hooked` property (BND's KVO trigger): a hook
/// around the store on the property's hook point (an `instead` hook that
/// stores, then fires; not for a set that stored nothing: vetoed, or taken
/// over by an `instead` hook that did not run the original).
///
/// As a ``Binding``, it fires at most once per change (the reentrancy flag,
/// shared with bindings): properties bound to each other by pairs of
/// bindings, in a mesh, all get a set once through each binding, and a
/// set that a firing causes on this thread, directly or not, does not
/// fire it again.
public final class HookTrigger: BindingTrigger, @unchecked Sendable {
    private let point: () throws(BindError) -> HookPoint
    private let lock = NSLock()
    private var token: HookToken?
    private let once = _StartOnce()

    /// Fires after each set of `object`'s `@Hooked` property at `keyPath`.
    public convenience init<Object: AnyObject, Value>(_ object: Object, _ keyPath: ReferenceWritableKeyPath<Object, Value>) {
        self.init(BoundProperty(object, keyPath))
    }

    /// Fires after each set of `property`'s `@Hooked` property (through any transformers).
    public init<Value>(_ property: BoundProperty<Value>) {
        point = property.hookPoint
    }

    public func start(_ fire: @escaping @Sendable () -> Void) throws(BindError) {
        let point = try self.point()
        guard once.claim() else {
            throw BindError(.duplicateFish, "the HookTrigger on \(point.name) already serves a binding; make a trigger for each binding")
        }
        // Its identity in the change the thread delivers (`_Change`).
        // Without it, each set went along every path of bindings that did
        // not pass a property twice: six properties bound pairwise both
        // ways were set 326 times for one set. (Around the store, so that
        // the triggers and bindings of one point nest and share the change;
        // as `after` hooks each would begin a change of its own.)
        let identity = _DeliveryIdentity()
        let token = point.instead { call in
            try _Change.once(ObjectIdentifier(identity)) { fires in
                try call.invokeOriginal()
                // Not for a set that stored nothing (an `instead` hook
                // inside this one did not run the original).
                if fires, call.hasResult { fire() }
            }
        }
        lock.withLock { self.token = token }
    }

    public func stop() {
        lock.withLock { let t = token; token = nil; return t }?.remove()
    }
}

/// Fires on each notification named `name` (from `sender`, if given) posted
/// to `center` (BND's `BNDNotificationTrigger`).
public final class NotificationTrigger: BindingTrigger, @unchecked Sendable {
    private let center: NotificationCenter
    private let name: Notification.Name
    private weak var sender: AnyObject?
    private let filtersSender: Bool
    private let lock = NSLock()
    private var observer: (any NSObjectProtocol)?
    private let once = _StartOnce()

    public init(center: NotificationCenter = .default, name: Notification.Name, sender: AnyObject? = nil) {
        self.center = center
        self.name = name
        self.sender = sender
        self.filtersSender = sender != nil
    }

    public func start(_ fire: @escaping @Sendable () -> Void) throws(BindError) {
        guard once.claim() else {
            throw BindError(.duplicateFish, "the NotificationTrigger on \(name.rawValue) already serves a binding; make a trigger for each binding")
        }
        let filtersSender = self.filtersSender
        let observer = center.addObserver(forName: name, object: nil, queue: nil) { [weak self] note in
            if filtersSender {
                guard let self, let sender = self.sender, let object = note.object as AnyObject?, object === sender else { return }
            }
            fire()
        }
        lock.withLock { self.observer = observer }
    }

    public func stop() {
        if let observer = lock.withLock({ let o = observer; observer = nil; return o }) {
            center.removeObserver(observer)
        }
    }

    deinit { stop() }
}

/// Fires when told to (``fire()``).
public final class ManualTrigger: BindingTrigger, @unchecked Sendable {
    private let lock = NSLock()
    private var action: (@Sendable () -> Void)?
    private let once = _StartOnce()

    public init() {}

    public func start(_ fire: @escaping @Sendable () -> Void) throws(BindError) {
        guard once.claim() else {
            throw BindError(.duplicateFish, "this ManualTrigger already serves a binding; make a trigger for each binding")
        }
        lock.withLock { action = fire }
    }

    /// Delivers the source's value to the destination now.
    public func fire() { lock.withLock { action }?() }

    public func stop() { lock.withLock { action = nil } }
}

/// The name of a key path's property, for messages: Swift on Linux keeps
/// none, so the label of the `@Hooked` storage it reaches, or its type.
/// (Finding a `@Hooked` property's name may set the property to its own
/// value once, without hooks: only error messages ask.)
enum _KeyPathName {
    static func of<Object: AnyObject, Value>(_ keyPath: ReferenceWritableKeyPath<Object, Value>, in object: Object) -> String {
        if let point = try? PropertyHook.of(object, keyPath) { return point.name }
        return "<\(Value.self) property>"
    }
}

/// A trigger serves one binding: the first `start` claims it.
final class _StartOnce: @unchecked Sendable {
    private let lock = NSLock()
    private var started = false

    /// True the first time only.
    func claim() -> Bool {
        lock.withLock {
            defer { started = true }
            return !started
        }
    }
}
