import CFFIShim
import CHookThreads
import Glibc

/// The record of one call at a hook point: who, what, with which arguments, and the result.
///
/// Every hook receives the `CallBack` of the call it runs in (FishBind's
/// `IIFishCallBack`), whatever the kind of hook point: C function, closure,
/// `@Hooked` property or method. Typed reads and writes are checked against
/// the hook point's types and allocate nothing:
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
/// For C functions a typed access goes by C type (any Swift type with the
/// argument's ``CType`` fits); for typed hook points (closures, properties,
/// methods) by Swift type, exactly.
///
/// A `CallBack` describes memory of a call in progress: it is valid inside the
/// hook that received it, on that thread, until the call returns. Used later
/// or elsewhere, typed access throws ``HookError/Kind/callBackExpired`` and the
/// boxed views are empty; it never reads stale memory. (A record names its
/// call by its thread's record and a serial that no other frame of the
/// process gets, so a `CallBack` kept from a thread that has exited is not
/// live in a later thread's call either.)
public struct CallBack {
    @usableFromInline unowned(unsafe) let point: HookPoint
    /// The hooks of this call (unretained: the frame keeps the snapshot valid).
    @usableFromInline let hooks: _Hooks
    @usableFromInline let argumentPointers: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    @usableFromInline let resultPointer: UnsafeMutableRawPointer
    @usableFromInline let thread: UnsafeMutablePointer<hk_thread>
    @usableFromInline let serial: UInt64
    @usableFromInline let frame: Int32
    /// The object of a property or method call (unretained: it is alive during its own call).
    @usableFromInline let callTarget: Unmanaged<AnyObject>?
    /// The value a `@Hooked` property held before this set.
    @usableFromInline let oldValuePointer: UnsafeRawPointer?
    // The fields below start as zero and lie together, `_error` last and
    // 8-byte aligned (32 bytes in all): the compiler writes them with two
    // 16-byte stores, and `_error`, read back at the end of every call, lies
    // within the second. (With `_error` in the middle of 26 bytes, the two
    // stores overlapped across it: a load the CPU cannot forward from its
    // store buffer, paid by each `@Hooked` set with one after hook.)
    /// Runs the original of a typed hook point (an `any _OriginalInvoker` on the caller's stack).
    @usableFromInline var _original: UnsafeRawPointer?
    @usableFromInline var insteadIndex: Int32 = 0
    @usableFromInline var originalCalled = false
    /// Whether ``result`` holds the call's result: after the original ran,
    /// or once a hook set it.
    public var hasResult: Bool { _hasResult }
    @usableFromInline var _hasResult = false
    @usableFromInline var _vetoed = false
    // The next three are set together by `_begin` for a lone after hook.
    /// Where the hook that holds this record runs.
    public var position: HookPosition { _position }
    @usableFromInline var _position: HookPosition = .before
    /// Set by `_begin`: no veto and no instead hook, so the caller runs the original itself.
    @usableFromInline var _runsPlainOriginal = false
    /// Set by `_begin`: the call's one hook is an after hook (`_leave` runs it
    /// without a loop), and `_position` is `.after` already.
    @usableFromInline var _loneAfter = false
    /// ``errno``: a C function's call sets it (in the padding before `_error`).
    @usableFromInline var _errno: Int32 = 0
    @usableFromInline var _error: (any Error)?

    /// Scalar codes (`CType._scalarCode`) of the arguments, then of the result.
    @inlinable var codes: UnsafeMutablePointer<UInt8> { point.codes }
    /// The number of arguments.
    @inlinable var count: Int { point.argumentCountValue }

    @inlinable
    init(point: HookPoint, hooks: _Hooks, arguments: UnsafeMutablePointer<UnsafeMutableRawPointer?>,
         result: UnsafeMutableRawPointer, thread: UnsafeMutablePointer<hk_thread>, frame: Int32, serial: UInt64,
         target: Unmanaged<AnyObject>?, original: UnsafeRawPointer?, oldValue: UnsafeRawPointer?, errno: Int32 = 0) {
        self.point = point
        self.hooks = hooks
        self.argumentPointers = arguments
        self.resultPointer = result
        self.thread = thread
        self.frame = frame
        self.serial = serial
        self.callTarget = target
        self._original = original
        self.oldValuePointer = oldValue
        self._errno = errno
    }

    /// Tags the frame while the caller runs the original itself, so that a
    /// recursive original is hooked again. (Mutating, though it changes
    /// nothing here: called on a pointer's `pointee`, a non-mutating method
    /// would copy the record first.)
    @inlinable
    mutating func _markRunningOriginal(_ running: Bool) {
        hk_frame_set_running_original(thread, frame, point.pointID, running ? 1 : 0)
    }

    /// The `errno` the caller of a C function sees when this call returns
    /// (hook points of C functions: ``FunctionHook``, ``EntryHook``,
    /// ``ImportHook``).
    ///
    /// Hooks run code that may change the thread's `errno` (printing,
    /// logging, allocating), and a C caller reads it after the call: `open`
    /// failing with `ENOENT`, or `strtol`, which leaves it alone on success
    /// while its caller set it to 0 before. So a hooked call keeps its own:
    /// this starts as the caller's `errno` at the call; the original runs
    /// with it as the thread's `errno`, and this becomes what the original
    /// left; the caller gets it back when the call returns, whatever the
    /// hooks did to the thread's `errno` meanwhile. An after hook reads here
    /// what the original set; a hook that makes the call fail sets it:
    ///
    /// ```swift
    /// open.instead { call in
    ///     try call.setResult(Int32(-1))
    ///     call.errno = EACCES
    /// }
    /// ```
    ///
    /// A typed after hook (`afterReturning`) gets no record: it cannot
    /// change it, and the caller still sees the original's. On other hook points (closures, properties, methods) it
    /// is 0 and setting it has no effect.
    public var errno: Int32 {
        get { _errno }
        set { _errno = newValue }
    }

    /// Whether the call is still running on this thread, so the record may be read.
    @inlinable
    public var isLive: Bool { hk_frame_is_live(thread, frame, serial) != 0 }

    /// The object the hook point belongs to, if any and still alive: the
    /// instance whose property is set or whose method is called, or the
    /// `target` a function or closure hook point was made with.
    /// `nil` once the call returned (or on another thread).
    public var target: AnyObject? {
        guard isLive else { return nil }
        if let callTarget { return callTarget.takeUnretainedValue() }
        return point.target
    }
    /// The hook point's name: the function, closure, property or method
    /// name. Empty once the call returned (or on another thread): a
    /// `CallBack` kept past its call does not read its hook point, which
    /// may be gone; keep `selector` or ``description`` instead.
    public var selector: String { isLive ? point.name : "" }
    /// The C signature (C functions only; `nil` for typed hook points, and
    /// once the call returned).
    public var signature: Signature? { isLive ? point.shape.signature : nil }
    /// The hook point this call is at; `nil` once the call returned (or on
    /// another thread).
    public var hookPoint: HookPoint? { isLive ? point : nil }
    /// The number of arguments (0 once the call returned: the point is not read).
    @inlinable
    public var argumentCount: Int { isLive ? count : 0 }

    // MARK: Typed access
    //
    // The checks are inlinable so that, specialized in the caller, a check is
    // one compare; aggregates and the building of errors take the out-of-line
    // slow path.

    /// Whether slot `index` (arguments, then `count` for the result) holds a `T`.
    /// (An instance method reading `point` in place: passing the point as
    /// an argument would retain it, a write every caller shares.)
    @inlinable @inline(__always)
    func _matches<T: CRepresentable>(_ index: Int, _ type: T.Type) -> Bool {
        Self._scalarMatch(point.typeIDs, point.codes, isCFunction: point.isCFunction, index, T.self)
            ?? _aggregateMatches(index, T.cType, MemoryLayout<T>.size)
    }

    /// `_matches` for the slow paths.
    static func _matches<T: CRepresentable>(_ point: HookPoint, _ index: Int, _ type: T.Type) -> Bool {
        _scalarMatch(point.typeIDs, point.codes, isCFunction: point.isCFunction, index, T.self)
            ?? _aggregateMatches(point, index, T.cType, MemoryLayout<T>.size)
    }

    /// The match by type identity or scalar code; nil for an aggregate C
    /// type, whose layout must be compared.
    @inlinable @inline(__always)
    static func _scalarMatch<T: CRepresentable>(_ typeIDs: UnsafeMutablePointer<ObjectIdentifier?>, _ codes: UnsafeMutablePointer<UInt8>,
                                                isCFunction: Bool, _ index: Int, _ type: T.Type) -> Bool? {
        if typeIDs[index] == ObjectIdentifier(T.self) { return true }
        guard isCFunction, _isPOD(T.self) else { return false }
        // A Swift enum is no C value (see `_cLayoutProblem`): asked only of
        // a type as small as one (the size is known where this is inlined;
        // the question is a load of its metadata's kind).
        if MemoryLayout<T>.size <= 2, _isSwiftEnum(T.self) { return false }
        let code = T.cType._scalarCode
        // (Of its C type's size too: see `_cLayoutProblem`.)
        return code != 0 ? codes[index] == code && MemoryLayout<T>.size == T.cType._scalarSize : nil
    }

    /// What the slow paths of typed access need of the call: a few words.
    /// (Handed the whole record, the inlined fast path would copy it first.)
    @inlinable
    var _site: _CallSite {
        _CallSite(point: point, thread: thread, frame: frame, serial: serial, position: _position)
    }

    /// Whether slot `index` holds exactly a `T` (typed hook points).
    @inlinable @inline(__always)
    func _matchesExactly<T>(_ index: Int, _ type: T.Type) -> Bool {
        point.typeIDs[index] == ObjectIdentifier(T.self)
    }

    @usableFromInline
    func _aggregateMatches(_ index: Int, _ type: CType, _ size: Int) -> Bool {
        Self._aggregateMatches(point, index, type, size)
    }

    static func _aggregateMatches(_ point: HookPoint, _ index: Int, _ type: CType, _ size: Int) -> Bool {
        point.shape.types.withUnsafeBufferPointer { slots in
            guard let cType = slots[index].cType else { return false }
            return size == slots[index].cSize && type == cType
        }
    }

    /// The error for a failed typed access of argument `index`, or (`result`)
    /// of the result, whose index (the argument count) it finds itself:
    /// callers pass none, as an expired call's point may be gone.
    @usableFromInline
    static func _accessError<T>(_ site: _CallSite, _ index: Int, _ type: T.Type, result: Bool) -> HookError {
        // (Expired: the point may be gone, and is not read.)
        if !site.isLive { return site.expiredError }
        let point = site.point
        let count = point.argumentCountValue
        let index = result ? count : index
        let name = point.name
        let shape = point.shape
        let wanted: String
        if let c = T.self as? any CRepresentable.Type, shape.isCFunction {
            wanted = "\(T.self) (\(c.cType), \(MemoryLayout<T>.size) bytes\(_isPOD(T.self) ? "" : ", not a trivial type"))"
        } else {
            wanted = "\(T.self)"
        }
        if result {
            if shape.resultIsVoid {
                return HookError(.resultUnavailable, point: name, "the \(shape.kind) returns Void")
            }
            if !_matchesAny(point, count, T.self) {
                return HookError(.typeMismatch, point: name, "the result is \(shape.result.name), not \(wanted)")
            }
            return HookError(.resultUnavailable, point: name, "the result is read in \(site.position.hookWithArticle) before the original ran")
        }
        guard index >= 0, index < count else { return site.outOfRangeError(index) }
        return HookError(.typeMismatch, point: name, "argument \(index) is \(shape.types[index].name), not \(wanted)")
    }

    /// `_matches` for a type that is only known at run time to be C-representable.
    static func _matchesAny<T>(_ point: HookPoint, _ index: Int, _ type: T.Type) -> Bool {
        if point.typeIDs[index] == ObjectIdentifier(T.self) { return true }
        guard let c = T.self as? any CRepresentable.Type else { return false }
        func open<C: CRepresentable>(_ c: C.Type) -> Bool { _matches(point, index, C.self) }
        return open(c)
    }

    /// Argument `index` as `T`.
    /// - Throws: ``HookError`` if `T` is not the argument's type, the index is out of range, or the call has returned.
    @inlinable @inline(__always)
    public func argument<T: CRepresentable>(_ index: Int, as type: T.Type = T.self) throws(HookError) -> T {
        guard isLive, index >= 0, index < count, _matches(index, T.self) else {
            throw Self._accessError(_site, index, T.self, result: false)
        }
        return Self._load(T.self, from: argumentPointers[index].unsafelyUnwrapped)
    }

    /// Argument `index` as `T`, for any Swift type (typed hook points).
    @inlinable @inline(__always)
    public func argument<T>(_ index: Int, as type: T.Type = T.self) throws(HookError) -> T {
        guard isLive, index >= 0, index < count, _matchesExactly(index, T.self) else {
            return try Self._argumentByCType(_site, argumentPointers, index, T.self)
        }
        return argumentPointers[index].unsafelyUnwrapped.assumingMemoryBound(to: T.self).pointee
    }

    // The generic entry points met a type that is C-representable at run time:
    // go the C way (a C function's argument read as Int32, say).
    @usableFromInline
    static func _argumentByCType<T>(_ site: _CallSite, _ slots: UnsafeMutablePointer<UnsafeMutableRawPointer?>,
                                    _ index: Int, _ type: T.Type) throws(HookError) -> T {
        guard let c = T.self as? any CRepresentable.Type else { throw _accessError(site, index, T.self, result: false) }
        func open<C: CRepresentable>(_ c: C.Type) throws(HookError) -> T {
            guard site.isLive, index >= 0, index < site.point.argumentCountValue, _matches(site.point, index, C.self) else {
                throw _accessError(site, index, C.self, result: false)
            }
            return _load(C.self, from: slots[index].unsafelyUnwrapped) as! T
        }
        return try open(c)
    }

    @usableFromInline
    mutating func _setArgumentByCType<T>(_ index: Int, _ value: T) throws(HookError) {
        guard let c = T.self as? any CRepresentable.Type else { throw Self._accessError(_site, index, T.self, result: false) }
        func open<C: CRepresentable>(_ c: C.Type) throws(HookError) { try setArgument(index, to: value as! C) }
        try open(c)
    }

    @usableFromInline
    static func _resultByCType<T>(_ site: _CallSite, _ result: UnsafeMutableRawPointer, hasResult: Bool,
                                  _ type: T.Type) throws(HookError) -> T {
        guard let c = T.self as? any CRepresentable.Type else { throw _accessError(site, -1, T.self, result: true) }
        func open<C: CRepresentable>(_ c: C.Type) throws(HookError) -> T {
            guard site.isLive, hasResult, _matches(site.point, site.point.argumentCountValue, C.self) else {
                throw _accessError(site, -1, C.self, result: true)
            }
            return _load(C.self, from: result) as! T
        }
        return try open(c)
    }

    @usableFromInline
    mutating func _setResultByCType<T>(_ value: T) throws(HookError) {
        guard let c = T.self as? any CRepresentable.Type else { throw Self._accessError(_site, -1, T.self, result: true) }
        func open<C: CRepresentable>(_ c: C.Type) throws(HookError) { try setResult(value as! C) }
        try open(c)
    }

    /// Replaces argument `index`; the original (and later hooks) see the new value.
    @inlinable @inline(__always)
    public mutating func setArgument<T: CRepresentable>(_ index: Int, to value: T) throws(HookError) {
        guard isLive, index >= 0, index < count, _matches(index, T.self) else {
            throw Self._accessError(_site, index, T.self, result: false)
        }
        // A value with references (a typed point's argument of that exact
        // type: a C function's are trivial) is assigned, not copied as bytes,
        // which released neither the old one nor retained the new.
        if _isPOD(T.self) {
            Self._store(value, to: argumentPointers[index].unsafelyUnwrapped, widen: false)
        } else {
            argumentPointers[index].unsafelyUnwrapped.assumingMemoryBound(to: T.self).pointee = value
        }
    }

    /// Replaces argument `index`, for any Swift type (typed hook points).
    @inlinable @inline(__always)
    public mutating func setArgument<T>(_ index: Int, to value: T) throws(HookError) {
        guard isLive, index >= 0, index < count, _matchesExactly(index, T.self) else {
            return try _setArgumentByCType(index, value)
        }
        argumentPointers[index].unsafelyUnwrapped.assumingMemoryBound(to: T.self).pointee = value
    }

    /// The result as `T`: in `after` hooks, or in an `instead` hook once it called the original.
    @inlinable @inline(__always)
    public func result<T: CRepresentable>(as type: T.Type = T.self) throws(HookError) -> T {
        guard isLive, _hasResult, _matches(count, T.self) else {
            throw Self._accessError(_site, -1, T.self, result: true)
        }
        return Self._load(T.self, from: resultPointer)
    }

    /// The result as `T`, for any Swift type (typed hook points).
    @inlinable @inline(__always)
    public func result<T>(as type: T.Type = T.self) throws(HookError) -> T {
        guard isLive, _hasResult, _matchesExactly(count, T.self) else {
            return try Self._resultByCType(_site, resultPointer, hasResult: _hasResult, T.self)
        }
        return resultPointer.assumingMemoryBound(to: T.self).pointee
    }

    /// Replaces the result the caller gets (and clears an error the original threw).
    @inlinable @inline(__always)
    public mutating func setResult<T: CRepresentable>(_ value: T) throws(HookError) {
        guard isLive, _matches(count, T.self) else {
            throw Self._accessError(_site, -1, T.self, result: true)
        }
        if point.isCFunction {
            Self._store(value, to: resultPointer, widen: true)
            _hasResult = true
        } else {
            _storeResult(value)
        }
        _error = nil
    }

    /// Replaces the result, for any Swift type (typed hook points).
    @inlinable @inline(__always)
    public mutating func setResult<T>(_ value: T) throws(HookError) {
        guard isLive, _matchesExactly(count, T.self) else {
            return try _setResultByCType(value)
        }
        _storeResult(value)
        _error = nil
    }

    /// Stores a typed hook point's result: initializes it the first time, assigns later.
    @inlinable @inline(__always)
    mutating func _storeResult<T>(_ value: T) {
        let slot = resultPointer.assumingMemoryBound(to: T.self)
        if _hasResult { slot.pointee = value } else { slot.initialize(to: value) }
        _hasResult = true
    }

    @inlinable @inline(__always)
    static func _load<T: CRepresentable>(_ type: T.Type, from address: UnsafeRawPointer) -> T {
        if T.self == Bool.self {
            // Any non-zero byte is true; never build a Bool from another bit pattern.
            return unsafeBitCast(address.load(as: UInt8.self) != 0, to: T.self)
        }
        // Aligned (every slot libffi and the typed call path hand over is):
        // a plain load. Unspecialized (a debug build), the generic unaligned
        // load looks up type metadata on every call, under a runtime lock that
        // ThreadSanitizer's threads queue on (a test of eight threads
        // reading arguments: 47 s under TSan, 13 s with this load).
        if UInt(bitPattern: address) & UInt(MemoryLayout<T>.alignment &- 1) == 0 { return address.load(as: T.self) }
        return address.loadUnaligned(as: T.self)
    }

    /// Stores `value`; with `widen`, integers narrower than a register are
    /// sign- or zero-extended to a full `ffi_arg`, as libffi requires of results.
    @inlinable @inline(__always)
    static func _store<T: CRepresentable>(_ value: T, to address: UnsafeMutableRawPointer, widen: Bool) {
        let code = T.cType._scalarCode
        withUnsafeBytes(of: value) { _storeBytes($0, code: widen ? code : 0, to: address) }
    }

    /// Copies a C value's bytes to `address`; for integer codes narrower
    /// than a register (`HK_SCALAR_BOOL` to `HK_SCALAR_UINT32`) the value
    /// is sign- or zero-extended to a full `ffi_arg`.
    @inlinable @inline(__always)
    static func _storeBytes(_ bytes: UnsafeRawBufferPointer, code: UInt8, to address: UnsafeMutableRawPointer) {
        let scalar = UInt32(code)
        guard scalar >= HK_SCALAR_BOOL.rawValue, scalar <= HK_SCALAR_UINT32.rawValue else {
            return address.copyMemory(from: bytes.baseAddress!, byteCount: bytes.count)
        }
        let wide: UInt64 = switch scalar {
        case HK_SCALAR_BOOL.rawValue: bytes.load(as: UInt8.self) != 0 ? 1 : 0
        case HK_SCALAR_INT8.rawValue: UInt64(bitPattern: Int64(bytes.load(as: Int8.self)))
        case HK_SCALAR_UINT8.rawValue: UInt64(bytes.load(as: UInt8.self))
        case HK_SCALAR_INT16.rawValue: UInt64(bitPattern: Int64(bytes.loadUnaligned(as: Int16.self)))
        case HK_SCALAR_UINT16.rawValue: UInt64(bytes.loadUnaligned(as: UInt16.self))
        case HK_SCALAR_INT32.rawValue: UInt64(bitPattern: Int64(bytes.loadUnaligned(as: Int32.self)))
        default: UInt64(bytes.loadUnaligned(as: UInt32.self))
        }
        address.storeBytes(of: wide, as: UInt64.self)
    }

    private var expiredError: HookError { _site.expiredError }

    private func outOfRangeError(_ index: Int) -> HookError { _site.outOfRangeError(index) }

    @inline(__always)
    private func checkLive() throws(HookError) {
        guard isLive else { throw expiredError }
    }

    /// The C type of argument `index`, once the call is live and the index valid.
    private func checkedArgumentType(_ index: Int) throws(HookError) -> CType {
        try checkLive()
        guard index >= 0, index < count else { throw outOfRangeError(index) }
        guard let type = point.shape.types[index].cType else {
            throw HookError(.typeMismatch, point: point.name, "argument \(index) is \(point.shape.types[index].name), which has no C value")
        }
        return type
    }

    // MARK: Arguments as a tuple

    /// All arguments as one tuple, e.g. `call.arguments(as: (String, Int).self)`
    /// (typed hook points; a single argument is its own type, no arguments `()`).
    public func arguments<T>(as type: T.Type = T.self) throws(HookError) -> T {
        try checkLive()
        guard let tupled = point as? any _TupleArguments, tupled._tupleID == ObjectIdentifier(T.self) else {
            let names = point.shape.types.dropLast().map(\.name).joined(separator: ", ")
            throw HookError(.typeMismatch, point: point.name, "the arguments are (\(names)), not \(T.self)")
        }
        return withUnsafeTemporaryAllocation(of: T.self, capacity: 1) { buffer in
            tupled._copyArguments(argumentPointers, to: UnsafeMutableRawPointer(buffer.baseAddress!))
            return buffer.baseAddress!.move()
        }
    }

    /// Replaces all arguments with the elements of `tuple` (typed hook points).
    public mutating func setArguments<T>(_ tuple: T) throws(HookError) {
        try checkLive()
        guard let tupled = point as? any _TupleArguments, tupled._tupleID == ObjectIdentifier(T.self) else {
            let names = point.shape.types.dropLast().map(\.name).joined(separator: ", ")
            throw HookError(.typeMismatch, point: point.name, "the arguments are (\(names)), not \(T.self)")
        }
        withUnsafePointer(to: tuple) { tupled._assignArguments(argumentPointers, from: UnsafeRawPointer($0)) }
    }

    // MARK: Property sets

    /// The value the property held before this set (`@Hooked` properties).
    @inlinable @inline(__always)
    public func oldValue<T>(as type: T.Type = T.self) throws(HookError) -> T {
        guard isLive, let oldValuePointer, _matchesExactly(0, T.self) else {
            throw Self._oldValueError(_site, hasOldValue: self.oldValuePointer != nil, T.self)
        }
        return oldValuePointer.assumingMemoryBound(to: T.self).pointee
    }

    /// Why ``oldValue(as:)`` cannot answer.
    @usableFromInline
    static func _oldValueError<T>(_ site: _CallSite, hasOldValue: Bool, _ type: T.Type) -> HookError {
        if !site.isLive { return site.expiredError }
        let point = site.point
        guard hasOldValue else {
            return HookError(.invalidValue, point: point.name, "only a property set has an old value; this is a \(point.shape.kind)")
        }
        return HookError(.typeMismatch, point: point.name, "the property is \(point.shape.types[0].name), not \(T.self)")
    }

    /// The old value boxed (`nil` except in a live property set).
    public var oldValue: Any? {
        guard isLive, let oldValuePointer, let box = point.shape.types[0].box else { return nil }
        return box(oldValuePointer)
    }

    // MARK: Calling the original

    /// Runs the original (or the next `instead` hook) with the current
    /// arguments, and makes its result this call's result.
    ///
    /// Only an `instead` hook may call it, any number of times; change
    /// arguments with ``setArgument(_:to:)-7i94p`` between calls. If a throwing
    /// original throws, the error is recorded (``error``) and the call will
    /// throw it unless a hook sets a result.
    public mutating func invokeOriginal() throws(HookError) {
        try checkLive()
        guard position == .instead else {
            throw HookError(.notInstead, point: point.name, "invokeOriginal() called from \(position.hookWithArticle)")
        }
        // Only a synchronous hook of an async point has no hooks word (see
        // `AsyncCallBack._runSynchronously`): its original must be awaited.
        guard hooks.bits != 0 else {
            throw HookError(.invalidValue, point: point.name, "invokeOriginal() from a synchronous instead hook of an async hook point: the original is async; add the hook to the AsyncClosureHook itself, as an async hook, to run it")
        }
        if _error != nil { _error = nil }
        // Borrowed: a strong reference to the point would be a write every caller shares.
        Unmanaged.passUnretained(point)._withUnsafeGuaranteedRef { $0._runInstead(at: Int(insteadIndex) + 1, &self) }
        originalCalled = true
    }

    /// Vetoes the call from a `before` hook: the original and the instead
    /// hooks do not run; later before hooks still do. A vetoed property set
    /// keeps the old value and its after hooks do not run (nothing was
    /// stored). A vetoed call of a function, closure or method returns the
    /// result a hook set, and its after hooks run and see it: a call that
    /// returns a value needs one, so set it first with ``setResult(_:)-4dask``
    /// (C functions return zero), or, for a call that can throw, an error
    /// with ``setError(_:)``, which the caller then gets.
    public mutating func veto() throws(HookError) {
        try checkLive()
        guard position == .before else {
            throw HookError(.invalidValue, point: point.name, "veto() called from \(position.hookWithArticle); only a before hook can veto")
        }
        guard point.isCFunction || _hasResult || _error != nil || point.shape.resultIsVoid else {
            throw HookError(.resultUnavailable, point: point.name, """
                veto() of a call that returns \(point.shape.result.name) needs a result: call setResult(_:) first\
                \(point.shape.canThrow ? " (or setError(_:) to make it throw)" : "")
                """)
        }
        if point.isCFunction, !_hasResult { memset(resultPointer, 0, point.shape.resultBufferSize) }
        _vetoed = true
    }

    /// Whether a before hook vetoed the call.
    public var isVetoed: Bool { _vetoed }

    /// The error the original threw (throwing closures and methods), or that a hook set.
    public var error: (any Error)? { _error }

    /// Makes the call throw `error` (throwing closures and methods): after the
    /// remaining hooks run, the caller gets the error instead of a result.
    /// From a `before` hook it fails the call: it is vetoed (the original
    /// and the instead hooks do not run, as with ``veto()``), and the after
    /// hooks see the error. (It ran the original, whose side effects came
    /// with an error; with an instead hook, whose ``invokeOriginal()``
    /// cleared it, the caller got the result.)
    public mutating func setError(_ error: any Error) throws(HookError) {
        try checkLive()
        guard point.shape.canThrow else {
            throw HookError(.invalidValue, point: point.name, "the \(point.shape.kind) cannot throw; \(error) cannot be its outcome")
        }
        _error = error
        if _position == .before { _vetoed = true }
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
        if point.shape.resultIsVoid { return .void }
        guard let type = point.shape.result.cType else {
            throw HookError(.typeMismatch, point: point.name, "the result is \(point.shape.result.name), which has no C value")
        }
        guard hasResult else {
            throw HookError(.resultUnavailable, point: point.name, "the result is read in \(position.hookWithArticle) before the original ran")
        }
        return CValue.load(type, from: resultPointer)
    }

    /// Replaces the result with a ``CValue`` of the result type (C functions).
    public mutating func setResultValue(_ value: CValue) throws(HookError) {
        try checkLive()
        guard point.isCFunction, let type = point.shape.result.cType else {
            throw HookError(.typeMismatch, point: point.name, "setResultValue needs a C function; use setResult(_:) with a \(point.shape.result.name)")
        }
        guard value.store(type, to: resultPointer, widen: true) else {
            throw HookError(.typeMismatch, point: point.name, "the result is \(type); \(value) does not fit it")
        }
        _hasResult = true
    }

    // MARK: Boxed views

    /// The arguments boxed as Swift values (built only when asked for; empty once the call returned).
    public var args: [Any] {
        guard isLive else { return [] }
        return (0..<count).map { boxed($0) }
    }

    /// The result boxed as a Swift value; `nil` for void, before the original
    /// ran, or once the call returned.
    public var result: Any? {
        guard isLive, hasResult, !point.shape.resultIsVoid else { return nil }
        return boxed(count)
    }

    private func boxed(_ index: Int) -> Any {
        let slot = point.shape.types[index]
        let address = index == count ? UnsafeRawPointer(resultPointer) : UnsafeRawPointer(argumentPointers[index]!)
        if let box = slot.box { return box(address) }
        return CValue.load(slot.cType!, from: address).boxed
    }

    fileprivate func text(_ index: Int) -> String {
        if point.isCFunction { return CValue.load(point.shape.types[index].cType!, from: index == count ? resultPointer : argumentPointers[index]!).description }
        return String(reflecting: boxed(index))
    }
}

extension CallBack: CustomStringConvertible {
    /// `name(arg, ...) -> result`, e.g. `add(3, 4) -> 7` or `greet("Ada") -> "Hello, Ada"`.
    public var description: String { _description(valueLength: nil) }

    /// `description` with each argument, the result and the error cut to
    /// `valueLength` characters if given (HookObservability's spans and log
    /// lines: a call's values may be megabytes).
    package func _description(valueLength: Int?) -> String {
        guard isLive else { return "<expired call>" }
        func cut(_ value: String) -> String { valueLength.map { _cut(value, to: $0) } ?? value }
        let arguments = (0..<count).map { cut(self.text($0)) }.joined(separator: ", ")
        var line = "\(selector)(\(arguments))"
        if _error != nil {
            line += " throws " + cut("\(_error!)")
        } else if !point.shape.resultIsVoid {
            line += hasResult ? " -> " + cut(self.text(count)) : " -> ?"
        }
        return line
    }
}

/// `text`, or its first `length` Unicode scalars and `…` if it is longer.
/// (Scalars, not characters: one character may be any number of scalars, and
/// 100,000 joined ones were kept whole, 300 KB.)
package func _cut(_ text: String, to length: Int) -> String {
    // (No count of the whole: a value may be megabytes.)
    let scalars = text.unicodeScalars
    guard text.utf8.count > length,
          let end = scalars.index(scalars.startIndex, offsetBy: length, limitedBy: scalars.endIndex),
          end < scalars.endIndex else { return text }
    return String(scalars[..<end]) + "…"
}

/// A typed hook point that can move its arguments as one tuple.
protocol _TupleArguments {
    var _tupleID: ObjectIdentifier { get }
    func _copyArguments(_ pointers: UnsafeMutablePointer<UnsafeMutableRawPointer?>, to tuple: UnsafeMutableRawPointer)
    func _assignArguments(_ pointers: UnsafeMutablePointer<UnsafeMutableRawPointer?>, from tuple: UnsafeRawPointer)
}

/// The few words of a call that the slow paths of typed access need (see `CallBack._site`).
@usableFromInline
struct _CallSite {
    @usableFromInline unowned(unsafe) let point: HookPoint
    @usableFromInline let thread: UnsafeMutablePointer<hk_thread>
    @usableFromInline let frame: Int32
    @usableFromInline let serial: UInt64
    @usableFromInline let position: HookPosition

    @inlinable
    init(point: HookPoint, thread: UnsafeMutablePointer<hk_thread>, frame: Int32, serial: UInt64, position: HookPosition) {
        self.point = point
        self.thread = thread
        self.frame = frame
        self.serial = serial
        self.position = position
    }

    var isLive: Bool { hk_frame_is_live(thread, frame, serial) != 0 }

    var expiredError: HookError {
        // Not the point's name: the point may be gone (a CallBack holds it unowned).
        HookError(.callBackExpired, point: "<expired call>", "the call this CallBack records has returned, or it is read on another thread; keep what you need of it (its selector, values, description) inside the hook")
    }

    func outOfRangeError(_ index: Int) -> HookError {
        HookError(.argumentOutOfRange, point: point.name, "argument \(index) of a \(point.shape.kind) with \(point.argumentCountValue) arguments")
    }
}
