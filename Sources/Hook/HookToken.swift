import Synchronization

/// What adding a hook returns: `remove()` detaches the hook.
///
/// `remove()` is idempotent and safe from any thread, also from inside the
/// hook itself (the running call finishes; later calls do not see the hook).
/// Dropping the token does not remove the hook. A token does not keep its
/// hook point alive; removing a hook of a hook point that is gone does nothing.
public final class HookToken: Sendable {
    private let removed = Atomic<Bool>(false)
    private let slot: WeakSlot

    init(slot: _HookSlot, id: UInt64) {
        self.slot = WeakSlot(slot, id: id)
    }

    /// Detaches the hook. Later calls do nothing.
    public func remove() {
        guard !removed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        slot.remove()
    }

    /// Whether `remove()` has not been called yet.
    public var isActive: Bool { !removed.load(ordering: .acquiring) }
}

/// A weak reference to a hook slot and the id of one hook in it.
private final class WeakSlot: @unchecked Sendable {
    // Written once in init, then only read; weak loads are thread-safe.
    private weak var slot: _HookSlot?
    private let id: UInt64

    init(_ slot: _HookSlot, id: UInt64) {
        self.slot = slot
        self.id = id
    }

    func remove() { slot?.remove(id: id) }
}
