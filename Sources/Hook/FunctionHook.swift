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
public class FunctionHook: HookPoint, @unchecked Sendable {
    /// The C signature of the function.
    public let signature: Signature
    /// The original function, callable without hooks.
    public let original: UnsafeRawPointer
    /// The hooked entry point: a libffi closure with the original's ABI.
    public let entry: UnsafeRawPointer

    let interface: CallInterface
    // Cached for the call path.
    private let cif: UnsafeMutablePointer<ffi_cif>
    private let originalFunction: @convention(c) () -> Void
    private let closure: UnsafeMutablePointer<ffi_closure>
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
        let name = name ?? function.map(FunctionHook.symbolName(of:)) ?? "NULL"
        guard let function else {
            throw HookError(.nullFunctionPointer, point: name, "the function pointer is NULL")
        }
        let interface = try CallInterface(signature, name: name, forClosure: true)
        let (closure, code) = try _FFIClosure.allocate(name: name)
        self.signature = signature
        self.original = function
        self.entry = UnsafeRawPointer(code)
        self.interface = interface
        self.cif = interface.cif
        self.originalFunction = unsafeBitCast(function, to: (@convention(c) () -> Void).self)
        self.closure = closure
        self.adjustsCalls = interface.needsCallAdjustment
        (self.callsOriginalDirectly, self.directResultCode) = Self.directCall(signature, adjustsCalls: interface.needsCallAdjustment)
        super.init(name: name, shape: _Shape(_CallShape(signature: signature, resultBufferSize: interface.resultBufferSize)), target: target)
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
        guard hasHooks else { return callOriginal(result, arguments) }
        withUnsafeTemporaryAllocation(of: CallBack.self, capacity: 1) { record in
            let call = record.baseAddress!
            guard _begin(call, arguments, result, target: nil, oldValue: nil) else {
                return callOriginal(result, arguments)
            }
            if call.pointee._runsPlainOriginal {
                call.pointee._markRunningOriginal(true)
                callOriginal(result, arguments)
                call.pointee._markRunningOriginal(false)
            } else {
                _runInsteadHooks(&call.pointee, original: nil)  // invokeOriginal() reaches _invokeOriginal below
            }
            _finish(call, isCFunction: true)
        }
    }

    override func _invokeOriginal(_ call: inout CallBack) {
        callOriginal(call.resultPointer, call.argumentPointers)
        call._hasResult = true
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
