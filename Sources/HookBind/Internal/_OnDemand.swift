import Synchronization

/// An object made the first time it is needed, exactly once however many
/// threads race to make it (the losers' are dropped unseen), and released
/// with the owner: how `Event` and `Signal` keep their hook point, so that one
/// nobody subscribes to costs a word.
@usableFromInline
struct _OnDemand<Object: AnyObject>: ~Copyable {
    /// A +1 `Unmanaged<Object>` bit pattern, or 0.
    @usableFromInline let bits = Atomic<Int>(0)

    init() {}

    deinit {
        let made = bits.load(ordering: .acquiring)
        if made != 0 { Unmanaged<Object>.fromOpaque(UnsafeRawPointer(bitPattern: made)!).release() }
    }

    /// The object if it is made, borrowed for `body` (no reference counting).
    @inlinable @inline(__always)
    func withExisting<R>(_ body: (Object) throws -> R) rethrows -> R? {
        let made = bits.load(ordering: .acquiring)
        guard made != 0 else { return nil }
        return try Unmanaged<Object>.fromOpaque(UnsafeRawPointer(bitPattern: made)!)._withUnsafeGuaranteedRef(body)
    }

    /// The object, made by `make` if there is none yet.
    func get(_ make: () -> Object) -> Object {
        if let existing = withExisting({ $0 }) { return existing }
        let made = Int(bitPattern: Unmanaged.passRetained(make()).toOpaque())
        let (won, current) = bits.compareExchange(expected: 0, desired: made, ordering: .acquiringAndReleasing)
        if won { return Unmanaged<Object>.fromOpaque(UnsafeRawPointer(bitPattern: made)!).takeUnretainedValue() }
        Unmanaged<Object>.fromOpaque(UnsafeRawPointer(bitPattern: made)!).release()
        return Unmanaged<Object>.fromOpaque(UnsafeRawPointer(bitPattern: current)!).takeUnretainedValue()
    }
}
