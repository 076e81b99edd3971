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
