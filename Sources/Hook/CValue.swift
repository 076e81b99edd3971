/// A C value of any ``CType``, for code that does not know the types at compile time.
///
/// Equality compares floating-point values bit for bit, so `NaN` equals the
/// same `NaN` and `0.0` differs from `-0.0`: two `CValue`s are equal when C
/// would see the same bytes. It is `Sendable`: a `.pointer` is only an address
/// here, never dereferenced.
public enum CValue: Hashable, @unchecked Sendable, CustomStringConvertible {
    case void
    case bool(Bool)
    case int8(Int8), uint8(UInt8), int16(Int16), uint16(UInt16)
    case int32(Int32), uint32(UInt32), int64(Int64), uint64(UInt64)
    case float(Float), double(Double)
    case pointer(UnsafeRawPointer?)
    /// A struct's members in order.
    case structure([CValue])
    /// A fixed array's elements (inside structs).
    case array([CValue])

    public static func == (lhs: CValue, rhs: CValue) -> Bool {
        switch (lhs, rhs) {
        case (.void, .void): true
        case (.bool(let a), .bool(let b)): a == b
        case (.int8(let a), .int8(let b)): a == b
        case (.uint8(let a), .uint8(let b)): a == b
        case (.int16(let a), .int16(let b)): a == b
        case (.uint16(let a), .uint16(let b)): a == b
        case (.int32(let a), .int32(let b)): a == b
        case (.uint32(let a), .uint32(let b)): a == b
        case (.int64(let a), .int64(let b)): a == b
        case (.uint64(let a), .uint64(let b)): a == b
        case (.float(let a), .float(let b)): a.bitPattern == b.bitPattern
        case (.double(let a), .double(let b)): a.bitPattern == b.bitPattern
        case (.pointer(let a), .pointer(let b)): a == b
        case (.structure(let a), .structure(let b)): a == b
        case (.array(let a), .array(let b)): a == b
        default: false
        }
    }

    public func hash(into hasher: inout Hasher) {
        switch self {
        case .void: hasher.combine(0)
        case .bool(let v): hasher.combine(v)
        case .int8(let v): hasher.combine(v)
        case .uint8(let v): hasher.combine(v)
        case .int16(let v): hasher.combine(v)
        case .uint16(let v): hasher.combine(v)
        case .int32(let v): hasher.combine(v)
        case .uint32(let v): hasher.combine(v)
        case .int64(let v): hasher.combine(v)
        case .uint64(let v): hasher.combine(v)
        case .float(let v): hasher.combine(v.bitPattern)
        case .double(let v): hasher.combine(v.bitPattern)
        case .pointer(let v): hasher.combine(v)
        case .structure(let v): hasher.combine(v)
        case .array(let v): hasher.combine(v)
        }
    }

    public var description: String {
        switch self {
        case .void: "void"
        case .bool(let v): "\(v)"
        case .int8(let v): "\(v)"
        case .uint8(let v): "\(v)"
        case .int16(let v): "\(v)"
        case .uint16(let v): "\(v)"
        case .int32(let v): "\(v)"
        case .uint32(let v): "\(v)"
        case .int64(let v): "\(v)"
        case .uint64(let v): "\(v)"
        case .float(let v): "\(v)"
        case .double(let v): "\(v)"
        case .pointer(let v): v.map { "\($0)" } ?? "NULL"
        case .structure(let v): "{" + v.map(\.description).joined(separator: ", ") + "}"
        case .array(let v): "[" + v.map(\.description).joined(separator: ", ") + "]"
        }
    }

    /// The value as a plain Swift value: scalars as their Swift types, pointers
    /// as `UnsafeRawPointer?`, structs and arrays as `[Any]`.
    public var boxed: Any {
        switch self {
        case .void: ()
        case .bool(let v): v
        case .int8(let v): v
        case .uint8(let v): v
        case .int16(let v): v
        case .uint16(let v): v
        case .int32(let v): v
        case .uint32(let v): v
        case .int64(let v): v
        case .uint64(let v): v
        case .float(let v): v
        case .double(let v): v
        case .pointer(let v): v as Any
        case .structure(let v), .array(let v): v.map(\.boxed)
        }
    }
}

// MARK: - Reading and writing C memory

extension CValue {
    /// The value of a ``CRepresentable`` Swift value, read through its C type.
    public init<T: CRepresentable>(_ value: T) {
        // A Swift enum's memory is its case's number: its raw value, if
        // it has one of a C type, is the C value, read as the enum's C type
        // (see `_cLayoutProblem`).
        if _isSwiftEnum(T.self), let raw = (value as? any RawRepresentable)?.rawValue as? any CRepresentable {
            self = CValue.load(T.cType, bytesOf: raw)
            return
        }
        self = CValue.load(T.cType, bytesOf: value)
    }

    /// `value`'s bytes read as `type`: from a copy as long as the C type
    /// (zeros past the value's bytes: a value smaller than its C type, see
    /// `_cLayoutProblem`, was read past).
    private static func load<V>(_ type: CType, bytesOf value: V) -> CValue {
        let size = Swift.max(type.layout.size, MemoryLayout<V>.size, 1)
        return withUnsafeTemporaryAllocation(byteCount: size, alignment: 16) { buffer in
            buffer.initializeMemory(as: UInt8.self, repeating: 0)
            withUnsafeBytes(of: value) { buffer.copyMemory(from: $0) }
            return CValue.load(type, from: UnsafeRawPointer(buffer.baseAddress!))
        }
    }

    /// Reads a value of `type` from C memory at `base` (which must hold one).
    public static func load(_ type: CType, from base: UnsafeRawPointer) -> CValue {
        switch type {
        case .void: return .void
        case .bool: return .bool(base.load(as: UInt8.self) != 0)
        case .int8: return .int8(base.loadUnaligned(as: Int8.self))
        case .uint8: return .uint8(base.loadUnaligned(as: UInt8.self))
        case .int16: return .int16(base.loadUnaligned(as: Int16.self))
        case .uint16: return .uint16(base.loadUnaligned(as: UInt16.self))
        case .int32: return .int32(base.loadUnaligned(as: Int32.self))
        case .uint32: return .uint32(base.loadUnaligned(as: UInt32.self))
        case .int64: return .int64(base.loadUnaligned(as: Int64.self))
        case .uint64: return .uint64(base.loadUnaligned(as: UInt64.self))
        case .float: return .float(Float(bitPattern: base.loadUnaligned(as: UInt32.self)))
        case .double: return .double(Double(bitPattern: base.loadUnaligned(as: UInt64.self)))
        case .pointer: return .pointer(UnsafeRawPointer(bitPattern: base.loadUnaligned(as: UInt.self)))
        case .structure(let members):
            let offsets = type.memberOffsets
            return .structure(zip(members, offsets).map { load($0, from: base + $1) })
        case .array(let element, let count):
            let stride = element.layout.size
            return .array((0..<count).map { load(element, from: base + $0 * stride) })
        case .union, .bitField:
            return .void  // unreachable: signatures holding these are refused
        }
    }

    /// Writes the value as `type` to C memory at `base`.
    ///
    /// - Parameters:
    ///   - type: The C type to write the value as.
    ///   - base: Where to write it.
    ///   - widen: Write integers narrower than 64 bits as a full
    ///     register (`ffi_arg`), as libffi requires of return values.
    /// - Returns: `false`, writing nothing, if the value does not have that type.
    public func store(_ type: CType, to base: UnsafeMutableRawPointer, widen: Bool = false) -> Bool {
        // All or nothing: a structure whose second member did not fit had
        // its first written (an after hook's failed `setResultValue` changed
        // part of the original's result).
        guard fits(type) else { return false }
        return write(type, to: base, widen: widen)
    }

    /// Whether the value has `type` (what `store` writes).
    func fits(_ type: CType) -> Bool {
        switch (type, self) {
        case (.void, .void), (.bool, .bool), (.int8, .int8), (.uint8, .uint8), (.int16, .int16), (.uint16, .uint16),
             (.int32, .int32), (.uint32, .uint32), (.int64, .int64), (.uint64, .uint64), (.float, .float),
             (.double, .double), (.pointer, .pointer):
            return true
        case (.structure(let members), .structure(let values)):
            return members.count == values.count && zip(members, values).allSatisfy { $1.fits($0) }
        case (.array(let element, let count), .array(let values)):
            return values.count == count && values.allSatisfy { $0.fits(element) }
        default:
            return false
        }
    }

    private func write(_ type: CType, to base: UnsafeMutableRawPointer, widen: Bool) -> Bool {
        switch (type, self) {
        case (.void, .void): return true
        case (.bool, .bool(let v)):
            if widen { base.storeBytes(of: UInt64(v ? 1 : 0), as: UInt64.self) } else { base.storeBytes(of: v ? 1 : 0, as: UInt8.self) }
        case (.int8, .int8(let v)): widen ? base.storeBytes(of: Int64(v), as: Int64.self) : base.storeBytes(of: v, as: Int8.self)
        case (.uint8, .uint8(let v)): widen ? base.storeBytes(of: UInt64(v), as: UInt64.self) : base.storeBytes(of: v, as: UInt8.self)
        case (.int16, .int16(let v)): widen ? base.storeBytes(of: Int64(v), as: Int64.self) : base.storeBytes(of: v, as: Int16.self)
        case (.uint16, .uint16(let v)): widen ? base.storeBytes(of: UInt64(v), as: UInt64.self) : base.storeBytes(of: v, as: UInt16.self)
        case (.int32, .int32(let v)): widen ? base.storeBytes(of: Int64(v), as: Int64.self) : base.storeBytes(of: v, as: Int32.self)
        case (.uint32, .uint32(let v)): widen ? base.storeBytes(of: UInt64(v), as: UInt64.self) : base.storeBytes(of: v, as: UInt32.self)
        case (.int64, .int64(let v)): base.storeBytes(of: v, as: Int64.self)
        case (.uint64, .uint64(let v)): base.storeBytes(of: v, as: UInt64.self)
        case (.float, .float(let v)): base.storeBytes(of: v.bitPattern, as: UInt32.self)
        case (.double, .double(let v)): base.storeBytes(of: v.bitPattern, as: UInt64.self)
        case (.pointer, .pointer(let v)): base.storeBytes(of: UInt(bitPattern: v), as: UInt.self)
        case (.structure(let members), .structure(let values)) where members.count == values.count:
            for ((member, offset), value) in zip(zip(members, type.memberOffsets), values) {
                guard value.write(member, to: base + offset, widen: false) else { return false }
            }
        case (.array(let element, let count), .array(let values)) where values.count == count:
            let stride = element.layout.size
            for (i, value) in values.enumerated() {
                guard value.write(element, to: base + i * stride, widen: false) else { return false }
            }
        default:
            return false
        }
        return true
    }
}
