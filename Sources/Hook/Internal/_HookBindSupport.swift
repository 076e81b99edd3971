import CFFIShim
import Synchronization

// What HookBind needs from Hook and nothing else may rely on: the per-thread
// slot where a binding keeps the change it is delivering, and the value of
// a `@Hooked` property as a hook point standing on its own (HookBind's
// observables) or set through its hooks. `@_spi(HookBind)`: not part of
// Hook's public API. The two accessors of a property's value below are plain
// `public` (underscored, not for users) because HookBind's `@inlinable` code,
// which Swift specializes in the caller's module, cannot use SPI.

/// The change a binding is delivering on the calling thread.
@_spi(HookBind)
public enum _BindingThread {
    /// An opaque pointer owned by the outermost delivery on this thread, or nil.
    public static var change: UnsafeMutableRawPointer? {
        get { hk_thread_binding_change() }
        set { hk_thread_set_binding_change(newValue) }
    }
}

extension PropertyHook {
    /// A hook point holding `value` for an object that is not a `@Hooked`
    /// property's owner (HookBind's `Observable`, `Computed`), named `name`.
    @_spi(HookBind)
    public static func _standalone(_ value: Value, name: String) -> PropertyHook<Value> {
        PropertyHook(value, name: name)
    }

    /// Makes `object` the target of this point's calls. The object must own
    /// the point and be the only one to set it (it is not retained).
    @_spi(HookBind)
    public func _adopt(by object: AnyObject) { _setTarget(object) }

    /// Stores `newValue` without a call: no hook sees it.
    @_spi(HookBind)
    public func _storeSilently(_ newValue: Value) { storage.pointee = newValue }

    /// The stored value. Only while the object is alive.
    @inlinable
    public var _currentValue: Value { storage.pointee }

    /// Sets the value as `object.property = newValue` does: through the hooks.
    /// Only while the object is alive (hooks see it as the call's target).
    @inlinable
    public func _setThroughHooks(_ newValue: Value) {
        if _fastPath(!hasHooks) {
            storage.pointee = newValue
        } else {
            _set(newValue)
        }
    }
}
