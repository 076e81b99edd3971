import CFFIShim

/// A C type, described at run time.
///
/// `CType` is what a ``Signature`` is made of. It covers what the C calling
/// convention can pass by value: `void` (as a return type), `_Bool`, the
/// integers of 8 to 64 bits, `float`, `double`, pointers, and structs by
/// value, nested or holding fixed-size arrays. Not covered, and passed
/// otherwise than anything that can be described: `__int128`, `long double`,
/// `_Complex`, and packed or over-aligned (`_Alignas(16)`) structs.
///
/// ```swift
/// // struct Pair { int32_t id; double weights[2]; };
/// let pair = CType.structure([.int32, .array(.double, count: 2)])
/// ```
///
/// Unions and bit-fields can be described so that a signature holding one is
/// refused with an error that names it; libffi cannot pass them.
public indirect enum CType: Hashable, Sendable, CustomStringConvertible {
    case void
    case bool
    case int8, uint8, int16, uint16, int32, uint32, int64, uint64
    case float, double
    /// Any data or function pointer.
    case pointer
    /// A struct passed by value; members in declaration order.
    case structure([CType])
    /// A fixed-size array, allowed as a struct member (C arrays decay to
    /// pointers as arguments).
    case array(CType, count: Int)
    /// A union: describable, but not supported by libffi.
    case union([CType])
    /// A bit-field member: describable, but not supported by libffi.
    case bitField(CType, bits: Int)

    /// C's `char` on this platform (signed on x86_64 Linux).
    public static let char = CType.int8
    /// C's `int`.
    public static let int = CType.int32
    /// C's `long` and `size_t` width on LP64 Linux.
    public static let long = CType.int64

    public var description: String {
        switch self {
        case .void: "void"
        case .bool: "bool"
        case .int8: "int8_t"
        case .uint8: "uint8_t"
        case .int16: "int16_t"
        case .uint16: "uint16_t"
        case .int32: "int32_t"
        case .uint32: "uint32_t"
        case .int64: "int64_t"
        case .uint64: "uint64_t"
        case .float: "float"
        case .double: "double"
        case .pointer: "void *"
        case .structure(let members):
            "struct { " + members.map { "\($0); " }.joined() + "}"
        case .array:
            // Dimensions outermost first, as C writes them: `int32_t m[2][3]`
            // is an array of 2 arrays of 3 (it read `int32_t[3][2]`).
            { () -> String in
                var dimensions: [Int] = []
                var base = self
                while case .array(let element, let count) = base {
                    dimensions.append(count)
                    base = element
                }
                return "\(base)" + dimensions.map { "[\($0)]" }.joined()
            }()
        case .union(let members):
            "union { " + members.map { "\($0); " }.joined() + "}"
        case .bitField(let base, let bits): "\(base) : \(bits)"
        }
    }

    /// A small code per scalar type, 0 for everything else (CFFIShim's
    /// `hk_scalar`, which the C side uses too): lets typed access compare
    /// types with one byte when the Swift type is a scalar.
    @inlinable
    var _scalarCode: UInt8 {
        let code: hk_scalar = switch self {
        case .bool: HK_SCALAR_BOOL
        case .int8: HK_SCALAR_INT8
        case .uint8: HK_SCALAR_UINT8
        case .int16: HK_SCALAR_INT16
        case .uint16: HK_SCALAR_UINT16
        case .int32: HK_SCALAR_INT32
        case .uint32: HK_SCALAR_UINT32
        case .int64: HK_SCALAR_INT64
        case .uint64: HK_SCALAR_UINT64
        case .float: HK_SCALAR_FLOAT
        case .double: HK_SCALAR_DOUBLE
        case .pointer: HK_SCALAR_POINTER
        default: HK_SCALAR_VOID
        }
        return UInt8(truncatingIfNeeded: code.rawValue)
    }

    /// The size of a scalar type (`_scalarCode` not 0); 0 for the others.
    @inlinable
    var _scalarSize: Int {
        switch self {
        case .bool, .int8, .uint8: 1
        case .int16, .uint16: 2
        case .int32, .uint32, .float: 4
        case .int64, .uint64, .double, .pointer: 8
        default: 0
        }
    }

    /// Whether this is an integer type (including `bool`).
    var isInteger: Bool {
        switch self {
        case .bool, .int8, .uint8, .int16, .uint16, .int32, .uint32, .int64, .uint64: true
        default: false
        }
    }

    /// Whether this is a scalar: everything but void and aggregates.
    var isScalar: Bool {
        switch self {
        case .void, .structure, .array, .union, .bitField: false
        default: true
        }
    }
}

// MARK: - Layout

/// Size and alignment of a C type by the System V rules used on Linux.
struct CLayout: Equatable {
    var size: Int
    var alignment: Int
}

extension CType {
    /// The type's size in bytes, as C's `sizeof`. (For a type a signature
    /// refuses, a size past `Int.max` is `Int.max`, and a negative count
    /// counts as none.)
    public var size: Int { layout.size }
    /// The type's alignment in bytes, as C's `_Alignof`.
    public var alignment: Int { layout.alignment }

    /// The C layout of the type. Only meaningful for supported types
    /// (``validate(in:)`` has passed).
    var layout: CLayout {
        switch self {
        case .void: return CLayout(size: 0, alignment: 1)
        case .bool, .int8, .uint8: return CLayout(size: 1, alignment: 1)
        case .int16, .uint16: return CLayout(size: 2, alignment: 2)
        case .int32, .uint32, .float: return CLayout(size: 4, alignment: 4)
        case .int64, .uint64, .double, .pointer: return CLayout(size: 8, alignment: 8)
        case .array(let element, let count):
            let e = element.layout
            // (Saturated: a public `size` of `Int.max / 4` elements trapped.)
            let (size, overflow) = e.size.multipliedReportingOverflow(by: Swift.max(count, 0))
            return CLayout(size: overflow ? .max : size, alignment: e.alignment)
        case .structure(let members):
            var offset = 0
            var alignment = 1
            for member in members {
                let m = member.layout
                let (end, overflow) = offset.roundedUp(to: m.alignment).addingReportingOverflow(m.size)
                offset = overflow ? .max - 64 : Swift.min(end, .max - 64)
                alignment = Swift.max(alignment, m.alignment)
            }
            return CLayout(size: offset.roundedUp(to: alignment), alignment: alignment)
        case .union(let members):
            let ls = members.map(\.layout)
            let alignment = ls.map(\.alignment).max() ?? 1
            return CLayout(size: Swift.min(ls.map(\.size).max() ?? 0, .max - 64).roundedUp(to: alignment), alignment: alignment)
        case .bitField(let base, _): return base.layout
        }
    }

    /// Byte offsets of a structure's members (empty for other types).
    var memberOffsets: [Int] {
        guard case .structure(let members) = self else { return [] }
        var offsets: [Int] = []
        var offset = 0
        for member in members {
            let m = member.layout
            offset = offset.roundedUp(to: m.alignment)
            offsets.append(offset)
            offset += m.size
        }
        return offsets
    }

    /// Throws unless libffi can pass a value of this type.
    /// - Parameters:
    ///   - role: where the type appears, for the message ("argument 2", "result").
    ///   - point: the hook point's name, for the message.
    func validate(as role: String, in point: String) throws(HookError) {
        func check(_ type: CType, path: String, topLevel: Bool) throws(HookError) {
            switch type {
            case .void:
                if !(topLevel && role == "result") {
                    throw HookError(.unsupportedType, point: point, "\(path) is void; only a result may be void")
                }
            case .union:
                throw HookError(.unsupportedType, point: point, "\(path) is a union (\(type)); libffi cannot pass unions by value")
            case .bitField:
                throw HookError(.unsupportedType, point: point, "\(path) is a bit-field (\(type)); libffi cannot pass bit-fields")
            case .array(let element, let count):
                if topLevel {
                    throw HookError(.unsupportedType, point: point, "\(path) is an array (\(type)); C passes arrays as pointers, so declare it .pointer")
                }
                if count <= 0 {
                    throw HookError(.unsupportedType, point: point, "\(path) is an array of \(count) elements; C arrays need at least one")
                }
                try check(element, path: path + "[]", topLevel: false)
            case .structure(let members):
                if members.isEmpty {
                    throw HookError(.unsupportedType, point: point, "\(path) is an empty struct; C has no empty structs and libffi cannot pass one")
                }
                for (i, m) in members.enumerated() {
                    try check(m, path: path + ".member\(i)", topLevel: false)
                }
            default:
                break
            }
        }
        try check(self, path: role, topLevel: true)
        // A size that overflows, or that no by-value argument has (an array
        // of Int.max / 4 elements trapped computing its layout; a large one
        // made a libffi type of that many elements).
        guard let size = Self.checkedSize(self), size <= Self.largestValue else {
            throw HookError(.unsupportedType, point: point, "\(role) (\(self)) is larger than \(Self.largestValue) bytes; pass it by pointer")
        }
    }

    /// The largest value a signature passes by value (1 MiB).
    static let largestValue = 1 << 20

    /// The type's size as `layout` computes it, or nil if it overflows.
    private static func checkedSize(_ type: CType) -> Int? {
        switch type {
        case .array(let element, let count):
            guard let e = checkedSize(element) else { return nil }
            let (size, overflow) = e.multipliedReportingOverflow(by: count)
            return overflow || size > largestValue ? nil : size
        case .structure(let members), .union(let members):
            var total = 0
            for member in members {
                guard let m = checkedSize(member) else { return nil }
                // Padding is at most the alignment (8) a member.
                let (sum, overflow) = total.addingReportingOverflow(m + 8)
                if overflow || sum > largestValue + 8 { return nil }
                total = sum
            }
            return type.layout.size
        default:
            return type.layout.size
        }
    }
}

extension Int {
    @inline(__always)
    func roundedUp(to alignment: Int) -> Int {
        (self + alignment - 1) / alignment * alignment
    }
}
