import Synchronization

/// Storage offsets by (class, key path object), read without a lock.
///
/// The table is immutable once published; an insert (once per class and
/// key path literal) copies it under a lock and publishes the copy with a
/// release store. Replaced tables are kept, never freed, so a reader that
/// loaded one may read it without retaining it: one table per insert, 24
/// bytes a slot, for a number of inserts bounded by the key path literals a
/// program uses on classes.
enum _OffsetTable {
    /// One open-addressed table: `capacity` slots of (type, key path, offset).
    final class Table: @unchecked Sendable {
        let mask: Int
        let slots: UnsafeMutablePointer<(type: UInt, keyPath: UInt, offset: Int)>
        let count: Int

        init(capacity: Int, copying old: Table?, adding entry: (type: UInt, keyPath: UInt, offset: Int)) {
            mask = capacity - 1
            slots = .allocate(capacity: capacity)
            slots.initialize(repeating: (0, 0, 0), count: capacity)
            var count = 0
            if let old {
                for i in 0...old.mask where old.slots[i].type != 0 {
                    Table.place(old.slots[i], in: slots, mask: mask)
                    count += 1
                }
            }
            Table.place(entry, in: slots, mask: mask)
            self.count = count + 1
        }

        static func place(_ entry: (type: UInt, keyPath: UInt, offset: Int),
                          in slots: UnsafeMutablePointer<(type: UInt, keyPath: UInt, offset: Int)>, mask: Int) {
            var i = index(entry.type, entry.keyPath, mask)
            while slots[i].type != 0 && !(slots[i].type == entry.type && slots[i].keyPath == entry.keyPath) { i = (i + 1) & mask }
            slots[i] = entry
        }

        @inline(__always)
        static func index(_ type: UInt, _ keyPath: UInt, _ mask: Int) -> Int {
            Int(truncatingIfNeeded: ((type >> 4) &* 31 ^ (keyPath >> 4)) &* 0x9E37_79B9_7F4A_7C15 >> 40) & mask
        }

        func find(_ type: UInt, _ keyPath: UInt) -> Int? {
            var i = Table.index(type, keyPath, mask)
            while true {
                let slot = slots[i]
                if slot.type == 0 { return nil }
                if slot.type == type && slot.keyPath == keyPath { return slot.offset }
                i = (i + 1) & mask
            }
        }
    }

    private static let current = Atomic<Int>(0)
    /// Every table ever published (kept so that readers never see one freed), and
    /// the key paths whose identities the tables hold (kept so identities are not reused).
    private static let kept = Mutex<(tables: [Table], keyPaths: [AnyKeyPath])>(([], []))
    private static let lockTag = LockTag()
    private final class LockTag: Sendable {}

    @inline(__always)
    static func find(_ type: ObjectIdentifier, _ keyPath: AnyKeyPath) -> Int? {
        find(UInt(bitPattern: type), identity(keyPath))
    }

    static func insert(_ type: ObjectIdentifier, _ keyPath: AnyKeyPath, offset: Int) {
        insert(UInt(bitPattern: type), identity(keyPath), offset: offset, keeping: keyPath)
    }

    /// The same table keyed by a field's name instead of a key path: the
    /// address of a static string, which lives as long as the program.
    @inline(__always)
    static func find(_ type: ObjectIdentifier, field: StaticString) -> Int? {
        find(UInt(bitPattern: type), UInt(bitPattern: field.utf8Start))
    }

    static func insert(_ type: ObjectIdentifier, field: StaticString, offset: Int) {
        insert(UInt(bitPattern: type), UInt(bitPattern: field.utf8Start), offset: offset, keeping: nil)
    }

    @inline(__always)
    private static func find(_ type: UInt, _ key: UInt) -> Int? {
        let bits = current.load(ordering: .acquiring)
        guard bits != 0 else { return nil }
        return Unmanaged<Table>.fromOpaque(UnsafeRawPointer(bitPattern: bits)!)._withUnsafeGuaranteedRef { $0.find(type, key) }
    }

    /// Publishes a table with the entry added; `keyPath`, whose identity is
    /// the key, is kept so that the identity is never reused.
    private static func insert(_ type: UInt, _ key: UInt, offset: Int, keeping keyPath: AnyKeyPath?) {
        kept.withVisibleLock(lockTag) { kept in
            let old = kept.tables.last
            if let old, old.find(type, key) != nil { return }
            let capacity = old.map { ($0.count + 1) * 2 > $0.mask + 1 ? ($0.mask + 1) * 2 : $0.mask + 1 } ?? 64
            let table = Table(capacity: capacity, copying: old, adding: (type, key, offset))
            kept.tables.append(table)
            if let keyPath { kept.keyPaths.append(keyPath) }
            current.store(Int(bitPattern: Unmanaged.passUnretained(table).toOpaque()), ordering: .releasing)
        }
    }

    @inline(__always)
    private static func identity(_ keyPath: AnyKeyPath) -> UInt { UInt(bitPattern: Unmanaged.passUnretained(keyPath).toOpaque()) }
}
