import CFFIShim
import Synchronization

extension Mutex where Value: ~Copyable {
    /// `withLock`, with the lock's acquire and release also announced to
    /// ThreadSanitizer, which does not see `Mutex`'s own synchronization on
    /// Linux (it happens inside the uninstrumented standard library) and would
    /// report the state it protects as racy.
    @inline(__always)
    borrowing func withVisibleLock<Result: ~Copyable, E: Error>(
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        try withLock { (value: inout sending Value) throws(E) -> sending Result in
            let address = withUnsafeMutablePointer(to: &value) { UnsafeMutableRawPointer($0) }
            hk_tsan_acquire(address)
            defer { hk_tsan_release(address) }
            return try body(&value)
        }
    }
}
