import CFFIShim

/// The C signature of a function: its result and argument types, and its calling convention.
///
/// ```swift
/// // int32_t add(int32_t, int32_t);
/// let add = Signature(returning: .int32, arguments: [.int32, .int32])
/// // the same, from Swift types:
/// let same = Signature(returning: Int32.self, arguments: Int32.self, Int32.self)
/// ```
public struct Signature: Hashable, Sendable, CustomStringConvertible {
    /// The most arguments a hooked function may take: 127, C's own minimum
    /// translation limit for parameters (C11 5.2.4.1).
    public static let maximumArgumentCount = 127

    /// The result type; `.void` for none.
    public var result: CType
    /// The argument types, in order.
    public var arguments: [CType]
    /// The calling convention.
    public var abi: ABI
    /// For a variadic function, the number of fixed arguments; `nil` otherwise.
    /// Hooks refuse variadic signatures: libffi cannot make a variadic closure.
    public var fixedArgumentCount: Int?

    public init(returning result: CType, arguments: [CType], abi: ABI = .default) {
        self.result = result
        self.arguments = arguments
        self.abi = abi
        self.fixedArgumentCount = nil
    }

    /// A variadic signature such as `int printf(const char *, ...)`, with the
    /// types of one particular call's variadic arguments appended (already
    /// promoted: `double` for `float`, `int` for narrower integers).
    public static func variadic(returning result: CType, fixed: [CType], variadic: [CType] = [], abi: ABI = .default) -> Signature {
        var s = Signature(returning: result, arguments: fixed + variadic, abi: abi)
        s.fixedArgumentCount = fixed.count
        return s
    }

    /// A signature from Swift types: `Signature(returning: Double.self, arguments: Double.self, Int32.self)`.
    public init<R: CRepresentable, each A: CRepresentable>(returning result: R.Type, arguments: repeat (each A).Type) {
        var types: [CType] = []
        for a in repeat each arguments { types.append(a.cType) }
        self.init(returning: R.cType, arguments: types)
    }

    /// A signature returning `void`, from Swift argument types: `Signature(arguments: UnsafeRawPointer?.self)`.
    public init<each A: CRepresentable>(arguments: repeat (each A).Type) {
        var types: [CType] = []
        for a in repeat each arguments { types.append(a.cType) }
        self.init(returning: .void, arguments: types)
    }

    public var description: String {
        let args = arguments.isEmpty ? "void" : arguments.map(\.description).joined(separator: ", ")
        let dots = fixedArgumentCount != nil ? ", ..." : ""
        return "\(result) (\(args)\(dots))"
    }

    /// Calls `function` with `arguments` through libffi and returns its result.
    ///
    /// A dynamic call for code that learns types at run time (tests, tools); it
    /// prepares a call interface on each use, so it is not for hot paths.
    /// Variadic signatures are supported here.
    public func call(_ function: UnsafeRawPointer, with arguments: [CValue], name: String = "call") throws(HookError) -> CValue {
        let interface = try CallInterface(self, name: name, forClosure: false)
        return try interface.call(function, with: arguments, name: name)
    }
}

/// A libffi calling convention (`ffi_abi`).
public struct ABI: Hashable, Sendable {
    /// libffi's `ffi_abi` number.
    public let rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }
    /// The platform's C calling convention (`FFI_DEFAULT_ABI`).
    public static let `default` = ABI(rawValue: Int32(hk_ffi_default_abi()))
    #if arch(x86_64)
    /// The Microsoft x64 convention, for functions declared `__attribute__((ms_abi))`.
    public static let win64 = ABI(rawValue: 3)
    #endif
}

/// A prepared `ffi_cif` and the `ffi_type`s it points to, owned together.
///
/// libffi keeps pointers to the types and argument array, and `ffi_prep_cif`
/// writes sizes into struct types, so all of it lives exactly as long as this
/// object and is prepared once, on one thread, before anyone can see it.
final class CallInterface: @unchecked Sendable {
    let signature: Signature
    let cif: UnsafeMutablePointer<ffi_cif>
    private let argumentTypes: UnsafeMutablePointer<UnsafeMutablePointer<ffi_type>?>
    private var owned: [UnsafeMutableRawPointer] = []
    /// Sizes of each argument and of the result, by our C layout rules.
    let argumentSizes: [Int]
    let resultSize: Int
    /// Bytes a result buffer needs: the result's size, at least one `ffi_arg`.
    let resultBufferSize: Int

    init(_ signature: Signature, name: String, forClosure: Bool) throws(HookError) {
        if forClosure, signature.fixedArgumentCount != nil {
            throw HookError(.variadicClosure, point: name, "\(signature) is variadic; libffi can call variadic functions but cannot make a variadic closure")
        }
        if signature.arguments.count > Signature.maximumArgumentCount {
            throw HookError(.tooManyArguments, point: name, "\(signature.arguments.count) arguments; at most \(Signature.maximumArgumentCount) are supported")
        }
        if let fixed = signature.fixedArgumentCount, fixed < 0 || fixed > signature.arguments.count {
            throw HookError(.invalidValue, point: name, "fixed argument count \(fixed) is outside 0...\(signature.arguments.count)")
        }
        try signature.result.validate(as: "result", in: name)
        for (i, a) in signature.arguments.enumerated() {
            try a.validate(as: "argument \(i)", in: name)
        }
        self.signature = signature
        argumentSizes = signature.arguments.map(\.layout.size)
        resultSize = signature.result.layout.size
        resultBufferSize = Swift.max(resultSize, MemoryLayout<ffi_arg>.size)
        cif = .allocate(capacity: 1)
        cif.initialize(to: ffi_cif())
        argumentTypes = .allocate(capacity: Swift.max(signature.arguments.count, 1))
        for (i, a) in signature.arguments.enumerated() {
            argumentTypes[i] = makeFFIType(a)
        }
        let resultType = makeFFIType(signature.result)
        let count = UInt32(signature.arguments.count)
        let abi = ffi_abi(rawValue: UInt32(bitPattern: signature.abi.rawValue))
        let status: ffi_status
        if let fixed = signature.fixedArgumentCount {
            status = ffi_prep_cif_var(cif, abi, UInt32(fixed), count, resultType, argumentTypes)
        } else {
            status = ffi_prep_cif(cif, abi, count, resultType, argumentTypes)
        }
        guard status == FFI_OK else {
            throw HookError(.libffiRefused, point: name, "ffi_prep_cif returned \(status.name) for \(signature) with ABI \(signature.abi.rawValue)")
        }
    }

    deinit {
        for p in owned { p.deallocate() }
        argumentTypes.deallocate()
        cif.deallocate()
    }

    /// Builds the `ffi_type` of `type`. Fixed arrays inside structs become that
    /// many repeated elements, which is how libffi classifies them correctly.
    private func makeFFIType(_ type: CType) -> UnsafeMutablePointer<ffi_type> {
        switch type {
        case .void: return hk_ffi_scalar_type(HK_FFI_VOID)
        case .bool, .uint8: return hk_ffi_scalar_type(HK_FFI_UINT8)
        case .int8: return hk_ffi_scalar_type(HK_FFI_SINT8)
        case .uint16: return hk_ffi_scalar_type(HK_FFI_UINT16)
        case .int16: return hk_ffi_scalar_type(HK_FFI_SINT16)
        case .uint32: return hk_ffi_scalar_type(HK_FFI_UINT32)
        case .int32: return hk_ffi_scalar_type(HK_FFI_SINT32)
        case .uint64: return hk_ffi_scalar_type(HK_FFI_UINT64)
        case .int64: return hk_ffi_scalar_type(HK_FFI_SINT64)
        case .float: return hk_ffi_scalar_type(HK_FFI_FLOAT)
        case .double: return hk_ffi_scalar_type(HK_FFI_DOUBLE)
        case .pointer: return hk_ffi_scalar_type(HK_FFI_POINTER)
        case .structure(let members):
            var elements: [UnsafeMutablePointer<ffi_type>] = []
            for m in members {
                if case .array(let element, let count) = m {
                    let e = makeFFIType(element)
                    elements.append(contentsOf: repeatElement(e, count: count))
                } else {
                    elements.append(makeFFIType(m))
                }
            }
            let list = UnsafeMutablePointer<UnsafeMutablePointer<ffi_type>?>.allocate(capacity: elements.count + 1)
            for (i, e) in elements.enumerated() { list[i] = e }
            list[elements.count] = nil
            owned.append(UnsafeMutableRawPointer(list))
            let t = UnsafeMutablePointer<ffi_type>.allocate(capacity: 1)
            t.initialize(to: ffi_type(size: 0, alignment: 0, type: UInt16(FFI_TYPE_STRUCT), elements: list))
            owned.append(UnsafeMutableRawPointer(t))
            return t
        case .array(let element, _):
            return makeFFIType(element)  // refused earlier at the top level
        case .union, .bitField:
            return hk_ffi_scalar_type(HK_FFI_VOID)  // refused earlier
        }
    }

    /// Calls `function` with `values` via `ffi_call` (allocates; not the hook path).
    func call(_ function: UnsafeRawPointer, with values: [CValue], name: String) throws(HookError) -> CValue {
        let types = signature.arguments
        guard values.count == types.count else {
            throw HookError(.invalidValue, point: name, "\(values.count) arguments given for \(signature)")
        }
        let buffers = types.map { UnsafeMutableRawPointer.allocate(byteCount: Swift.max($0.layout.size, 8), alignment: 16) }
        let avalues = UnsafeMutablePointer<UnsafeMutableRawPointer?>.allocate(capacity: Swift.max(types.count, 1))
        let result = UnsafeMutableRawPointer.allocate(byteCount: resultBufferSize, alignment: 16)
        defer {
            buffers.forEach { $0.deallocate() }
            avalues.deallocate()
            result.deallocate()
        }
        for i in types.indices {
            guard values[i].store(types[i], to: buffers[i]) else {
                throw HookError(.typeMismatch, point: name, "argument \(i) is \(types[i]) but \(values[i]) was given")
            }
            avalues[i] = buffers[i]
        }
        ffi_call(cif, unsafeBitCast(function, to: (@convention(c) () -> Void).self), result, avalues)
        return CValue.load(signature.result, from: result)
    }
}

extension ffi_status {
    var name: String {
        switch self {
        case FFI_OK: "FFI_OK"
        case FFI_BAD_TYPEDEF: "FFI_BAD_TYPEDEF"
        case FFI_BAD_ABI: "FFI_BAD_ABI"
        case FFI_BAD_ARGTYPE: "FFI_BAD_ARGTYPE"
        default: "ffi_status \(rawValue)"
        }
    }
}
