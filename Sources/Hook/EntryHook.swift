import CEntryHooks
import Glibc
import Synchronization

/// A hook point at the entry of any function in the process: its first
/// instructions are rewritten into a jump, so every call runs the hooks,
/// whoever makes it and however (a library calling its own functions, a
/// `static` function, the program's own code, a function pointer taken long
/// ago).
///
/// ```swift
/// // Every step of sqlite3_exec, which calls sqlite3_step directly (no GOT slot).
/// var steps = 0
/// let step = try EntryHook(symbol: "sqlite3_step", signature: Signature(returning: .int32, arguments: [.pointer]))
/// step.after { _ in steps += 1 }
/// // ... sqlite3_exec(db, "SELECT ...", ...) ...
/// try step.restore()
/// ```
///
/// It is a ``FunctionHook`` whose ``FunctionHook/original`` is a stub that
/// runs the displaced instructions, relocated, and jumps back into the
/// function: every position, `CallBack`, typed access, instead hook, owner,
/// token, the reentrancy guard and HookBind's fishes work as on any hook
/// point. ``FunctionHook/entry`` is the libffi closure the jump leads to.
///
/// ## Finding the function
/// By symbol in every loaded object: each object's dynamic symbol table and,
/// read from its file, its full symbol table, so the program's own functions
/// and a library's `static` ones are found where the file keeps its symbols.
/// A versioned name (`fmemopen@GLIBC_2.22`) is looked up with `dlvsym`; a
/// plain name with several versions is its default version, as calls bind
/// it. A symbol that several objects define is an error listing them: name
/// one with `in:`. Or by address (``init(address:signature:name:)``).
///
/// ## Safe while other threads run the function
/// The patch follows the kernel's `text_poke_bp`: an `int3` on the first
/// byte, a core-serializing `membarrier`, the other bytes, another, the
/// first byte, another. A thread that meets the `int3` meanwhile is sent on
/// to the original by a `SIGTRAP` handler (chained to any handler installed
/// before); before the other bytes are written, every other thread that
/// may be inside the displaced bytes (`/proc` does not show it elsewhere:
/// asleep in a system call, say) is interrupted once, and one stopped
/// between two displaced instructions resumes at that instruction's copy in
/// the stub. ``restore()`` puts the original bytes back the same way.
/// Trampolines are never freed: a thread may still be inside one. A thread
/// that blocks `SIGTRAP` (one that waits in `sigwait` with every signal
/// blocked, glibc's `SIGEV_THREAD` timer helper) would end the process at
/// the `int3`: while one does, installing, ``restore()`` and ``uninstall()``
/// throw `.patchingFailed` naming it, and write nothing.
///
/// ## The object stays loaded
/// The object that defines a hooked function is kept loaded for the life of
/// the process: a `dlclose` of a library with an entry hook no longer
/// unloads it (its code is patched, and a thread may still be in its
/// trampoline).
///
/// ## One hook point per function, for the life of the process
/// A second `EntryHook` for the same function returns the same object (a
/// different signature is `.signatureMismatch`); after ``restore()``, asking
/// again reinstalls it. A function that also has an ``ImportHook`` runs each
/// hook point's hooks once per call: the import hook's around the entry
/// hook's.
///
/// ## What cannot be caught
/// Code the compiler inlined into its callers (it never calls the function),
/// and functions the relocator refuses, with the reason: shorter than the
/// 5-byte jump, a branch of the function into the displaced bytes, an
/// instruction it does not relocate (`loop`, `jrcxz`). x86-64 Linux only.
public final class EntryHook: FunctionHook, _EntryHookMaking, @unchecked Sendable {
    /// The function's name as asked for (or found for an address).
    public let symbol: String
    /// The path of the object that defines it.
    public let object: String
    /// The function's first byte.
    public let address: UnsafeRawPointer

    fileprivate init(symbol: String, object: String, address: UnsafeRawPointer, stub: UnsafeRawPointer, signature: Signature) throws(HookError) {
        self.symbol = symbol
        self.object = object
        self.address = address
        try super.init(function: stub, signature: signature, name: symbol)
    }

    public override var description: String { "EntryHook '\(symbol)' in \(object): \(signature)" }

    /// Whether the function's entry jumps to the hook point now.
    public var isInstalled: Bool { _EntryRegistry.shared.isInstalled(self) }

    /// Puts the function's first bytes back as they were (the same protocol
    /// as the patch), and removes every hook. Idempotent. Asking for the
    /// function again reinstalls this hook point.
    ///
    /// - Throws: ``HookError`` `.protectionRefused` if the code could not be made writable.
    public func restore() throws(HookError) {
        try uninstall()
        removeAllHooks()
    }

    /// Puts the function's first bytes back, keeping the hooks: calls run the
    /// original only until ``install()``. Idempotent.
    public func uninstall() throws(HookError) {
        try _EntryRegistry.shared.setInstalled(self, false)
    }

    /// Patches the function's entry again after ``uninstall()`` or
    /// ``restore()``. Idempotent.
    public func install() throws(HookError) {
        try _EntryRegistry.shared.setInstalled(self, true)
    }

    /// The function's displaced bytes as they were before the patch (for checks).
    public var originalBytes: [UInt8] { _EntryRegistry.shared.originalBytes(of: self) }

    /// Whether the relocator can patch the function at `address` (`size`
    /// bytes, 0 if unknown), without patching anything: nil if it can, else
    /// the reason. For surveys of a library's functions.
    public static func refusal(at address: UnsafeRawPointer, size: Int) -> String? {
        var plan = hk_entry_plan()
        var why = [CChar](repeating: 0, count: 256)
        // A stub 1 MB below the function: its operands are in reach, as on a real page.
        let stub = UnsafeRawPointer(bitPattern: UInt(bitPattern: address) &- 0x100000)
        return hk_entry_plan_make(address, UInt64(size), stub, &plan, &why, why.count) == 0 ? nil : _text(why)
    }

    /// Every function symbol of the loaded object whose path ends with
    /// `object` (`"libz.so.1"`): name, address and size. Nil if no loaded object matches.
    public static func functions(in object: String) -> [(name: String, address: UnsafeRawPointer, size: Int)]? {
        final class Found { var all: [(name: String, address: UnsafeRawPointer, size: Int)] = [] }
        let found = Found()
        let status = withExtendedLifetime(found) {
            hk_entry_each_function(object, { name, address, size, context in
                let found = Unmanaged<Found>.fromOpaque(context!).takeUnretainedValue()
                found.all.append((String(cString: name!), address!, Int(size)))
                return 0
            }, Unmanaged.passUnretained(found).toOpaque())
        }
        return status < 0 ? nil : found.all
    }

    /// Whether entry hooks can patch in this process: false under
    /// ThreadSanitizer, which delivers signals late (every install then throws `.cannotPatch`).
    public static var isAvailable: Bool {
        #if arch(x86_64)
        hk_entry_supported() != 0 && hk_entry_unavailable_under_sanitizer() == 0
        #else
        false
        #endif
    }

    /// Tests: the calling thread's next patch is refused write access, as
    /// under a W^X policy (only that thread's: a test running beside it that
    /// patches code does not take the refusal).
    static func refuseNextWrite() { hk_entry_test_refuse_write(1) }

    /// Tests: the calling thread's next patch takes at most `limit` other
    /// threads, as if the process had more than the patch can move.
    static func limitNextPatchToThreads(_ limit: Int32) { hk_entry_test_thread_limit(limit) }
}

/// How `EntryHook(symbol:...)` returns the hook point a function already has:
/// an initializer in a protocol extension may assign `self`.
@_documentation(visibility: internal)
public protocol _EntryHookMaking {}

extension _EntryHookMaking where Self == EntryHook {
    /// Hooks the entry of the function named `symbol`, or returns the hook point it already has.
    ///
    /// - Parameters:
    ///   - symbol: As the symbol tables spell it (`"sqlite3_step"`, `"deflate"`,
    ///     a `static` function's name), or versioned (`"fmemopen@GLIBC_2.22"`).
    ///   - signature: Its C signature. Variadic functions are refused.
    ///   - object: The defining object, by path or file name (`"libz.so.1"`),
    ///     when several define the symbol.
    /// - Throws: ``HookError`` naming the symbol: `.symbolNotFound` (no
    ///   definition, or a data object), `.ambiguousSymbol` (several objects
    ///   define it: the message lists them), `.cannotPatch` (the relocator
    ///   refuses it, with the reason), `.protectionRefused` (write access to
    ///   the code refused), `.patchingFailed`, `.signatureMismatch` (it has a
    ///   hook point with another signature); nothing is patched then.
    ///   `.unsupportedArchitecture` off x86-64.
    public init(symbol: String, signature: Signature, in object: String? = nil) throws(HookError) {
        try _requireX86_64(symbol, "entry hooks relocate x86-64 machine code")
        self = try _EntryRegistry.shared.install(symbol: symbol, signature: signature, object: object)
    }

    /// Hooks the entry of the function that starts at `address`.
    ///
    /// - Throws: as ``init(symbol:signature:in:)``; `.invalidValue` if
    ///   `address` lies inside a known function rather than at its start,
    ///   or is not in executable code (a heap, stack or data address).
    public init(address: UnsafeRawPointer, signature: Signature, name: String? = nil) throws(HookError) {
        try _requireX86_64(name ?? "function at \(address)", "entry hooks relocate x86-64 machine code")
        self = try _EntryRegistry.shared.install(address: address, signature: signature, name: name)
    }
}

/// Throws `.unsupportedArchitecture` off x86-64 (what import and entry hooks
/// write is x86-64's: see the Architecture article for an arm64 port).
func _requireX86_64(_ point: String, _ why: String) throws(HookError) {
    #if arch(x86_64)
    return
    #else
    throw HookError(.unsupportedArchitecture, point: point, "\(why); this process is not x86-64. Hook points of closures, properties, methods and C function pointers (FunctionHook) work here")
    #endif
}

/// A NUL-terminated C string in a buffer, as text.
private func _text(_ buffer: [CChar]) -> String {
    String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

// MARK: - The registry

/// Every EntryHook of the process, by function address, and the lock that serializes patching.
final class _EntryRegistry: @unchecked Sendable {
    static let shared = _EntryRegistry()

    private struct Entry {
        /// An `EntryHook`, or a Swift entry (`SwiftEntryHook`, `_SwiftTracePoint`).
        let point: AnyObject
        /// What a second request must match: the C signature, or the Swift hook's types.
        let key: String
        let plan: hk_entry_plan
        let page: UnsafeMutableRawPointer
        var isInstalled: Bool
    }

    private let entries = Mutex<[UInt: Entry]>([:])

    private func locked<R, E: Error>(_ body: (inout [UInt: Entry]) throws(E) -> R) throws(E) -> R {
        try entries.withVisibleLock(self) { (value: inout sending [UInt: Entry]) throws(E) -> sending R in
            nonisolated(unsafe) let result = try body(&value)
            return result
        }
    }

    func isInstalled(_ point: EntryHook) -> Bool { isInstalled(at: point.address, point: point) }

    /// Whether `point` is the function's hook point and patched in (a point
    /// replaced by one of other types is not).
    func isInstalled(at address: UnsafeRawPointer, point: AnyObject) -> Bool {
        locked { $0[UInt(bitPattern: address)].map { $0.point === point && $0.isInstalled } ?? false }
    }

    /// Hook points replaced by one of other types for their function (after
    /// a `restore()`): kept for the life of the process, as their
    /// trampolines are, since a call that entered through the old patch may
    /// still be running their code, and their handles may be kept.
    private let replaced = Mutex<[_KeptPoint]>([])

    func originalBytes(of point: EntryHook) -> [UInt8] {
        locked { entries in
            guard var plan = entries[UInt(bitPattern: point.address)]?.plan else { return [] }
            return withUnsafeBytes(of: &plan.original) { Array($0.prefix(Int(plan.patch_length))) }
        }
    }

    private static func describe(_ type: Int32) -> String {
        switch type {
        case 1: "a data object"
        case 3: "a section"
        case 4: "a file"
        case 5: "a common block"
        case 6: "a thread-local variable"
        default: "of ELF symbol type \(type)"
        }
    }

    /// The one definition of `symbol` (in `object` if given).
    private func definition(of symbol: String, object: String?) throws(HookError) -> (address: UnsafeRawPointer, size: UInt64, object: String) {
        guard !symbol.isEmpty, !symbol.utf8.contains(0) else {
            throw HookError(.symbolNotFound, point: symbol, "the symbol name is empty or contains a NUL byte")
        }
        guard hk_entry_supported() != 0 else {
            throw HookError(.cannotPatch, point: symbol, "entry hooks are x86-64 Linux only")
        }
        var found = [hk_entry_definition](repeating: hk_entry_definition(), count: 32)
        let count = Int(hk_entry_find(symbol, &found, Int32(found.count)))
        let all = Array(found.prefix(Swift.min(count, found.count)))
        func path(_ d: hk_entry_definition) -> String {
            var d = d
            return withUnsafeBytes(of: &d.object) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        }
        func matches(_ d: hk_entry_definition) -> Bool {
            guard let object else { return true }
            let p = path(d)
            return p == object || p.hasSuffix("/" + object)
        }
        let candidates = all.filter(matches)
        guard !candidates.isEmpty else {
            if let object, !all.isEmpty {
                throw HookError(.symbolNotFound, point: symbol, "'\(symbol)' is not defined in \(object); it is defined in \(Set(all.map(path)).sorted().joined(separator: ", "))")
            }
            throw HookError(.symbolNotFound, point: symbol, "no loaded object defines '\(symbol)' (their dynamic symbol tables, and the symbol tables their files keep)")
        }
        let objects = Set(candidates.map(path))
        guard objects.count == 1 else {
            throw HookError(.ambiguousSymbol, point: symbol, "'\(symbol)' is defined by \(objects.count) objects: \(objects.sorted().joined(separator: ", ")); name one with in:")
        }
        // Within one object: a function (an IFUNC resolves to the implementation this CPU gets).
        let functions = candidates.filter { $0.type == 2 || $0.type == 10 }
        guard var chosen = functions.first else {
            throw HookError(.symbolNotFound, point: symbol, "'\(symbol)' is \(Self.describe(candidates[0].type)), not a function")
        }
        // What a call by this name from another object binds to: the
        // object's own `dlsym` (not the process's first definition, which
        // an interposer, a preloaded library or a sanitizer's interceptor,
        // may be), an IFUNC's implementation for this CPU.
        let bound: UnsafeMutableRawPointer? = {
            let file = path(chosen)
            guard let handle = dlopen(file.isEmpty ? nil : file, RTLD_LAZY | RTLD_NOLOAD) else {
                return dlsym(UnsafeMutableRawPointer(bitPattern: 0), symbol)
            }
            defer { dlclose(handle) }
            return dlsym(handle, symbol)
        }()
        if Set(functions.map { UInt(bitPattern: $0.address) }).count > 1 {
            // Versions of one name (`memcpy@GLIBC_2.2.5` and
            // `memcpy@@GLIBC_2.14`, `realpath@GLIBC_2.2.5` and
            // `realpath@@GLIBC_2.3`): the default one, which `dlsym` gives
            // and unversioned references bind to; else local functions of
            // several files, which no name tells apart.
            if let bound, let exact = functions.first(where: { $0.address == UnsafeRawPointer(bound) }) {
                return (exact.address, exact.size, path(exact))
            } else if bound != nil, let resolver = functions.first(where: { $0.type == 10 }) {
                chosen = resolver
            } else {
                throw HookError(.ambiguousSymbol, point: symbol, "'\(symbol)' names \(functions.count) functions in \(path(chosen)) (local ones of several files; or versions: name one, as '\(symbol)@VERSION')")
            }
        }
        if chosen.type == 10 {
            guard let implementation = bound else {
                throw HookError(.cannotPatch, point: symbol, "'\(symbol)' is an IFUNC whose implementation dlsym does not give")
            }
            var info = hk_entry_definition()
            var name = [CChar](repeating: 0, count: 256)
            let size = hk_entry_find_address(implementation, &name, name.count, &info) != 0 && info.address == UnsafeRawPointer(implementation) ? info.size : 0
            return (UnsafeRawPointer(implementation), size, path(chosen))
        }
        return (chosen.address, chosen.size, path(chosen))
    }

    func install(symbol: String, signature: Signature, object: String?) throws(HookError) -> EntryHook {
        try locked { (entries) throws(HookError) -> EntryHook in
            let found = try definition(of: symbol, object: object)
            return try install(&entries, symbol: symbol, address: found.address, size: found.size, object: found.object, signature: signature)
        }
    }

    /// Installs a Swift entry (see `SwiftEntryHook`) at a function found by name.
    func installSwift(symbol: String, address: UnsafeRawPointer, size: UInt64, object: String, key: String,
                      make: (UnsafeRawPointer) throws(HookError) -> (AnyObject, UnsafeRawPointer)) throws(HookError) -> AnyObject {
        try locked { (entries) throws(HookError) -> AnyObject in
            guard hk_entry_supported() != 0 else {
                throw HookError(.cannotPatch, point: symbol, "entry hooks are x86-64 Linux only")
            }
            return try install(&entries, symbol: symbol, address: address, size: size, object: object, key: key, make: make)
        }
    }

    func install(address: UnsafeRawPointer, signature: Signature, name: String?) throws(HookError) -> EntryHook {
        try locked { (entries) throws(HookError) -> EntryHook in
            var info = hk_entry_definition()
            var found = [CChar](repeating: 0, count: 256)
            let known = hk_entry_find_address(address, &found, found.count, &info) != 0
            let foundName = known ? _text(found) : nil
            let symbol = name ?? foundName ?? "0x" + String(UInt(bitPattern: address), radix: 16)
            guard hk_entry_supported() != 0 else {
                throw HookError(.cannotPatch, point: symbol, "entry hooks are x86-64 Linux only")
            }
            if known, info.address != address {
                let offset = UInt(bitPattern: address) &- UInt(bitPattern: info.address)
                throw HookError(.invalidValue, point: symbol, "\(address) is +\(offset) into '\(foundName!)', not the start of a function")
            }
            // Not code: the patch would write into the data and make its
            // page read-only (a heap address was patched, and the next
            // write to its page crashed).
            guard let protection = ImportHook.protection(at: address) else {
                throw HookError(.invalidValue, point: symbol, "\(address) is in no mapping of this process; nothing was patched")
            }
            if protection & PROT_EXEC == 0 {
                throw HookError(.invalidValue, point: symbol, "\(address) is not in executable code (a heap, stack or data address); nothing was patched")
            }
            if protection & PROT_WRITE != 0 {
                throw HookError(.invalidValue, point: symbol, "\(address) is in code that is also writable (a JIT's?): the patch would leave its page read-only; nothing was patched")
            }
            var object = info
            let path = known ? withUnsafeBytes(of: &object.object) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) } : "?"
            return try install(&entries, symbol: symbol, address: address, size: known ? info.size : 0, object: path, signature: signature)
        }
    }

    private func install(_ entries: inout [UInt: Entry], symbol: String, address: UnsafeRawPointer, size: UInt64,
                         object: String, signature: Signature) throws(HookError) -> EntryHook {
        let point = try install(&entries, symbol: symbol, address: address, size: size, object: object, key: signature.description) { (stub) throws(HookError) in
            let point = try EntryHook(symbol: symbol, object: object, address: address, stub: stub, signature: signature)
            return (point, point.entry)
        }
        guard let point = point as? EntryHook else {
            throw HookError(.signatureMismatch, point: symbol, "'\(symbol)' already has a Swift entry hook point (SwiftEntryHook); it cannot have a C one too")
        }
        return point
    }

    /// Installs (or reinstalls) the hook point of the function at `address`:
    /// the one it has if its key is `key`, else one `make` builds over the
    /// relocated entry, whose calls the patch sends to the entry `make` returns.
    private func install(_ entries: inout [UInt: Entry], symbol: String, address: UnsafeRawPointer, size: UInt64, object: String, key: String,
                 make: (UnsafeRawPointer) throws(HookError) -> (AnyObject, UnsafeRawPointer)) throws(HookError) -> AnyObject {
        if hk_entry_unavailable_under_sanitizer() != 0 {
            throw HookError(.cannotPatch, point: symbol, "entry hooks are unavailable under ThreadSanitizer, which delivers signals late: threads inside the function could not be moved off the bytes the jump displaces; nothing was written")
        }
        let address_ = UInt(bitPattern: address)
        if let old = entries[address_], old.key != key, !old.isInstalled {
            // Replaced below: the old point stays (see `replaced`).
            replaced.withLock { $0.append(_KeptPoint(point: old.point)) }
        }
        if var entry = entries[address_], entry.key == key || entry.isInstalled {
            guard entry.key == key else {
                throw HookError(.signatureMismatch, point: symbol, """
                    '\(symbol)' already has an entry hook point of \(entry.key); asked for \(key)
                    """)
            }
            if !entry.isInstalled {
                try patch(entry, install: true, symbol: symbol)
                entry.isInstalled = true
                entries[address_] = entry
            }
            return entry.point
        }
        var why = [CChar](repeating: 0, count: 512)
        guard let page = hk_entry_page_reserve(address, &why, why.count) else {
            throw HookError(.patchingFailed, point: symbol, _text(why))
        }
        var plan = hk_entry_plan()
        guard hk_entry_plan_make(address, size, page, &plan, &why, why.count) == 0 else {
            munmap(page, 4096)
            throw HookError(.cannotPatch, point: symbol, "'\(symbol)' at \(address) in \(object): \(_text(why)); nothing was patched")
        }
        let point: AnyObject, target: UnsafeRawPointer
        do {
            (point, target) = try make(UnsafeRawPointer(page))
        } catch {
            munmap(page, 4096)
            throw error
        }
        guard hk_entry_page_fill(page, &plan, target, &why, why.count) == 0 else {
            munmap(page, 4096)
            throw HookError(.patchingFailed, point: symbol, _text(why))
        }
        let entry = Entry(point: point, key: key, plan: plan, page: page, isInstalled: true)
        Self.keepLoaded(address)
        try patch(entry, install: true, symbol: symbol)
        // Kept from here on, installed or restored: its trampoline page is never freed.
        entries[address_] = entry
        return point
    }

    /// Keeps the object that holds `address` loaded for the life of the
    /// process (`RTLD_NODELETE`, set on the loaded object by a `dlopen`
    /// that loads nothing): its code is patched, and the registry, the
    /// trampoline and the hook point outlive any `dlclose`. (A library
    /// unloaded after its function was hooked crashed `restore()`, which
    /// compared and wrote the unmapped bytes; reloaded at the same address,
    /// its function ran unhooked while the registry called it installed.)
    /// The program itself is never unloaded (`dlopen` of its path finds
    /// nothing, and loads nothing).
    private static func keepLoaded(_ address: UnsafeRawPointer) {
        hk_entry_keep_loaded(address)
    }

    private func patch(_ entry: Entry, install: Bool, symbol: String) throws(HookError) {
        var plan = entry.plan
        var why = [CChar](repeating: 0, count: 512)
        let thunk = install ? hk_entry_page_thunk(entry.page) : nil
        guard hk_entry_patch(&plan, entry.page, thunk, &why, why.count) == 0 else {
            let reason = _text(why)
            let kind: HookError.Kind = reason.contains("write access") ? .protectionRefused
                : hk_entry_unavailable_under_sanitizer() != 0 ? .cannotPatch : .patchingFailed
            throw HookError(kind, point: symbol, reason)
        }
    }

    func setInstalled(_ point: EntryHook, _ installed: Bool) throws(HookError) {
        try setInstalled(at: point.address, symbol: point.symbol, point: point, installed)
    }

    /// Patches `point`'s function in or out. A point replaced since by one
    /// of other types (see `replaced`) is not patched in: it throws; out, it
    /// is already. (By address alone, an old handle's `uninstall()`
    /// unpatched the new point.)
    /// (`unless`: asked under the registry's lock, nothing done if true.)
    func setInstalled(at address: UnsafeRawPointer, symbol: String, point: AnyObject, _ installed: Bool,
                      unless: (() -> Bool)? = nil) throws(HookError) {
        try locked { (entries) throws(HookError) in
            let key = UInt(bitPattern: address)
            if let entry = entries[key], entry.point !== point {
                guard !installed else {
                    throw HookError(.signatureMismatch, point: symbol, "'\(symbol)' has another entry hook point now, of \(entry.key): this one was replaced after its restore(); use the new one")
                }
                return
            }
            guard var entry = entries[key], entry.isInstalled != installed, unless?() != true else { return }
            try patch(entry, install: installed, symbol: symbol)
            entry.isInstalled = installed
            entries[key] = entry
        }
    }
}

/// A hook point the entry registry keeps (see `_EntryRegistry.replaced`).
private struct _KeptPoint: @unchecked Sendable {
    let point: AnyObject
}
