import Hook

/// A read-only value computed by a closure, kept up to date as the values it
/// reads change (Fisticuffs' `Computed`, with automatic dependency tracking).
///
/// ```swift
/// let name = Observable("")
/// let greeting = Computed { "Hello, " + name.value }
/// greeting.subscribe { _, newValue in print(newValue) }
/// name.value = "world"                   // prints "Hello, world"
/// ```
///
/// ## Dependencies
/// Every ``Observable``, ``ObservableArray`` or other ``Computed`` whose
/// `value` the closure reads is a dependency, found anew at each evaluation:
/// one no longer read (a branch not taken) is dropped, and its changes no
/// longer cause work.
///
/// ## When it evaluates
/// Once when made; then, after a dependency changed, when it is read or,
/// if it has subscribers, once the write (or the outermost ``batch(_:)``)
/// ends. It evaluates only if a dependency really changed, after bringing its
/// dependencies up to date: in a diamond (`a` -> `b`, `a` -> `c`,
/// `b` + `c` -> `d`) a change of `a` evaluates `d` once, and `d` never sees
/// a new `b` with an old `c`. With an `Equatable` value, a result equal to the
/// previous one is no change: subscribers are not called and computeds that
/// read it do not evaluate. Nor are subscribers called when the value is the
/// one they heard last (it changed and changed back before they heard: a
/// ``batch(_:)`` that read the computed in between).
///
/// The closure should only read: a write it makes runs the written value's
/// subscribers inside the evaluation (what they read becomes a dependency
/// of this computed), and a write of a value it read leaves it holding a
/// value computed from the old one until that value changes again.
///
/// ## Subscribers
/// Its value is published in a hook point, ``hookPoint``, and subscribers are
/// hooks on it: a change is a call there, with the previous and new value.
/// Reading the computed inside its own subscriber gives the new value, with
/// no evaluation. A computed that reads itself (directly or through others)
/// gets its previous value there instead of recursing.
///
/// A computed lives as long as you keep it (or a computed that reads it);
/// its dependencies hold it weakly. Its closure may let go of it (clear the
/// property that holds it, say): the evaluation runs to its end, its result
/// is dropped and nothing is published.
public final class Computed<Value>: Subscribable, _Source, @unchecked Sendable {
    /// How many times the closure ran (counted by `specialized`'s
    /// `.evaluate`, here rather than in the core, a 128-byte block with no
    /// spare word; the hook point this word held before is the core's
    /// `hookPoint`, which the core needs anyway).
    @usableFromInline @exclusivity(unchecked) var _evaluations = 0
    /// The selector of the calls at ``hookPoint``.
    ///
    /// (Kept outside the computed, and only if it is not the default: a
    /// `String` here was 16 of the computed's 72 bytes, an 80-byte block;
    /// 64 without. See `_CoreSideTable`.)
    public var name: String { _CoreSideTable.name(of: _core) }

    /// The hook point where each new value is published; subscribers are
    /// hooks on it. Made the first time it is needed (with the current value).
    /// Asking for it brings the computed up to date, as subscribing does:
    /// hooks added to it directly hear the next change. (A computed written
    /// under and never read stayed dirty, which a write does not queue
    /// again: its point's hooks heard nothing.)
    public var hookPoint: PropertyHook<Value> {
        _Graph.lockedPublishing(_group) { _pointForSubscribing() }
    }

    /// The hook point, made if needed, as it is (`hookPoint` brings the
    /// computed up to date first).
    var _madePoint: PropertyHook<Value> {
        _Graph.locked(_group) {
            _core._withUnsafeGuaranteedRef { core in
                if let made = core.hookPoint { return unsafeDowncast(made.takeUnretainedValue(), to: PropertyHook<Value>.self) }
                let made = PropertyHook._standalone(_cache, name: name)
                made._adopt(by: self)
                // Kept by the core (+1) until this computed goes.
                core.hookPoint = .passRetained(made)
                core.publishing.remove(.unheard)
                return made
            }
        }
    }
    /// Its node: its core.
    @usableFromInline var _node: _Node { _core._withUnsafeGuaranteedRef { $0 } }
    /// The connected group: its own (the node), merged with those of what it reads.
    @usableFromInline var _group: _Group { _node }
    /// What the graph works with (+1, released in `deinit`): its node,
    /// state, dependencies, evaluations (see `_ComputedCore`).
    @usableFromInline let _core: Unmanaged<_ComputedCore>
    /// The closure (here, not captured by the core's `specialized`: a core
    /// may outlive its computed, and what the closure captures with it).
    @usableFromInline let _compute: () -> Value
    /// Lets go of what this computed read once `_compute` has gone, in the
    /// thread's release loop (`_Graph.releaseListed`), not by recursion.
    /// (Declared after `_compute`: a class's fields go in the order they
    /// are declared, so what the closure captured has gone first, and a
    /// computed it read, still held by the list, is not ended by it either.
    /// No bytes: a field with a `deinit`.)
    let _release = _ReleaseListed()
    /// The last result. (Last: a generic class's fields after it would be at
    /// offsets read from its type's metadata.)
    @usableFromInline @exclusivity(unchecked) var _cache: Value

    /// A computed value; `compute` runs at once to find its dependencies.
    ///
    /// (Inlinable, as are the others: what needs the value type, running
    /// `compute` and storing or publishing its result, is one closure made
    /// here, specialized for the value type and capturing nothing; see
    /// `_ComputedCore`.)
    @inlinable
    public convenience init(name: String = "computed", _ compute: @escaping () -> Value) {
        self.init(name: name, compute) { object, core, operation in
            let computed = Unmanaged<Computed<Value>>.fromOpaque(object)
            if operation == .publish { return computed._withUnsafeGuaranteedRef { $0._publish() } }
            let value = computed._withUnsafeGuaranteedRef { computed in
                computed._evaluations &+= 1
                return computed._compute()
            }
            // (Gone while its closure ran: nothing of it is touched.)
            return core._withUnsafeGuaranteedRef { core in
                guard core.isAlive else { return false }
                Unmanaged<Computed<Value>>.fromOpaque(core.target.unsafelyUnwrapped)._withUnsafeGuaranteedRef { $0._cache = value }
                return true
            }
        }
    }

    /// A computed value whose equal results are no change; `compute` runs at once.
    @inlinable
    public convenience init(name: String = "computed", _ compute: @escaping () -> Value) where Value: Equatable {
        self.init(name: name, compute) { object, core, operation in
            let computed = Unmanaged<Computed<Value>>.fromOpaque(object)
            if operation == .publish { return computed._withUnsafeGuaranteedRef { $0._publishUnlessHeard() } }
            let value = computed._withUnsafeGuaranteedRef { computed in
                computed._evaluations &+= 1
                return computed._compute()
            }
            // (Gone while its closure ran: nothing of it is touched.)
            return core._withUnsafeGuaranteedRef { core in
                guard core.isAlive else { return false }
                return Unmanaged<Computed<Value>>.fromOpaque(core.target.unsafelyUnwrapped)._withUnsafeGuaranteedRef { computed in
                    if value == computed._cache { return false }
                    computed._cache = value
                    return true
                }
            }
        }
    }

    /// Delivers the value to the hook point; false (`specialized`'s answer
    /// to `.publish`). (Out of line: inlined, the delivery made the
    /// specialized closure too large for the optimizer to inline the
    /// evaluation's part of it, a call more per evaluation.)
    @inlinable @inline(never)
    func _publish() -> Bool {
        if let point = _core._withUnsafeGuaranteedRef({ $0.hookPoint }) {
            Unmanaged<PropertyHook<Value>>.fromOpaque(point.toOpaque())._withUnsafeGuaranteedRef { $0._setThroughHooks(_cache) }
        }
        return false
    }

    /// `_publish()` unless the value is the one subscribers heard last: it
    /// changed and changed back since (a batch wrote a value and then the
    /// old one again, and the computed was read in between).
    @inlinable @inline(never)
    func _publishUnlessHeard() -> Bool where Value: Equatable {
        if let point = _core._withUnsafeGuaranteedRef({ $0.hookPoint }) {
            Unmanaged<PropertyHook<Value>>.fromOpaque(point.toOpaque())._withUnsafeGuaranteedRef {
                if $0._currentValue != _cache { $0._setThroughHooks(_cache) }
            }
        }
        return false
    }

    /// Evaluates and registers with the dependencies under the locks of its
    /// group and theirs (merged), so no change is missed in between.
    @usableFromInline
    init(name: String, _ compute: @escaping () -> Value, specialized: @escaping (UnsafeRawPointer, Unmanaged<_ComputedCore>, _ComputedOperation) -> Bool) {
        let core = _ComputedCore(specialized: specialized, name: name)
        _core = .passRetained(core)
        _compute = compute
        let root = _Groups.lock(core)
        defer { _Groups.unlock(root) }
        let me = _LockThread.unmanagedCurrent
        me._withUnsafeGuaranteedRef { _Groups.beginRetaining($0) }
        _cache = core.evaluate(me, compute)
        me._withUnsafeGuaranteedRef { _Groups.endRetaining($0) }
        _evaluations = 1
        core.target = UnsafeRawPointer(Unmanaged.passUnretained(self).toOpaque())
    }

    deinit {
        let (handed, point) = _core._withUnsafeGuaranteedRef { core in
            let (handed, point, evaluating) = _Graph.locked(core) {
                core.isAlive = false
                let point = core.hookPoint
                core.hookPoint = nil
                // Gone while it evaluates (its own closure let go of it): the
                // evaluation keeps the closure and ends the rest.
                if core.state == .evaluating {
                    core.keepUntilEvaluated(_compute)
                    return (true, point, true)
                }
                core.unregisterAll()
                // Queued or being published: the queue keeps the core with this reference.
                return (core.handOver(), point, false)
            }
            if !evaluating {
                // What it read, released outside the lock (their own `deinit`s
                // may lock) and after the closure (`_release`). The core may
                // live on, as a group others were merged into: it keeps
                // nothing else.
                _Graph.listForRelease(core.dependencies)
                core.dependencies = _Dependencies()
            }
            return (handed, point)
        }
        point?.release()
        if !handed { _core.release() }
    }

    /// The current value, brought up to date first. Reading it inside another
    /// ``Computed`` makes this one a dependency.
    @inlinable
    public var value: Value {
        @inline(__always) get {
            // The common read, a computed reading another of its group while it
            // evaluates: held (known to the evaluation, or the thread's last
            // lock is this group's root, which a merge cannot change
            // meanwhile): no lock to take (see `_ComputedCore.readIfHeld`).
            // Outside any evaluation: under the lock.
            // (Here and not in `_Groups.lock`, whose inlined fast path every
            // observable write and binding set runs.) Inlinable: the value is
            // copied in code specialized for its type. (Always inlined, with
            // the rest out of line, as `Observable`'s: in a loop of reads the
            // optimizer outlined the read's closure.)
            if _core._withUnsafeGuaranteedRef({ $0.readIfHeld(self) }) { return _cache }
            return _lockedValue()
        }
    }

    /// A read outside an evaluation of its group: under its lock, brought
    /// up to date and recorded by a running evaluation (of another group)
    /// if any.
    @inlinable @inline(never)
    func _lockedValue() -> Value {
        _Graph.lockedPublishing(_group) {
            _core._withUnsafeGuaranteedRef { $0.prepareRead(self) }
            return _cache
        }
    }

    /// How many times the closure ran (for tests and tuning).
    public var evaluationCount: Int { _Graph.locked(_group) { _evaluations } }

    /// The values read by the last evaluation (for tests and tuning).
    public var dependencyCount: Int { _Graph.locked(_group) { _core._withUnsafeGuaranteedRef { $0.dependencies.count } } }

    // MARK: The graph

    @usableFromInline
    var _version: UInt64 { _core._withUnsafeGuaranteedRef { $0.version } }

    /// Nothing to do: a computed tells its dependents when it publishes.
    @usableFromInline
    func _becameRead() {}

    @usableFromInline
    func _refresh() { _core._withUnsafeGuaranteedRef { $0.refresh() } }

    // MARK: Subscribing

    /// Calls `block` on each change, as `options` say (see ``Subscribable``).
    ///
    /// (Inlinable, as `Observable`'s: the hook that calls `block` is then
    /// specialized for the value type where the subscription is made; made
    /// here, it ran generic code for every change, 700 instructions a call.)
    @discardableResult @inlinable
    public func subscribe(_ options: SubscriptionOptions, _ block: @escaping (Value?, Value) -> Void) -> Subscription {
        _Graph.lockedPublishing(_group) {
            let hookPoint = _pointForSubscribing()
            let subscription = Subscription(hookPoint._subscribe(options, block))
            if options.notifyOnSubscription { block(nil, _currentValue) }
            return subscription
        }
    }

    /// The hook point, up to date, for a new subscription (under the lock).
    @usableFromInline
    func _pointForSubscribing() -> PropertyHook<Value> {
        _refresh()
        let hookPoint = _madePoint
        _core._withUnsafeGuaranteedRef { core in
            if !hookPoint._hasHooks, core.publishing.contains(.unheard) {
                // Nobody heard the changes made while unobserved: start from now.
                hookPoint._storeSilently(_cache)
                core.publishing.remove(.unheard)
            }
        }
        return hookPoint
    }

    /// The cached value (under the lock; `_pointForSubscribing` brought it up to date).
    @usableFromInline
    var _currentValue: Value { _cache }
}

/// A computed's field that goes after its closure (see
/// `Computed._release`): lets go of what gone computeds read, unless an
/// enclosing release on the thread already does.
struct _ReleaseListed: ~Copyable {
    deinit { _Graph.releaseListed() }
}

extension Computed: CustomStringConvertible {
    public var description: String { "Computed(\(value))" }
}
