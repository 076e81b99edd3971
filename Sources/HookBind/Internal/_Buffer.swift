/// A list in a buffer of its owner's own, for the graph's lists (a node's
/// dependents, a computed's dependencies): an array held by a class is
/// retained to be walked and checked for uniqueness to be written. Not
/// copyable in spirit: its owner frees it (`free()`), exactly once, and
/// reads and writes it only under its group's lock.
@usableFromInline
struct _Buffer<Element> {
    @usableFromInline var base: UnsafeMutablePointer<Element>?
    @usableFromInline var storedCount: Int32 = 0
    private var storedCapacity: Int32 = 0

    @usableFromInline
    var count: Int {
        @inlinable @inline(__always) get { Int(storedCount) }
    }

    var capacity: Int { Int(storedCapacity) }

    /// Adds `element` at the end (the storage doubled when full, 2 at first).
    mutating func append(_ element: Element) {
        if storedCount == storedCapacity {
            let grown = UnsafeMutablePointer<Element>.allocate(capacity: max(2, 2 * capacity))
            if let base {
                grown.moveInitialize(from: base, count: count)
                base.deallocate()
            }
            base = grown
            storedCapacity = Int32(max(2, 2 * capacity))
        }
        (base.unsafelyUnwrapped + count).initialize(to: element)
        storedCount += 1
    }

    /// Removes and returns the element at `i`, keeping the order of the rest.
    mutating func remove(at i: Int) -> Element {
        let base = base.unsafelyUnwrapped
        let removed = (base + i).move()
        (base + i).moveInitialize(from: base + i + 1, count: count - i - 1)
        storedCount -= 1
        return removed
    }

    /// Becomes a copy of `new` (its storage reused when large enough, else
    /// exactly as large).
    mutating func replace(with new: UnsafeBufferPointer<Element>) {
        removeAll()
        if capacity < new.count {
            base?.deallocate()
            storedCapacity = Int32(new.count)
            base = .allocate(capacity: new.count)
        }
        if let newBase = new.baseAddress { base.unsafelyUnwrapped.initialize(from: newBase, count: new.count) }
        storedCount = Int32(new.count)
    }

    /// Drops the last `k`.
    mutating func removeLast(_ k: Int) {
        guard k > 0 else { return }
        (base.unsafelyUnwrapped + (count - k)).deinitialize(count: k)
        storedCount -= Int32(k)
    }

    /// Drops every one (the storage kept).
    mutating func removeAll() {
        removeLast(count)
    }

    /// Drops every one and frees the storage.
    mutating func free() {
        removeAll()
        base?.deallocate()
        base = nil
        storedCapacity = 0
    }
}

/// A node's dependents (their cores, unmanaged): `_Buffer`'s rules, with the
/// only one kept in place. A value read by one computed, the common case,
/// takes no allocation for its list (a glibc block of 32 bytes per
/// computed before: a third of what a `Computed` over an `Observable`
/// kept beside the two objects).
struct _Dependents {
    /// `capacity` 0: the only dependent (`storedCount` 1), or nil (0);
    /// else a buffer of `capacity`.
    private var storage: UnsafeMutableRawPointer?
    private var storedCount: Int32 = 0
    private var capacity: Int32 = 0

    var count: Int {
        @inline(__always) get { Int(storedCount) }
    }

    /// The `i`th (below `count`).
    subscript(i: Int) -> Unmanaged<_ComputedCore> {
        @inline(__always) get {
            let storage = storage.unsafelyUnwrapped
            if capacity == 0 { return .fromOpaque(storage) }
            return storage.assumingMemoryBound(to: Unmanaged<_ComputedCore>.self)[i]
        }
    }

    /// Adds `element` at the end: in place if it is the only one, else in
    /// the buffer (3 at first, what glibc's smallest block holds; doubled
    /// when full).
    mutating func append(_ element: Unmanaged<_ComputedCore>) {
        if capacity == 0, storage == nil {
            storage = UnsafeMutableRawPointer(element.toOpaque())
            storedCount = 1
            return
        }
        if storedCount == capacity || capacity == 0 {
            let grown = Int32(max(3, 2 * Int(capacity)))
            let buffer = UnsafeMutablePointer<Unmanaged<_ComputedCore>>.allocate(capacity: Int(grown))
            for i in 0..<count { (buffer + i).initialize(to: self[i]) }
            if capacity != 0 { storage.unsafelyUnwrapped.deallocate() }
            storage = UnsafeMutableRawPointer(buffer)
            capacity = grown
        }
        (storage.unsafelyUnwrapped.assumingMemoryBound(to: Unmanaged<_ComputedCore>.self) + count).initialize(to: element)
        storedCount += 1
    }

    /// Removes and returns the `i`th, keeping the order of the rest (a
    /// buffer stays one, however few are left).
    mutating func remove(at i: Int) -> Unmanaged<_ComputedCore> {
        let removed = self[i]
        if capacity == 0 {
            storage = nil
        } else {
            let base = storage.unsafelyUnwrapped.assumingMemoryBound(to: Unmanaged<_ComputedCore>.self)
            (base + i).moveInitialize(from: base + i + 1, count: count - i - 1)
        }
        storedCount -= 1
        return removed
    }

    /// Drops every one and frees the buffer, if any.
    mutating func free() {
        if capacity != 0 { storage.unsafelyUnwrapped.deallocate() }
        storage = nil
        storedCount = 0
        capacity = 0
    }
}
