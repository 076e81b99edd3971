/// The object a hook is tied to, held weakly: once it is gone the hook no
/// longer runs and is detached.
final class _HookOwner: @unchecked Sendable {
    // Written once in init; weak loads are thread-safe.
    weak var object: AnyObject?
    init(_ object: AnyObject) { self.object = object }
}

/// One hook attached to a hook point.
///
/// A class, so that the call path can reach it through an unretained
/// reference and call its body borrowed: no reference counting per hook run.
final class _HookEntry: @unchecked Sendable {
    let id: UInt64
    let body: HookBody
    /// `nil` for hooks not tied to an owner.
    let owner: _HookOwner?
    /// Whether the hook runs for a call a before hook vetoed. False only for
    /// a property's after hooks: a vetoed set stores nothing, so nothing
    /// happened after which they could run (HookBind's own hooks that must
    /// learn of vetoes opt in).
    let runsWhenVetoed: Bool

    init(id: UInt64, body: @escaping HookBody, owner: _HookOwner?, runsWhenVetoed: Bool = true) {
        self.id = id
        self.body = body
        self.owner = owner
        self.runsWhenVetoed = runsWhenVetoed
    }
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
@usableFromInline
final class _HookSnapshot: @unchecked Sendable {
    // Unretained entries (trivial to copy); `lists` holds them.
    let before: ContiguousArray<Unmanaged<_HookEntry>>
    let instead: ContiguousArray<Unmanaged<_HookEntry>>
    let after: ContiguousArray<Unmanaged<_HookEntry>>
    private let lists: _HookLists

    init(_ lists: _HookLists) {
        self.lists = lists
        before = ContiguousArray(lists.before.lazy.map { Unmanaged.passUnretained($0) })
        instead = ContiguousArray(lists.instead.lazy.map { Unmanaged.passUnretained($0) })
        after = ContiguousArray(lists.after.lazy.map { Unmanaged.passUnretained($0) })
    }
}
