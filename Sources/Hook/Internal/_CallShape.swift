import Synchronization

/// What a hook point is over, named in its description and errors.
enum _PointKind: String, Sendable, Hashable, CustomStringConvertible {
    case function
    case closure
    case property
    case method
    case asyncClosure = "async closure"
    case asyncMethod = "async method"

    var description: String { rawValue }
}

/// What the calls of a hook point look like: the types of its arguments and
/// result, as C types and as Swift types, built once when the point is made.
struct _CallShape: Sendable {
    /// One argument, or the result.
    struct Slot: @unchecked Sendable {
        /// The C type, if the value has one (always, for C functions).
        var cType: CType?
        /// The Swift type (typed hook points only).
        var id: ObjectIdentifier?
        /// The C size of `cType`.
        var cSize = 0
        /// The type's name, for messages.
        var name: String
        /// Loads the value as `Any` (typed hook points only).
        var box: ((UnsafeRawPointer) -> Any)?
    }

    /// What the hook point is over (its description says it).
    var kind: _PointKind
    /// The arguments, then the result.
    var types: [Slot]
    var isCFunction: Bool
    /// Whether the original may throw (throwing closures and methods).
    var canThrow: Bool
    /// The C signature (C functions only).
    var signature: Signature?
    /// Bytes a C result occupies in libffi's buffer.
    var resultBufferSize = 0

    var argumentCount: Int { types.count - 1 }
    var result: Slot { types[types.count - 1] }
    var resultIsVoid: Bool { isCFunction ? signature?.result == .void : result.id == ObjectIdentifier(Void.self) }

    /// The shape of a C function.
    init(signature: Signature, resultBufferSize: Int) {
        kind = .function
        types = (signature.arguments + [signature.result]).map { Slot(cType: $0, id: nil, cSize: $0.layout.size, name: $0.description, box: nil) }
        isCFunction = true
        canThrow = false
        self.signature = signature
        self.resultBufferSize = resultBufferSize
    }

    /// The shape of a typed hook point over `(repeat each A) -> R`.
    init<each A, R>(kind: _PointKind, arguments: repeat (each A).Type, result: R.Type, canThrow: Bool) {
        self.kind = kind
        types = []
        isCFunction = false
        self.canThrow = canThrow
        for type in repeat each arguments { types.append(Self.slot(type)) }
        types.append(Self.slot(R.self))
    }

    static func slot<T>(_ type: T.Type) -> Slot {
        // (A type whose memory is not its C type's has none here: see `_cLayoutProblem`.)
        func cType<C: CRepresentable>(_ type: C.Type) -> CType? { _cLayoutProblem(C.self) == nil ? C.cType : nil }
        let cType = (T.self as? any CRepresentable.Type).flatMap { cType($0) }
        return Slot(cType: cType, id: ObjectIdentifier(T.self), cSize: cType?.layout.size ?? 0, name: "\(T.self)",
             box: { $0.assumingMemoryBound(to: T.self).pointee })
    }
}

/// A shape with the per-slot codes the call path reads, shared by every hook
/// point of the same types: a typed hook point made on first need costs no
/// reflection of its types and no allocation for them.
final class _Shape: @unchecked Sendable {
    let shape: _CallShape
    /// `CType._scalarCode` of each argument, then of the result (0xFF: no C scalar).
    let codes: UnsafeMutablePointer<UInt8>
    /// The Swift type of each argument, then of the result (`nil` for C
    /// functions); followed in the same allocation by the offset of each
    /// argument in the tuple `(repeat each A)` of a typed hook point (see
    /// `HookPoint._argumentOffsets`), so that a hook point needs no word more.
    let typeIDs: UnsafeMutablePointer<ObjectIdentifier?>

    init(_ shape: _CallShape, offsets: [Int] = []) {
        self.shape = shape
        let count = shape.types.count
        codes = .allocate(capacity: count)
        typeIDs = .allocate(capacity: count + offsets.count)
        for i in 0..<count {
            codes[i] = shape.types[i].cType?._scalarCode ?? 0xFF
            typeIDs[i] = shape.types[i].id
        }
        UnsafeMutableRawPointer(typeIDs + count).withMemoryRebound(to: Int.self, capacity: offsets.count) { base in
            for (i, offset) in offsets.enumerated() { base[i] = offset }
        }
    }

    deinit {
        codes.deallocate()
        typeIDs.deallocate()
    }

    private struct Key: Hashable {
        let kind: _PointKind
        let canThrow: Bool
        /// The number of arguments as well as their tuple: a single argument
        /// is its own type, so `((Int, Int))` and `(Int, Int)`, or `()` and
        /// `(Void)`, are the same tuple type with other arguments.
        let count: Int
        let arguments: ObjectIdentifier
        let result: ObjectIdentifier
    }

    private static let cache = Mutex<[Key: _Shape]>([:])
    private static let lockTag = LockTag()
    private final class LockTag: Sendable {}

    /// The shared shape of a typed hook point over `(repeat each A) -> R`.
    static func typed<each A, R>(kind: _PointKind, arguments: repeat (each A).Type, result: R.Type, canThrow: Bool) -> _Shape {
        var count = 0
        for _ in repeat each arguments { count += 1 }
        let key = Key(kind: kind, canThrow: canThrow, count: count, arguments: ObjectIdentifier((repeat each A).self), result: ObjectIdentifier(R.self))
        if let shape = cache.withVisibleLock(lockTag, { $0[key] }) { return shape }
        // Swift lays a tuple out in order, each element at its alignment.
        var offsets: [Int] = []
        var size = 0
        for type in repeat each arguments {
            func place<T>(_: T.Type) {
                size = (size + MemoryLayout<T>.alignment - 1) & ~(MemoryLayout<T>.alignment - 1)
                offsets.append(size)
                size += MemoryLayout<T>.size
            }
            place(type)
        }
        let made = _Shape(_CallShape(kind: kind, arguments: repeat each arguments, result: R.self, canThrow: canThrow), offsets: offsets)
        return cache.withVisibleLock(lockTag) { cache in
            if let existing = cache[key] { return existing }
            cache[key] = made
            return made
        }
    }
}
