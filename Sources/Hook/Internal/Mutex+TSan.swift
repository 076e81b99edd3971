import CHookThreads
import Synchronization

extension Mutex where Value: ~Copyable {
    /// `withLock`, with the lock's acquire and release also announced to
    /// ThreadSanitizer, which does not see `Mutex`'s own synchronization on
    /// Linux (it happens inside the uninstrumented standard library) and would
    /// report the state it protects as racy.
    ///
    /// - Parameter owner: The object that holds this mutex; its address (plus
    ///   `slot`, for a second mutex of the same object) names the lock to TSan.
    /// (`package`: HookBind's mutexes are HookBind's to announce too.)
    @inline(__always)
    package borrowing func withVisibleLock<Result: ~Copyable, E: Error>(
        _ owner: AnyObject, slot: Int = 0,
        _ body: (inout sending Value) throws(E) -> sending Result
    ) throws(E) -> sending Result {
        let address = Unmanaged.passUnretained(owner).toOpaque() + slot
        return try withLock { (value: inout sending Value) throws(E) -> sending Result in
            hk_tsan_acquire(address)
            defer { hk_tsan_release(address) }
            return try body(&value)
        }
    }
}
