import Hook
import Synchronization

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
/// Writes are calls at a hook point, ``hookPoint`` (made on first need: an
/// observable nobody subscribes to is its value and a few words): each write is a call there
/// (target the observable, selector its name, the new value as argument,
/// the old one as `CallBack/oldValue(as:)`), and each subscriber is a hook
/// on it. So everything Hook offers applies: a `before` hook may replace or
/// veto a write, an `after` hook sees it, and a ``Computed`` that reads
/// ``value`` recomputes when it changes.
///
/// Every write counts, also one that stores an equal value; a write that
/// stores nothing (vetoed, or taken over by an `instead` hook that did not
/// store) is no change: subscribers after the change do not hear it, and
/// computeds that read the value do not evaluate again. A
/// subscriber that writes the observable it listens to stores the value
/// without being called again (Hook's reentrancy guard), so it cannot
/// recurse; computeds still see that write.
///
/// ## Threads
/// Reads, writes and subscriptions may come from any thread. Each observable
/// has a lock of its own, shared with the computeds that read it (and what
/// they read) and with the properties bound to it: a write and everything it
/// causes is one step for every other thread, and observables that share
/// nothing never wait for each other. Subscribers run under that lock, so a
/// subscriber must not wait for another thread that reads or writes a value
/// connected to this one.
public final class Observable<Value>: Subscribable, _Source, @unchecked Sendable {
    /// The value, and the hook point once made (see ``hookPoint``). Only
    /// touched under the group's lock.
    // Unchecked exclusivity: every access is under the group's lock (a dynamic
    // check would cost more than the rest of a write).
    @exclusivity(unchecked) @usableFromInline var _cell: Hooked<Value>
    /// What computeds that read this value know of it, and the lock of its
    /// group (a +1 `_Node`, or 0): made on first use, once however many
    /// threads race (see `_node`).
    @usableFromInline let _nodeBits = Atomic<Int>(0)
    /// The selector of the calls at ``hookPoint``.
    public let name: String

    /// An observable holding `value`; `name` is the selector of its writes' CallBacks.
    ///
    /// It costs one object (the value, the name and two words) until it is
    /// first read or written (then its lock, an object of its own) and until
    /// something subscribes or asks for ``hookPoint``.
    public init(_ value: Value, name: String = "observable") {
        _cell = Hooked(_storing: value)
        self.name = name
    }

    deinit {
        let bits = _nodeBits.load(ordering: .acquiring)
        if bits != 0 { Unmanaged<_Node>.fromOpaque(UnsafeRawPointer(bitPattern: bits)!).release() }
    }

    /// The hook point every write calls; subscribers are hooks on it. Made
    /// the first time it is needed (a subscription, a binding, this property).
    public var hookPoint: PropertyHook<Value> {
        _Graph.locked(_group) {
            if let point = _cell._madePoint() { return point }
            let point = Hooked<Value>._point(in: self, label: "_cell", name: name)
            if _node.isRead { _addGraphHook(to: point) }
            return point
        }
    }

    /// A computed read the value: from now on, writes at the hook point must
    /// tell the graph. (Under the group's lock, as every write is.)
    @usableFromInline
    func _becameRead() {
        if let point = _cell._madePoint() { _addGraphHook(to: point) }
    }

    /// The graph's own hook, first of all: the value is stored, so mark what
    /// depends on it before any subscriber can read it. Added once a computed
    /// has read the value (when the point is made, or when the value is first
    /// read): until then it would do nothing, and a lone subscriber's hook
    /// takes the hook point's fastest path. (Owned by the point, which this
    /// observable owns: `self` is alive when it runs.) It runs for vetoed
    /// writes too: the write is over, whatever the hooks did (and if it
    /// stored nothing, nothing changed).
    private func _addGraphHook(to point: PropertyHook<Value>) {
        // Unmanaged: a method called on an `unowned(unsafe)` capture
        // retains it for the call.
        let me = Unmanaged.passUnretained(self)
        point._addBookkeepingHook(first: true) { call in
            me._withUnsafeGuaranteedRef { me in
                me._ifRead { node in
                    node.storedByHook = true
                    // Not for a set that stored nothing (vetoed, or an
                    // `instead` hook that did not run the original).
                    if !call.isVetoed, call.hasResult { _Graph.changed(node) }
                }
            }
        }
    }

    /// The node, unretained (this observable keeps it), made on first need
    /// (the group's lock is taken through it, so under the lock it is made).
    @inlinable
    var _unmanagedNode: Unmanaged<_Node> {
        let bits = _nodeBits.load(ordering: .acquiring)
        if _fastPath(bits != 0) { return Unmanaged.fromOpaque(UnsafeRawPointer(bitPattern: bits).unsafelyUnwrapped) }
        return _makeNode()
    }

    @usableFromInline @inline(never)
    func _makeNode() -> Unmanaged<_Node> {
        let made = Unmanaged.passRetained(_Node())
        let (won, current) = _nodeBits.compareExchange(expected: 0, desired: Int(bitPattern: made.toOpaque()),
                                                       ordering: .acquiringAndReleasing)
        if won { return made }
        made.release()
        return Unmanaged.fromOpaque(UnsafeRawPointer(bitPattern: current)!)
    }

    @usableFromInline
    var _node: _Node { _unmanagedNode.takeUnretainedValue() }

    /// The connected group whose lock guards the value (see `_Group`): the node.
    @usableFromInline
    var _group: _Group { _node }

    @usableFromInline
    var _version: UInt64 { _unmanagedNode._withUnsafeGuaranteedRef { $0.version } }

    /// Runs `body` with the node if a computed has read this value (what a
    /// change must tell), without reference counting.
    @inlinable @inline(__always)
    func _ifRead(_ body: (_Node) -> Void) {
        let bits = _nodeBits.load(ordering: .acquiring)
        guard bits != 0 else { return }
        Unmanaged<_Node>.fromOpaque(UnsafeRawPointer(bitPattern: bits).unsafelyUnwrapped)._withUnsafeGuaranteedRef { node in
            if node.isRead { body(node) }
        }
    }

    /// Locks the group (no reference counting: the node is the group's lock).
    @inlinable @inline(__always)
    func _lock() -> _Lease {
        _unmanagedNode._withUnsafeGuaranteedRef { _Groups.lock($0) }
    }

    /// The current value. Reading it inside a ``Computed`` makes it a dependency;
    /// writing it notifies subscribers and updates computeds.
    @inlinable
    public var value: Value {
        @inline(__always) get {
            // Read inside an evaluation of its group: held already.
            if _Graph.trackIfHeld(self, _unmanagedNode) {
                return _cell._storedValue
            }
            return _lockedValue()
        }
        set {
            let lease = _lock()
            if _slowPath(lease.inBatch) {
                _writeInBatch(newValue)
                _Groups.unlock(lease)
                return
            }
            // (Nothing here throws: no `defer` needed for the unlock.)
            _store(newValue)
            _Graph.flushAndUnlock(lease)
        }
    }

    /// A read outside an evaluation of its group: under its lock, recorded
    /// by a running evaluation (of another group) if any. (Out of line: the
    /// getter is then small enough for the read inside an evaluation to be
    /// inlined where it is made.)
    @inlinable @inline(never)
    func _lockedValue() -> Value {
        let lease = _lock()
        defer { _Groups.unlock(lease) }
        _Graph.track(self, version: _version)
        return _cell._storedValue
    }

    /// Writes under the group's lock: at once, or deferred to the end of the batch.
    @inlinable
    func _write(_ newValue: Value, _ lease: _Lease) {
        if lease.inBatch {
            _writeInBatch(newValue)
            return
        }
        _store(newValue)
        _Graph.flush(lease.thread)
    }

    /// Stores through the hooks if there are any, and tells the computeds
    /// that read the value.
    @inlinable
    func _store(_ newValue: Value) {
        // Unretained: this observable owns its point (a retain per write would
        // be a write to the point's reference count).
        guard let point = _cell._hookedPoint() else {
            _cell._storedValue = newValue
            _ifRead { _Graph.changed($0) }
            return
        }
        _ifRead { $0.storedByHook = false }
        point._withUnsafeGuaranteedRef { $0._setThroughHooks(newValue) }
        // Stored without hooks (a write from one of its own hooks, `withoutHooks`):
        // computeds must still learn of it.
        _ifRead { if !$0.storedByHook { _Graph.changed($0) } }
    }

    /// In a batch the value is stored at once (reads in the batch see it) and
    /// the call at the hook point is made when the batch ends, from the value
    /// before the batch to the last one written.
    @usableFromInline
    func _writeInBatch(_ newValue: Value) {
        // The bindings that delivered this write, the last one so far.
        if _Graph.state.committed.updateValue(_Change.deliveredSoFar, forKey: ObjectIdentifier(self)) == nil {
            let old = _cell._storedValue
            _Graph.state.commits.append { [self] in
                let deliveredBy = _Graph.state.committed.removeValue(forKey: ObjectIdentifier(self)) ?? []
                _Graph.locked(_group) {
                    let last = _cell._storedValue
                    _cell._storedValue = old
                    var version: UInt64 = 0
                    _ifRead { version = $0.version }
                    // The bindings that delivered the last write (a bound
                    // property written in the batch) do not deliver it back.
                    if deliveredBy.isEmpty {
                        _store(last)
                    } else {
                        _Change.run(deliveredBy: deliveredBy) { _store(last) }
                    }
                    // Whatever the hooks did (vetoed, replaced), computeds that read
                    // the value during the batch must look again: told once, by the
                    // store or here. (Told again after the store, a computed that a
                    // subscriber read in between evaluated twice for the batch.)
                    _ifRead { if $0.version == version { _Graph.changed($0) } }
                }
            }
        }
        _cell._storedValue = newValue
        _ifRead { _Graph.changed($0) }
    }

    @usableFromInline
    func _refresh() {}

    /// Calls `block` on each change, as `options` say (see ``Subscribable``).
    @discardableResult @inlinable
    public func subscribe(_ options: SubscriptionOptions, _ block: @escaping (Value?, Value) -> Void) -> Subscription {
        _Graph.locked(_group) {
            let subscription = Subscription(hookPoint._subscribe(options, block))
            if options.notifyOnSubscription { block(nil, _cell._storedValue) }
            return subscription
        }
    }

    /// The number of subscribers: the hooks on ``hookPoint`` (the graph's
    /// own is not counted).
    public var subscriberCount: Int {
        _Graph.locked(_group) { _cell._madePoint()?.hookCount ?? 0 }
    }
}

extension Observable: CustomStringConvertible {
    public var description: String { "Observable(\(value))" }
}
