import CFFIShim
import Glibc

/// A hook point over a C function: a new native entry point with the same ABI
/// that runs hooks around the original.
///
/// ```swift
/// let hook = try FunctionHook(cFunction: add as @convention(c) (Int32, Int32) -> Int32,
///                             signature: Signature(returning: .int32, arguments: [.int32, .int32]),
///                             name: "add")
/// hook.before { call in try call.setArgument(0, to: 10 as Int32) }
/// hook.after { call in print(call) }                    // add(10, 2) -> 12
/// let hooked = hook.entry(as: (@convention(c) (Int32, Int32) -> Int32).self)
/// hooked(1, 2)                                          // 12
/// ```
///
/// Install ``entry`` wherever the original pointer lived (a callback slot, a
/// table of function pointers, a C API); the ``original`` stays callable
/// without hooks.
///
/// ## Lifetime
/// The hook point owns its libffi closure, `ffi_cif`, `ffi_type`s and hooks,
/// and frees them in `deinit`. Keep it alive for as long as ``entry`` may be
/// called: uninstall the entry and let calls in flight return before the last
/// reference goes. Hooks and tokens never keep it (or its target) alive.
/// Swift may release a local as soon as its last use, so a local hook point
/// whose entry is still called needs `withExtendedLifetime(hook) { ... }` or
/// a stored property.
///
/// ## Threads
/// The entry may be called on any number of threads while hooks are added and
/// removed: the call path takes no lock and allocates nothing.
public final class FunctionHook: @unchecked Sendable, CustomStringConvertible {
    /// The hook point's name: the `selector` of its CallBacks and the subject of its errors.
    public let name: String
    /// The C signature of the function.
    public let signature: Signature
    /// The original function, callable without hooks.
    public let original: UnsafeRawPointer
    /// The hooked entry point: a libffi closure with the original's ABI.
    public let entry: UnsafeRawPointer

    private weak var weakTarget: AnyObject?
    let interface: CallInterface
    let slot: _HookSlot
    // Cached for the call path.
    @usableFromInline let cif: UnsafeMutablePointer<ffi_cif>
    private let originalFunction: @convention(c) () -> Void
    private let closure: UnsafeMutablePointer<ffi_closure>
    @usableFromInline let resultBufferSize: Int
    /// `CType._scalarCode` of each argument, then of the result (read by CallBack).
    @usableFromInline let codes: UnsafeMutablePointer<UInt8>
    /// The number of arguments (read by CallBack).
    @usableFromInline let argumentCountValue: Int
    /// Whether calls of the original need libffi's bugs worked around.
    private let adjustsCalls: Bool

    /// The object the hooked function belongs to, if any (held weakly).
    public var target: AnyObject? { weakTarget }

    /// Makes a hook point over the C function at `function`.
    ///
    /// - Parameters:
    ///   - function: The original function. `nil` is an error.
    ///   - signature: Its C signature. Variadic signatures, unions, bit-fields
    ///     and empty structs are refused.
    ///   - name: The name in CallBacks and errors; by default the symbol name
    ///     found by `dladdr`, or the address.
    ///   - target: An object the function acts on, reported as `CallBack.target`; held weakly.
    /// - Throws: ``HookError`` naming the hook point and the cause.
    public init(function: UnsafeRawPointer?, signature: Signature, name: String? = nil, target: AnyObject? = nil) throws(HookError) {
        let name = name ?? function.map(FunctionHook.symbolName(of:)) ?? "NULL"
        guard let function else {
            throw HookError(.nullFunctionPointer, point: name, "the function pointer is NULL")
        }
        let interface = try CallInterface(signature, name: name, forClosure: true)
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
        self.name = name
        self.signature = signature
        self.original = function
        self.entry = UnsafeRawPointer(code)
        self.weakTarget = target
        self.interface = interface
        self.cif = interface.cif
        self.originalFunction = unsafeBitCast(function, to: (@convention(c) () -> Void).self)
        self.closure = allocated.assumingMemoryBound(to: ffi_closure.self)
        self.resultBufferSize = interface.resultBufferSize
        self.adjustsCalls = interface.needsCallAdjustment
        self.argumentCountValue = signature.arguments.count
        self.codes = .allocate(capacity: signature.arguments.count + 1)
        for (i, type) in signature.arguments.enumerated() { codes[i] = type._scalarCode }
        codes[signature.arguments.count] = signature.result._scalarCode
        self.slot = _HookSlot()
        // user_data is unretained: the closure lives exactly as long as self (freed in deinit).
        let status = ffi_prep_closure_loc(
            closure, cif,
            { _, result, arguments, userData in
                Unmanaged<FunctionHook>.fromOpaque(userData!)._withUnsafeGuaranteedRef {
                    $0.handleCall(result: result!, arguments: arguments!)
                }
            },
            Unmanaged.passUnretained(self).toOpaque(), code)
        guard status == FFI_OK else {
            // Every stored property is set, so deinit runs and frees the closure.
            throw HookError(.libffiRefused, point: name, "ffi_prep_closure_loc returned \(status.name) for \(signature)")
        }
    }

    /// Makes a hook point over a `@convention(c)` function value.
    ///
    /// - Throws: ``HookError`` if `cFunction` is not a C function pointer (a
    ///   Swift closure is two words, a C function pointer one).
    public convenience init<F>(cFunction: F, signature: Signature, name: String? = nil, target: AnyObject? = nil) throws(HookError) {
        guard MemoryLayout<F>.size == MemoryLayout<UnsafeRawPointer>.size else {
            throw HookError(.invalidValue, point: name ?? "\(F.self)", "\(F.self) is not a C function pointer; declare it @convention(c)")
        }
        let raw = unsafeBitCast(cFunction, to: UnsafeRawPointer?.self)
        try self.init(function: raw, signature: signature, name: name, target: target)
    }

    deinit {
        // No call is in flight (see Lifetime), so the closure and cif can go.
        ffi_closure_free(closure)
        codes.deallocate()
    }

    /// The entry point typed as a C function, e.g. `(@convention(c) (Int32) -> Int32).self`.
    public func entry<F>(as type: F.Type) -> F { Self.cFunction(entry, as: F.self) }

    /// The original typed as a C function.
    public func original<F>(as type: F.Type) -> F { Self.cFunction(original, as: F.self) }

    private static func cFunction<F>(_ pointer: UnsafeRawPointer, as type: F.Type) -> F {
        precondition(MemoryLayout<F>.size == MemoryLayout<UnsafeRawPointer>.size, "\(F.self) is not a C function pointer type")
        return unsafeBitCast(pointer, to: F.self)
    }

    public var description: String { "FunctionHook '\(name)': \(signature)" }

    // MARK: Hooks

    /// Adds a hook at `position`. Hooks of one position run in the order added.
    /// - Returns: A token whose `remove()` detaches the hook.
    @discardableResult
    public func add(_ position: HookPosition, _ body: @escaping HookBody) -> HookToken {
        let id = slot.add(body, at: position)
        return HookToken(slot: slot, id: id)
    }

    /// Adds a hook that runs before the original; it may read and replace arguments.
    @discardableResult
    public func before(_ body: @escaping HookBody) -> HookToken { add(.before, body) }

    /// Adds a hook that runs in place of the original. It may call
    /// ``CallBack/invokeOriginal()`` (with changed arguments, any number of
    /// times) and set the result; if it does neither, the caller gets zero.
    /// Several instead hooks nest: the first added runs first, and its
    /// `invokeOriginal()` runs the next one.
    @discardableResult
    public func instead(_ body: @escaping HookBody) -> HookToken { add(.instead, body) }

    /// Adds a hook that runs after the original; it sees and may replace the result.
    @discardableResult
    public func after(_ body: @escaping HookBody) -> HookToken { add(.after, body) }

    /// Detaches every hook.
    public func removeAllHooks() { slot.removeAll() }

    /// The number of hooks attached.
    public var hookCount: Int { slot.count }

    /// Receives errors thrown by hooks (by default they are written to standard error).
    public var hookErrorHandler: (@Sendable (any Error, HookPosition) -> Void)? {
        get { slot.errorHandler }
        set { slot.errorHandler = newValue }
    }

    /// Runs `body` with this hook point's hooks suppressed on the calling
    /// thread: calls of ``entry`` inside run the original only.
    public func withoutHooks<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        let thread = hk_thread_self()!
        let frame = hk_thread_push(thread, slot.pointID)
        if frame < 0 { hk_thread_suppress(thread) }
        defer { frame < 0 ? hk_thread_unsuppress(thread) : hk_thread_leave(thread) }
        return try body()
    }

    // MARK: Dynamic calls

    /// Calls the hooked ``entry`` with `arguments` (dynamic; allocates).
    public func callEntry(with arguments: [CValue]) throws(HookError) -> CValue {
        try interface.call(entry, with: arguments, name: name)
    }

    /// Calls the ``original`` with `arguments`, no hooks (dynamic; allocates).
    public func callOriginal(with arguments: [CValue]) throws(HookError) -> CValue {
        try interface.call(original, with: arguments, name: name)
    }

    // MARK: The call path

    /// Calls the original with libffi (see ``CallInterface/call(_:result:arguments:)``).
    @inline(__always)
    private func callOriginal(_ result: UnsafeMutableRawPointer, _ arguments: UnsafeMutablePointer<UnsafeMutableRawPointer?>) {
        if adjustsCalls {
            interface.call(originalFunction, result: result, arguments: arguments)
        } else {
            ffi_call(cif, originalFunction, result, arguments)
        }
    }

    /// The closure's handler: runs on every call of ``entry``.
    private func handleCall(result: UnsafeMutableRawPointer, arguments: UnsafeMutablePointer<UnsafeMutableRawPointer?>) {
        // No hooks: straight through (a racy read; a hook added meanwhile sees the next call).
        guard slot.hasHooks else { return callOriginal(result, arguments) }
        let thread = hk_thread_self()!
        let frame = hk_thread_enter(thread, slot.pointID)
        // Suppressed, or a hook of this point is running on this thread: original only.
        guard frame >= 0 else { return callOriginal(result, arguments) }
        defer { hk_thread_leave(thread) }
        guard let snapshot = slot.loadSnapshot() else { return callOriginal(result, arguments) }
        snapshot._withUnsafeGuaranteedRef { hooks in
            var call = CallBack(
                point: self, hooks: hooks, arguments: arguments, result: result,
                thread: thread, frame: frame, serial: hk_frame_serial(thread, frame))
            call.position = .before
            // Index loops: `for in` over the snapshot's arrays goes through an
            // iterator that allocates in unoptimized builds.
            var i = 0
            while i < hooks.before.count { run(hooks.before[i], &call); i += 1 }
            if hooks.instead.isEmpty {
                hk_frame_set_running_original(thread, frame, slot.pointID, 1)
                callOriginal(result, arguments)
                hk_frame_set_running_original(thread, frame, slot.pointID, 0)
            } else {
                memset(result, 0, resultBufferSize)
                call.position = .instead
                runInstead(at: 0, &call)
            }
            call._hasResult = true
            call.position = .after
            i = 0
            while i < hooks.after.count { run(hooks.after[i], &call); i += 1 }
        }
    }

    @inline(__always)
    private func run(_ hook: _HookEntry, _ call: inout CallBack) {
        do {
            try hook.body(&call)
        } catch {
            slot.report(error, at: call.position, point: name)
        }
    }

    /// Runs instead hook `index`, or the original past the last one.
    func runInstead(at index: Int, _ call: inout CallBack) {
        let hooks = call.hooks
        guard index < hooks.instead.count else {
            callOriginal(call.resultPointer, call.argumentPointers)
            return
        }
        let saved = (call.insteadIndex, call.originalCalled)
        call.insteadIndex = Int32(index)
        call.originalCalled = false
        do {
            try hooks.instead[index].body(&call)
        } catch {
            slot.report(error, at: .instead, point: name)
            if !call.originalCalled { runInstead(at: index + 1, &call) }
        }
        call.insteadIndex = saved.0
        call.originalCalled = saved.1
    }

    // MARK: Names and test seams

    /// The symbol name `dladdr` finds for `function`, or its address.
    static func symbolName(of function: UnsafeRawPointer) -> String {
        if let symbol = hk_symbol_name(function) { return String(cString: symbol) }
        return "function at \(function)"
    }

    /// Makes the next closure allocations of this task fail, as a W^X system would.
    @TaskLocal static var closureAllocationRefused = false
}
