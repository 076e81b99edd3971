/// An error from making a hook point, adding a hook or reading a call.
///
/// Every message names the hook point it concerns and what was wrong:
///
/// ```text
/// hook point 'add': unsupported type: argument 1 is a union (union { int32_t; float; }); libffi cannot pass unions by value
/// ```
public struct HookError: Error, Equatable, Sendable, CustomStringConvertible {
    /// What went wrong, for code that wants to branch on it.
    public enum Kind: String, Sendable, Equatable {
        /// The function pointer given was null.
        case nullFunctionPointer = "null function pointer"
        /// A type libffi cannot pass: union, bit-field, empty struct, array argument, void argument.
        case unsupportedType = "unsupported type"
        /// A variadic function was given; libffi cannot make a variadic closure.
        case variadicClosure = "variadic closure"
        /// More arguments than ``Signature/maximumArgumentCount``.
        case tooManyArguments = "too many arguments"
        /// libffi's `ffi_prep_cif` or `ffi_prep_closure_loc` refused the signature.
        case libffiRefused = "libffi refused the signature"
        /// The system refused executable closure memory.
        case closureMemoryRefused = "closure memory refused"
        /// An argument or result was read or written as the wrong type.
        case typeMismatch = "type mismatch"
        /// An argument index outside the signature.
        case argumentOutOfRange = "argument index out of range"
        /// The result was read before the original ran, or the function returns void.
        case resultUnavailable = "result unavailable"
        /// A CallBack was used after its call returned, or on another thread.
        case callBackExpired = "CallBack used outside its call"
        /// An operation that only an `instead` hook may perform.
        case notInstead = "not inside an instead hook"
        /// A value did not match the type it was given for.
        case invalidValue = "invalid value"
        /// ``ImportHook``: no loaded object defines a function of that name.
        case symbolNotFound = "no such symbol"
        /// ``ImportHook``: no loaded object in scope imports the symbol.
        case notImported = "not imported"
        /// ``ImportHook``: `mprotect` refused to make a slot's page writable.
        case protectionRefused = "mprotect refused"
        /// ``ImportHook``: a slot's page could not be found in `/proc/self/maps`, or memory ran out while patching.
        case patchingFailed = "patching failed"
        /// ``ImportHook``: the symbol already has a hook point with another signature.
        case signatureMismatch = "signature mismatch"
        /// ``EntryHook``: several loaded objects define the symbol (the message lists them; pass one as `in:`).
        case ambiguousSymbol = "defined by several objects"
        /// ``EntryHook``: the function's entry cannot be patched safely (too short, an instruction the
        /// relocator does not handle, a branch into the displaced bytes), or not on this architecture.
        case cannotPatch = "entry cannot be patched"
        /// ``ImportHook`` and ``EntryHook``: they rewrite x86-64 relocations and
        /// machine code, and this process runs on another architecture.
        case unsupportedArchitecture = "unsupported on this architecture"
    }

    public let kind: Kind
    /// The hook point's name.
    public let point: String
    /// What exactly was wrong.
    public let detail: String

    public init(_ kind: Kind, point: String, _ detail: String) {
        self.kind = kind
        self.point = point
        self.detail = detail
    }

    public var description: String { "hook point '\(point)': \(kind.rawValue): \(detail)" }

    /// The same error named as the user wrote the point (`name`): errors
    /// raised below a lookup by name name the function found.
    func named(_ name: String) -> HookError { HookError(kind, point: name, detail) }
}
