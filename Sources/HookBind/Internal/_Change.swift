import Foundation
import Hook

/// The change a thread is delivering: the bindings that have delivered it so
/// far (the reentrancy flag). It lives on the stack of the outermost
/// delivery; the thread state points at it while it runs. Each delivery
/// holds its binding's group lock (see _Group.swift), so a store and its
/// delivery are one step for every other thread.
struct _Change {
    private var ids: UnsafeMutablePointer<ObjectIdentifier>
    private var count = 0
    private var capacity: Int
    private var onHeap = false
    /// The root of the group the outermost delivery locked (the lock it holds).
    private var root: UnsafeMutableRawPointer?

    /// How many bindings one change records without allocating.
    static let inlineCapacity = 16

    private init(_ buffer: UnsafeMutableBufferPointer<ObjectIdentifier>) {
        ids = buffer.baseAddress!
        capacity = buffer.count
    }

    private func contains(_ id: ObjectIdentifier) -> Bool {
        var i = 0
        while i < count {
            if ids[i] == id { return true }
            i += 1
        }
        return false
    }

    private mutating func insert(_ id: ObjectIdentifier) {
        if count == capacity {
            let bigger = UnsafeMutablePointer<ObjectIdentifier>.allocate(capacity: capacity * 2)
            bigger.initialize(from: ids, count: count)
            if onHeap { ids.deallocate() }
            ids = bigger
            capacity *= 2
            onHeap = true
        }
        ids[count] = id
        count += 1
    }

    /// Runs `body` as `binding`'s part of the current change on this thread,
    /// holding the lock of `group`, the binding's.
    /// `body(true)`: deliver; `body(false)`: this binding already delivered
    /// this change (the write was caused by a delivery): do not deliver again.
    static func run(_ binding: ObjectIdentifier, _ group: _Group, _ body: (Bool) throws -> Void) throws {
        if let raw = _BindingThread.change {
            let change = raw.assumingMemoryBound(to: _Change.self)
            // The group the outermost delivery locked (most nested deliveries
            // are of the same group): held for the whole change.
            if group.unmanagedRoot.toOpaque() == change.pointee.root {
                return try deliver(change, binding, body)
            }
            let lease = _Groups.lock(group)
            defer { _Groups.unlock(lease) }
            return try deliver(change, binding, body)
        }
        let lease = _Groups.lock(group)
        defer { _Groups.unlock(lease) }
        try begin(binding, root: (lease.root ?? group.unmanagedRoot).toOpaque(), body)
    }

    /// Runs `body` as `id`'s part of the current change on this thread, as
    /// `run` does, without a group's lock (`body(false)`: `id` delivered
    /// this change already): for a `HookTrigger`, whose binding takes its
    /// own, and a call of a method, closure or function, whose original
    /// runs outside any lock (`Binding.callAndDeliver`). A change begun here
    /// holds no lock: a binding that delivers in it takes its group's.
    static func once(_ id: ObjectIdentifier, _ body: (Bool) throws -> Void) throws {
        if let raw = _BindingThread.change {
            return try deliver(raw.assumingMemoryBound(to: _Change.self), id, body)
        }
        try begin(id, root: nil, body)
    }

    /// The bindings that delivered the change this thread is delivering
    /// (none outside one).
    static var deliveredSoFar: [ObjectIdentifier] {
        guard let raw = _BindingThread.change else { return [] }
        let change = raw.assumingMemoryBound(to: _Change.self)
        return Array(UnsafeBufferPointer(start: change.pointee.ids, count: change.pointee.count))
    }

    /// Runs `body` as part of a change that `delivered` delivered already
    /// (a batch's call of an observable at its end, of a write those
    /// bindings made in the batch: they do not deliver it back). In the
    /// thread's change if it has one; else in one begun here, holding no lock.
    static func run(deliveredBy delivered: [ObjectIdentifier], _ body: () -> Void) {
        if let raw = _BindingThread.change {
            let change = raw.assumingMemoryBound(to: _Change.self)
            for id in delivered where !change.pointee.contains(id) { change.pointee.insert(id) }
            return body()
        }
        withUnsafeTemporaryAllocation(of: ObjectIdentifier.self, capacity: inlineCapacity) { buffer in
            var change = _Change(buffer)
            defer { if change.onHeap { change.ids.deallocate() } }
            for id in delivered { change.insert(id) }
            withUnsafeMutablePointer(to: &change) { pointer in
                _BindingThread.change = UnsafeMutableRawPointer(pointer)
                defer { _BindingThread.change = nil }
                body()
            }
        }
    }

    /// A change begun by `id` (the thread has none), on this stack, named by
    /// the thread state while `body(true)` runs; `root`: the group lock its
    /// beginning holds, if any.
    @inline(__always)
    private static func begin(_ id: ObjectIdentifier, root: UnsafeMutableRawPointer?, _ body: (Bool) throws -> Void) throws {
        try withUnsafeTemporaryAllocation(of: ObjectIdentifier.self, capacity: inlineCapacity) { buffer in
            var change = _Change(buffer)
            defer { if change.onHeap { change.ids.deallocate() } }
            change.root = root
            change.insert(id)
            try withUnsafeMutablePointer(to: &change) { pointer in
                _BindingThread.change = UnsafeMutableRawPointer(pointer)
                defer { _BindingThread.change = nil }
                try body(true)
            }
        }
    }

    /// `binding`'s part of `change`: `body(true)` the first time, `body(false)`
    /// after (`body` runs outside any access to `change`: it may nest).
    private static func deliver(_ change: UnsafeMutablePointer<_Change>, _ binding: ObjectIdentifier,
                                _ body: (Bool) throws -> Void) throws {
        if change.pointee.contains(binding) { return try body(false) }
        change.pointee.insert(binding)
        try body(true)
    }
}
