@_spi(Reflection) import Swift
import CEntryHooks

/// How the Swift calling convention passes a value of a type in registers
/// (x86-64): the value's scalars, in memory order, become registers the way
/// the compiler's `SwiftAggLowering` does it: integer scalars of one 8-byte
/// chunk merge into one general register, each floating-point scalar has an
/// xmm register of its own; more than four registers and the value is passed
/// indirectly (not supported here).
struct _SwiftLowering: Sendable, Equatable {
    /// One register: `size` bytes of the value's memory from `offset`.
    struct Register: Sendable, Equatable {
        var offset: Int
        var size: Int
        var isFloat: Bool
    }

    let registers: [Register]
    let size: Int
    let alignment: Int

    /// The lowering of `type`, or an error naming it. A `parameter`'s tuple
    /// is passed as its elements, each lowered as a parameter of its own
    /// (`(Int8, Int8)` is two registers, not one: the compiler explodes a
    /// tuple parameter); a tuple inside a struct, or a result, is one value.
    init(_ type: Any.Type, point: String, parameter: Bool = false) throws(HookError) {
        let metadata = unsafeBitCast(type, to: UnsafeRawPointer.self)
        if parameter, metadata.load(as: UInt.self) == 0x301 {
            var registers: [Register] = []
            let count = metadata.load(fromByteOffset: 8, as: Int.self)
            for i in 0..<count {
                let element = metadata.load(fromByteOffset: 24 + 16 * i, as: Any.Type.self)
                let offset = Int(metadata.load(fromByteOffset: 32 + 16 * i, as: UInt32.self))
                for register in try _SwiftLowering(element, point: point, parameter: true).registers {
                    registers.append(Register(offset: offset + register.offset, size: register.size, isFloat: register.isFloat))
                }
            }
            self.registers = registers
            size = _metadataSize(type)
            alignment = _metadataAlignment(type)
            return
        }
        var scalars: [Register] = []
        if let why = Self.collect(type, at: 0, into: &scalars) {
            throw HookError(.unsupportedType, point: point, "\(_typeName(type, qualified: true)): \(why); typed access does not support it (SwiftTrace traces its calls, without their values)")
        }
        scalars.sort { $0.offset < $1.offset }
        var registers: [Register] = []
        for scalar in scalars {
            if !scalar.isFloat, let last = registers.last, !last.isFloat,
               last.offset / 8 == scalar.offset / 8 {
                // The same chunk: merged.
                registers[registers.count - 1].size = scalar.offset + scalar.size - last.offset
            } else {
                registers.append(scalar)
            }
        }
        // A merged integer run is the smallest aligned unit that holds it.
        for i in registers.indices where !registers[i].isFloat {
            let begin = registers[i].offset, end = begin + registers[i].size
            var unit = 1
            while (begin / unit) * unit + unit < end { unit *= 2 }
            registers[i].offset = (begin / unit) * unit
            registers[i].size = unit
        }
        guard registers.count <= 4 else {
            throw HookError(.unsupportedType, point: point, "\(_typeName(type, qualified: true)) takes \(registers.count) registers; a value of more than four is passed indirectly, which typed access does not support (SwiftTrace traces its calls, without their values)")
        }
        self.registers = registers
        size = _metadataSize(type)
        alignment = _metadataAlignment(type)
        guard size <= 32, alignment <= 8 else {
            throw HookError(.unsupportedType, point: point, "\(_typeName(type, qualified: true)) is \(size) bytes aligned to \(alignment): typed access reads values of at most 32 bytes aligned to 8")
        }
    }

    /// Appends the scalars of `type` at `base`; a reason if it has none that registers can carry.
    private static func collect(_ type: Any.Type, at base: Int, into scalars: inout [Register]) -> String? {
        let id = ObjectIdentifier(type)
        if id == ObjectIdentifier(Double.self) { scalars.append(Register(offset: base, size: 8, isFloat: true)); return nil }
        if id == ObjectIdentifier(Float.self) { scalars.append(Register(offset: base, size: 4, isFloat: true)); return nil }
        let size = _metadataSize(type)
        if size == 0 { return nil }
        let metadata = unsafeBitCast(type, to: UnsafeRawPointer.self)
        let witnesses = metadata.load(fromByteOffset: -8, as: UnsafeRawPointer.self)
        let flags = witnesses.load(fromByteOffset: 80, as: UInt32.self)
        if flags & 0x100000 != 0 { return "it is not bitwise-takable (a weak reference, or a type the runtime moves by a function), so it is passed indirectly" }
        let kind = metadata.load(as: UInt.self)
        switch kind {
        case 0, 0x800...:
            // A class reference.
            scalars.append(Register(offset: base, size: 8, isFloat: false))
            return nil
        case 0x200:
            // A struct: its fields; a standard-library integer or pointer has one builtin field.
            var why: String?
            var any = false
            _forEachField(of: type) { _, offset, field, _ in
                any = true
                why = collect(field, at: base + offset, into: &scalars)
                return why == nil
            }
            if let why { return why }
            if !any { return "a struct whose fields reflection does not show" }
            return nil
        case 0x201, 0x202:
            // An enum: its payload and tag as integers (a floating-point payload is not supported).
            if kind == 0x202 {
                let wrapped = metadata.load(fromByteOffset: 16, as: Any.Type.self)
                var inner: [Register] = []
                if let why = collect(wrapped, at: 0, into: &inner) { return why }
                if inner.contains(where: \.isFloat) { return "an Optional of a floating-point value, whose registers typed access does not know" }
            } else {
                // Its cases' payloads: one passed indirectly (`Any`) makes
                // the enum so (read as chunks, `case any(Any)` gave
                // garbage). With one payload case the enum is passed as its
                // payload's registers and a tag, so a floating-point one is
                // in an xmm register; with several, all are integer chunks
                // (the compiler's multi-payload schema).
                let (payloads, cases) = payloadTypes(of: metadata)
                for payload in payloads {
                    var inner: [Register] = []
                    if let why = collect(payload, at: 0, into: &inner) { return "a case's payload is \(_typeName(payload, qualified: true)): \(why)" }
                    if cases == 1, inner.contains(where: \.isFloat) { return "its one payload is \(_typeName(payload, qualified: true)), a floating-point value, whose registers typed access does not know" }
                }
            }
            integerChunks(of: size, at: base, into: &scalars)
            return nil
        case 0x301:
            // A tuple: each element at its offset.
            let count = metadata.load(fromByteOffset: 8, as: Int.self)
            for i in 0..<count {
                let element = metadata.load(fromByteOffset: 24 + 16 * i, as: Any.Type.self)
                let offset = Int(metadata.load(fromByteOffset: 32 + 16 * i, as: UInt32.self))
                if let why = collect(element, at: base + offset, into: &scalars) { return why }
            }
            return nil
        case 0x303:
            // An existential: a class-bound one (`AnyObject`, `any P` of a
            // class-bound `P`) is a reference and its witness tables, an
            // error (`any Error`) one reference to its box, both words in
            // registers; any other (`Any`, `any P`) a container the
            // function gets the address of (the flags' bit 31: not
            // class-bound; bits 24 to 29: a special protocol, 1 for Error).
            let flags = metadata.load(fromByteOffset: 8, as: UInt32.self)
            guard flags & 0x8000_0000 == 0 || (flags >> 24) & 0x3F == 1 else {
                return "an existential of any type (any P, Any) is passed indirectly"
            }
            integerChunks(of: size, at: base, into: &scalars)
            return nil
        case 0x300...0x3FF:
            // A floating-point builtin (`Float16`'s) is an xmm register's; a
            // vector (`SIMD2<Float>`'s storage) goes in vector registers.
            let builtin = _typeName(type, qualified: true)
            if builtin.hasPrefix("Builtin.Vec") { return "a SIMD vector (\(builtin)), passed in vector registers that typed access does not read" }
            if builtin.hasPrefix("Builtin.FPIEEE") {
                guard size <= 8 else { return "\(builtin) (Float80) is passed in memory" }
                scalars.append(Register(offset: base, size: size, isFloat: true))
                return nil
            }
            // A closure (in an Optional, a tuple, a struct): its registers are
            // at the function's own abstraction, not a value's read through a
            // type parameter (see `_SwiftEntryPlan`).
            if kind == 0x302 { return "a closure, whose registers are not what a value of its type holds" }
            // A metatype, an existential metatype (`any P.Type`: the
            // metatype and its witness tables), an integer builtin: integers.
            // A parameterized existential (`any P<T>`) is laid out by its
            // shape, which this does not read.
            if kind == 0x307 { return "a parameterized existential (any P<T>), whose layout typed access does not read" }
            if kind == 0x300 || (kind > 0x304 && kind != 0x306), size > 8 {
                if builtin.hasPrefix("Builtin.Int") { return "an integer of \(size) bytes (\(builtin)), aligned to \(_metadataAlignment(type)), which typed access does not read" }
                return "a builtin of \(size) bytes (\(builtin))"
            }
            integerChunks(of: size, at: base, into: &scalars)
            return nil
        default:
            return "a type of metadata kind \(kind)"
        }
    }
}

/// Appends `size` bytes at `base` as integer registers of up to 8 bytes.
private func integerChunks(of size: Int, at base: Int, into scalars: inout [_SwiftLowering.Register]) {
    var offset = 0
    while offset < size {
        scalars.append(_SwiftLowering.Register(offset: base + offset, size: Swift.min(8, size - offset), isFloat: false))
        offset += 8
    }
}

/// The payload types of the cases of the enum whose metadata is `metadata`
/// (not an indirect case's: a box reference), from its field descriptor,
/// and how many cases have a payload (indirect ones too); none where it has
/// no descriptor (an imported C enum) or a type cannot be resolved. (The
/// enum's descriptor at +8, with its payload case count in the low 24 bits
/// at +20; its field descriptor, relative, at +16; each record's flags, bit
/// 0 indirect, then its payload's mangled name, relative, null for a case
/// without one.)
private func payloadTypes(of metadata: UnsafeRawPointer) -> (types: [Any.Type], cases: Int) {
    let description = metadata.load(fromByteOffset: 8, as: UnsafeRawPointer.self)
    let cases = Int(description.load(fromByteOffset: 20, as: UInt32.self) & 0xFF_FFFF)
    let fieldsField = description + 16
    let fieldsOffset = fieldsField.load(as: Int32.self)
    guard fieldsOffset != 0 else { return ([], cases) }
    let fields = fieldsField + Int(fieldsOffset)
    let recordSize = Int(fields.load(fromByteOffset: 10, as: UInt16.self))
    let count = Int(fields.load(fromByteOffset: 12, as: UInt32.self))
    var types: [Any.Type] = []
    for i in 0..<count {
        let record = fields + 16 + i * recordSize
        if record.load(as: UInt32.self) & 1 != 0 { continue }
        let nameField = record + 4
        let nameOffset = nameField.load(as: Int32.self)
        if nameOffset == 0 { continue }
        let name = (nameField + Int(nameOffset)).assumingMemoryBound(to: UInt8.self)
        // Its length: a symbolic reference (1 to 0x17: 4 bytes relative;
        // 0x18 to 0x1f: a pointer) may hold zero bytes.
        var length = 0
        while name[length] != 0 {
            switch name[length] {
            case 0x01...0x17: length += 5
            case 0x18...0x1F: length += 1 + MemoryLayout<Int>.size
            default: length += 1
            }
        }
        // (A value type's generic arguments follow its descriptor.)
        if let type = _getTypeByMangledNameInContext(name, UInt(length), genericContext: description, genericArguments: metadata + 16) {
            types.append(type)
        }
    }
    return (types, cases)
}

/// The size of `type`, without a generic context.
func _metadataSize(_ type: Any.Type) -> Int {
    func size<T>(_: T.Type) -> Int { MemoryLayout<T>.size }
    return _openExistential(type, do: size)
}

func _metadataAlignment(_ type: Any.Type) -> Int {
    func alignment<T>(_: T.Type) -> Int { MemoryLayout<T>.alignment }
    return _openExistential(type, do: alignment)
}

/// One piece of a value in a `hk_swift_frame`: `count` bytes at `frame` in
/// the frame are the value's bytes at `memory`.
@usableFromInline
struct _SwiftCopy: Sendable {
    @usableFromInline let frame: Int
    @usableFromInline let memory: Int
    @usableFromInline let count: Int
    /// A general register (zeroed above `count` when written).
    @usableFromInline let isGeneral: Bool

    init(frame: Int, memory: Int, count: Int, isGeneral: Bool) {
        self.frame = frame
        self.memory = memory
        self.count = count
        self.isGeneral = isGeneral
    }
}

/// Where each argument and the result of a typed Swift entry hook live in a
/// `hk_swift_frame`: the pieces of each value, by frame offset.
@usableFromInline
struct _SwiftFrameLayout: Sendable {
    /// The arguments, in the order the hook states them.
    @usableFromInline var arguments: [[_SwiftCopy]]
    /// The result (empty for `Void`).
    @usableFromInline var result: [_SwiftCopy]
    /// Per argument, then for the result (last): the frame offset of the one
    /// register that holds the whole value from its first byte, or -1.
    @usableFromInline var whole: [Int]
    /// The general register index of `self` in r13.
    static let selfIndex = 8

    init(arguments: [[_SwiftCopy]], result: [_SwiftCopy]) {
        self.arguments = arguments
        self.result = result
        whole = (arguments + [result]).map { copies in
            copies.count == 1 && copies[0].memory == 0 ? copies[0].frame : -1
        }
    }

    /// The pieces of a value lowered to `lowering`, in the registers given
    /// by (is xmm, index): argument registers, or (`result`) result registers.
    static func copies(_ lowering: _SwiftLowering, _ registers: [(isFloat: Bool, index: Int)], result: Bool) -> [_SwiftCopy] {
        zip(lowering.registers, registers).compactMap { register, at in
            let count = Swift.min(register.size, lowering.size - register.offset)
            guard count > 0 else { return nil }
            let frame = result ? (at.isFloat ? 256 + 16 * at.index : 224 + 8 * at.index)
                : (at.isFloat ? 96 + 16 * at.index : (at.index == selfIndex ? 64 : at.index * 8))
            return _SwiftCopy(frame: frame, memory: register.offset, count: count, isGeneral: !at.isFloat)
        }
    }
}
