/// Works around two bugs of libffi 3.4.4's x86-64 `ffi_call` (Debian 12's).
///
/// 1. A struct argument whose first eightbyte is of class INTEGER and that
///    lands in the sixth integer register is copied with its whole size, so
///    its second eightbyte overwrites the first SSE register (`xmm0`) that an
///    earlier argument had filled (fixed upstream in libffi d21881f5). Passing
///    the struct's two eightbytes as two scalar arguments, `int64_t` then
///    `double`, fills the same registers without the overflow.
/// 2. For each struct argument over 16 bytes, `ffi_call` writes the address of
///    a temporary copy into the caller's `avalue[]` and leaves it dangling
///    (fixed upstream in libffi 110156e1). We pass `ffi_call` a copy of the
///    array whenever a signature has such an argument.
///
/// Both need only the System V classification of each argument, done once per
/// signature here.
enum SysVClassification {
    enum EightbyteClass { case integer, sse }

    /// The eightbyte classes of a type passed in registers, or nil when it is
    /// passed in memory (over 16 bytes) or cannot be classified simply.
    static func classes(of type: CType) -> [EightbyteClass]? {
        let size = type.size
        guard size > 0, size <= 16 else { return nil }
        var classes: [EightbyteClass?] = Array(repeating: nil, count: (size + 7) / 8)
        for (offset, scalar) in flattened(type, at: 0) {
            let i = offset / 8
            switch scalar {
            case .float, .double: if classes[i] == nil { classes[i] = .sse }
            default: classes[i] = .integer
            }
        }
        guard classes.allSatisfy({ $0 != nil }) else { return nil }
        return classes.map { $0! }
    }

    /// The scalars of a type with their byte offsets.
    static func flattened(_ type: CType, at base: Int) -> [(Int, CType)] {
        switch type {
        case .structure(let members):
            return zip(members, type.memberOffsets).flatMap { flattened($0, at: base + $1) }
        case .array(let element, let count):
            return (0..<count).flatMap { flattened(element, at: base + $0 * element.size) }
        default:
            return [(base, type)]
        }
    }

    /// The index of the argument that would trigger bug 1, if any.
    static func sixthRegisterOverflowArgument(of signature: Signature) -> Int? {
        #if arch(x86_64)
        guard signature.abi == .default else { return nil }
        // A result returned in memory takes the first integer register.
        var gpr = signature.result != .void && classes(of: signature.result) == nil ? 1 : 0
        var sse = 0
        for (index, type) in signature.arguments.enumerated() {
            guard let classes = classes(of: type) else { continue }  // in memory
            let needGPR = classes.filter { $0 == .integer }.count
            let needSSE = classes.count - needGPR
            if gpr + needGPR > 6 || sse + needSSE > 8 { continue }  // on the stack
            if case .structure = type, type.size > 8, classes.first == .integer, gpr == 5, sse > 0 {
                return index
            }
            gpr += needGPR
            sse += needSSE
        }
        return nil
        #else
        return nil
        #endif
    }
}
