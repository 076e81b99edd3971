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
    /// The C trampolines made so far, one per ABI asked for: each lives as
    /// long as the hook point, as its pointer was handed out.
    private let trampolines = Mutex<[_FFIClosure]>([])

    /// Makes a hook point over `original`.
    /// - Parameters:
    ///   - name: The `selector` of its CallBacks.
    ///   - target: An object reported as `CallBack.target`; held weakly.
    ///   - original: The closure the hook point calls when no instead hook replaces it.
    public init(name: String = "closure", target: AnyObject? = nil, _ original: @escaping (repeat each A) -> R) {
        self.original = original
        super.init(name: name, shape: .typed(kind: .closure, arguments: repeat (each A).self, result: R.self, canThrow: false), target: target)
    }

    /// The hooked closure, of the original's type.
    ///
    /// Its body holds the call path of a lone typed after hook
    /// (``afterReturning(owner:_:)``): a call through it makes no call more
    /// than the original's and the hook's. (The price: the body saves more
    /// registers, which a call with no hook pays too.)
    @inlinable
    public var function: (repeat each A) -> R {
        { (args: repeat each A) -> R in
            let hooks = _Hooks(bits: self.current.load(ordering: .relaxed))
            guard hooks.bits != 0 else { return self.original(repeat each args) }
            if hooks.isLoneTypedAfter, let result = try! self._callWithTypedAfter(self.original, repeat each args) {
                return result
            }
            return self._hookedCall(repeat each args)
        }
    }

    /// Calls the hooked closure: `hook(1, 2)`.
    ///
    /// Small, so that it inlines where it is called: with no hook a call is
    /// one load and a test more than the original's.
    @inlinable @inline(__always)
    public func callAsFunction(_ args: repeat each A) -> R {
        let hooks = _Hooks(bits: current.load(ordering: .relaxed))
        guard hooks.bits != 0 else { return original(repeat each args) }
        if hooks.isLoneTypedAfter { return _typedAfterCall(repeat each args) }
        return _hookedCall(repeat each args)
    }

    /// A call through the hooks (specialized in the caller's module, not inlined).
    @inlinable @inline(never)
    func _hookedCall(_ args: repeat each A) -> R {
        // Cannot throw: the original does not, and CallBack.setError refuses
        // a closure that cannot throw.
        try! _typedCall(self, target: nil, original, escapable: original, repeat each args)
    }

    /// A call whose one hook is a typed after hook (a racy hint: checked
    /// again inside). Apart from `_hookedCall`, whose stack is larger.
    @inlinable @inline(never)
    func _typedAfterCall(_ args: repeat each A) -> R {
        if let result = try! _callWithTypedAfter(original, repeat each args) { return result }
        return _hookedCall(repeat each args)
    }

    /// Adds a typed after hook: it receives the result and then the
    /// arguments, as values, after each call that returns.
    ///
    /// ```swift
    /// let add = ClosureHook(name: "add") { (a: Int, b: Int) in a + b }
    /// add.afterReturning { sum, a, b in print("\(a) + \(b) = \(sum)") }
    /// add(2, 3)   // prints "2 + 3 = 5"
    /// ```
    ///
    /// The cheapest way to observe calls: when it is the hook point's only
    /// hook, a call makes no ``CallBack`` (nothing to check at run time,
    /// the types are the closure's own). Among other hooks it runs as an
    /// after hook in the order added, and sees the arguments as the
    /// original received them (after before hooks) and the result an
    /// instead hook or an earlier after hook left. It observes: to replace
    /// the result, use ``HookPoint/after(owner:_:)``.
    ///
    /// Like any hook it runs on the calling thread, under the reentrancy
    /// guard (calls of this hook point made from inside it run the
    /// original only), and not inside ``HookPoint/withoutHooks(_:)``; an
    /// error it throws goes to ``HookPoint/hookErrorHandler``.
    ///
    /// - Parameters:
    ///   - owner: If given, the hook is tied to it, as with ``HookPoint/after(owner:_:)``.
    ///   - body: The hook: the result, then each argument.
    /// - Returns: A token whose `remove()` detaches the hook.
    @discardableResult
    public func afterReturning(owner: AnyObject? = nil, _ body: @escaping (R, repeat each A) throws -> Void) -> HookToken {
        _addTyped(_TypedAfterHook(point: self, owner: owner, body), owner: owner)
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
    /// **Lifetime**: the trampoline is made once (per `abi`) and owned by
    /// this hook point; the pointer is valid for as long as the hook point
    /// lives (keep it in a stored property, or use `withExtendedLifetime`).
    ///
    /// - Throws: ``HookError`` if an argument or the result has no C
    ///   representation, `F` is not a C function pointer type (or an
    ///   `Optional` of one) taking as many arguments as the closure, or the
    ///   system refuses closure memory.
    public func cFunction<F>(as type: F.Type, abi: ABI = .default) throws(HookError) -> F {
        guard let parameters = _cFunctionParameterCount(F.self) else {
            throw HookError(.invalidValue, point: name, "\(F.self) is not a C function pointer type; declare it @convention(c)")
        }
        guard parameters == argumentCountValue else {
            throw HookError(.invalidValue, point: name, "\(F.self) takes \(parameters) arguments; the closure takes \(argumentCountValue)")
        }
        return unsafeBitCast(try cFunctionPointer(abi: abi), to: F.self)
    }

    /// The hooked closure as an untyped C function pointer (see ``cFunction(as:abi:)``).
    public func cFunctionPointer(abi: ABI = .default) throws(HookError) -> UnsafeRawPointer {
        try trampolines.withVisibleLock(self, slot: 2) { (existing: inout [_FFIClosure]) throws(HookError) -> UnsafeRawPointer in
            if let made = existing.first(where: { $0.interface.signature.abi == abi }) { return made.entry }
            let made = try _FFIClosure(try cSignature(abi: abi), name: name) { [unowned(unsafe) self] result, arguments in
                var i = 0
                let value = self.callAsFunction(repeat _TypedLayout.loadC((each A).self, arguments, &i))
                _TypedLayout.storeC(value, to: result, code: self.codes[self.argumentCountValue])
            }
            existing.append(made)
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
        super.init(name: name, shape: .typed(kind: .closure, arguments: repeat (each A).self, result: R.self, canThrow: true), target: target)
    }

    /// The hooked closure, of the original's type.
    @inlinable
    public var function: (repeat each A) throws -> R {
        { (args: repeat each A) throws -> R in try self.callAsFunction(repeat each args) }
    }

    /// Calls the hooked closure: `try hook(1, 2)`.
    @inlinable
    public func callAsFunction(_ args: repeat each A) throws -> R {
        guard _hasHooks else { return try original(repeat each args) }
        return try _hookedCall(repeat each args)
    }

    /// A call through the hooks (specialized in the caller's module, not inlined).
    @inlinable @inline(never)
    func _hookedCall(_ args: repeat each A) throws -> R {
        if _Hooks(bits: current.load(ordering: .relaxed)).isLoneTypedAfter,
           let result = try _callWithTypedAfter(original, repeat each args) {
            return result
        }
        return try _typedCall(self, target: nil, original, escapable: original, repeat each args)
    }

    /// Adds a typed after hook: it receives the result and then the
    /// arguments, as values, after each call that returns (not after one
    /// that throws). See ``ClosureHook/afterReturning(owner:_:)``.
    @discardableResult
    public func afterReturning(owner: AnyObject? = nil, _ body: @escaping (R, repeat each A) throws -> Void) -> HookToken {
        _addTyped(_TypedAfterHook(point: self, owner: owner, body), owner: owner)
    }

    var _tupleID: ObjectIdentifier { ObjectIdentifier((repeat each A).self) }
    func _copyArguments(_ pointers: UnsafeMutablePointer<UnsafeMutableRawPointer?>, to tuple: UnsafeMutableRawPointer) {
        _TypedLayout.copyTuple(repeat (each A).self, slots: pointers, to: tuple)
    }
    func _assignArguments(_ pointers: UnsafeMutablePointer<UnsafeMutableRawPointer?>, from tuple: UnsafeRawPointer) {
        _TypedLayout.assignTuple(repeat (each A).self, slots: pointers, from: tuple)
    }
}

/// The number of parameters of `type` if it is a C function pointer type
/// (`@convention(c)`, or an `Optional` of one), read from its metadata: a
/// function type's flags word holds its convention and parameter count.
func _cFunctionParameterCount(_ type: Any.Type) -> Int? {
    _cFunctionMetadata(type).map { Int($0.load(fromByteOffset: 8, as: UInt.self) & 0xFFFF) }
}

/// The result and parameter types of a C function pointer type (see
/// `_cFunctionParameterCount`), or nil: in its function metadata, the
/// result at +16, the parameters from +24.
func _cFunctionTypes(_ type: Any.Type) -> (result: Any.Type, parameters: [Any.Type])? {
    guard let metadata = _cFunctionMetadata(type) else { return nil }
    let count = Int(metadata.load(fromByteOffset: 8, as: UInt.self) & 0xFFFF)
    let result = unsafeBitCast(metadata.load(fromByteOffset: 16, as: UnsafeRawPointer.self), to: Any.Type.self)
    let parameters = (0..<count).map { unsafeBitCast(metadata.load(fromByteOffset: 24 + 8 * $0, as: UnsafeRawPointer.self), to: Any.Type.self) }
    return (result, parameters)
}

/// The function metadata of a C function pointer type (or an `Optional`
/// of one), or nil.
private func _cFunctionMetadata(_ type: Any.Type) -> UnsafeRawPointer? {
    var metadata = unsafeBitCast(type, to: UnsafeRawPointer.self)
    // An Optional: its wrapped type (the first generic argument).
    if metadata.load(as: UInt.self) == 0x202 {
        metadata = metadata.load(fromByteOffset: 16, as: UnsafeRawPointer.self)
    }
    // MetadataKind::Function; its convention 3 is a C function pointer.
    guard metadata.load(as: UInt.self) == 0x302 else { return nil }
    let flags = metadata.load(fromByteOffset: 8, as: UInt.self)
    guard (flags >> 16) & 0xFF == 3 else { return nil }
    return metadata
}
