import Foundation

/// The group of each hook point that a binding (or an observable's property
/// binding) uses, so that bindings sharing an endpoint share a group.
///
/// An entry counts its users (bindings, property bindings) and goes with the
/// last. It does not keep its hook point: a point that goes while a binding
/// still names it (its object deinitialized) can have its address reused by
/// a new point, which then joins the old group; that costs sharing, never
/// correctness.
enum _PointGroups {
    private struct Entry {
        let group: _Group
        var users: Int
    }

    /// A leaf lock: nothing else is taken while it is held.
    private static let lock = NSLock()
    nonisolated(unsafe) private static var table: [ObjectIdentifier: Entry] = [:]

    /// The groups of `points` (distinct), one more user each; `fresh` is the
    /// group of those that had none.
    static func use(_ points: [ObjectIdentifier], joining fresh: _Group) -> [_Group] {
        lock.lock()
        defer { lock.unlock() }
        var found: [_Group] = []
        for point in points {
            let group: _Group
            if let entry = table[point] {
                group = entry.group
                table[point]!.users += 1
            } else {
                group = fresh
                table[point] = Entry(group: fresh, users: 1)
            }
            if !found.contains(where: { $0 === group }) { found.append(group) }
        }
        return found
    }

    /// One user fewer for each of `points`.
    static func release(_ points: [ObjectIdentifier]) {
        lock.lock()
        defer { lock.unlock() }
        for point in points {
            guard let users = table[point]?.users else { continue }
            if users > 1 { table[point]!.users = users - 1 } else { table[point] = nil }
        }
    }
}

/// Releases a use of a point's group when it deinitializes (held by the hook
/// of an observable's property binding).
final class _PointGroupUse: @unchecked Sendable {
    private let point: ObjectIdentifier
    init(_ point: ObjectIdentifier) { self.point = point }
    deinit { _PointGroups.release([point]) }
}
