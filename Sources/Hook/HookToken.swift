import Synchronization

/// What adding a hook returns: `remove()` detaches the hook.
///
/// `remove()` is idempotent and safe from any thread, also from inside the
/// hook itself (the running call finishes; later calls do not see the hook).
/// Dropping the token does not remove the hook (tie it to an owner for
/// that). A token does not keep its hook point alive; removing a hook of a
/// hook point that is gone does nothing.
public final class HookToken: Sendable {
    private let removed = Atomic<Bool>(false)
    private let point: WeakPoint

    init(point: HookPoint, id: UInt64) {
        self.point = WeakPoint(point, id: id)
    }

    /// Detaches the hook. Later calls do nothing.
    public func remove() {
        guard !removed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        point.remove()
    }

    /// Whether `remove()` has not been called yet.
    public var isActive: Bool { !removed.load(ordering: .acquiring) }
}

/// A weak reference to a hook point and the id of one hook in it.
private final class WeakPoint: @unchecked Sendable {
    // Written once in init, then only read; weak loads are thread-safe.
    private weak var point: HookPoint?
    private let id: UInt64

    init(_ point: HookPoint, id: UInt64) {
        self.point = point
        self.id = id
    }

    func remove() { point?.remove(id: id) }
}
