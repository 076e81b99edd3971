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
/// read it do not evaluate.
///
/// ## Subscribers
/// Its value is published in a hook point, ``hookPoint``, and subscribers are
/// hooks on it: a change is a call there, with the previous and new value.
/// Reading the computed inside its own subscriber gives the new value, with
/// no evaluation. A computed that reads itself (directly or through others)
/// gets its previous value there instead of recursing.
///
/// A computed lives as long as you keep it (or a computed that reads it);
/// its dependencies hold it weakly.
public final class Computed<Value>: Subscribable, _Source, _Dependent, @unchecked Sendable {
    @usableFromInline let point = _OnDemand<PropertyHook<Value>>()
    /// The selector of the calls at ``hookPoint``.
    public let name: String

    /// The hook point where each new value is published; subscribers are
    /// hooks on it. Made the first time it is needed (with the current value).
    public var hookPoint: PropertyHook<Value> {
        _Graph.locked(_group) {
            point.get {
                let made = PropertyHook._standalone(_cache, name: name)
                made._adopt(by: self)
                publishedVersion = _node.version
                return made
            }
        }
    }
    @usableFromInline let _node: _Node
    /// The connected group: its own (the node), merged with those of what it reads.
    @usableFromInline var _group: _Group { _node }

    private enum State { case clean, dirty, evaluating }

    /// What this class does with its value, in code specialized for the
    /// value type (one closure, made by the public initializers, which are
    /// inlinable, where the computed is made): the rest of the class runs
    /// unspecialized (the graph calls it through its protocols), where a
    /// value is copied through its type's witnesses and a closure of it is
    /// called through reabstraction thunks. `.evaluate` runs the closure and
    /// stores its result unless equal to the last one (an `Equatable` value),
    /// returning whether it changed; `.publish` calls the hook point with the
    /// last result (its subscribers hear it).
    private let specialized: (Computed<Value>, _ComputedOperation) -> Bool
    /// The last result.
    @usableFromInline @exclusivity(unchecked) var _cache: Value
    @exclusivity(unchecked) private var dependencies: [_Dependency]
    @exclusivity(unchecked) private var state = State.clean
    @exclusivity(unchecked) private var publishedVersion: UInt64 = 0
    @exclusivity(unchecked) private var evaluations = 0
    /// How the values it reads know it (+1, released in `deinit`; set once
    /// `self` exists). Unmanaged: handed on without reference counting.
    @exclusivity(unchecked) private var unmanagedLink: Unmanaged<_Link>?
    private var link: _Link { unmanagedLink.unsafelyUnwrapped.takeUnretainedValue() }

    /// A computed value; `compute` runs at once to find its dependencies.
    @inlinable
    public convenience init(name: String = "computed", _ compute: @escaping () -> Value) {
        self.init(name: name, compute) { computed, operation in
            if operation == .publish {
                computed.point.withExisting { $0._setThroughHooks(computed._cache) }
                return false
            }
            computed._cache = compute()
            return true
        }
    }

    /// A computed value whose equal results are no change; `compute` runs at once.
    @inlinable
    public convenience init(name: String = "computed", _ compute: @escaping () -> Value) where Value: Equatable {
        self.init(name: name, compute) { computed, operation in
            if operation == .publish {
                computed.point.withExisting { $0._setThroughHooks(computed._cache) }
                return false
            }
            let value = compute()
            if value == computed._cache { return false }
            computed._cache = value
            return true
        }
    }

    /// Evaluates and registers with the dependencies under the locks of its
    /// group and theirs (merged), so no change is missed in between.
    @usableFromInline
    init(name: String, _ compute: @escaping () -> Value, specialized: @escaping (Computed<Value>, _ComputedOperation) -> Bool) {
        let group = _Node()
        _node = group
        let root = _Groups.lock(group)
        defer { _Groups.unlock(root) }
        self.specialized = specialized
        self.name = name
        // What the evaluation reads stays locked until it is registered.
        _Groups.beginRetaining()
        defer { _Groups.endRetaining() }
        (_cache, dependencies) = _Graph.evaluate(compute)
        unmanagedLink = Unmanaged.passRetained(_Link(self, group: group))
        evaluations = 1
        register(dependencies, replacing: [])
    }

    deinit {
        _Graph.locked(_group) {
            link.isAlive = false
            for dependency in dependencies { dependency.source._node.removeDependent(link) }
        }
        unmanagedLink?.release()
    }

    /// The current value, brought up to date first. Reading it inside another
    /// ``Computed`` makes this one a dependency.
    @inlinable
    public var value: Value {
        // The common read, a computed reading another of its group while it
        // evaluates: the thread's last lock is this group's root, held (a
        // merge of this group needs that lock, so the root cannot change
        // meanwhile): no lock to take. (Here and not in `_Groups.lock`, whose
        // inlined fast path every observable write and binding set runs.)
        // Inlinable: the value is copied in code specialized for its type.
        if _Groups.holdsAsLast(_node) {
            _prepareRead()
            return _cache
        }
        return _Graph.locked(_group) {
            _prepareRead()
            return _cache
        }
    }

    /// Before a read of `_cache` under the group's lock: brought up to
    /// date and recorded by the running evaluation (not while this
    /// computed evaluates: a read of itself gets the previous value).
    @usableFromInline
    func _prepareRead() {
        if state != .evaluating {
            _refresh()
            _Graph.track(self, version: _node.version)
        }
    }

    /// How many times the closure ran (for tests and tuning).
    public var evaluationCount: Int { _Graph.locked(_group) { evaluations } }

    /// The values read by the last evaluation (for tests and tuning).
    public var dependencyCount: Int { _Graph.locked(_group) { dependencies.count } }

    // MARK: The graph

    var _height: Int { _node.height }

    @usableFromInline
    var _version: UInt64 { _node.version }

    /// Nothing to do: a computed tells its dependents when it publishes.
    @usableFromInline
    func _becameRead() {}

    @usableFromInline
    func _refresh() {
        guard state == .dirty else { return }
        // Borrowed in place: iterating the array would copy each dependency,
        // a retain and a release of its source.
        let changed = dependencies.withUnsafeBufferPointer { dependencies -> Bool in
            for i in dependencies.indices {
                // Not retained: the computed keeps its dependencies (the list
                // is not changed while it refreshes them).
                if dependencies[i].refreshed() != dependencies[i].version { return true }
            }
            return false
        }
        if changed {
            recompute()
        } else {
            state = .clean
        }
    }

    private func recompute() {
        // What the evaluation reads stays locked until it is registered (the
        // caller holds this computed's group). The dependencies are checked
        // in place (see `_Evaluation`): reading what it read last time, in
        // the same order, registers nothing and builds no array.
        // (Begun and ended here, not in a `retaining` closure, and the
        // value never leaves `specialized`: this code is not specialized for
        // the value type.)
        _Groups.beginRetaining()
        state = .evaluating
        let evaluation = _Graph.beginEvaluation(&dependencies)
        let changed = specialized(self, .evaluate)
        let replaced = _Graph.endEvaluation(evaluation, &dependencies)
        evaluations += 1
        state = .clean
        if let replaced {
            register(dependencies, replacing: replaced)
            _Graph.recycle(replaced)
        }
        _Groups.endRetaining()
        if changed { _node.version &+= 1 }
    }

    /// Makes this computed a dependent of what it read, and no longer of what
    /// it stopped reading; merges the groups of what it read into its own
    /// (all held: the evaluation's reads are retained).
    private func register(_ found: [_Dependency], replacing old: [_Dependency]) {
        var height = 0
        for dependency in found {
            _Groups.mergeHeld(_group, dependency.source._group)
            dependency.source._node.addDependent(link)
            height = max(height, dependency.source._node.height + 1)
        }
        for dependency in old where !found.contains(where: { $0.source === dependency.source }) {
            dependency.source._node.removeDependent(link)
        }
        _node.height = height
    }

    @usableFromInline
    static func _refreshed(_ object: UnsafeRawPointer) -> UInt64 {
        Unmanaged<Computed>.fromOpaque(object)._withUnsafeGuaranteedRef { computed in
            computed._refresh()
            return computed._node.version
        }
    }

    static func _markDirty(_ object: UnsafeRawPointer) {
        Unmanaged<Computed>.fromOpaque(object)._withUnsafeGuaranteedRef { $0._markDirty() }
    }

    static func _publishIfChanged(_ object: UnsafeRawPointer) {
        Unmanaged<Computed>.fromOpaque(object)._withUnsafeGuaranteedRef { $0._publishIfChanged() }
    }

    static func _height(_ object: UnsafeRawPointer) -> Int {
        Unmanaged<Computed>.fromOpaque(object)._withUnsafeGuaranteedRef { $0._node.height }
    }

    func _markDirty() {
        guard state == .clean else { return }
        state = .dirty
        // (A closure, not the key path `\.hasHooks`: applying a key path costs
        // more than the rest of marking a node.)
        if point.withExisting({ $0.hasHooks }) ?? false { _Graph.enqueue(unmanagedLink.unsafelyUnwrapped) }
        _Graph.markDependents(of: _node)
    }

    func _publishIfChanged() {
        _refresh()
        guard _node.version != publishedVersion else { return }
        publishedVersion = _node.version
        _ = specialized(self, .publish)
    }

    // MARK: Subscribing

    /// Calls `block` on each change, as `options` say (see ``Subscribable``).
    ///
    /// (Inlinable, as `Observable`'s: the hook that calls `block` is then
    /// specialized for the value type where the subscription is made; made
    /// here, it ran generic code for every change, 700 instructions a call.)
    @discardableResult @inlinable
    public func subscribe(_ options: SubscriptionOptions, _ block: @escaping (Value?, Value) -> Void) -> Subscription {
        _Graph.locked(_group) {
            let hookPoint = _pointForSubscribing()
            let subscription = Subscription(hookPoint._subscribe(options, Value.self, block))
            if options.notifyOnSubscription { block(nil, _currentValue) }
            return subscription
        }
    }

    /// The hook point, up to date, for a new subscription (under the lock).
    @usableFromInline
    func _pointForSubscribing() -> PropertyHook<Value> {
        _refresh()
        let hookPoint = self.hookPoint
        if !hookPoint.hasHooks, publishedVersion != _node.version {
            // Nobody heard the changes made while unobserved: start from now.
            hookPoint._storeSilently(_cache)
            publishedVersion = _node.version
        }
        return hookPoint
    }

    /// The cached value (under the lock; `_pointForSubscribing` brought it up to date).
    @usableFromInline
    var _currentValue: Value { _cache }
}

/// What `Computed.specialized` is asked to do.
@usableFromInline
enum _ComputedOperation {
    case evaluate, publish
}

extension Computed: CustomStringConvertible {
    public var description: String { "Computed(\(value))" }
}
