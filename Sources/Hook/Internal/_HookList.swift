/// The object a hook is tied to, held weakly: once it is gone the hook no
/// longer runs and is detached.
final class _HookOwner: @unchecked Sendable {
    // Written once in init; weak loads are thread-safe.
    weak var object: AnyObject?
    init(_ object: AnyObject) { self.object = object }
}

/// One hook attached to a hook point.
struct _HookEntry: @unchecked Sendable {
    let id: UInt64
    let body: HookBody
    /// `nil` for hooks not tied to an owner.
    let owner: _HookOwner?
}

/// The hooks of a hook point by position.
struct _HookLists: Sendable {
    var before: [_HookEntry] = []
    var instead: [_HookEntry] = []
    var after: [_HookEntry] = []

    var isEmpty: Bool { before.isEmpty && instead.isEmpty && after.isEmpty }
    var count: Int { before.count + instead.count + after.count }

    mutating func append(_ entry: _HookEntry, at position: HookPosition) {
        switch position {
        case .before: before.append(entry)
        case .instead: instead.append(entry)
        case .after: after.append(entry)
        }
    }

    /// Removes the hook with `id`; returns whether it was there.
    mutating func remove(id: UInt64) -> Bool {
        if let i = before.firstIndex(where: { $0.id == id }) { before.remove(at: i); return true }
        if let i = instead.firstIndex(where: { $0.id == id }) { instead.remove(at: i); return true }
        if let i = after.firstIndex(where: { $0.id == id }) { after.remove(at: i); return true }
        return false
    }

    /// Removes the hooks whose owner is gone; returns whether there were any.
    mutating func removeOrphans() -> Bool {
        let n = count
        before.removeAll { $0.owner.map { $0.object == nil } ?? false }
        instead.removeAll { $0.owner.map { $0.object == nil } ?? false }
        after.removeAll { $0.owner.map { $0.object == nil } ?? false }
        return count != n
    }
}

/// An immutable snapshot of a hook point's hooks: what the call path reads.
///
/// The call path reaches a snapshot through an atomic word and never retains
/// it; a snapshot that has been replaced is freed only once no thread is inside
/// a call of its hook point (see `HookPoint`).
final class _HookSnapshot: Sendable {
    let before: ContiguousArray<_HookEntry>
    let instead: ContiguousArray<_HookEntry>
    let after: ContiguousArray<_HookEntry>

    init(_ lists: _HookLists) {
        before = ContiguousArray(lists.before)
        instead = ContiguousArray(lists.instead)
        after = ContiguousArray(lists.after)
    }
}
