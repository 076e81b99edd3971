/// A list in a buffer of its owner's own, for the graph's lists (a
/// computed's dependencies, a thread's reads of its diverged evaluations; a
/// node's dependents are a `_Dependents`, below): an array held by a class
/// is retained to be walked and checked for uniqueness to be written. Not
/// copyable in spirit: its owner frees it (`free()`), exactly once, and
/// reads and writes it only under its group's lock (a thread's list: only
/// on that thread).
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

    /// `append`, with its common case inline: room left.
    @inline(__always)
    mutating func push(_ element: Element) {
        if _fastPath(storedCount < storedCapacity) {
            (base.unsafelyUnwrapped + count).initialize(to: element)
            storedCount &+= 1
        } else {
            append(element)
        }
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

    /// Removes and returns the last one (there is one).
    mutating func removeLast() -> Element {
        storedCount &-= 1
        return (base.unsafelyUnwrapped + count).move()
    }

    /// Its elements, in place (empty, with no address, when there is no storage).
    var elements: UnsafeMutableBufferPointer<Element> {
        @inline(__always) get { UnsafeMutableBufferPointer(start: base, count: count) }
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

/// A node's dependents (their cores, unmanaged), in one word: none, the
/// only one in place, or a buffer of the node's own (`_Buffer`'s rules). A
/// value read by one computed, the common case, takes no allocation for its
/// list (a 32-byte glibc block per computed before), and a node is a word
/// smaller than with a pointer and two counts (an observable's node, 56
/// bytes, fits a 64-byte block, not an 80-byte one).
struct _Dependents {
    /// 0: none; a core's address (bit 0 clear, as any object's): the only
    /// one; else (bit 0 set) a buffer's address: its count and capacity (two
    /// `Int32`s), then the cores.
    private var bits: UInt = 0

    private typealias Link = Unmanaged<_ComputedCore>

    private var buffer: UnsafeMutableRawPointer {
        @inline(__always) get { UnsafeMutableRawPointer(bitPattern: bits & ~1).unsafelyUnwrapped }
    }

    private static func count(of buffer: UnsafeMutableRawPointer) -> Int {
        Int(buffer.load(as: Int32.self))
    }

    private static func links(of buffer: UnsafeMutableRawPointer) -> UnsafeMutablePointer<Link> {
        (buffer + 8).assumingMemoryBound(to: Link.self)
    }

    var isEmpty: Bool {
        @inline(__always) get { bits == 0 }
    }

    var count: Int {
        @inline(__always) get {
            if bits & 1 == 0 { return bits == 0 ? 0 : 1 }
            return Self.count(of: buffer)
        }
    }

    /// The only one when it is in place (nil when there are none or a buffer).
    var onlyInPlace: Unmanaged<_ComputedCore>? {
        @inline(__always) get {
            if bits & 1 != 0 { return nil }
            return UnsafeRawPointer(bitPattern: bits).map { .fromOpaque($0) }
        }
    }

    /// The `i`th (below `count`).
    subscript(i: Int) -> Unmanaged<_ComputedCore> {
        @inline(__always) get {
            if bits & 1 == 0 { return .fromOpaque(UnsafeRawPointer(bitPattern: bits).unsafelyUnwrapped) }
            return Self.links(of: buffer)[i]
        }
    }

    /// Calls `body` with each, in order (`body` must not change the list).
    @inline(__always)
    func forEach(_ body: (Unmanaged<_ComputedCore>) -> Void) {
        // (None first, in one test: a computed that nothing reads, the
        // common end of a mark, returns before its caller's prologue.)
        if bits == 0 { return }
        if bits & 1 == 0 {
            body(.fromOpaque(UnsafeRawPointer(bitPattern: bits).unsafelyUnwrapped))
            return
        }
        let buffer = self.buffer
        var link = Self.links(of: buffer)
        let end = link + Self.count(of: buffer)
        while link < end {
            body(link.pointee)
            link += 1
        }
    }

    /// Adds `element` at the end: in place if it is the only one, else in
    /// the buffer (2 at first, a 32-byte block with its counts; doubled
    /// when full).
    mutating func append(_ element: Unmanaged<_ComputedCore>) {
        let address = UInt(bitPattern: element.toOpaque())
        if bits == 0 {
            bits = address
            return
        }
        let count = self.count
        if bits & 1 == 0 || count == Int(buffer.load(fromByteOffset: 4, as: Int32.self)) {
            let capacity = bits & 1 == 0 ? 2 : 2 * count
            let grown = UnsafeMutableRawPointer.allocate(byteCount: 8 + 8 * capacity, alignment: 16)
            grown.storeBytes(of: Int32(count), as: Int32.self)
            grown.storeBytes(of: Int32(truncatingIfNeeded: capacity), toByteOffset: 4, as: Int32.self)
            let links = Self.links(of: grown)
            for i in 0..<count { (links + i).initialize(to: self[i]) }
            if bits & 1 != 0 { buffer.deallocate() }
            bits = UInt(bitPattern: grown) | 1
        }
        (Self.links(of: buffer) + count).initialize(to: element)
        buffer.storeBytes(of: Int32(count + 1), as: Int32.self)
    }

    /// Removes and returns the `i`th, keeping the order of the rest (a
    /// buffer stays one, however few are left).
    mutating func remove(at i: Int) -> Unmanaged<_ComputedCore> {
        let removed = self[i]
        if bits & 1 == 0 {
            bits = 0
        } else {
            let count = self.count, links = Self.links(of: buffer)
            (links + i).moveInitialize(from: links + i + 1, count: count - i - 1)
            buffer.storeBytes(of: Int32(count - 1), as: Int32.self)
        }
        return removed
    }

    /// Drops every one and frees the buffer, if any.
    mutating func free() {
        if bits & 1 != 0 { buffer.deallocate() }
        bits = 0
    }
}

/// Where each value of a thread's long segment of reads is, by the value's
/// address (`_GraphState.freshIndexed`): a table of its own, open
/// addressing, a multiplicative hash of the address (the standard
/// library's dictionary hashed each address with SipHash, about 85
/// instructions, twice a read), emptied in one step by a new generation
/// (its storage, as large as the thread's longest segment needed, kept).
/// Its owner frees it (`free()`), once; only its thread touches it.
struct _ReadIndex {
    private struct Slot {
        var address: UInt
        var index: Int32
        /// The generation the slot was written in: of an earlier one, empty.
        var generation: UInt32
    }

    private var slots: UnsafeMutablePointer<Slot>?
    /// A power of two, or 0.
    private var capacity = 0
    private var count = 0
    private var generation: UInt32 = 1

    /// Forgets every entry (its storage kept).
    mutating func removeAll() {
        count = 0
        generation &+= 1
        if generation == 0 {
            // (Once in 2^32: the old stamps could come back.)
            if let slots { slots.update(repeating: Slot(address: 0, index: 0, generation: 0), count: capacity) }
            generation = 1
        }
    }

    /// Where `address` is, if it was inserted since the last `removeAll`.
    func index(of address: UInt) -> Int? {
        guard let slots else { return nil }
        var i = Self.hash(address, capacity)
        while true {
            let slot = slots[i]
            if slot.generation != generation { return nil }
            if slot.address == address { return Int(slot.index) }
            i = (i &+ 1) & (capacity &- 1)
        }
    }

    /// Records that `address` is at `index` (in place of where it was).
    mutating func insert(_ address: UInt, at index: Int) {
        if 2 * (count + 1) > capacity { grow() }
        let slots = slots.unsafelyUnwrapped
        var i = Self.hash(address, capacity)
        while slots[i].generation == generation, slots[i].address != address {
            i = (i &+ 1) & (capacity &- 1)
        }
        if slots[i].generation != generation { count += 1 }
        slots[i] = Slot(address: address, index: Int32(truncatingIfNeeded: index), generation: generation)
    }

    /// Doubles the table (64 slots at first), keeping this generation's entries.
    private mutating func grow() {
        let old = slots, oldCapacity = capacity
        capacity = max(64, 2 * capacity)
        slots = .allocate(capacity: capacity)
        slots.unsafelyUnwrapped.initialize(repeating: Slot(address: 0, index: 0, generation: 0), count: capacity)
        count = 0
        guard let old else { return }
        for i in 0..<oldCapacity where old[i].generation == generation { insert(old[i].address, at: Int(old[i].index)) }
        old.deallocate()
    }

    /// The slot to look at first for `address` in a table of `capacity`.
    private static func hash(_ address: UInt, _ capacity: Int) -> Int {
        // (Objects are 16-byte aligned: the low bits carry nothing.)
        Int(truncatingIfNeeded: ((address >> 4) &* 0x9E37_79B9_7F4A_7C15) >> UInt(UInt.bitWidth - capacity.trailingZeroBitCount))
    }

    mutating func free() {
        slots?.deallocate()
        slots = nil
        capacity = 0
    }
}
