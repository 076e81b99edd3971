import CFFIShim

// The typed call path: closures, methods. It is inlinable so that it is
// specialized for the concrete argument and result types in the caller's
// module: the arguments are laid out in one stack buffer, their addresses
// handed to the shared hook runner, and the original is called straight from
// that buffer. No heap allocation, no boxing.

/// Calls `original` with `args` through the hooks of `point`.
///
/// `escapable` is `original` when the caller has it as an escaping closure
/// (a `ClosureHook`'s), for the instead hooks' invoker to hold; nil for a
/// non-escaping one (a `@Hookable` method's body, a nested function that
/// would allocate its context on every call if it were made escaping), which
/// the invoker then holds through `withoutActuallyEscaping` (an allocation in
/// unoptimized builds, and only when instead hooks run).
@inlinable
func _typedCall<each A, R>(
    _ point: HookPoint, target: Unmanaged<AnyObject>?,
    _ original: (repeat each A) throws -> R, escapable: ((repeat each A) throws -> R)?, _ args: repeat each A
) throws -> R {
    // The arguments as one tuple: built, read and destroyed as a value of a
    // concrete type once specialized (no per-element value witness calls);
    // the hooks reach each element at the offset the shape computed.
    var arguments = (repeat each args)
    // A constant once specialized (the slots are filled without a loop).
    let count = _packCount(repeat (each A).self)
    // One stack block holds the arguments' addresses, the result and the
    // record (one closure, not three). Unprotected (no stack canary): it is
    // written only through typed pointers of their own size.
    let resultOffset = _align(Swift.max(count, 1) * MemoryLayout<UnsafeMutableRawPointer?>.stride, MemoryLayout<R>.alignment)
    let recordOffset = _align(resultOffset + MemoryLayout<R>.size, MemoryLayout<CallBack>.alignment)
    return try _withUnprotectedUnsafeMutablePointer(to: &arguments) { tuple in
        try _withUnprotectedUnsafeTemporaryAllocation(
            byteCount: recordOffset + MemoryLayout<CallBack>.size,
            alignment: Swift.max(MemoryLayout<R>.alignment, MemoryLayout<CallBack>.alignment)
        ) { memory in
            try _typedCall(point, target: target, original, escapable: escapable, tuple: tuple, count: count,
                           block: memory.baseAddress.unsafelyUnwrapped, resultOffset: resultOffset, recordOffset: recordOffset)
        }
    }
}

/// `offset` rounded up to a multiple of `alignment` (a power of two).
@inlinable @inline(__always)
func _align(_ offset: Int, _ alignment: Int) -> Int { (offset + alignment - 1) & ~(alignment - 1) }

/// The body of `_typedCall`, forced into its one closure.
@inlinable @inline(__always)
func _typedCall<each A, R>(
    _ point: HookPoint, target: Unmanaged<AnyObject>?,
    _ original: (repeat each A) throws -> R, escapable: ((repeat each A) throws -> R)?,
    tuple: UnsafeMutablePointer<(repeat each A)>, count: Int,
    block: UnsafeMutableRawPointer, resultOffset: Int, recordOffset: Int
) throws -> R {
    let slots = block.bindMemory(to: UnsafeMutableRawPointer?.self, capacity: Swift.max(count, 1))
    let base = UnsafeMutableRawPointer(tuple)
    let offsets = point._argumentOffsets
    var i = 0
    while i < count {
        slots[i] = base + offsets[i]
        i += 1
    }
    let result = (block + resultOffset).bindMemory(to: R.self, capacity: 1)
    let call = (block + recordOffset).bindMemory(to: CallBack.self, capacity: 1)
    if point._begin(call, slots, UnsafeMutableRawPointer(result), target: target, oldValue: nil) {
        if call.pointee._runsPlainOriginal {
            // The common case: the original runs here, specialized
            // (no existential), and borrowed: copying the closure
            // into an invoker would retain its context, a write
            // every caller of the hook point shares.
            call.pointee._markRunningOriginal(true)
            _ClosureInvoker.run(original, tuple, &call.pointee)
            call.pointee._markRunningOriginal(false)
        } else if let escapable {
            let erased: any _OriginalInvoker = _ClosureInvoker(original: escapable, tuple: tuple)
            withUnsafePointer(to: erased) { point._runInsteadHooks(&call.pointee, original: UnsafeRawPointer($0)) }
        } else {
            // The invoker holds the original only while the instead hooks run.
            withoutActuallyEscaping(original) { original in
                let erased: any _OriginalInvoker = _ClosureInvoker(original: original, tuple: tuple)
                withUnsafePointer(to: erased) { point._runInsteadHooks(&call.pointee, original: UnsafeRawPointer($0)) }
            }
        }
        let outcome = point._end(call)
        if let error = outcome.error {
            if outcome.hasResult { result.deinitialize(count: 1) }
            throw error
        }
        if outcome.hasResult { return result.move() }
        if R.self == Void.self { return unsafeBitCast((), to: R.self) }
        point._reportMissingResult()
    }
    // Original only (suppressed, reentrant), or no result was made.
    return try original(repeat each tuple.pointee)
}

/// The number of types in a pack: a constant in specialized code.
@inlinable @inline(__always)
func _packCount<each T>(_ types: repeat (each T).Type) -> Int {
    var count = 0
    for _ in repeat each types { count += 1 }
    return count
}

/// How a typed hook point runs its original inside a call. The call path
/// keeps one in an existential on its stack (three words fit inline, so
/// nothing is allocated) and hands its address to the shared hook runner.
@usableFromInline
protocol _OriginalInvoker {
    /// Runs the original with the call's current arguments; stores its result or error in `call`.
    func invoke(_ call: inout CallBack)
}

/// Runs a closure with the arguments in the tuple at `tuple`.
@usableFromInline
struct _ClosureInvoker<each A, R>: _OriginalInvoker {
    @usableFromInline let original: (repeat each A) throws -> R
    @usableFromInline let tuple: UnsafeMutablePointer<(repeat each A)>

    @inlinable
    init(original: @escaping (repeat each A) throws -> R, tuple: UnsafeMutablePointer<(repeat each A)>) {
        self.original = original
        self.tuple = tuple
    }

    @inlinable
    func invoke(_ call: inout CallBack) { Self.run(original, tuple, &call) }

    /// Runs `original` (borrowed: no copy, so no retain of its context) with
    /// the arguments in `tuple`; stores its result or error in `call`.
    @inlinable @inline(__always)
    static func run(_ original: (repeat each A) throws -> R, _ tuple: UnsafeMutablePointer<(repeat each A)>,
                    _ call: inout CallBack) {
        do {
            let value = try original(repeat each tuple.pointee)
            call._storeResult(value)
        } catch {
            call._error = error
        }
    }
}

/// Moving a pack of values between a tuple, raw slots and C memory, one at a time.
@usableFromInline
enum _TypedLayout {
    @inlinable @inline(__always)
    static func load<T>(_ type: T.Type, _ slots: UnsafeMutablePointer<UnsafeMutableRawPointer?>, _ index: inout Int) -> T {
        defer { index += 1 }
        return slots[index].unsafelyUnwrapped.assumingMemoryBound(to: T.self).pointee
    }

    @inlinable @inline(__always)
    static func assign<T>(_ value: T, _ slots: UnsafeMutablePointer<UnsafeMutableRawPointer?>, _ index: inout Int) {
        slots[index].unsafelyUnwrapped.assumingMemoryBound(to: T.self).pointee = value
        index += 1
    }

    /// Reads a C argument (libffi's memory) as `T`, which has `T`'s C layout.
    static func loadC<T>(_ type: T.Type, _ slots: UnsafeMutablePointer<UnsafeMutableRawPointer?>, _ index: inout Int) -> T {
        defer { index += 1 }
        let address = UnsafeRawPointer(slots[index].unsafelyUnwrapped)
        if T.self == Bool.self { return unsafeBitCast(address.load(as: UInt8.self) != 0, to: T.self) }
        return address.loadUnaligned(as: T.self)
    }

    /// Writes a C result into libffi's buffer, widening narrow integers to a full `ffi_arg`.
    static func storeC<T>(_ value: T, to result: UnsafeMutableRawPointer, code: UInt8) {
        guard MemoryLayout<T>.size > 0 else { return }
        withUnsafeBytes(of: value) { CallBack._storeBytes($0, code: code, to: result) }
    }

    /// Copies the arguments at `slots` into a tuple `(repeat each A)` at `tuple`.
    static func copyTuple<each A>(_ types: repeat (each A).Type, slots: UnsafeMutablePointer<UnsafeMutableRawPointer?>, to tuple: UnsafeMutableRawPointer) {
        var i = 0
        let value = (repeat load((each A).self, slots, &i))
        tuple.initializeMemory(as: (repeat each A).self, to: value)
    }

    /// Assigns the elements of the tuple `(repeat each A)` at `tuple` to the arguments at `slots`.
    static func assignTuple<each A>(_ types: repeat (each A).Type, slots: UnsafeMutablePointer<UnsafeMutableRawPointer?>, from tuple: UnsafeRawPointer) {
        let value = tuple.assumingMemoryBound(to: (repeat each A).self).pointee
        var i = 0
        repeat assign(each value, slots, &i)
    }
}

extension HookPoint {
    /// An instead hook neither ran the original nor set a result, and a typed
    /// call needs one: the original runs, and the handler hears of it.
    @usableFromInline
    func _reportMissingResult() {
        report(HookError(.resultUnavailable, point: name, "no instead hook ran the original or set a result of type \(shape.result.name); the original ran"), at: .instead)
    }
}
