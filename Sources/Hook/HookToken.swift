import Synchronization

/// A hook attached to a hook point, and what adding it returns: `remove()`
/// detaches it.
///
/// `remove()` is idempotent and safe from any thread, also from inside the
/// hook itself (the running call finishes; later calls do not see the hook).
/// Dropping the token does not remove the hook (tie the hook to an owner for
/// that). A token does not keep its hook point alive: once the point is gone,
/// so are its hooks, and `remove()` does nothing.
///
/// The token is the hook itself: the hook point's snapshot holds it, and the
/// call path runs its body through an unretained reference.
public class HookToken: @unchecked Sendable {
    /// The hook.
    @usableFromInline let body: HookBody
    /// `nil` for hooks not tied to an owner.
    @usableFromInline let owner: _HookOwner?
    /// Where the hook runs.
    @usableFromInline let position: HookPosition
    /// Whether the hook runs for a call a before hook vetoed. False only for
    /// a property's after hooks: a vetoed set stores nothing, so nothing
    /// happened after which they could run (bookkeeping hooks, which must
    /// learn of every call, run for vetoed sets too).
    let runsWhenVetoed: Bool
    /// A bookkeeping hook (`HookPoint._addBookkeepingHook`): part of what
    /// the point is for (an observable's graph, an array's change list), not
    /// a user's hook: it sees every call, vetoed sets included, `hookCount`
    /// leaves it out and `removeAllHooks()` keeps it.
    let isBookkeeping: Bool
    /// A typed after hook (`_TypedAfterHook`): a lone one is run by the
    /// typed call path without a record.
    let isTypedAfter: Bool
    private let removed = Atomic<Bool>(false)
    /// The object (its address) the hook runs for (see `HookPoint._add(_:onlyForTarget:owner:_:)`); 0: every call.
    /// (Computed: a hook of every call stays the size it was, a bind's footprint with it.)
    var onlyFor: UInt { 0 }
    /// The hook point, by an unowned reference: its memory, not the point.
    private let pointReference: _UnownedReference

    init(point: HookPoint, position: HookPosition, owner: _HookOwner?, runsWhenVetoed: Bool, isBookkeeping: Bool = false,
         isTypedAfter: Bool = false, body: @escaping HookBody) {
        self.body = body
        self.isBookkeeping = isBookkeeping
        self.isTypedAfter = isTypedAfter
        self.owner = owner
        self.position = position
        self.runsWhenVetoed = runsWhenVetoed
        self.pointReference = _UnownedReference(point)
    }


    /// Detaches the hook. Later calls do nothing.
    public final func remove() {
        guard !removed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        guard let point = pointReference.object else { return }
        unsafeDowncast(point, to: HookPoint.self).remove(self)
    }

    /// Removes the hooks of `tokens`, each as ``remove()`` would, with one
    /// change of each hook point they are on (a bag's tokens are often many
    /// hooks of one point: removed one by one, each removal copied the
    /// point's list, and a bag of 100,000 subscriptions of one observable
    /// took 1.6 s to go).
    static func _removeAll(_ tokens: [HookToken]) {
        guard tokens.count > 8 else {
            for token in tokens { token.remove() }
            return
        }
        var byPoint: [ObjectIdentifier: (point: HookPoint, tokens: [HookToken])] = [:]
        for token in tokens {
            guard !token.removed.exchange(true, ordering: .acquiringAndReleasing) else { continue }
            guard let object = token.pointReference.object else { continue }
            let point = unsafeDowncast(object, to: HookPoint.self)
            byPoint[ObjectIdentifier(point), default: (point, [])].tokens.append(token)
        }
        for (point, tokens) in byPoint.values { point.remove(tokens) }
    }

    /// Whether the hook is still attached: false once ``remove()`` was
    /// called, or the hook point removed it (``HookPoint/removeAllHooks()``,
    /// ``ImportHook/restore()``, its owner gone) or went itself.
    public final var isActive: Bool { !removed.load(ordering: .acquiring) }

    /// Marks the hook detached by its hook point (`_HookEdit`, the point's
    /// `deinit`): no longer active, so a ``HookBag`` lets go of it (and of
    /// what it captured) and a later ``remove()`` does nothing.
    final func _markDetached() { removed.store(true, ordering: .releasing) }

    /// Whether the hook is tied to an owner that is gone (a look that may
    /// be the owner's last reference: see `ownerIsGone(keeping:)`).
    final var isOrphaned: Bool { owner.map { $0.object == nil } ?? false }

    /// Whether the hook is tied to an owner that is gone. A live owner is
    /// appended to `alive`: the check takes a strong reference, and the
    /// caller, which holds a hook point's lock, releases them after it. (If
    /// another thread let go of the owner meanwhile, that release runs its
    /// `deinit`, whose bag removes the hooks it owns: under the lock, that
    /// locked the point's `Mutex` again, a trap.)
    final func ownerIsGone(keeping alive: inout [AnyObject]) -> Bool {
        owner?.isGone(keeping: &alive) ?? false
    }
}

/// A typed after hook (``ClosureHook/afterReturning(owner:_:)``): its body
/// takes the result and the arguments as values. When it is the hook
/// point's one hook, the call path runs it with no `CallBack` at all; among
/// other hooks it runs as an after hook like any other, through `body`,
/// which reads the record.
@usableFromInline
final class _TypedAfterHook<each A, R>: HookToken, @unchecked Sendable {
    @usableFromInline let typedBody: (R, repeat each A) throws -> Void

    init(point: HookPoint, owner: AnyObject?, _ typedBody: @escaping (R, repeat each A) throws -> Void) {
        self.typedBody = typedBody
        // (Closures only: a vetoed call with a result is one that returned.)
        super.init(point: point, position: .after, owner: owner.map(_HookOwner.init), runsWhenVetoed: true, isTypedAfter: true) { call in
            try _TypedAfterHook.run(typedBody, &call)
        }
    }

    /// Runs `typedBody` in a call with a record: only once the call has a
    /// result (not when it threw, or an instead hook made none), with the
    /// arguments the original received.
    private static func run(_ typedBody: (R, repeat each A) throws -> Void, _ call: inout CallBack) throws {
        guard call._hasResult, call._error == nil else { return }
        let slots = call.argumentPointers
        var i = 0
        try typedBody(call.resultPointer.assumingMemoryBound(to: R.self).pointee,
                      repeat _TypedLayout.load((each A).self, slots, &i))
    }
}

/// A typed after hook of a C function (``FunctionHook/afterReturning(owner:_:)``).
/// When it is the hook point's one hook, a call of a native entry runs
/// `native` with the result and the saved argument registers, with no
/// `CallBack`; in any other call it runs as an after hook through `body`,
/// which reads the record.
@usableFromInline
final class _CTypedAfterHook: HookToken, @unchecked Sendable {
    /// The body reading the result's register and the six argument registers.
    @usableFromInline let native: (UInt64, UnsafeMutablePointer<UInt64>) throws -> Void

    @usableFromInline
    init(point: HookPoint, owner: AnyObject?, native: @escaping (UInt64, UnsafeMutablePointer<UInt64>) throws -> Void,
         recorded: @escaping HookBody) {
        self.native = native
        super.init(point: point, position: .after, owner: owner.map(_HookOwner.init), runsWhenVetoed: true, isTypedAfter: true,
                   body: recorded)
    }
}

/// A typed after hook of a property (``PropertyHook/didSet(owner:_:)``): its
/// body takes the value before the set and the value stored. Alone on its
/// hook point, a set runs it with no `CallBack`; among other hooks it runs
/// as an after hook through `body`, which reads the record.
@usableFromInline
final class _TypedSetHook<Value>: HookToken, @unchecked Sendable {
    @usableFromInline let typedBody: (Value, Value) throws -> Void

    init(point: HookPoint, owner: AnyObject?, _ typedBody: @escaping (Value, Value) throws -> Void) {
        self.typedBody = typedBody
        // Not for a vetoed set, as any user's after hook of a property.
        super.init(point: point, position: .after, owner: owner.map(_HookOwner.init), runsWhenVetoed: false, isTypedAfter: true) { call in
            try _TypedSetHook.run(typedBody, &call)
        }
    }

    /// Runs `typedBody` in a set with a record, once a value was stored
    /// (not when an instead hook stored none).
    private static func run(_ typedBody: (Value, Value) throws -> Void, _ call: inout CallBack) throws {
        guard call._hasResult, let old = call.oldValuePointer else { return }
        try typedBody(old.assumingMemoryBound(to: Value.self).pointee,
                      call.argumentPointers[0].unsafelyUnwrapped.assumingMemoryBound(to: Value.self).pointee)
    }
}

/// A hook that runs for one object's calls (see `HookPoint._add(_:onlyForTarget:owner:_:)`).
final class _FilteredHookToken: HookToken, @unchecked Sendable {
    let target: UInt

    init(point: HookPoint, position: HookPosition, owner: _HookOwner?, runsWhenVetoed: Bool, target: UInt, body: @escaping HookBody) {
        self.target = target
        super.init(point: point, position: position, owner: owner, runsWhenVetoed: runsWhenVetoed, body: body)
    }

    override var onlyFor: UInt { target }
}
