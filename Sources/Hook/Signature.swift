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
        self.init(returning: R.cType, arguments: Self.cTypes(repeat each arguments))
    }

    /// A signature returning `void`, from Swift argument types: `Signature(arguments: UnsafeRawPointer?.self)`.
    public init<each A: CRepresentable>(arguments: repeat (each A).Type) {
        self.init(returning: .void, arguments: Self.cTypes(repeat each arguments))
    }

    private static func cTypes<each A: CRepresentable>(_ types: repeat (each A).Type) -> [CType] {
        var result: [CType] = []
        for type in repeat each types { result.append(type.cType) }
        return result
    }

    /// C-like: `int32_t (int32_t, double)`, or for a variadic call
    /// `int32_t (void *, ...) with (double)`.
    public var description: String {
        guard let fixed = fixedArgumentCount else {
            let args = arguments.isEmpty ? "void" : arguments.map(\.description).joined(separator: ", ")
            return "\(result) (\(args))"
        }
        let head = (arguments.prefix(fixed).map(\.description) + ["..."]).joined(separator: ", ")
        let tail = arguments.dropFirst(fixed).map(\.description).joined(separator: ", ")
        return "\(result) (\(head))" + (tail.isEmpty ? "" : " with (\(tail))")
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
    private let owned: [UnsafeMutableRawPointer]
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
        // A variadic argument is passed promoted, as C promotes it (libffi
        // refuses the others: "ffi_prep_cif returned FFI_BAD_ARGTYPE").
        if let fixed = signature.fixedArgumentCount {
            for (i, a) in signature.arguments.enumerated().dropFirst(fixed) {
                let promoted: CType? = switch a {
                case .float: .double
                case .bool, .int8, .int16: .int32
                case .uint8, .uint16: .int32
                default: nil
                }
                if let promoted {
                    throw HookError(.unsupportedType, point: name, "variadic argument \(i) is \(a); C passes it promoted, as \(promoted): describe it so")
                }
            }
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
        var owned: [UnsafeMutableRawPointer] = []
        for (i, a) in signature.arguments.enumerated() {
            argumentTypes[i] = Self.makeFFIType(a, owned: &owned)
        }
        let resultType = Self.makeFFIType(signature.result, owned: &owned)
        self.owned = owned
        let count = UInt32(signature.arguments.count)
        let abi = ffi_abi(rawValue: UInt32(bitPattern: signature.abi.rawValue))
        let status: ffi_status
        if let fixed = signature.fixedArgumentCount {
            status = ffi_prep_cif_var(cif, abi, UInt32(fixed), count, resultType, argumentTypes)
        } else {
            status = ffi_prep_cif(cif, abi, count, resultType, argumentTypes)
        }
        guard status == FFI_OK else {
            // Not fully initialized, so deinit will not run: free by hand.
            owned.forEach { $0.deallocate() }
            argumentTypes.deallocate()
            cif.deallocate()
            throw HookError(.libffiRefused, point: name, "\(signature.fixedArgumentCount == nil ? "ffi_prep_cif" : "ffi_prep_cif_var") returned \(status.name) for \(signature) with ABI \(signature.abi.rawValue)")
        }
        // The cif `ffi_call` uses: the same, or with one argument split (see SysVClassification).
        splitArgument = SysVClassification.sixthRegisterOverflowArgument(of: signature)
        // Other ABIs (win64) copy more struct sizes the same way: always copy there.
        rewritesArgumentArray = signature.abi != .default || signature.arguments.contains { $0.size > 16 }
        if let split = splitArgument {
            callCIF = .allocate(capacity: 1)
            callCIF.initialize(to: ffi_cif())
            callArgumentTypes = .allocate(capacity: signature.arguments.count + 1)
            var j = 0
            for i in signature.arguments.indices {
                if i == split {
                    callArgumentTypes[j] = hk_ffi_scalar_type(HK_SCALAR_INT64)
                    callArgumentTypes[j + 1] = hk_ffi_scalar_type(HK_SCALAR_DOUBLE)
                    j += 2
                } else {
                    callArgumentTypes[j] = argumentTypes[i]
                    j += 1
                }
            }
            let splitStatus: ffi_status
            if let fixed = signature.fixedArgumentCount {
                splitStatus = ffi_prep_cif_var(callCIF, abi, UInt32(fixed + (split < fixed ? 1 : 0)), count + 1, resultType, callArgumentTypes)
            } else {
                splitStatus = ffi_prep_cif(callCIF, abi, count + 1, resultType, callArgumentTypes)
            }
            guard splitStatus == FFI_OK else {
                owned.forEach { $0.deallocate() }
                argumentTypes.deallocate()
                cif.deallocate()
                callCIF.deallocate()
                callArgumentTypes.deallocate()
                throw HookError(.libffiRefused, point: name, "ffi_prep_cif returned \(splitStatus.name) for the split form of \(signature)")
            }
        } else {
            callCIF = cif
            callArgumentTypes = argumentTypes
        }
    }

    /// The cif and argument array to hand `ffi_call`: see ``SysVClassification``.
    let callCIF: UnsafeMutablePointer<ffi_cif>
    private let callArgumentTypes: UnsafeMutablePointer<UnsafeMutablePointer<ffi_type>?>
    /// The argument passed as two scalars, if any.
    let splitArgument: Int?
    /// Whether `ffi_call` would rewrite the argument array it is given.
    let rewritesArgumentArray: Bool
    /// Whether `ffi_call` needs something other than the arguments as they are.
    var needsCallAdjustment: Bool { splitArgument != nil || rewritesArgumentArray }

    /// Calls `function` with `ffi_call`, leaving `arguments` untouched and
    /// working around libffi 3.4.4's x86-64 bugs. Allocates nothing on the heap
    /// (the copies are stack allocations of at most 128 pointers and 16 bytes).
    @inline(__always)
    func call(_ function: @convention(c) () -> Void, result: UnsafeMutableRawPointer, arguments: UnsafeMutablePointer<UnsafeMutableRawPointer?>) {
        guard needsCallAdjustment else {
            return ffi_call(cif, function, result, arguments)
        }
        adjustedCall(function, result: result, arguments: arguments)
    }

    private func adjustedCall(_ function: @convention(c) () -> Void, result: UnsafeMutableRawPointer, arguments: UnsafeMutablePointer<UnsafeMutableRawPointer?>) {
        let count = argumentSizes.count
        withUnsafeTemporaryAllocation(of: UnsafeMutableRawPointer?.self, capacity: count + 1) { copy in
            let base = copy.baseAddress!
            guard let split = splitArgument else {
                base.initialize(from: arguments, count: count)
                return ffi_call(cif, function, result, base)
            }
            withUnsafeTemporaryAllocation(byteCount: 16, alignment: 16) { pair in
                let pair = pair.baseAddress!
                pair.initializeMemory(as: UInt8.self, repeating: 0, count: 16)
                pair.copyMemory(from: arguments[split]!, byteCount: argumentSizes[split])
                base.initialize(from: arguments, count: split)
                base[split] = pair
                base[split + 1] = pair + 8
                (base + split + 2).initialize(from: arguments + split + 1, count: count - split - 1)
                ffi_call(callCIF, function, result, base)
            }
        }
    }

    deinit {
        for p in owned { p.deallocate() }
        if callCIF != cif {
            callCIF.deallocate()
            callArgumentTypes.deallocate()
        }
        argumentTypes.deallocate()
        cif.deallocate()
    }

    /// Builds the `ffi_type` of `type`. Fixed arrays inside structs become that
    /// many repeated elements, which is how libffi classifies them correctly.
    private static func makeFFIType(_ type: CType, owned: inout [UnsafeMutableRawPointer]) -> UnsafeMutablePointer<ffi_type> {
        switch type {
        case .void: return hk_ffi_scalar_type(HK_SCALAR_VOID)
        case .bool, .uint8: return hk_ffi_scalar_type(HK_SCALAR_UINT8)
        case .int8: return hk_ffi_scalar_type(HK_SCALAR_INT8)
        case .uint16: return hk_ffi_scalar_type(HK_SCALAR_UINT16)
        case .int16: return hk_ffi_scalar_type(HK_SCALAR_INT16)
        case .uint32: return hk_ffi_scalar_type(HK_SCALAR_UINT32)
        case .int32: return hk_ffi_scalar_type(HK_SCALAR_INT32)
        case .uint64: return hk_ffi_scalar_type(HK_SCALAR_UINT64)
        case .int64: return hk_ffi_scalar_type(HK_SCALAR_INT64)
        case .float: return hk_ffi_scalar_type(HK_SCALAR_FLOAT)
        case .double: return hk_ffi_scalar_type(HK_SCALAR_DOUBLE)
        case .pointer: return hk_ffi_scalar_type(HK_SCALAR_POINTER)
        case .structure(let members):
            // An array member is its elements, each once per element (libffi
            // has no array type); an array of arrays, its innermost elements
            // (it was the innermost element type once per outer element: a
            // struct of int m[2][3] was 8 bytes to libffi, 24 in C).
            func flattened(_ member: CType) -> [UnsafeMutablePointer<ffi_type>] {
                guard case .array(let element, let count) = member else { return [makeFFIType(member, owned: &owned)] }
                let one = flattened(element)
                return Array([[UnsafeMutablePointer<ffi_type>]](repeating: one, count: count).joined())
            }
            var elements: [UnsafeMutablePointer<ffi_type>] = []
            for m in members { elements.append(contentsOf: flattened(m)) }
            let list = UnsafeMutablePointer<UnsafeMutablePointer<ffi_type>?>.allocate(capacity: elements.count + 1)
            for (i, e) in elements.enumerated() { list[i] = e }
            list[elements.count] = nil
            owned.append(UnsafeMutableRawPointer(list))
            let t = UnsafeMutablePointer<ffi_type>.allocate(capacity: 1)
            t.initialize(to: ffi_type(size: 0, alignment: 0, type: UInt16(FFI_TYPE_STRUCT), elements: list))
            owned.append(UnsafeMutableRawPointer(t))
            return t
        case .array(let element, _):
            return makeFFIType(element, owned: &owned)  // refused earlier at the top level
        case .union, .bitField:
            return hk_ffi_scalar_type(HK_SCALAR_VOID)  // refused earlier
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
        call(unsafeBitCast(function, to: (@convention(c) () -> Void).self), result: result, arguments: avalues)
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
