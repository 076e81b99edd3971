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
public final class HookToken: @unchecked Sendable {
    /// The hook.
    @usableFromInline let body: HookBody
    /// `nil` for hooks not tied to an owner.
    @usableFromInline let owner: _HookOwner?
    /// Where the hook runs.
    @usableFromInline let position: HookPosition
    /// Whether the hook runs for a call a before hook vetoed. False only for
    /// a property's after hooks: a vetoed set stores nothing, so nothing
    /// happened after which they could run (HookBind's own hooks that must
    /// learn of vetoes opt in).
    let runsWhenVetoed: Bool
    /// HookBind's own bookkeeping (an observable's graph, an array's
    /// change list): not counted by `hookCount`, kept by `removeAllHooks()`.
    let isInternal: Bool
    private let removed = Atomic<Bool>(false)
    /// The hook point, by an unowned reference (`_Unowned`): its memory, not the point.
    private let pointMemory: UnsafeMutableRawPointer

    init(point: HookPoint, position: HookPosition, owner: _HookOwner?, runsWhenVetoed: Bool, isInternal: Bool = false, body: @escaping HookBody) {
        self.body = body
        self.isInternal = isInternal
        self.owner = owner
        self.position = position
        self.runsWhenVetoed = runsWhenVetoed
        self.pointMemory = _Unowned.keep(point)
    }

    deinit { _Unowned.drop(pointMemory) }

    /// Detaches the hook. Later calls do nothing.
    public func remove() {
        guard !removed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        guard let point = _Unowned.object(pointMemory) else { return }
        unsafeDowncast(point, to: HookPoint.self).remove(self)
    }

    /// Whether `remove()` has not been called yet.
    public var isActive: Bool { !removed.load(ordering: .acquiring) }

    /// Whether the hook is tied to an owner that is gone.
    var isOrphaned: Bool { owner.map { $0.object == nil } ?? false }
}
