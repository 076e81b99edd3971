@_spi(HookBind) import Hook

/// A value whose subscribers hear every change (Fisticuffs' `Observable`).
///
/// ```swift
/// let observable = Observable("")
/// observable.subscribe { oldValue, newValue in
///     print(newValue)
/// }
/// observable.value = "Hello, world"      // prints "Hello, world"
/// ```
///
/// The value lives in a hook point, ``hookPoint``: each write is a call there
/// (target the observable, selector its name, the new value as argument,
/// the old one as ``CallBack/oldValue(as:)``), and each subscriber is a hook
/// on it. So everything Hook offers applies: a `before` hook may replace or
/// veto a write, an `after` hook sees it, and a ``Computed`` that reads
/// ``value`` recomputes when it changes.
///
/// Every write counts, also one that stores an equal value. A subscriber
/// that writes the observable it listens to stores the value without being
/// called again (Hook's reentrancy guard), so it cannot recurse; computeds
/// still see that write.
///
/// ## Threads
/// Reads, writes and subscriptions may come from any thread. The values of
/// all observables and computeds, and the delivery of their changes, are
/// serialized by one lock: a write and everything it causes is one step for
/// every other thread. Subscribers run under it, so a subscriber must not wait
/// for another thread that reads or writes an observable.
public final class Observable<Value>: Subscribable, _Source, @unchecked Sendable {
    /// The hook point every write calls; subscribers are hooks on it.
    public let hookPoint: PropertyHook<Value>
    @usableFromInline let _node = _Node()

    /// An observable holding `value`; `name` is the selector of its writes' CallBacks.
    public init(_ value: Value, name: String = "observable") {
        hookPoint = PropertyHook._standalone(value, name: name)
        hookPoint._adopt(by: self)
        // The graph's own hook, first of all: the value is stored, so mark
        // what depends on it before any subscriber can read it.
        hookPoint.after { [node = _node] call in
            node.storedByHook = true
            if !call.isVetoed { _Graph.changed(node) }
        }
    }

    /// The current value. Reading it inside a ``Computed`` makes it a dependency;
    /// writing it notifies subscribers and updates computeds.
    @inlinable
    public var value: Value {
        get {
            _Graph.locked {
                _Graph.track(self)
                return hookPoint._currentValue
            }
        }
        set {
            _Graph.locked { _write(newValue) }
        }
    }

    /// Writes under the graph's lock: at once, or deferred to the end of the batch.
    @inlinable
    func _write(_ newValue: Value) {
        if _Graph.state.batchDepth > 0 {
            _writeInBatch(newValue)
            return
        }
        _node.storedByHook = false
        hookPoint._setThroughHooks(newValue)
        // Stored without hooks (a write from one of its own hooks, `withoutHooks`):
        // computeds must still learn of it.
        if !_node.storedByHook { _Graph.changed(_node) }
        _Graph.flush()
    }

    /// In a batch the value is stored at once (reads in the batch see it) and
    /// the call at the hook point is made when the batch ends, from the value
    /// before the batch to the last one written.
    @usableFromInline
    func _writeInBatch(_ newValue: Value) {
        if _Graph.state.committed.insert(ObjectIdentifier(self)).inserted {
            let old = hookPoint._currentValue
            _Graph.state.commits.append { [self] in
                let last = hookPoint._currentValue
                hookPoint._storeSilently(old)
                hookPoint._setThroughHooks(last)
                // Whatever the hooks did (vetoed, replaced), computeds that read
                // the value during the batch must look again.
                _Graph.changed(_node)
            }
        }
        hookPoint._storeSilently(newValue)
        _Graph.changed(_node)
    }

    @usableFromInline
    func _refresh() {}

    /// Calls `block` on each change, as `options` say (see ``Subscribable``).
    @discardableResult @inlinable
    public func subscribe(_ options: SubscriptionOptions, _ block: @escaping (Value?, Value) -> Void) -> Subscription {
        _Graph.locked {
            let subscription = Subscription(hookPoint._subscribe(options, Value.self, block))
            if options.notifyOnSubscription { block(nil, hookPoint._currentValue) }
            return subscription
        }
    }

    /// The number of subscribers (hooks on ``hookPoint`` besides the graph's own).
    public var subscriberCount: Int { max(hookPoint.hookCount - 1, 0) }
}

extension Observable: CustomStringConvertible {
    public var description: String { "Observable(\(value))" }
}
