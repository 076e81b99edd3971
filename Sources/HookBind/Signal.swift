import Hook
import Synchronization

/// A one-to-many signal (XKVO's `XSignal`): ``emit(_:)`` delivers a value to
/// every subscriber, in the order they subscribed.
///
/// ```swift
/// let loginSignal = Signal<String>()
/// loginSignal.subscribe(observer: self) { me, nick in print("listener 1:", nick) }
/// let monitor = loginSignal.subscribe(observer: self) { me, nick in print("listener 2:", nick) }
/// monitor.close()                                   // listener 2 hears nothing more
/// loginSignal.emit("Ada")                           // listener 1: Ada
/// ```
///
/// A signal is a hook point: ``emit(_:)`` calls a `ClosureHook` and each
/// subscriber is an `after` hook on it (``hookPoint``), so everything Hook
/// offers applies: other hooks may watch or veto emissions (a vetoed emit
/// reaches no subscriber and no ``values`` stream), and bindings can post
/// from it (`Fish.post(signal.hookPoint)`).
///
/// ## During an emit
/// - A subscriber added while a value is being emitted hears the next emit, not this one.
/// - A monitor closed during an emit by an earlier subscriber, or on the
///   emitting thread, is not called again from the moment `close()`
///   returns, this emit included. Closed on another thread, it is not
///   called by an emit that begins after `close()` returns; a call already
///   past its check on the emitting thread may still run the block once.
/// - Emitting the same signal from inside one of its subscribers on the same
///   thread delivers nothing (Hook's reentrancy guard): no recursion.
///
/// ## Observers
/// A subscriber tied to an `observer` never keeps it alive (the block gets it
/// as an argument) and is never called once the observer is gone. An observer
/// that is a `HookOwner` releases the block the moment it deinitializes;
/// for other objects Swift offers no way to learn of their death, so the block
/// is detached at the signal's next emit and released at the next
/// subscription or close after that (or with the signal).
public final class Signal<Value>: @unchecked Sendable {
    private let point = _OnDemand<ClosureHook<Value, Void>>()
    /// The selector of the calls at ``hookPoint``.
    public let name: String

    public init(name: String = "signal") {
        self.name = name
    }

    /// The hook point that emissions call, made the first time it is needed
    /// (a signal nobody subscribes to is its name and a word).
    public var hookPoint: ClosureHook<Value, Void> {
        point.get { ClosureHook(name: name) { (_: Value) in } }
    }

    /// Delivers `value` to every subscriber, in the order they subscribed.
    public func emit(_ value: Value) {
        point.withExisting { $0(value) }
    }

    /// Subscribes `block`; it is called until the monitor is closed.
    @discardableResult
    public func subscribe(_ block: @escaping (Value) -> Void) -> SignalMonitor {
        let monitor = SignalMonitor()
        monitor.token = hookPoint.after { [flag = monitor.flag] call in
            // (A closure's after hooks run on a vetoed call too: not here.)
            guard !flag.isClosed, !call.isVetoed else { return }
            block(try call.argument(0, as: Value.self))
        }
        return monitor
    }

    /// Subscribes `block` for as long as `observer` lives (or until the
    /// monitor is closed). The block gets the observer, so it need not capture it.
    @discardableResult
    public func subscribe<Observer: AnyObject>(observer: Observer, _ block: @escaping (Observer, Value) -> Void) -> SignalMonitor {
        let monitor = SignalMonitor()
        monitor.token = hookPoint.add(.after, owner: observer) { [flag = monitor.flag] observer, call in
            guard !flag.isClosed, !call.isVetoed else { return }
            block(observer, try call.argument(0, as: Value.self))
        }
        return monitor
    }

    /// The number of subscribers: the hooks on ``hookPoint`` (closed ones
    /// and those of dead observers included until they are detached, and
    /// any other hook added to it).
    public var subscriberCount: Int { point.withExisting(\.hookCount) ?? 0 }
}

/// What subscribing returns (XKVO's `XSignalMonitor`): ``close()`` stops delivery.
public final class SignalMonitor: @unchecked Sendable {
    /// Shared with the subscriber's hook (which must not hold the monitor,
    /// which a user keeps: the hook would keep it alive).
    final class Flag: Sendable {
        let closed = Atomic<Bool>(false)
        var isClosed: Bool { closed.load(ordering: .acquiring) }
    }

    let flag = Flag()
    /// The hook, by an unowned reference (its memory kept; its hook point
    /// holds it while it is attached). A hook is its block: held strongly
    /// here, the block and what it captured outlived `close()` as long as
    /// the monitor did.
    private var hook: UnsafeMutableRawPointer?

    init() {}

    deinit {
        if let hook { _UnownedReference.dropMemory(hook) }
    }

    /// The subscriber's hook; set once, before the monitor is handed out.
    var token: HookToken? {
        get { hook.flatMap { _UnownedReference.object(at: $0) }.map { unsafeDowncast($0, to: HookToken.self) } }
        set {
            if let hook { _UnownedReference.dropMemory(hook) }
            hook = newValue.map { _UnownedReference.keepMemory(of: $0) }
        }
    }

    /// Stops delivery at once: no emit that begins after it returns calls
    /// the block (one under way on another thread may still finish its
    /// call). Idempotent, from any thread. The block, and
    /// what it captured, is released with the next batch of removed hooks
    /// (a call may still be running it; `HookPoint.reclaimRetiredHooks()`
    /// runs a batch now).
    public func close() {
        guard !flag.closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        token?.remove()
    }

    /// Whether ``close()`` was called.
    public var isClosed: Bool { flag.isClosed }
}

/// One change of an observed property (XKVO's `XKVOValue`).
public struct PropertyChange<Value> {
    /// The value before the set (equal to ``newValue`` for the initial notification).
    public let oldValue: Value
    /// The value set.
    public let newValue: Value
    /// Whether this is the current value delivered when observation started, not a change.
    public let isInitial: Bool
}

/// Observing `@Hooked` properties with old and new values (XKVO's `xkvo_addObserver`).
public enum KVO {
    /// Calls `block` after every set of `object`'s `@Hooked` property at
    /// `keyPath`, with the old and new values; with `initial`, first once
    /// with the current value (``PropertyChange/isInitial``). Every set
    /// counts, also one with the same value (as with KVO); a set that
    /// stores nothing (vetoed, or taken over by an `instead` hook that did
    /// not run the original) does not.
    ///
    /// ```swift
    /// try KVO.observe(self, \.testCount, observer: self, initial: true) { change in
    ///     print(change.isInitial ? "initial" : "", change.oldValue, "==>", change.newValue)
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - object: The object whose property is observed.
    ///   - keyPath: A `@Hooked` property of `object`.
    ///   - observer: The block runs while it lives (see ``Signal``);
    ///     nil: until the monitor is closed.
    ///   - initial: Whether the block first receives the current value, marked ``PropertyChange/isInitial``.
    ///   - block: Receives each change's old and new values.
    /// - Throws: ``BindError`` `.notHookable` if the key path does not name a `@Hooked` property.
    @discardableResult
    public static func observe<Object: AnyObject, Value>(
        _ object: Object, _ keyPath: ReferenceWritableKeyPath<Object, Value>,
        observer: AnyObject? = nil, initial: Bool = false,
        _ block: @escaping (PropertyChange<Value>) -> Void
    ) throws(BindError) -> SignalMonitor {
        let point = try _propertyPoint(object, keyPath)
        let monitor = SignalMonitor()
        // The hook first, then the initial value (as KVO's `.initial`): a
        // set made meanwhile, by another thread or by the initial block
        // itself, is reported (read first, such a set was lost, and the
        // observer kept the value it had read).
        monitor.token = point.after(owner: observer) { [flag = monitor.flag] call in
            // Not for a set that stored nothing (vetoed, or an `instead`
            // hook that did not run the original).
            guard !flag.isClosed, !call.isVetoed, call.hasResult else { return }
            let change = PropertyChange(oldValue: try call.oldValue(as: Value.self),
                                        newValue: try call.argument(0, as: Value.self), isInitial: false)
            block(change)
        }
        if initial {
            let current = point._currentValue
            block(PropertyChange(oldValue: current, newValue: current, isInitial: true))
        }
        return monitor
    }
}
