import Synchronization

/// What adding a hook returns: `remove()` detaches the hook.
///
/// `remove()` is idempotent and safe from any thread, also from inside the
/// hook itself (the running call finishes; later calls do not see the hook).
/// Dropping the token does not remove the hook (tie the hook to an owner for
/// that). A token keeps its hook point alive, so `remove()` always reaches
/// it; it never keeps the point's target alive.
///
/// (A token holds its hook point strongly on purpose: a weak reference would
/// give every hook point a side table, and Swift's reference counting of an
/// object with a side table takes a slower path on every call.)
public final class HookToken: Sendable {
    private let removed = Atomic<Bool>(false)
    private let point: HookPoint
    private let id: UInt64

    init(point: HookPoint, id: UInt64) {
        self.point = point
        self.id = id
    }

    /// Detaches the hook. Later calls do nothing.
    public func remove() {
        guard !removed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        point.remove(id: id)
    }

    /// Whether `remove()` has not been called yet.
    public var isActive: Bool { !removed.load(ordering: .acquiring) }
}
