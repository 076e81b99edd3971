import CFFIShim
import CHookThreads
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
/// The hook point owns its entry (a native entry or a libffi closure),
/// `ffi_cif`, `ffi_type`s and hooks, and frees them in `deinit`. Keep it alive for as long as ``entry`` may be
/// called: uninstall the entry and let calls in flight return before the last
/// reference goes. Hooks and tokens never keep it (or its target) alive.
/// Swift may release a local as soon as its last use, so a local hook point
/// whose entry is still called needs `withExtendedLifetime(hook) { ... }` or
/// a stored property.
///
/// ## Threads
/// The entry may be called on any number of threads while hooks are added and
/// removed: the call path takes no lock and allocates nothing.
public class FunctionHook: HookPoint, @unchecked Sendable {
    /// The C signature of the function.
    public let signature: Signature
    /// The original function, callable without hooks.
    public let original: UnsafeRawPointer
    /// The hooked entry point, with the original's ABI: a native entry (see
    /// ``usesNativeEntry``) or a libffi closure.
    public let entry: UnsafeRawPointer

    /// Whether ``entry`` is a native entry rather than a libffi closure: on
    /// x86-64 System V, for at most six arguments that are integers, `bool`
    /// or pointers and such a result (or `void`). A native entry saves the
    /// six argument registers and calls the hook point without libffi; with
    /// no hook it calls the original with those registers unchanged, and a
    /// lone ``afterReturning(owner:_:)`` hook runs with no ``CallBack``.
    /// Its code page is written once and then made read-execute, so it
    /// works where writable and executable memory is refused.
    /// `HOOK_NO_NATIVE_ENTRY` in the environment turns it off. (A
    /// diagnostic: behaviour is the same.)
    public let usesNativeEntry: Bool

    let interface: CallInterface
    // Cached for the call path.
    private let cif: UnsafeMutablePointer<ffi_cif>
    private let originalFunction: @convention(c) () -> Void
    /// The libffi closure of ``entry``; nil for a native entry.
    private let closure: UnsafeMutablePointer<ffi_closure>?
    /// Whether calls of the original need libffi's bugs worked around.
    private let adjustsCalls: Bool
    /// The result's scalar code for `hk_call_integer` (0: void).
    private let directResultCode: UInt8

    /// Whether the hook point calls the original directly rather than
    /// through `ffi_call`: on x86-64 System V, when every argument (at most
    /// six) and the result are integers, `bool` or pointers. The arguments
    /// are loaded from the call's memory and extended as a C caller does, so
    /// hooks that change them are seen the same way; `HOOK_NO_DIRECT_CALLS`
    /// in the environment turns it off. (A diagnostic: behaviour is the same.)
    public let callsOriginalDirectly: Bool

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
        // Before any point over a C function exists (an import or entry hook
        // patches only once it is made): see `callPathMade`.
        if !FunctionHook.makingCallPath { FunctionHook.callPathMade }
        let name = name ?? function.map(FunctionHook.symbolName(of:)) ?? "NULL"
        guard let function else {
            throw HookError(.nullFunctionPointer, point: name, "the function pointer is NULL")
        }
        // Code, as far as the mappings tell (a heap or data address made a
        // hook point whose first call crashed in the original). Writable
        // code is taken: libffi's closures are (a hook's entry may be hooked).
        // (A user's address only: an entry hook's original is its stub,
        // made executable once it is written; an import hook's, the loader's.)
        // Where the mappings cannot be read (no /proc), not checked.
        if Self.self == FunctionHook.self {
            let protection = ImportHook.mappedProtection(at: function)
            if protection != -2, protection < 0 || protection & PROT_EXEC == 0 {
                throw HookError(.invalidValue, point: name, "\(function) is not in executable code (a heap, stack or data address, or none mapped)")
            }
        }
        let interface = try CallInterface(signature, name: name, forClosure: true)
        // The native entry's context (self) is set once self exists; until
        // then nothing can call it.
        let handler: hk_native_handler = { context, registers in
            Unmanaged<FunctionHook>.fromOpaque(context.unsafelyUnwrapped)._withUnsafeGuaranteedRef {
                $0.handleNativeCall(registers.unsafelyUnwrapped)
            }
        }
        if Self.hasNativeEntry(signature), !FunctionHook.closureAllocationRefused,
           let stub = hk_native_entry_make(handler, nil) {
            self.closure = nil
            self.entry = UnsafeRawPointer(stub)
            self.usesNativeEntry = true
        } else {
            let (closure, code) = try _FFIClosure.allocate(name: name)
            self.closure = closure
            self.entry = UnsafeRawPointer(code)
            self.usesNativeEntry = false
        }
        self.signature = signature
        self.original = function
        self.interface = interface
        self.cif = interface.cif
        self.originalFunction = unsafeBitCast(function, to: (@convention(c) () -> Void).self)
        self.adjustsCalls = interface.needsCallAdjustment
        (self.callsOriginalDirectly, self.directResultCode) = Self.directCall(signature, adjustsCalls: interface.needsCallAdjustment)
        super.init(name: name, shape: _Shape(_CallShape(signature: signature, resultBufferSize: interface.resultBufferSize)), target: target)
        // The context is unretained: the entry lives exactly as long as self (freed in deinit).
        guard let closure else {
            hk_native_entry_set_context(UnsafeMutableRawPointer(mutating: entry), Unmanaged.passUnretained(self).toOpaque())
            return
        }
        let status = ffi_prep_closure_loc(
            closure, cif,
            { _, result, arguments, userData in
                Unmanaged<FunctionHook>.fromOpaque(userData!)._withUnsafeGuaranteedRef {
                    $0.handleCall(result: result!, arguments: arguments!)
                }
            },
            Unmanaged.passUnretained(self).toOpaque(), UnsafeMutableRawPointer(mutating: entry))
        guard status == FFI_OK else {
            // Every stored property is set, so deinit runs and frees the closure.
            throw HookError(.libffiRefused, point: name, "ffi_prep_closure_loc returned \(status.name) for \(signature)")
        }
    }

    /// Makes a hook point over a `@convention(c)` function value.
    ///
    /// - Throws: ``HookError`` if `cFunction` is not a C function pointer
    ///   (its type `@convention(c)`, or an `Optional` of one), or it takes
    ///   another number of arguments than `signature`.
    public convenience init<F>(cFunction: F, signature: Signature, name: String? = nil, target: AnyObject? = nil) throws(HookError) {
        // (Its type's metadata: any value of 8 bytes, an `Int` or a class
        // reference, was taken for code.)
        guard let parameters = _cFunctionParameterCount(F.self) else {
            throw HookError(.invalidValue, point: name ?? "\(F.self)", "\(F.self) is not a C function pointer; declare it @convention(c)")
        }
        guard parameters == signature.arguments.count else {
            throw HookError(.invalidValue, point: name ?? "\(F.self)", "\(F.self) takes \(parameters) arguments; the signature \(signature) has \(signature.arguments.count)")
        }
        // Each type the function's Swift type names as a C type is the
        // signature's, as the ABI sees it (a `(Double, Double) -> Double`
        // described as two `int64_t`s was hooked: the hooks read other
        // registers than the arguments, and the caller got another result).
        if let types = _cFunctionTypes(F.self) {
            for (i, type) in types.parameters.enumerated() {
                if let problem = Self.abiMismatch(type, signature.arguments[i]) {
                    throw HookError(.typeMismatch, point: name ?? "\(F.self)", "argument \(i) of \(F.self) is \(problem)")
                }
            }
            if let problem = Self.abiMismatch(types.result, signature.result) {
                throw HookError(.typeMismatch, point: name ?? "\(F.self)", "the result of \(F.self) is \(problem)")
            }
        }
        let raw = unsafeBitCast(cFunction, to: UnsafeRawPointer?.self)
        try self.init(function: raw, signature: signature, name: name, target: target)
    }

    /// How `swiftType` (a C function type's parameter or result) differs
    /// from `cType` as the ABI passes them (another class of register, or
    /// another size), or nil: a type that names no C type (not
    /// ``CRepresentable``) is taken as the signature says, and signedness
    /// is not compared (`int32_t` and `uint32_t` travel alike).
    static func abiMismatch(_ swiftType: Any.Type, _ cType: CType) -> String? {
        func kind(_ type: CType) -> Int {
            switch type {
            case .void: 0
            case .float: 1
            case .double: 2
            case .structure, .array, .union, .bitField: 3
            default: 4   // integers, bool, pointers
            }
        }
        let written: CType
        if swiftType == Void.self {
            written = .void
        } else if let representable = swiftType as? any CRepresentable.Type {
            written = representable.cType
        } else {
            return nil
        }
        guard kind(written) != kind(cType) || (written != .void && written.layout.size != cType.layout.size) else { return nil }
        return "\(swiftType) (C \(written)); the signature has \(cType) there"
    }

    deinit {
        // No call is in flight (see Lifetime), so the entry and cif can go.
        if let closure { ffi_closure_free(closure) } else { hk_native_entry_free(UnsafeMutableRawPointer(mutating: entry)) }
    }

    /// The entry point typed as a C function, e.g. `(@convention(c) (Int32) -> Int32).self`.
    public func entry<F>(as type: F.Type) -> F { Self.cFunction(entry, as: F.self) }

    /// The original typed as a C function.
    public func original<F>(as type: F.Type) -> F { Self.cFunction(original, as: F.self) }

    private static func cFunction<F>(_ pointer: UnsafeRawPointer, as type: F.Type) -> F {
        precondition(MemoryLayout<F>.size == MemoryLayout<UnsafeRawPointer>.size, "\(F.self) is not a C function pointer type")
        return unsafeBitCast(pointer, to: F.self)
    }

    public override var description: String { "FunctionHook '\(name)': \(signature)" }

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

    /// Whether `signature` gets a native entry: x86-64 System V, at most six
    /// integer-class arguments and an integer-class or void result.
    private static func hasNativeEntry(_ signature: Signature) -> Bool {
        func integerClass(_ type: CType) -> Bool { type.isInteger || type == .pointer }
        return hk_direct_calls() != 0 && signature.abi == .default
            && signature.fixedArgumentCount == nil && signature.arguments.count <= 6
            && signature.arguments.allSatisfy(integerClass)
            && (signature.result == .void || integerClass(signature.result))
            && getenv("HOOK_NO_NATIVE_ENTRY") == nil
    }

    /// Whether the original of `signature` can be called by `hk_call_integer`, and its result code.
    private static func directCall(_ signature: Signature, adjustsCalls: Bool) -> (Bool, UInt8) {
        func integerClass(_ type: CType) -> Bool { type.isInteger || type == .pointer }
        let resultCode: UInt8 = signature.result == .void ? 0 : signature.result._scalarCode
        let direct = hk_direct_calls() != 0 && !adjustsCalls && signature.abi == .default
            && signature.fixedArgumentCount == nil && signature.arguments.count <= 6
            && signature.arguments.allSatisfy(integerClass)
            && (signature.result == .void || integerClass(signature.result))
            && getenv("HOOK_NO_DIRECT_CALLS") == nil
        return (direct, resultCode)
    }

    /// Calls the original with libffi (see ``CallInterface/call(_:result:arguments:)``).
    @inline(__always)
    private func callOriginal(_ result: UnsafeMutableRawPointer, _ arguments: UnsafeMutablePointer<UnsafeMutableRawPointer?>) {
        if callsOriginalDirectly {
            hk_call_integer(original, arguments, codes, Int32(truncatingIfNeeded: argumentCountValue), directResultCode, result)
        } else if adjustsCalls {
            interface.call(originalFunction, result: result, arguments: arguments)
        } else {
            ffi_call(cif, originalFunction, result, arguments)
        }
    }

    /// The closure's handler: runs on every call of ``entry``.
    private func handleCall(result: UnsafeMutableRawPointer, arguments: UnsafeMutablePointer<UnsafeMutableRawPointer?>) {
        // No hooks: straight through (a racy read; a hook added meanwhile sees the next call).
        guard _hasHooks else { return callOriginal(result, arguments) }
        // The call's errno (`CallBack.errno`): the caller's, then the
        // original's, given back at the end whatever the hooks did to it.
        let errorNumber = __errno_location().unsafelyUnwrapped
        withUnsafeTemporaryAllocation(of: CallBack.self, capacity: 1) { record in
            let call = record.baseAddress!
            guard _begin(call, arguments, result, target: nil, oldValue: nil, errno: errorNumber.pointee) else {
                return callOriginal(result, arguments)
            }
            if call.pointee._runsPlainOriginal {
                call.pointee._markRunningOriginal(true)
                errorNumber.pointee = call.pointee._errno
                callOriginal(result, arguments)
                call.pointee._errno = errorNumber.pointee
                call.pointee._markRunningOriginal(false)
            } else {
                _runInsteadHooks(&call.pointee, original: nil)  // invokeOriginal() reaches _invokeOriginal below
            }
            _leave(call, isCFunction: true)
            errorNumber.pointee = call.pointee._errno
            if _slowPath(call.pointee._error != nil) { _ = call.move() }
        }
    }

    /// A call of the native entry: `registers` are the six argument
    /// registers as the caller passed them; the result goes back in rax.
    private func handleNativeCall(_ registers: UnsafeMutablePointer<UInt64>) -> UInt64 {
        let hooks = _Hooks(bits: current.load(ordering: .relaxed))
        // No hooks: straight through, the caller's registers unchanged (a racy read, as in handleCall).
        guard hooks.bits != 0 else { return hk_call_registers(original, registers) }
        if hooks.isLoneTypedAfter, let result = nativeTypedAfterCall(registers) { return result }
        return nativeHookedCall(registers)
    }

    /// A native call whose one hook is a typed after hook (a racy hint,
    /// checked again inside): the original runs in the frame, then the
    /// hook with the result and the registers, with no record. nil, with
    /// nothing run and the frame left, when the hooks changed meanwhile.
    /// (`_callWithTypedAfter` for registers.)
    @inline(__always)
    private func nativeTypedAfterCall(_ registers: UnsafeMutablePointer<UInt64>) -> UInt64? {
        let thread = hk_thread_self().unsafelyUnwrapped
        let frame = hk_thread_enter_unrecorded(thread, pointID)
        guard frame >= 0 else { return hk_call_registers(original, registers) }
        let hooks = _Hooks(bits: current.load(ordering: .sequentiallyConsistent))
        guard hooks.isLoneTypedAfter else {
            hk_thread_leave_unrecorded(thread, frame)
            return nil
        }
        // Tagged while the original runs, so that a recursive original is hooked again.
        hk_frame_set_running_original(thread, frame, pointID, 1)
        let result = hk_call_registers(original, registers)
        hk_frame_set_running_original(thread, frame, pointID, 0)
        // The original's errno, whatever the hook does to it (`CallBack.errno`).
        let errorNumber = __errno_location().unsafelyUnwrapped
        let left = errorNumber.pointee
        // The registers still hold the arguments: the callee got copies.
        _runTyped(hooks.single, as: _CTypedAfterHook.self) { hook in try hook.native(result, registers) }
        errorNumber.pointee = left
        hk_thread_leave_unrecorded(thread, frame)
        return result
    }

    /// A native call through the hooks: the arguments are the saved registers
    /// (libffi's view: a pointer to each, which hooks may write), the result
    /// a word widened as a closure's result is.
    @inline(never)
    private func nativeHookedCall(_ registers: UnsafeMutablePointer<UInt64>) -> UInt64 {
        var result: UInt64 = 0
        withUnsafeTemporaryAllocation(of: UnsafeMutableRawPointer?.self, capacity: 6) { slots in
            let arguments = slots.baseAddress.unsafelyUnwrapped
            var i = 0
            while i < 6 { arguments[i] = UnsafeMutableRawPointer(registers + i); i += 1 }
            withUnsafeMutableBytes(of: &result) { handleCall(result: $0.baseAddress.unsafelyUnwrapped, arguments: arguments) }
        }
        return result
    }

    override func _invokeOriginal(_ call: inout CallBack) {
        // With the call's errno, which becomes the original's (`CallBack.errno`).
        let errorNumber = __errno_location().unsafelyUnwrapped
        errorNumber.pointee = call._errno
        callOriginal(call.resultPointer, call.argumentPointers)
        call._errno = errorNumber.pointee
        call._hasResult = true
    }

    // MARK: Typed after hooks

    /// Adds a typed after hook: it receives the result and then the
    /// arguments, as values, after each call.
    ///
    /// ```swift
    /// try hook.afterReturning { (sum: Int32, a: Int32, b: Int32) in print("\(a) + \(b) = \(sum)") }
    /// try free.afterReturning { (_: Void, pointer: UnsafeMutableRawPointer?) in released += 1 }
    /// ```
    ///
    /// The types must be the signature's, checked once, here: each argument
    /// a ``CRepresentable`` type whose ``CRepresentable/cType`` is the
    /// signature's, the result too, or `Void` for a `void` function.
    ///
    /// The cheapest way to observe a C call: when it is the hook point's
    /// only hook and the point has a native entry (``usesNativeEntry``), a
    /// call makes no ``CallBack`` and runs the original with the caller's
    /// registers, then the hook. Among other hooks, or on a libffi entry, it
    /// runs as an after hook in the order added and sees the arguments as
    /// the original received them (after before hooks) and the result an
    /// instead hook or an earlier after hook left. It observes: to replace
    /// the result, use ``HookPoint/after(owner:_:)``. It runs on the calling
    /// thread under the reentrancy guard, and an error it throws goes to
    /// ``HookPoint/hookErrorHandler``.
    ///
    /// - Parameters:
    ///   - owner: If given, the hook is tied to it, as with ``HookPoint/after(owner:_:)``.
    ///   - body: The hook: the result, then each argument.
    /// - Returns: A token whose `remove()` detaches the hook.
    /// - Throws: ``HookError/Kind/typeMismatch`` naming the types that differ
    ///   from the signature.
    @inlinable @discardableResult
    public final func afterReturning<R, each A: CRepresentable>(owner: AnyObject? = nil,
                                                         _ body: @escaping (R, repeat each A) throws -> Void) throws(HookError) -> HookToken {
        let native: (UInt64, UnsafeMutablePointer<UInt64>) throws -> Void = { result, registers in
            var i = 0
            try body(_CRegister.value(R.self, result), repeat _CRegister.next((each A).self, registers, &i))
        }
        return try _addCTypedAfter(result: R.self, arguments: try _CRegister.cTypes(name, repeat (each A).self), owner: owner, native: native,
                                   recorded: _CRegister.recordedBody(body))
    }

    // The same for each number of arguments a native entry takes: the
    // compiler prefers these to the variadic one, and specializes them
    // where they are called (it does not specialize the variadic closure,
    // which then reads each value through type metadata: see Performance.md).
    @_documentation(visibility: internal) @inlinable @discardableResult
    public final func afterReturning<R>(owner: AnyObject? = nil, _ body: @escaping (R) throws -> Void) throws(HookError) -> HookToken {
        try _addCTypedAfter(result: R.self, arguments: try _CRegister.cTypes(name), owner: owner,
                            native: { result, r in try body(_CRegister.value(R.self, result)) },
                            recorded: _CRegister.recordedBody(body))
    }

    @_documentation(visibility: internal) @inlinable @discardableResult
    public final func afterReturning<R, A0: CRepresentable>(owner: AnyObject? = nil, _ body: @escaping (R, A0) throws -> Void) throws(HookError) -> HookToken {
        try _addCTypedAfter(result: R.self, arguments: try _CRegister.cTypes(name, A0.self), owner: owner,
                            native: { result, r in try body(_CRegister.value(R.self, result), _CRegister.value(A0.self, r[0])) },
                            recorded: _CRegister.recordedBody(body))
    }

    @_documentation(visibility: internal) @inlinable @discardableResult
    public final func afterReturning<R, A0: CRepresentable, A1: CRepresentable>(owner: AnyObject? = nil, _ body: @escaping (R, A0, A1) throws -> Void) throws(HookError) -> HookToken {
        try _addCTypedAfter(result: R.self, arguments: try _CRegister.cTypes(name, A0.self, A1.self), owner: owner,
                            native: { result, r in try body(_CRegister.value(R.self, result), _CRegister.value(A0.self, r[0]), _CRegister.value(A1.self, r[1])) },
                            recorded: _CRegister.recordedBody(body))
    }

    @_documentation(visibility: internal) @inlinable @discardableResult
    public final func afterReturning<R, A0: CRepresentable, A1: CRepresentable, A2: CRepresentable>(owner: AnyObject? = nil, _ body: @escaping (R, A0, A1, A2) throws -> Void) throws(HookError) -> HookToken {
        try _addCTypedAfter(result: R.self, arguments: try _CRegister.cTypes(name, A0.self, A1.self, A2.self), owner: owner,
                            native: { result, r in try body(_CRegister.value(R.self, result), _CRegister.value(A0.self, r[0]), _CRegister.value(A1.self, r[1]), _CRegister.value(A2.self, r[2])) },
                            recorded: _CRegister.recordedBody(body))
    }

    @_documentation(visibility: internal) @inlinable @discardableResult
    public final func afterReturning<R, A0: CRepresentable, A1: CRepresentable, A2: CRepresentable, A3: CRepresentable>(owner: AnyObject? = nil, _ body: @escaping (R, A0, A1, A2, A3) throws -> Void) throws(HookError) -> HookToken {
        try _addCTypedAfter(result: R.self, arguments: try _CRegister.cTypes(name, A0.self, A1.self, A2.self, A3.self), owner: owner,
                            native: { result, r in try body(_CRegister.value(R.self, result), _CRegister.value(A0.self, r[0]), _CRegister.value(A1.self, r[1]), _CRegister.value(A2.self, r[2]), _CRegister.value(A3.self, r[3])) },
                            recorded: _CRegister.recordedBody(body))
    }

    @_documentation(visibility: internal) @inlinable @discardableResult
    public final func afterReturning<R, A0: CRepresentable, A1: CRepresentable, A2: CRepresentable, A3: CRepresentable, A4: CRepresentable>(owner: AnyObject? = nil, _ body: @escaping (R, A0, A1, A2, A3, A4) throws -> Void) throws(HookError) -> HookToken {
        try _addCTypedAfter(result: R.self, arguments: try _CRegister.cTypes(name, A0.self, A1.self, A2.self, A3.self, A4.self), owner: owner,
                            native: { result, r in try body(_CRegister.value(R.self, result), _CRegister.value(A0.self, r[0]), _CRegister.value(A1.self, r[1]), _CRegister.value(A2.self, r[2]), _CRegister.value(A3.self, r[3]), _CRegister.value(A4.self, r[4])) },
                            recorded: _CRegister.recordedBody(body))
    }

    @_documentation(visibility: internal) @inlinable @discardableResult
    public final func afterReturning<R, A0: CRepresentable, A1: CRepresentable, A2: CRepresentable, A3: CRepresentable, A4: CRepresentable, A5: CRepresentable>(owner: AnyObject? = nil, _ body: @escaping (R, A0, A1, A2, A3, A4, A5) throws -> Void) throws(HookError) -> HookToken {
        try _addCTypedAfter(result: R.self, arguments: try _CRegister.cTypes(name, A0.self, A1.self, A2.self, A3.self, A4.self, A5.self), owner: owner,
                            native: { result, r in try body(_CRegister.value(R.self, result), _CRegister.value(A0.self, r[0]), _CRegister.value(A1.self, r[1]), _CRegister.value(A2.self, r[2]), _CRegister.value(A3.self, r[3]), _CRegister.value(A4.self, r[4]), _CRegister.value(A5.self, r[5])) },
                            recorded: _CRegister.recordedBody(body))
    }

    /// Checks a typed after hook's types against the signature and adds it.
    @usableFromInline
    func _addCTypedAfter(result: Any.Type, arguments: [CType], owner: AnyObject?,
                         native: @escaping (UInt64, UnsafeMutablePointer<UInt64>) throws -> Void,
                         recorded: @escaping HookBody) throws(HookError) -> HookToken {
        if let representable = result as? any CRepresentable.Type, let problem = _cLayoutProblem(representable) {
            throw HookError(.typeMismatch, point: name, "afterReturning's result: \(problem)")
        }
        let resultType: CType? = result == Void.self ? .void : (result as? any CRepresentable.Type)?.cType
        guard let resultType else {
            throw HookError(.typeMismatch, point: name, "the result type \(result) is not CRepresentable (the signature returns \(signature.result))")
        }
        guard resultType == signature.result, arguments == signature.arguments else {
            let written = Signature(returning: resultType, arguments: arguments)
            throw HookError(.typeMismatch, point: name, "afterReturning's types \(written) are not the signature's \(signature)")
        }
        return _addTyped(_CTypedAfterHook(point: self, owner: owner, native: native, recorded: recorded), owner: owner)
    }

    // MARK: Names and test seams

    /// The symbol name `dladdr` finds for `function`, or its address.
    static func symbolName(of function: UnsafeRawPointer) -> String {
        if let symbol = hk_symbol_name(function) { return String(cString: symbol) }
        return "function at \(function)"
    }

    /// Makes the next closure allocations of this task fail, as a W^X system would.
    @TaskLocal static var closureAllocationRefused = false

    /// Whether this task is making `callPathMade`'s point (whose own
    /// initializer must not wait for it).
    @TaskLocal static var makingCallPath = false

    /// The call path of a hooked C call, run once in the process before the
    /// first point over a C function is made. Unoptimized, that path makes
    /// some type metadata the first time it runs, under the Swift runtime's
    /// lock of its metadata caches; the runtime allocates while it holds that
    /// lock, so a hooked `malloc` whose call was that first run waited for
    /// itself (an import or entry hook on `malloc` made before any hooked
    /// call). A point over `hk_symbol_name` (a pointer in, a pointer out, as
    /// `malloc`'s), with a typed before and after hook, called once with
    /// NULL (no symbol: NULL).
    static let callPathMade: Void = {
        $makingCallPath.withValue(true) {
            typealias Lookup = @convention(c) (UnsafeRawPointer?) -> UnsafePointer<CChar>?
            let signature = Signature(returning: .pointer, arguments: [.pointer])
            guard let point = try? FunctionHook(cFunction: hk_symbol_name as Lookup, signature: signature, name: "Hook's first call") else { return }
            point.before { call in _ = try call.argument(0, as: UnsafeRawPointer?.self) }
            point.after { call in _ = try call.result(as: UnsafeRawPointer?.self) }
            _ = point.entry(as: Lookup.self)(nil)
        }
    }()
}

/// Values of a native entry's registers as Swift types (little-endian: a
/// narrow type is the low bytes of its register, whatever the caller left
/// in the rest).
@usableFromInline
enum _CRegister {
    @inlinable @inline(__always)
    static func value<T>(_ type: T.Type, _ word: UInt64) -> T {
        if T.self == Bool.self { return unsafeBitCast(UInt8(truncatingIfNeeded: word) != 0, to: T.self) }
        if MemoryLayout<T>.size == 0 { return unsafeBitCast((), to: T.self) }
        return withUnsafeBytes(of: word) { $0.load(as: T.self) }
    }

    @inlinable @inline(__always)
    static func next<T>(_ type: T.Type, _ registers: UnsafeMutablePointer<UInt64>, _ index: inout Int) -> T {
        defer { index += 1 }
        return value(T.self, registers[index])
    }

    /// The C types of a typed hook's arguments.
    /// (Each a plain type of its C type's size, or an error naming it:
    /// see `_cLayoutProblem`.)
    @usableFromInline
    static func cTypes<each A: CRepresentable>(_ point: String, _ types: repeat (each A).Type) throws(HookError) -> [CType] {
        var list: [CType] = []
        for type in repeat each types {
            if let problem = _cLayoutProblem(type) {
                throw HookError(.typeMismatch, point: point, "afterReturning's argument \(list.count): \(problem)")
            }
            list.append(type.cType)
        }
        return list
    }

    /// The after hook of a typed hook among others: the arguments and the
    /// result read from the call's record (libffi's view, any signature).
    @usableFromInline
    static func recordedBody<R, each A>(_ body: @escaping (R, repeat each A) throws -> Void) -> HookBody {
        { call in
            guard call._hasResult, call._error == nil else { return }
            let slots = call.argumentPointers
            let address = UnsafeRawPointer(call.resultPointer)
            let result: R = MemoryLayout<R>.size == 0 ? unsafeBitCast((), to: R.self)
                : R.self == Bool.self ? unsafeBitCast(address.load(as: UInt8.self) != 0, to: R.self)
                : address.loadUnaligned(as: R.self)
            var i = 0
            try body(result, repeat _TypedLayout.loadC((each A).self, slots, &i))
        }
    }
}
