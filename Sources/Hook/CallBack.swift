import CFFIShim

/// The record of one call at a hook point: who, what, with which arguments, and the result.
///
/// Every hook receives the `CallBack` of the call it runs in (FishBind's
/// `IIFishCallBack`). Typed reads and writes are checked against the hook
/// point's signature and allocate nothing:
///
/// ```swift
/// hook.before { call in
///     let a = try call.argument(0, as: Int32.self)
///     try call.setArgument(0, to: a * 2)
/// }
/// hook.after { call in
///     print(call.selector, call.args, call.result ?? "void")   // add [6, 2] Optional(8)
/// }
/// ```
///
/// A `CallBack` describes memory of a call in progress: it is valid inside the
/// hook that received it, on that thread, until the call returns. Used later
/// or elsewhere, typed access throws ``HookError/Kind/callBackExpired`` and the
/// boxed views are empty; it never reads stale memory.
public struct CallBack {
    @usableFromInline unowned(unsafe) let point: FunctionHook
    unowned(unsafe) let hooks: _HookSnapshot
    @usableFromInline let argumentPointers: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    @usableFromInline let resultPointer: UnsafeMutableRawPointer
    @usableFromInline let thread: UnsafeMutablePointer<hk_thread>
    @usableFromInline let serial: UInt64
    @usableFromInline let frame: Int32
    var insteadIndex: Int32 = 0
    var originalCalled = false

    /// Where the hook that holds this record runs.
    public internal(set) var position: HookPosition = .before
    /// Whether ``result`` holds the call's result: after the original ran,
    /// or once an instead hook set it.
    public var hasResult: Bool { _hasResult }
    @usableFromInline var _hasResult = false

    /// Scalar codes (`CType._scalarCode`) of the arguments, then of the result.
    @inlinable var codes: UnsafeMutablePointer<UInt8> { point.codes }
    /// The number of arguments.
    @inlinable var count: Int { point.argumentCountValue }

    init(point: FunctionHook, hooks: _HookSnapshot, arguments: UnsafeMutablePointer<UnsafeMutableRawPointer?>,
         result: UnsafeMutableRawPointer, thread: UnsafeMutablePointer<hk_thread>, frame: Int32, serial: UInt64) {
        self.point = point
        self.hooks = hooks
        self.argumentPointers = arguments
        self.resultPointer = result
        self.thread = thread
        self.frame = frame
        self.serial = serial
    }

    /// Whether the call is still running on this thread, so the record may be read.
    @inlinable
    public var isLive: Bool { hk_frame_is_live(thread, frame, serial) != 0 }

    /// The object the hook point belongs to, if any and still alive.
    public var target: AnyObject? { point.target }
    /// The hook point's name.
    public var selector: String { point.name }
    /// The hook point's signature.
    public var signature: Signature { point.signature }
    /// The number of arguments.
    @inlinable
    public var argumentCount: Int { count }

    // MARK: Typed access
    //
    // The checks are inlinable so that, specialized in the caller, a scalar
    // type check is one byte compare; aggregates and the building of errors
    // take the out-of-line slow path.

    /// Whether slot `index` (arguments, then `count` for the result) holds a `T`.
    @inlinable @inline(__always)
    func _matches<T: CRepresentable>(_ index: Int, _ type: T.Type) -> Bool {
        guard _isPOD(T.self) else { return false }
        let code = T.cType._scalarCode
        if code != 0 { return codes[index] == code }
        return _aggregateMatches(index, T.cType, MemoryLayout<T>.size)
    }

    @usableFromInline
    func _aggregateMatches(_ index: Int, _ type: CType, _ size: Int) -> Bool {
        if index == count {
            return type == point.signature.result && size == point.interface.resultSize
        }
        return type == point.signature.arguments[index] && size == point.interface.argumentSizes[index]
    }

    /// The error for a failed typed access of argument `index`, or of the result.
    @usableFromInline
    func _accessError<T: CRepresentable>(_ index: Int, _ type: T.Type, result: Bool) -> HookError {
        let name = point.name
        if !isLive { return expiredError }
        let pod = _isPOD(T.self) ? "" : ", not a trivial type"
        if result {
            let resultType = point.signature.result
            if resultType == .void {
                return HookError(.resultUnavailable, point: name, "the function returns void")
            }
            if !_matches(index, T.self) {
                return HookError(.typeMismatch, point: name, "the result is \(resultType), not \(T.self) (\(T.cType), \(MemoryLayout<T>.size) bytes\(pod))")
            }
            return HookError(.resultUnavailable, point: name, "the result is read in a \(position) hook before the original ran")
        }
        guard index >= 0, index < count else { return outOfRangeError(index) }
        let argumentType = point.signature.arguments[index]
        return HookError(.typeMismatch, point: name, "argument \(index) is \(argumentType), not \(T.self) (\(T.cType), \(MemoryLayout<T>.size) bytes\(pod))")
    }

    /// Argument `index` as `T`.
    /// - Throws: ``HookError`` if `T` is not the argument's C type, the index is out of range, or the call has returned.
    @inlinable
    public func argument<T: CRepresentable>(_ index: Int, as type: T.Type = T.self) throws(HookError) -> T {
        guard isLive, index >= 0, index < count, _matches(index, T.self) else {
            throw _accessError(index, T.self, result: false)
        }
        return Self._load(T.self, from: argumentPointers[index].unsafelyUnwrapped)
    }

    /// Replaces argument `index`; the original (and later hooks) see the new value.
    @inlinable
    public mutating func setArgument<T: CRepresentable>(_ index: Int, to value: T) throws(HookError) {
        guard isLive, index >= 0, index < count, _matches(index, T.self) else {
            throw _accessError(index, T.self, result: false)
        }
        Self._store(value, to: argumentPointers[index].unsafelyUnwrapped, widen: false)
    }

    /// The result as `T`: in `after` hooks, or in an `instead` hook once it called the original.
    @inlinable
    public func result<T: CRepresentable>(as type: T.Type = T.self) throws(HookError) -> T {
        guard isLive, _hasResult, _matches(count, T.self) else {
            throw _accessError(count, T.self, result: true)
        }
        return Self._load(T.self, from: resultPointer)
    }

    /// Replaces the result the caller gets.
    @inlinable
    public mutating func setResult<T: CRepresentable>(_ value: T) throws(HookError) {
        guard isLive, _matches(count, T.self) else {
            throw _accessError(count, T.self, result: true)
        }
        Self._store(value, to: resultPointer, widen: true)
        _hasResult = true
    }

    @inlinable @inline(__always)
    static func _load<T: CRepresentable>(_ type: T.Type, from address: UnsafeRawPointer) -> T {
        if T.self == Bool.self {
            // Any non-zero byte is true; never build a Bool from another bit pattern.
            return unsafeBitCast(address.load(as: UInt8.self) != 0, to: T.self)
        }
        return address.loadUnaligned(as: T.self)
    }

    /// Stores `value`; with `widen`, integers narrower than a register are
    /// sign- or zero-extended to a full `ffi_arg`, as libffi requires of results.
    @inlinable @inline(__always)
    static func _store<T: CRepresentable>(_ value: T, to address: UnsafeMutableRawPointer, widen: Bool) {
        let code = T.cType._scalarCode
        if widen, code >= 1, code <= 7 {
            let wide: UInt64 = withUnsafeBytes(of: value) { bytes in
                switch code {
                case 1: bytes.load(as: UInt8.self) != 0 ? 1 : 0
                case 2: UInt64(bitPattern: Int64(bytes.load(as: Int8.self)))
                case 3: UInt64(bytes.load(as: UInt8.self))
                case 4: UInt64(bitPattern: Int64(bytes.loadUnaligned(as: Int16.self)))
                case 5: UInt64(bytes.loadUnaligned(as: UInt16.self))
                case 6: UInt64(bitPattern: Int64(bytes.loadUnaligned(as: Int32.self)))
                default: UInt64(bytes.loadUnaligned(as: UInt32.self))
                }
            }
            address.storeBytes(of: wide, as: UInt64.self)
        } else {
            withUnsafeBytes(of: value) { bytes in
                address.copyMemory(from: bytes.baseAddress!, byteCount: MemoryLayout<T>.size)
            }
        }
    }

    private var expiredError: HookError {
        HookError(.callBackExpired, point: point.name, "the call this CallBack records has returned, or it is read on another thread")
    }

    private func outOfRangeError(_ index: Int) -> HookError {
        HookError(.argumentOutOfRange, point: point.name, "argument \(index) of a function with \(count) arguments")
    }

    @inline(__always)
    private func checkLive() throws(HookError) {
        guard isLive else { throw expiredError }
    }

    /// The C type of argument `index`, once the call is live and the index valid.
    private func checkedArgumentType(_ index: Int) throws(HookError) -> CType {
        try checkLive()
        guard index >= 0, index < count else { throw outOfRangeError(index) }
        return point.signature.arguments[index]
    }

    // MARK: Calling the original

    /// Runs the original (or the next `instead` hook) with the current
    /// arguments, and makes its result this call's result.
    ///
    /// Only an `instead` hook may call it, any number of times; change
    /// arguments with ``setArgument(_:to:)`` between calls.
    public mutating func invokeOriginal() throws(HookError) {
        try checkLive()
        guard position == .instead else {
            throw HookError(.notInstead, point: point.name, "invokeOriginal() called from a \(position) hook")
        }
        point.runInstead(at: Int(insteadIndex) + 1, &self)
        originalCalled = true
        _hasResult = true
    }

    // MARK: Dynamic access

    /// Argument `index` as a ``CValue``.
    public func argumentValue(_ index: Int) throws(HookError) -> CValue {
        let type = try checkedArgumentType(index)
        return CValue.load(type, from: argumentPointers[index]!)
    }

    /// Replaces argument `index` with a ``CValue`` of its type.
    public mutating func setArgumentValue(_ index: Int, to value: CValue) throws(HookError) {
        let type = try checkedArgumentType(index)
        guard value.store(type, to: argumentPointers[index]!) else {
            throw HookError(.typeMismatch, point: point.name, "argument \(index) is \(type); \(value) does not fit it")
        }
    }

    /// The result as a ``CValue`` (`.void` for void functions).
    public func resultValue() throws(HookError) -> CValue {
        try checkLive()
        if point.signature.result == .void { return .void }
        guard hasResult else {
            throw HookError(.resultUnavailable, point: point.name, "the result is read in a \(position) hook before the original ran")
        }
        return CValue.load(point.signature.result, from: resultPointer)
    }

    /// Replaces the result with a ``CValue`` of the result type.
    public mutating func setResultValue(_ value: CValue) throws(HookError) {
        try checkLive()
        guard value.store(point.signature.result, to: resultPointer, widen: true) else {
            throw HookError(.typeMismatch, point: point.name, "the result is \(point.signature.result); \(value) does not fit it")
        }
        _hasResult = true
    }

    // MARK: Boxed views

    /// The arguments boxed as Swift values (built only when asked for; empty once the call returned).
    public var args: [Any] {
        guard isLive else { return [] }
        return point.signature.arguments.indices.map { i in
            CValue.load(point.signature.arguments[i], from: argumentPointers[i]!).boxed
        }
    }

    /// The result boxed as a Swift value; `nil` for void, before the original
    /// ran, or once the call returned.
    public var result: Any? {
        guard isLive, hasResult, point.signature.result != .void else { return nil }
        return CValue.load(point.signature.result, from: resultPointer).boxed
    }
}

extension CallBack: CustomStringConvertible {
    /// `name(arg, ...) -> result`, e.g. `add(3, 4) -> 7`.
    public var description: String {
        guard isLive else { return "\(selector)(<expired>)" }
        let arguments = point.signature.arguments.indices
            .map { (try? argumentValue($0))?.description ?? "?" }
            .joined(separator: ", ")
        var text = "\(selector)(\(arguments))"
        if point.signature.result != .void {
            text += hasResult ? " -> \((try? resultValue())?.description ?? "?")" : " -> ?"
        }
        return text
    }
}
