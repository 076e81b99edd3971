import CFFIShim
import Synchronization

/// A hook point over a Swift closure: ``function`` has the closure's type and
/// runs the hooks around it.
///
/// ```swift
/// let greet = ClosureHook(name: "greet") { (name: String, times: Int) in
///     String(repeating: "Hello, \(name)! ", count: times)
/// }
/// greet.after { call in
///     let text = try call.result(as: String.self)
///     try call.setResult(text.uppercased())
/// }
/// greet("Ada", 1)                      // "HELLO, ADA! "
/// let f: (String, Int) -> String = greet.function
/// ```
///
/// Any arguments and result work, of any Swift type: hooks read them typed
/// (`call.argument(0, as: String.self)`, `call.arguments(as: (String, Int).self)`)
/// or boxed (`call.args`). The call path is generic code specialized in your
/// module: no libffi, no boxing, no allocation.
///
/// When every type is ``CRepresentable``, ``cFunction(as:abi:)`` hands the hooked
/// closure out as a real C function pointer.
///
/// ## Lifetime
/// ``function`` holds the hook point strongly: the hook point lives as long
/// as a copy of the function does. A C function pointer does not; it is
/// valid while the hook point lives.
public final class ClosureHook<each A, R>: HookPoint, _TupleArguments, @unchecked Sendable {
    /// The original closure, callable without hooks.
    public let original: (repeat each A) -> R
    private let trampoline = Mutex<_FFIClosure?>(nil)

    /// Makes a hook point over `original`.
    /// - Parameters:
    ///   - name: The `selector` of its CallBacks.
    ///   - target: An object reported as `CallBack.target`; held weakly.
    ///   - original: The closure the hook point calls when no instead hook replaces it.
    public init(name: String = "closure", target: AnyObject? = nil, _ original: @escaping (repeat each A) -> R) {
        self.original = original
        super.init(name: name, shape: .typed(kind: "closure", arguments: repeat (each A).self, result: R.self, canThrow: false), target: target)
    }

    /// The hooked closure, of the original's type.
    @inlinable
    public var function: (repeat each A) -> R {
        { (args: repeat each A) -> R in self.callAsFunction(repeat each args) }
    }

    /// Calls the hooked closure: `hook(1, 2)`.
    ///
    /// Small, so that it inlines into ``function``'s closure: with no hook a
    /// call is one load and a test more than the original's.
    @inlinable @inline(__always)
    public func callAsFunction(_ args: repeat each A) -> R {
        guard hasHooks else { return original(repeat each args) }
        return _hookedCall(repeat each args)
    }

    /// A call through the hooks (specialized in the caller's module, not inlined).
    @inlinable @inline(never)
    func _hookedCall(_ args: repeat each A) -> R {
        // Cannot throw: the original does not, and CallBack.setError refuses
        // a closure that cannot throw.
        try! _typedCall(self, target: nil, original, escapable: original, repeat each args)
    }

    /// The hooked closure as a C function pointer, made by a libffi trampoline,
    /// for C APIs whose callbacks take no context argument (`qsort`, `bsearch`,
    /// `atexit`, signal-style tables).
    ///
    /// ```swift
    /// let compare = ClosureHook { (a: UnsafeRawPointer?, b: UnsafeRawPointer?) -> Int32 in ... }
    /// let c = try compare.cFunction(as: (@convention(c) (UnsafeRawPointer?, UnsafeRawPointer?) -> Int32).self)
    /// qsort(base, count, stride, c)
    /// ```
    ///
    /// Calls run the hooks like any call of ``function``.
    ///
    /// **Lifetime**: the trampoline is made once and owned by this hook
    /// point; the pointer is valid for as long as the hook point lives (keep
    /// it in a stored property, or use `withExtendedLifetime`).
    ///
    /// - Throws: ``HookError`` if an argument or the result has no C
    ///   representation, `F` is not a C function pointer type, or the system
    ///   refuses closure memory.
    public func cFunction<F>(as type: F.Type, abi: ABI = .default) throws(HookError) -> F {
        guard MemoryLayout<F>.size == MemoryLayout<UnsafeRawPointer>.size else {
            throw HookError(.invalidValue, point: name, "\(F.self) is not a C function pointer type; declare it @convention(c)")
        }
        return unsafeBitCast(try cFunctionPointer(abi: abi), to: F.self)
    }

    /// The hooked closure as an untyped C function pointer (see ``cFunction(as:abi:)``).
    public func cFunctionPointer(abi: ABI = .default) throws(HookError) -> UnsafeRawPointer {
        try trampoline.withVisibleLock(self, slot: 2) { (existing: inout _FFIClosure?) throws(HookError) -> UnsafeRawPointer in
            if let existing, existing.interface.signature.abi == abi { return existing.entry }
            let made = try _FFIClosure(try cSignature(abi: abi), name: name) { [unowned(unsafe) self] result, arguments in
                var i = 0
                let value = self.callAsFunction(repeat _TypedLayout.loadC((each A).self, arguments, &i))
                _TypedLayout.storeC(value, to: result, code: self.codes[self.argumentCountValue])
            }
            existing = made
            return made.entry
        }
    }

    private func cSignature(abi: ABI) throws(HookError) -> Signature {
        var types: [CType] = []
        for (i, slot) in shape.types.enumerated() {
            if i == shape.argumentCount, shape.resultIsVoid {
                types.append(.void)
                break
            }
            guard let c = slot.cType else {
                let what = i == shape.argumentCount ? "the result" : "argument \(i)"
                throw HookError(.unsupportedType, point: name, "\(what) is \(slot.name), which is not CRepresentable; a C function pointer needs C types")
            }
            types.append(c)
        }
        let result = types.removeLast()
        return Signature(returning: result, arguments: types, abi: abi)
    }

    var _tupleID: ObjectIdentifier { ObjectIdentifier((repeat each A).self) }
    func _copyArguments(_ pointers: UnsafeMutablePointer<UnsafeMutableRawPointer?>, to tuple: UnsafeMutableRawPointer) {
        _TypedLayout.copyTuple(repeat (each A).self, slots: pointers, to: tuple)
    }
    func _assignArguments(_ pointers: UnsafeMutablePointer<UnsafeMutableRawPointer?>, from tuple: UnsafeRawPointer) {
        _TypedLayout.assignTuple(repeat (each A).self, slots: pointers, from: tuple)
    }
}

/// A hook point over a throwing Swift closure.
///
/// Like ``ClosureHook``; in addition, an error thrown by the original is
/// recorded in the call (``CallBack/error``), the after hooks still run and
/// may replace it with a result (``CallBack/setResult(_:)-4dask``) or another error
/// (``CallBack/setError(_:)``), and then the caller gets it.
public final class ThrowingClosureHook<each A, R>: HookPoint, _TupleArguments, @unchecked Sendable {
    /// The original closure, callable without hooks.
    public let original: (repeat each A) throws -> R

    public init(name: String = "closure", target: AnyObject? = nil, _ original: @escaping (repeat each A) throws -> R) {
        self.original = original
        super.init(name: name, shape: .typed(kind: "closure", arguments: repeat (each A).self, result: R.self, canThrow: true), target: target)
    }

    /// The hooked closure, of the original's type.
    @inlinable
    public var function: (repeat each A) throws -> R {
        { (args: repeat each A) throws -> R in try self.callAsFunction(repeat each args) }
    }

    /// Calls the hooked closure: `try hook(1, 2)`.
    @inlinable
    public func callAsFunction(_ args: repeat each A) throws -> R {
        guard hasHooks else { return try original(repeat each args) }
        return try _hookedCall(repeat each args)
    }

    /// A call through the hooks (specialized in the caller's module, not inlined).
    @inlinable @inline(never)
    func _hookedCall(_ args: repeat each A) throws -> R {
        try _typedCall(self, target: nil, original, escapable: original, repeat each args)
    }

    var _tupleID: ObjectIdentifier { ObjectIdentifier((repeat each A).self) }
    func _copyArguments(_ pointers: UnsafeMutablePointer<UnsafeMutableRawPointer?>, to tuple: UnsafeMutableRawPointer) {
        _TypedLayout.copyTuple(repeat (each A).self, slots: pointers, to: tuple)
    }
    func _assignArguments(_ pointers: UnsafeMutablePointer<UnsafeMutableRawPointer?>, from tuple: UnsafeRawPointer) {
        _TypedLayout.assignTuple(repeat (each A).self, slots: pointers, from: tuple)
    }
}
