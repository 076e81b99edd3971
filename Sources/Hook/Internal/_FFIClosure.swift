import CFFIShim
import Glibc

/// A libffi closure: a native entry point made at run time whose calls reach
/// `handler` with libffi's result buffer and argument pointers.
///
/// `user_data` is this object, unretained: whoever owns it keeps it alive for
/// as long as `entry` may be called, and `deinit` frees the closure.
final class _FFIClosure: @unchecked Sendable {
    typealias Handler = (UnsafeMutableRawPointer, UnsafeMutablePointer<UnsafeMutableRawPointer?>) -> Void

    let interface: CallInterface
    let entry: UnsafeRawPointer
    private let closure: UnsafeMutablePointer<ffi_closure>
    private let handler: Handler

    init(_ signature: Signature, name: String, handler: @escaping Handler) throws(HookError) {
        let interface = try CallInterface(signature, name: name, forClosure: true)
        let (closure, code) = try Self.allocate(name: name)
        self.interface = interface
        self.entry = UnsafeRawPointer(code)
        self.closure = closure
        self.handler = handler
        let status = ffi_prep_closure_loc(
            closure, interface.cif,
            { _, result, arguments, userData in
                Unmanaged<_FFIClosure>.fromOpaque(userData!)._withUnsafeGuaranteedRef {
                    $0.handler(result!, arguments!)
                }
            },
            Unmanaged.passUnretained(self).toOpaque(), code)
        guard status == FFI_OK else {
            // Every stored property is set, so deinit runs and frees the closure.
            throw HookError(.libffiRefused, point: name, "ffi_prep_closure_loc returned \(status.name) for \(signature)")
        }
    }

    deinit { ffi_closure_free(closure) }

    /// Allocates closure memory, or explains why the system refused it.
    static func allocate(name: String) throws(HookError) -> (UnsafeMutablePointer<ffi_closure>, UnsafeMutableRawPointer) {
        var code: UnsafeMutableRawPointer?
        let allocated = FunctionHook.closureAllocationRefused ? nil : ffi_closure_alloc(MemoryLayout<ffi_closure>.size, &code)
        guard let allocated, let code else {
            throw HookError(.closureMemoryRefused, point: name, """
                ffi_closure_alloc returned NULL (errno \(errno)): the system refused memory for a closure. \
                Debian's libffi is built without static trampolines and maps closures in read-write-execute \
                pages; a W^X policy (SELinux deny_execmem, systemd MemoryDenyWriteExecute=yes, PaX) forbids them. \
                Allow writable+executable memory for this process or use a libffi built with --enable-static-tramp.
                """)
        }
        return (allocated.assumingMemoryBound(to: ffi_closure.self), code)
    }
}
