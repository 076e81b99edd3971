import CEntryHooks
import Glibc
import Synchronization

/// Every Swift function whose name matches a pattern, hooked at its entry
/// for tracing: a class's methods, a module's functions, one generic
/// function, with one call. Each call that returns is reported with its
/// name, duration and nesting depth; no typed access (the functions'
/// types are not stated), so any function can be traced: generic ones,
/// ones with stack arguments, large or indirect results, `modify`
/// coroutines (their first part, until the access begins).
///
/// ```swift
/// let trace = try SwiftTrace("Model.Person.*") { call in
///     print(String(repeating: "  ", count: call.depth), call.name, call.nanoseconds, "ns")
/// }
/// // ... the code runs; each call of a method of Person is reported ...
/// trace.stop()
/// ```
///
/// The report runs on the calling thread, after the call, under the
/// reentrancy guard (the traced functions it calls run unhooked). Functions
/// that cannot be traced are left out and listed in ``skipped`` with the
/// reason: async functions (async getters too), functions that already
/// have a typed ``SwiftEntryHook``, functions the relocator refuses, and a
/// function an optimized build merged others into.
///
/// Merged functions: the optimizer keeps one body of identical functions
/// and makes the others a jump to it (`Cat.greet(_:)` a `jmp` to
/// `Person.greet(_:)`). The one kept is skipped (": shares its code with
/// ..."): traced, a call of `Cat.greet(_:)` would be reported twice, under
/// both names, and its own calls could not be told from theirs. The others
/// are traced, each at its own entry, under its own name; the calls made
/// to the one kept directly are not reported. A function whose code is a
/// jump to one of the same type and signature is not taken for merged (an
/// accessor that forwards to another, `var title { get { name } }`): both
/// are traced, and a call of it is reported under both names, the second
/// one deeper, as a debug build, where the one calls the other, reports it.
/// The standard library and Hook's own modules are never traced (the hooks
/// run on them).
public final class SwiftTrace: @unchecked Sendable {
    /// One traced call.
    public struct Call: Sendable, CustomStringConvertible {
        /// The function as written: `Model.Person.greet(_:)`.
        public let name: String
        /// The call's duration (monotonic clock), nested calls included.
        public let nanoseconds: UInt64
        /// Traced calls this thread was inside when it began (0: none).
        public let depth: Int
        /// Whether it threw an error.
        public let threw: Bool

        public var description: String { "\(name) \(nanoseconds) ns\(threw ? " (threw)" : "")" }
    }

    /// The functions traced, as written.
    public let functions: [String]
    /// Functions the pattern matched that are not traced, each with the reason.
    public let skipped: [String]
    private let tokens: Mutex<[HookToken]>
    private let points: [_SwiftRawPoint]

    /// Traces every Swift function whose name matches `pattern`.
    ///
    /// - Parameters:
    ///   - pattern: A name as `SwiftEntryHook.named(_:as:in:)` takes it,
    ///     with `*` for any characters and `?` for one: `"Model.Person.*"`
    ///     (every member of `Person`), `"Model.*"` (a module),
    ///     `"Foundation.JSONEncoder.encode(_:)"`.
    ///   - object: Only functions of the loaded object whose path ends with this.
    ///   - report: Called after each traced call.
    /// - Throws: ``HookError`` `.symbolNotFound` if no function matches,
    ///   `.invalidValue` for a pattern on the standard library or Hook itself,
    ///   `.cannotPatch` if none of the matches could be traced (the reasons listed).
    public init(_ pattern: String, in object: String? = nil, _ report: @escaping @Sendable (Call) -> Void) throws(HookError) {
        try _requireX86_64(pattern, "Swift entry hooks relocate x86-64 machine code")
        let query = _SwiftNames.Query(pattern, pattern: true)
        let module = query.text.prefix { $0 != "." }
        if Self.untraced.contains(String(module)) {
            throw HookError(.invalidValue, point: pattern, "module \(module) is not traced: the hooks themselves run on it")
        }
        let found = _SwiftNames.find(query, object: object).filter { !Self.untraced.contains(String($0.written.prefix { $0 != "." })) }
        guard !found.isEmpty else {
            throw HookError(.symbolNotFound, point: pattern, "no loaded Swift function matches '\(pattern)'\(object.map { " in \($0)" } ?? "")")
        }
        var functions: [String] = [], skipped: [String] = [], tokens: [HookToken] = [], points: [_SwiftRawPoint] = []
        // Functions others were merged into (see above): one walk of each object for all of them.
        let merged = _SwiftNames.merged(into: found.filter { !$0.isAsync })
        for function in found {
            let name = function.name
            if function.isAsync {
                skipped.append("\(name): async")
                continue
            }
            if let others = merged[UInt(bitPattern: function.address)] {
                skipped.append("\(name): shares its code with \(others.joined(separator: ", ")) (the optimizer merged identical functions): its calls cannot be told from theirs")
                continue
            }
            do throws(HookError) {
                let point = try _SwiftRawPoint.install(function)
                let token = point.instead { call in
                    // The calls `_handle` counts, this one among them: one
                    // a call, however many traces hear it (counted here, a
                    // second trace's hook, inside the first's, said 1).
                    let depth = hk_swift_trace_depth(0) &- 1
                    let start = Self.now()
                    var threw = false
                    do { try call.invokeOriginal() } catch { threw = true }
                    let elapsed = Self.now() &- start
                    // The original's, kept for a trace whose hook this one
                    // runs inside: a report that calls a traced function
                    // (unhooked) sets the thread's flag again.
                    let flag = hk_swift_trace_threw(-1)
                    report(Call(name: name, nanoseconds: elapsed, depth: Int(depth), threw: threw || flag != 0))
                    _ = hk_swift_trace_threw(flag)
                }
                // Installed again, now that the hook is there: another
                // trace's `stop()` may have found the point without hooks
                // between the install and the hook, and put the bytes back.
                do throws(HookError) {
                    try point.install()
                } catch {
                    token.remove()
                    try? point.uninstall(unlessHooked: true)
                    throw error
                }
                tokens.append(token)
                functions.append(name)
                points.append(point)
            } catch {
                skipped.append("\(name): \(error.detail)")
            }
        }
        guard !functions.isEmpty else {
            throw HookError(.cannotPatch, point: pattern, "none of the \(found.count) functions matching '\(pattern)' can be traced: \(skipped.prefix(8).joined(separator: "; "))")
        }
        self.functions = functions
        self.skipped = skipped
        self.tokens = Mutex(tokens)
        self.points = points
    }

    deinit { stop() }

    /// Stops tracing: its hooks are removed, and each function no other
    /// trace (or hook) follows gets its first bytes back. Idempotent; also
    /// done when the trace deinitializes. Traces of the same functions may
    /// start and stop on any threads: each hears every call made while it
    /// runs. Each reports a call once, at the same depth and with the same
    /// `threw`; the duration the first reports includes the reports of the
    /// traces added after it (their hooks run inside its call).
    public func stop() {
        let tokens = self.tokens.withLock { tokens in
            defer { tokens = [] }
            return tokens
        }
        guard !tokens.isEmpty else { return }
        for token in tokens { token.remove() }
        // Only where no hook is left, asked under the registry's lock: a
        // trace begun meanwhile has its hook there, or installs again
        // once it has (see `init`).
        for point in points { try? point.uninstall(unlessHooked: true) }
    }

    /// Modules never traced: what the hooks run on.
    static let untraced: Set<String> = ["Swift", "Hook", "HookBind", "Synchronization", "_Concurrency", "Glibc", "Testing", "_StringProcessing"]

    @inline(__always)
    static func now() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
    }
}

/// A Swift entry without typed access: the call's registers and up to 256
/// bytes of stack arguments go to the function untouched, and its result
/// registers back.
final class _SwiftRawPoint: SwiftEntryPoint, @unchecked Sendable {

    static func install(_ function: _SwiftFunction) throws(HookError) -> _SwiftRawPoint {
        let point = try _EntryRegistry.shared.installSwift(
            symbol: function.demangled, address: function.address, size: function.size, object: function.object, key: "a trace (no types)"
        ) { (stub) throws(HookError) -> (AnyObject, UnsafeRawPointer) in
            let point = try _SwiftRawPoint(function: function, stub: stub,
                                           shape: .typed(kind: .function, result: Void.self, canThrow: false))
            point.point.pointee.stack_bytes = 256
            return (point, point.entry)
        }
        return point as! _SwiftRawPoint
    }

    override func _handle(_ frame: UnsafeMutablePointer<hk_swift_frame>) {
        // The traced calls this thread is inside (`SwiftTrace.Call.depth`).
        _ = hk_swift_trace_depth(1)
        defer { _ = hk_swift_trace_depth(-1) }
        let original = relocated
        let call: () -> Void = {
            var registers = frame.pointee
            hk_swift_call(original, &registers)
            // r12 is preserved by a function that does not throw; one that throws sets it.
            _ = hk_swift_trace_threw(registers.r12 != frame.pointee.r12 ? 1 : 0)
            frame.pointee.result = registers.result
            frame.pointee.xresult = registers.xresult
            frame.pointee.r12 = registers.r12
        }
        try! _typedCall(self, target: nil, call, escapable: call)
    }
}
