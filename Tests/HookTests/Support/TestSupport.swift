import CHookTestSupport
import Hook
import Glibc
import Synchronization

// The C structs of the test-support target, described to Hook.
extension S1: CRepresentable { public static let cType = CType.structure([.int8]) }
extension S3: CRepresentable { public static let cType = CType.structure([.array(.uint8, count: 3)]) }
extension S4: CRepresentable { public static let cType = CType.structure([.int8, .uint8, .int16]) }
extension S8: CRepresentable { public static let cType = CType.structure([.float, .int32]) }
extension S8F: CRepresentable { public static let cType = CType.structure([.float, .float]) }
extension S12F: CRepresentable { public static let cType = CType.structure([.float, .float, .float]) }
extension S12A: CRepresentable { public static let cType = CType.structure([.array(.int16, count: 3), .uint8, .float]) }
extension S16: CRepresentable { public static let cType = CType.structure([.int32, .float, .double]) }
extension S16DI: CRepresentable { public static let cType = CType.structure([.double, .int64]) }
extension S16N: CRepresentable { public static let cType = CType.structure([S8F.cType, S8F.cType]) }
extension S24: CRepresentable { public static let cType = CType.structure([.int64, .double, .int8]) }
extension S24N: CRepresentable { public static let cType = CType.structure([S8.cType, .double, .int16]) }
extension S40: CRepresentable {
    public static let cType = CType.structure([.uint16, S12F.cType, .int64, .array(.uint8, count: 5), .double])
}
extension SID: CRepresentable { public static let cType = CType.structure([.int64, .double]) }
extension S64: CRepresentable {
    public static let cType = CType.structure([.array(.double, count: 4), .array(.int64, count: 3), .float, .uint32])
}

/// A value shared with hooks, which run on any thread.
final class Shared<Value: Sendable>: Sendable {
    private let storage: Mutex<Value>
    init(_ value: Value) { storage = Mutex(value) }
    var value: Value {
        get { storage.withLock { $0 } }
        set { storage.withLock { $0 = newValue } }
    }
    func mutate<R: Sendable>(_ body: (inout Value) -> R) -> R { storage.withLock { body(&$0) } }
}

/// A C function's address.
func address<F>(of function: F) -> UnsafeRawPointer {
    unsafeBitCast(function, to: UnsafeRawPointer.self)
}

/// SplitMix64: a small seeded generator, so a failing run can be replayed.
struct SeededGenerator: RandomNumberGenerator {
    private(set) var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Counts heap allocations on this thread while `body` runs (nil where
/// counting is unavailable: under ASan/TSan, which replace malloc themselves).
func mallocCount(_ body: () throws -> Void) rethrows -> UInt64? {
    guard hk_test_malloc_counting_available() else { return nil }
    let before = hk_test_malloc_count()
    try body()
    return hk_test_malloc_count() - before
}

/// The allocations `body` makes on this thread and does not free (mallocs
/// minus frees); nil where a sanitizer owns malloc.
func keptAllocations(_ body: () throws -> Void) rethrows -> Int? {
    guard hk_test_malloc_counting_available() else { return nil }
    let mallocs = hk_test_malloc_count(), frees = hk_test_free_count()
    try body()
    return Int(hk_test_malloc_count() - mallocs) - Int(hk_test_free_count() - frees)
}

/// Whether `condition` holds, waiting up to 2 s for it: what removed hooks
/// captured is released by whichever thread reclaims their batch, and a
/// test running beside this one may have taken it and still be releasing
/// it, a moment after this test's own reclaim returned.
func releasedSoon(_ condition: () -> Bool) -> Bool {
    var waited = 0
    while !condition() && waited < 2_000 {
        usleep(1_000)
        waited += 1
    }
    return condition()
}
