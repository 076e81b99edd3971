/// A Swift type that has the memory layout of a C type.
///
/// Conforming types can be named in a ``Signature`` and read or written as
/// arguments and results of a ``CallBack``; the ``cType`` is checked against
/// the signature on every typed access, so a wrong type is an error, never a
/// reinterpretation of memory.
///
/// The integer and floating-point types, `Bool` and the optional pointer types
/// conform. A C struct imported from a header conforms by naming its members
/// (declare `cType` as a `static let`, so it is built once). Both the struct
/// and the protocol come from other modules, so Swift 6 asks for
/// `@retroactive` (without it, it warns that the conformance could clash with
/// one the C module might declare):
///
/// ```swift
/// extension Point: @retroactive CRepresentable {   // struct Point { int32_t x, y; };
///     public static let cType = CType.structure([.int32, .int32])
/// }
/// ```
///
/// Pointers conform only as optionals, since C may pass `NULL`. A conforming
/// type must be trivial (no references, no non-trivial copies): a typed access
/// with a type that is not is refused with a ``HookError``.
public protocol CRepresentable {
    /// The C type with this type's layout.
    static var cType: CType { get }
}

extension Bool: CRepresentable { @inlinable public static var cType: CType { .bool } }
extension Int8: CRepresentable { @inlinable public static var cType: CType { .int8 } }
extension UInt8: CRepresentable { @inlinable public static var cType: CType { .uint8 } }
extension Int16: CRepresentable { @inlinable public static var cType: CType { .int16 } }
extension UInt16: CRepresentable { @inlinable public static var cType: CType { .uint16 } }
extension Int32: CRepresentable { @inlinable public static var cType: CType { .int32 } }
extension UInt32: CRepresentable { @inlinable public static var cType: CType { .uint32 } }
extension Int64: CRepresentable { @inlinable public static var cType: CType { .int64 } }
extension UInt64: CRepresentable { @inlinable public static var cType: CType { .uint64 } }
extension Int: CRepresentable { @inlinable public static var cType: CType { .int64 } }
extension UInt: CRepresentable { @inlinable public static var cType: CType { .uint64 } }
extension Float: CRepresentable { @inlinable public static var cType: CType { .float } }
extension Double: CRepresentable { @inlinable public static var cType: CType { .double } }
extension Optional: CRepresentable where Wrapped: _CPointer {
    @inlinable public static var cType: CType { .pointer }
}

/// The pointer types whose optionals are ``CRepresentable``.
@_documentation(visibility: internal)
public protocol _CPointer {}
extension UnsafeRawPointer: _CPointer {}
extension UnsafeMutableRawPointer: _CPointer {}
extension OpaquePointer: _CPointer {}
extension UnsafePointer: _CPointer {}
extension UnsafeMutablePointer: _CPointer {}

/// Why `T`'s memory is not a value of its ``CRepresentable/cType`` (nil: it
/// is). A C value is read and written as `T`'s bytes, so a scalar C type
/// needs a plain type of its size: an enum `Mode: Int32` whose `cType` is
/// `.int32` is one byte (its tag), and was written over the low byte of a
/// 4-byte argument, or read 3 bytes past itself.
///
/// A Swift enum is refused whatever its size: its memory is the number of
/// its case, not its raw value (an `enum Level: UInt8 { case low = 10 }`
/// read from a C 10 was no case at all, and printing it crashed; written,
/// it stored its case's number). A struct is no larger than its C type
/// (`afterReturning` read a larger one past the C value).
func _cLayoutProblem<T: CRepresentable>(_ type: T.Type) -> String? {
    guard _isPOD(T.self) else { return "\(T.self) holds references, and a C value is copied as bytes" }
    if _isSwiftEnum(T.self) {
        return "\(T.self) is a Swift enum, whose memory is the number of its case, not its raw value; take its raw type and make the enum from it (\(T.self)(rawValue:))"
    }
    let c = T.cType
    if c._scalarCode != 0, MemoryLayout<T>.size != c._scalarSize {
        return "\(T.self) is \(MemoryLayout<T>.size) bytes, its C type \(c) \(c._scalarSize)"
    }
    // (Smaller is read and written within the C value: a Swift struct
    // that mirrors a C one with tail padding is 12 bytes to its 16.)
    if c._scalarCode == 0, c != .void, MemoryLayout<T>.size > c.layout.size {
        return "\(T.self) is \(MemoryLayout<T>.size) bytes, its C type \(c) \(c.layout.size)"
    }
    return nil
}

/// Whether `type` is an enum declared in Swift (metadata kind 0x201): its
/// memory is its case's number. An enum imported from C is of that kind too
/// but holds its raw value (named `__C.` by the runtime): not one.
/// (The metadata's kind read where this is inlined; the name, which
/// allocates, asked of an enum only.)
@inlinable @inline(__always)
func _isSwiftEnum(_ type: Any.Type) -> Bool {
    unsafeBitCast(type, to: UnsafeRawPointer.self).load(as: UInt.self) == 0x201 && !_isImportedEnum(type)
}

/// Whether the enum `type` was imported from C (the runtime names it `__C.`).
@usableFromInline
func _isImportedEnum(_ type: Any.Type) -> Bool {
    String(reflecting: type).hasPrefix("__C.")
}
