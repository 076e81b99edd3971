import CFFIShim
import Synchronization

// What HookBind needs from Hook and nothing else may rely on: the per-thread
// slot where a binding keeps the change it is delivering, one lock that
// ThreadSanitizer can see, and setting a `@Hooked` property through its hook
// point. `@_spi(HookBind)`: not part of Hook's public API.

/// The change a binding is delivering on the calling thread.
@_spi(HookBind)
public enum _BindingThread {
    /// An opaque pointer owned by the outermost delivery on this thread, or nil.
    public static var change: UnsafeMutableRawPointer? {
        get { hk_thread_binding_change() }
        set { hk_thread_set_binding_change(newValue) }
    }
}

/// A mutex whose acquire and release ThreadSanitizer sees (see `withVisibleLock`).
@_spi(HookBind)
public final class _VisibleLock: Sendable {
    private let mutex = Mutex(())

    public init() {}

    /// Runs `body` holding the lock.
    public func withLock(_ body: () throws -> Void) rethrows {
        try mutex.withVisibleLock(self) { (_: inout ()) throws -> Void in try body() }
    }
}

extension PropertyHook {
    /// The stored value. Only while the object is alive.
    @_spi(HookBind)
    public var _currentValue: Value { value }

    /// Sets the value as `object.property = newValue` does: through the hooks.
    /// Only while the object is alive (hooks see it as the call's target).
    @_spi(HookBind)
    public func _setThroughHooks(_ newValue: Value) {
        if _fastPath(!hasHooks) {
            value = newValue
        } else {
            _set(newValue)
        }
    }
}
