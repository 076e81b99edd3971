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
    unowned(unsafe) let point: FunctionHook
    unowned(unsafe) let hooks: _HookSnapshot
    let argumentPointers: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    let resultPointer: UnsafeMutableRawPointer
    private let thread: UnsafeMutablePointer<hk_thread>
    private let frame: Int32
    private let serial: UInt64
    var insteadIndex = 0
    var originalCalled = false

    /// Where the hook that holds this record runs.
    public internal(set) var position: HookPosition = .before
    /// Whether ``result`` holds the call's result: after the original ran,
    /// or once an instead hook set it.
    public internal(set) var hasResult = false

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
    public var isLive: Bool { hk_frame_is_live(thread, frame, serial) != 0 }

    /// The object the hook point belongs to, if any and still alive.
    public var target: AnyObject? { point.target }
    /// The hook point's name.
    public var selector: String { point.name }
    /// The hook point's signature.
    public var signature: Signature { point.signature }
    /// The number of arguments.
    public var argumentCount: Int { point.interface.argumentSizes.count }

    // MARK: Typed access

    @inline(__always)
    private func checkLive() throws(HookError) {
        guard hk_frame_is_live(thread, frame, serial) != 0 else {
            throw HookError(.callBackExpired, point: point.name, "the call this CallBack records has returned, or it is read on another thread")
        }
    }

    @inline(__always)
    private func argumentAddress<T: CRepresentable>(_ index: Int, _ type: T.Type) throws(HookError) -> UnsafeMutableRawPointer {
        try checkLive()
        let types = point.signature.arguments
        guard index >= 0, index < types.count else {
            throw HookError(.argumentOutOfRange, point: point.name, "argument \(index) of a function with \(types.count) arguments")
        }
        guard _isPOD(T.self), T.cType == types[index], MemoryLayout<T>.size == point.interface.argumentSizes[index] else {
            throw HookError(.typeMismatch, point: point.name, "argument \(index) is \(types[index]), not \(T.self) (\(T.cType), \(MemoryLayout<T>.size) bytes)")
        }
        return argumentPointers[index]!
    }

    @inline(__always)
    private func resultAddress<T: CRepresentable>(_ type: T.Type, reading: Bool) throws(HookError) -> UnsafeMutableRawPointer {
        try checkLive()
        let resultType = point.signature.result
        if resultType == .void {
            throw HookError(.resultUnavailable, point: point.name, "the function returns void")
        }
        guard _isPOD(T.self), T.cType == resultType, MemoryLayout<T>.size == point.interface.resultSize else {
            throw HookError(.typeMismatch, point: point.name, "the result is \(resultType), not \(T.self) (\(T.cType), \(MemoryLayout<T>.size) bytes)")
        }
        if reading, !hasResult {
            throw HookError(.resultUnavailable, point: point.name, "the result is read in a \(position) hook before the original ran")
        }
        return resultPointer
    }

    /// Argument `index` as `T`.
    /// - Throws: ``HookError`` if `T` is not the argument's C type, the index is out of range, or the call has returned.
    public func argument<T: CRepresentable>(_ index: Int, as type: T.Type = T.self) throws(HookError) -> T {
        let address = try argumentAddress(index, type)
        return Self.load(T.self, from: address)
    }

    /// Replaces argument `index`; the original (and later hooks) see the new value.
    public mutating func setArgument<T: CRepresentable>(_ index: Int, to value: T) throws(HookError) {
        let address = try argumentAddress(index, T.self)
        Self.store(value, to: address, widen: false)
    }

    /// The result as `T`: in `after` hooks, or in an `instead` hook once it called the original.
    public func result<T: CRepresentable>(as type: T.Type = T.self) throws(HookError) -> T {
        let address = try resultAddress(type, reading: true)
        return Self.load(T.self, from: address)
    }

    /// Replaces the result the caller gets.
    public mutating func setResult<T: CRepresentable>(_ value: T) throws(HookError) {
        let address = try resultAddress(T.self, reading: false)
        Self.store(value, to: address, widen: true)
        hasResult = true
    }

    @inline(__always)
    static func load<T: CRepresentable>(_ type: T.Type, from address: UnsafeRawPointer) -> T {
        if T.self == Bool.self {
            // Any non-zero byte is true; never build a Bool from another bit pattern.
            return unsafeBitCast(address.load(as: UInt8.self) != 0, to: T.self)
        }
        return address.loadUnaligned(as: T.self)
    }

    /// Stores `value`; with `widen`, integers narrower than a register are
    /// sign- or zero-extended to a full `ffi_arg`, as libffi requires of results.
    @inline(__always)
    static func store<T: CRepresentable>(_ value: T, to address: UnsafeMutableRawPointer, widen: Bool) {
        if widen, MemoryLayout<T>.size < MemoryLayout<UInt64>.size, T.cType.isInteger {
            let wide: UInt64 = withUnsafeBytes(of: value) { bytes in
                switch T.cType {
                case .int8: UInt64(bitPattern: Int64(bytes.load(as: Int8.self)))
                case .int16: UInt64(bitPattern: Int64(bytes.loadUnaligned(as: Int16.self)))
                case .int32: UInt64(bitPattern: Int64(bytes.loadUnaligned(as: Int32.self)))
                case .bool: bytes.load(as: UInt8.self) != 0 ? 1 : 0
                case .uint8: UInt64(bytes.load(as: UInt8.self))
                case .uint16: UInt64(bytes.loadUnaligned(as: UInt16.self))
                default: UInt64(bytes.loadUnaligned(as: UInt32.self))
                }
            }
            address.storeBytes(of: wide, as: UInt64.self)
        } else {
            address.storeBytes(of: value, as: T.self)
        }
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
        point.runInstead(at: insteadIndex + 1, &self)
        originalCalled = true
        hasResult = true
    }

    // MARK: Dynamic access

    /// Argument `index` as a ``CValue``.
    public func argumentValue(_ index: Int) throws(HookError) -> CValue {
        try checkLive()
        let types = point.signature.arguments
        guard index >= 0, index < types.count else {
            throw HookError(.argumentOutOfRange, point: point.name, "argument \(index) of a function with \(types.count) arguments")
        }
        return CValue.load(types[index], from: argumentPointers[index]!)
    }

    /// Replaces argument `index` with a ``CValue`` of its type.
    public mutating func setArgumentValue(_ index: Int, to value: CValue) throws(HookError) {
        try checkLive()
        let types = point.signature.arguments
        guard index >= 0, index < types.count else {
            throw HookError(.argumentOutOfRange, point: point.name, "argument \(index) of a function with \(types.count) arguments")
        }
        guard value.store(types[index], to: argumentPointers[index]!) else {
            throw HookError(.typeMismatch, point: point.name, "argument \(index) is \(types[index]); \(value) does not fit it")
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
        hasResult = true
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
