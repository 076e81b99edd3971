import CFFIShim
import CHookThreads
import CImportSlots
import Glibc
import Synchronization

/// A hook point over an imported C function, everywhere in the process: the
/// calls that loaded libraries make to it through their global offset table
/// run the hooks, without the callers' cooperation.
///
/// ```swift
/// // Count the bytes SQLite writes.
/// let pwrite = try ImportHook(symbol: "pwrite64",
///                             signature: Signature(returning: Int.self, arguments: Int32.self, UnsafeRawPointer?.self, Int.self, Int.self),
///                             in: ["libsqlite3.so.0"])
/// pwrite.after { call in written += try call.result(as: Int.self) }
/// // ... use SQLite ...
/// try pwrite.restore()
/// ```
///
/// It is a ``FunctionHook`` over the real function (``FunctionHook/original``
/// is what `dlsym(RTLD_DEFAULT, symbol)` returned when the hook point was
/// made): its ``FunctionHook/entry`` is a libffi closure whose calls run the
/// hooks and call the original with `ffi_call`, and every hook, token, owner,
/// CallBack and reentrancy rule of a `FunctionHook` applies.
///
/// ## What is patched
/// In every loaded object (the program and each shared library, found with
/// `dl_iterate_phdr`) in scope, each `R_X86_64_JUMP_SLOT` (a call through the
/// PLT), `R_X86_64_GLOB_DAT` (the function's address taken) and
/// `R_X86_64_64` with addend 0 (a function pointer in initialized data, such as
/// SQLite's table of system calls) that names the symbol and holds the
/// original (or, with lazy binding, is not bound yet) is pointed at the entry
/// with one atomic 8-byte store. A page under RELRO is made writable for the
/// store and given its protection back after. Slots that hold another
/// function (bound to another definition, or rewritten by their program) are
/// left alone. Hook's own image and libffi are never patched, so the original
/// call cannot loop back into the hook; SwiftPM links Hook into the program,
/// so the program's own imports are not patched either.
///
/// Without a scope, the definition's entry in its object's dynamic symbol
/// table is pointed at the entry too (also one atomic store). That is what
/// the loader reads for `dlsym` and `dlvsym`, for lazy binding, and for the
/// relocations of every library loaded afterwards, so those get the entry as
/// well, with their own lookup rules (`RTLD_NEXT`, versions, search order)
/// untouched. Neither `dlopen` nor `dlsym` is wrapped.
///
/// ## What cannot be caught
/// - Calls inside the defining library: they do not go through its GOT (glibc's
///   own `malloc` calls from `strdup` or `fopen` are the exception: glibc calls
///   its allocator through its PLT so that it can be replaced, and those are caught).
/// - Function pointers taken before the hook: an earlier `dlsym`, a pointer
///   stored by the program. Slots bound with `-Wl,-z,now` (full RELRO) are
///   caught: the slot is still read on every call.
/// - Statically linked code, and calls made through a system call wrapper inlined into the caller.
/// - IFUNC symbols (`memcpy`, `strlen`, `time`, `gettimeofday`): the GOT slots
///   hold the implementation the resolver chose for this CPU, and that is what
///   ``FunctionHook/original`` is and what the hook calls; those slots are
///   patched. Their symbol-table entry names the resolver, whose type and value
///   cannot change in one store, so `dlsym` and libraries loaded later get the
///   real function: call ``refresh()`` after loading one.
/// - With a scope (`in:`), only the named objects loaded now: call ``refresh()``
///   to patch one loaded later; `dlsym` is not redirected.
///
/// ## One hook point per symbol, for the life of the process
/// Making an `ImportHook` for a symbol that already has one returns that same
/// hook point (with the union of the scopes asked for): hooks added through
/// either are the same hooks, and there is one trampoline. A different
/// signature is an error. ``restore()`` ends the hook point for everyone who
/// holds it: every patched slot gets back what it held, and its hooks are
/// removed. Because pointers to the entry may have been handed out (by `dlsym`,
/// or read from a slot by a caller that is still running), the trampoline is
/// never freed: an entry called after ``restore()`` runs the original, and
/// asking for the symbol again reinstalls the same hook point. So there is no
/// `deinit` to end it: call ``restore()``.
///
/// ## Threads
/// Calls through the slots may be in flight on any thread while the hook point
/// is made, hooks change and ``restore()`` runs; each caller sees the old
/// target or the new one. Patching is serialized process-wide.
public final class ImportHook: FunctionHook, _ImportHookMaking, @unchecked Sendable {
    /// The symbol whose imports this hook point has taken over.
    public let symbol: String

    /// The scope asked for: object names, or `nil` for every loaded object.
    /// After ``restore()``, the scope the hook point had when it was restored.
    public var objects: [String]? {
        _ImportRegistry.shared.withState(of: self) { $0.scope.map { $0.sorted() } }
    }

    /// Whether the slots point at ``FunctionHook/entry`` (false after ``restore()``).
    public var isInstalled: Bool { _ImportRegistry.shared.withState(of: self) { $0.isInstalled } }

    fileprivate init(symbol: String, original: UnsafeRawPointer, signature: Signature) throws(HookError) {
        self.symbol = symbol
        try super.init(function: original, signature: signature, name: symbol)
    }

    public override var description: String { "ImportHook '\(symbol)': \(signature)" }

    /// Patches the objects in scope that were loaded since the hook point was
    /// made (needed for a scoped hook point or an IFUNC symbol; others get the
    /// entry from the loader itself), and forgets slots of unloaded objects.
    ///
    /// - Throws: ``HookError`` with kind `.protectionRefused` if a page could not be made writable.
    public func refresh() throws(HookError) {
        try _ImportRegistry.shared.refresh(self)
    }

    /// Puts every patched slot back to what it held, and removes every hook.
    /// Idempotent. Slots of objects unloaded since are not touched.
    ///
    /// - Throws: ``HookError`` with kind `.protectionRefused` if a page could
    ///   not be made writable again; the slots not restored stay recorded, and
    ///   a later call tries them again.
    public func restore() throws(HookError) {
        try _ImportRegistry.shared.restore(self)
    }

    /// The slots that point at the entry now, in objects still loaded: those
    /// the hook point patched (with what they held), and those the loader bound
    /// to the entry (with `previous` nil).
    public var slots: [Slot] { _ImportRegistry.shared.slots(of: self) }

    /// One place that held the original and was pointed at the entry.
    public struct Slot: Hashable, @unchecked Sendable, CustomStringConvertible {
        /// What kind of place it is.
        public enum Kind: String, Sendable, Hashable {
            /// A `R_X86_64_JUMP_SLOT` GOT entry: calls through the PLT.
            case jumpSlot = "JUMP_SLOT"
            /// A `R_X86_64_GLOB_DAT` GOT entry: the function's address taken.
            case globalData = "GLOB_DAT"
            /// A `R_X86_64_64` pointer in data (a table of function pointers).
            case dataPointer = "R_X86_64_64"
            /// The `st_value` of the definition in its dynamic symbol table (an offset from the object's base).
            case symbolTable = "symbol table"
        }

        /// The object that holds it: its path, or the program's path.
        public let object: String
        /// Its address.
        public let address: UnsafeRawPointer
        /// What it held before it was patched; `nil` for a slot the loader bound to the entry.
        public let previous: UnsafeRawPointer?
        public let kind: Kind
        /// Whether its page was read-only (RELRO) and made writable for the store.
        public let wasReadOnly: Bool
        let objectBase: UInt
        let objectDynamic: UnsafeRawPointer?

        /// What it holds now, or `nil` if its object has been unloaded.
        public var currentValue: UnsafeRawPointer? {
            var slot = hk_import_slot()
            slot.address = UnsafeMutableRawPointer(mutating: address)
            slot.object_base = objectBase
            slot.object_dynamic = objectDynamic
            hk_import_read(&slot, 1)
            return slot.live != 0 ? UnsafeRawPointer(slot.current) : nil
        }

        public var description: String {
            "\(kind.rawValue) at \(address) in \(object)" + (previous.map { " (was \($0))" } ?? "")
        }

        /// The kind of a `hk_import_slot`.
        static func kind(of code: Int32) -> Kind {
            switch Int(code) {
            case Int(HK_SLOT_JUMP): return .jumpSlot
            case Int(HK_SLOT_GLOB_DAT): return .globalData
            case Int(HK_SLOT_ABSOLUTE): return .dataPointer
            default: return .symbolTable
            }
        }
    }

    /// `protection(at:)`, or -1 for an address in no mapping, -2 where the
    /// mappings cannot be read (no `/proc`).
    static func mappedProtection(at address: UnsafeRawPointer) -> Int32 { hk_import_page_protection(address) }

    /// The protection (`PROT_READ`, `PROT_WRITE`, `PROT_EXEC`) of the mapping
    /// that holds `address`, as `/proc/self/maps` lists it, or `nil` if none
    /// does (or the mappings cannot be read).
    public static func protection(at address: UnsafeRawPointer) -> Int32? {
        let protection = hk_import_page_protection(address)
        return protection < 0 ? nil : protection
    }

    /// Makes the next patches of this task fail as if `mprotect` refused (EACCES).
    @TaskLocal static var protectionChangeRefused = false
}

/// How `ImportHook(symbol:signature:in:)` can return the hook point a symbol
/// already has: an initializer in a protocol extension may assign `self`.
@_documentation(visibility: internal)
public protocol _ImportHookMaking {}

extension _ImportHookMaking where Self == ImportHook {
    /// Takes over the imports of `symbol`, or returns the hook point that already has.
    ///
    /// - Parameters:
    ///   - symbol: The function's name, as `dlsym` knows it (`"getenv"`, `"pwrite64"`).
    ///   - signature: Its C signature. Variadic functions are refused.
    ///   - objects: Limit patching to these loaded objects, by path or file name
    ///     (`["libsqlite3.so.0"]`); `nil` (the default) patches every loaded
    ///     object, the symbol table and so libraries loaded later. For a symbol
    ///     that has a hook point already, the scope widens to include these.
    /// - Throws: ``HookError`` naming the symbol: `.symbolNotFound` (no loaded
    ///   object defines a function of that name), `.notImported` (no object in
    ///   scope imports it), `.protectionRefused` (a RELRO page could not be made
    ///   writable) or `.patchingFailed` (`/proc/self/maps` unreadable, out of
    ///   memory): nothing this request wrote stays patched, and the slots of
    ///   earlier requests for the symbol stay as they were; `.signatureMismatch` (the symbol
    ///   has a hook point with another signature), or the errors of ``FunctionHook``.
    ///   `.unsupportedArchitecture` off x86-64.
    public init(symbol: String, signature: Signature, in objects: [String]? = nil) throws(HookError) {
        try _requireX86_64(symbol, "import hooks patch x86-64 relocations (R_X86_64_JUMP_SLOT, _GLOB_DAT, _64)")
        self = try _ImportRegistry.shared.install(symbol: symbol, signature: signature, scope: objects)
    }
}

// MARK: - The registry

/// What the registry knows of one symbol's hook point.
struct _ImportState {
    /// `nil`: every object (and the symbol table); otherwise these names.
    var scope: Set<String>?
    var isInstalled = false
    /// Slots written, with what they held; object names are malloc'd by the shim.
    var slots: [hk_import_slot] = []
    /// Whether any walk ever pointed a slot at the entry (even one undone since):
    /// the entry may have been handed out, so the hook point is never dropped.
    var everWritten = false
}

/// Every ImportHook of the process, by symbol, and the lock that serializes patching.
final class _ImportRegistry: @unchecked Sendable {
    static let shared = _ImportRegistry()

    private struct Entry {
        let point: ImportHook
        var state: _ImportState
    }

    private let entries = Mutex<[String: Entry]>([:])

    /// Hook's own image and libffi, never patched: each one's load bias (l_addr) and dynamic section (l_ld).
    private let excludedImages: (bases: [UInt], dynamics: [UnsafeRawPointer?]) = {
        var images: [(UInt, UnsafeRawPointer?)] = []
        func add(_ found: Int32, _ base: UInt, _ dynamic: UnsafeRawPointer?) {
            if found != 0, !images.contains(where: { $0.0 == base && $0.1 == dynamic }) { images.append((base, dynamic)) }
        }
        var base: UInt = 0
        var dynamic: UnsafeRawPointer?
        add(hk_import_own_image(&base, &dynamic), base, dynamic)
        add(hk_import_image(hk_ffi_call_address(), &base, &dynamic), base, dynamic)
        // The image holding this Swift code, should Hook be linked apart from its shim.
        let swiftCode: @convention(c) () -> Void = {}
        add(hk_import_image(unsafeBitCast(swiftCode, to: UnsafeRawPointer.self), &base, &dynamic), base, dynamic)
        return (images.map(\.0), images.map(\.1))
    }()

    /// Runs `body` under the registry's lock, with hooks off on the calling
    /// thread meanwhile: the registry's own calls (Swift's allocations, libc's
    /// `strdup` reaching `malloc` through libc's slot) may be of a hooked
    /// function, and a hook that asked the registry (`hook.isInstalled`)
    /// there locked its lock again: a trap.
    private func locked<R, E: Error>(_ body: (inout [String: Entry]) throws(E) -> R) throws(E) -> R {
        let thread = hk_thread_self()!
        hk_thread_suppress(thread)
        defer { hk_thread_unsuppress(thread) }
        return try entries.withVisibleLock(self) { (value: inout sending [String: Entry]) throws(E) -> sending R in
            nonisolated(unsafe) let result = try body(&value)
            return result
        }
    }

    func withState<R>(of point: ImportHook, _ body: (_ImportState) -> R) -> R {
        locked { body($0[point.symbol]!.state) }
    }

    /// The hook point the registry keeps for `symbol`, if any (tests).
    func point(for symbol: String) -> ImportHook? {
        locked { $0[symbol]?.point }
    }

    func install(symbol: String, signature: Signature, scope: [String]?) throws(HookError) -> ImportHook {
        guard !symbol.isEmpty, !symbol.utf8.contains(0) else {
            throw HookError(.symbolNotFound, point: symbol, "the symbol name is empty or contains a NUL byte")
        }
        if let scope, scope.isEmpty || scope.contains(where: { $0.isEmpty }) {
            throw HookError(.notImported, point: symbol, "the scope \(scope) names no object; pass nil for every object")
        }
        return try locked { (entries) throws(HookError) -> ImportHook in
            var entry: Entry
            if let existing = entries[symbol] {
                guard existing.point.signature == signature else {
                    throw HookError(.signatureMismatch, point: symbol, """
                        '\(symbol)' already has a hook point with signature \(existing.point.signature); \
                        asked for \(signature) (\(signature.arguments.count) argument\(signature.arguments.count == 1 ? "" : "s") \
                        instead of \(existing.point.signature.arguments.count))
                        """)
                }
                entry = existing
            } else {
                entry = Entry(point: try makePoint(symbol: symbol, signature: signature), state: _ImportState())
            }
            let requested: Set<String>? = scope.map(Set.init)
            // Undoing this request may also unbind slots the loader bound to the entry only if
            // the hook point was not installed: otherwise those are the earlier requests' slots.
            let sweep = !entry.state.isInstalled
            // A widened scope is only kept if patching it succeeds.
            let widened: Set<String>?
            if entry.state.isInstalled, let old = entry.state.scope, let requested {
                widened = old.union(requested)
            } else if entry.state.isInstalled, entry.state.scope == nil {
                widened = nil
            } else {
                widened = requested
            }
            // Once a slot was pointed at the entry, the entry may have been handed out (read
            // from a slot, dlsym, lazy binding): the hook point is kept, installed or not,
            // so that its trampoline is never freed.
            defer { if entry.state.isInstalled || !entry.state.slots.isEmpty || entry.state.everWritten { entries[symbol] = entry } }
            let before = entry.state.slots.count
            try patch(entry.point, &entry.state, scope: widened, definition: false, sweepOnUndo: sweep)
            // Whether the objects this request names import the symbol (already patched ones count).
            let wanted = requestedImports(entry.point, scope: requested)
            guard wanted > 0 else {
                rollBack(entry.point, &entry.state, from: before, sweep: sweep)
                let place = scope.map { "the loaded objects named \($0.joined(separator: ", "))" } ?? "any loaded object (Hook's own image and libffi aside)"
                let missing = scope?.filter { !isLoaded($0) } ?? []
                throw HookError(.notImported, point: symbol, """
                    no relocation of \(place) names '\(symbol)'\
                    \(missing.isEmpty ? "" : "; not loaded: \(missing.joined(separator: ", "))")
                    """)
            }
            if widened == nil {
                do throws(HookError) {
                    try patch(entry.point, &entry.state, scope: nil, definition: true, sweepOnUndo: sweep)
                    // A library loaded between the first walk and the symbol table's change got the original.
                    try patch(entry.point, &entry.state, scope: nil, definition: false, sweepOnUndo: sweep)
                } catch {
                    rollBack(entry.point, &entry.state, from: before, sweep: sweep)
                    throw error
                }
            }
            entry.state.scope = widened
            entry.state.isInstalled = true
            return entry.point
        }
    }

    /// Looks the symbol up and makes its trampoline.
    private func makePoint(symbol: String, signature: Signature) throws(HookError) -> ImportHook {
        guard let original = hk_import_lookup(symbol) else {
            throw HookError(.symbolNotFound, point: symbol, "dlsym(RTLD_DEFAULT, \"\(symbol)\") found nothing: no loaded object defines '\(symbol)' where it searches (a library loaded with RTLD_LOCAL is not searched)")
        }
        var base: UInt = 0
        var type: Int32 = -1
        if hk_import_describe(original, &base, &type) != 0, type == STT_OBJECT || type == STT_TLS || type == STT_COMMON {
            throw HookError(.symbolNotFound, point: symbol, "'\(symbol)' is a data object (ELF symbol type \(type)), not a function")
        }
        return try ImportHook(symbol: symbol, original: UnsafeRawPointer(original), signature: signature)
    }

    /// Runs the shim over the loaded objects; on a refused `mprotect`, undoes this run's writes and throws.
    /// `sweepOnUndo`: the undo also unbinds every slot the loader bound to the entry (only when the
    /// hook point was not installed before this request; otherwise only this run's slots are undone).
    @discardableResult
    private func patch(_ point: ImportHook, _ state: inout _ImportState, scope: Set<String>?, definition: Bool,
                       sweepOnUndo: Bool = false) throws(HookError) -> hk_import_outcome {
        forgetUnloaded(&state)
        var outcome = hk_import_outcome()
        let status = withRequest(point, scope: scope, definition: definition) { request in
            hk_import_patch(&request, &outcome)
        }
        var written = Array(UnsafeBufferPointer(start: outcome.slots, count: outcome.count))
        if !written.isEmpty { state.everWritten = true }
        free(outcome.slots)
        outcome.slots = nil
        outcome.count = 0
        outcome.capacity = 0
        if status != 0 {
            let error = protectionError(point, outcome)
            _ = withRequest(point, scope: scope, definition: definition, restoreLoaderBound: sweepOnUndo) { request in
                var undo = hk_import_outcome()
                defer { hk_import_outcome_free(&undo) }
                return hk_import_restore(&request, &written, written.count, &undo)
            }
            for i in written.indices { hk_import_slot_free_name(&written[i]) }
            throw error
        }
        // A slot recorded before whose object was unloaded and loaded again at the same place is replaced.
        let addresses = Set(written.map { UInt(bitPattern: $0.address) })
        state.slots.removeAll { old in
            guard addresses.contains(UInt(bitPattern: old.address)) else { return false }
            var old = old
            hk_import_slot_free_name(&old)
            return true
        }
        state.slots += written
        return outcome
    }

    /// The relocations naming the symbol in the objects of `scope` (all if nil), patched now or before.
    private func requestedImports(_ point: ImportHook, scope: Set<String>?) -> Int {
        var outcome = hk_import_outcome()
        // A dry run: the replacement is already in every slot it would take, so only counting happens.
        _ = withRequest(point, scope: scope, definition: false, countOnly: true) { request in
            hk_import_patch(&request, &outcome)
        }
        defer { hk_import_outcome_free(&outcome) }
        return outcome.imports
    }

    /// Undoes the slots recorded from `index` on; with `sweep`, also unbinds every slot the loader bound to the entry.
    private func rollBack(_ point: ImportHook, _ state: inout _ImportState, from index: Int, sweep: Bool) {
        guard index < state.slots.count || sweep else { return }
        var undone = Array(state.slots[index...])
        state.slots.removeSubrange(index...)
        var outcome = hk_import_outcome()
        _ = withRequest(point, scope: nil, definition: false, restoreLoaderBound: sweep) { request in
            hk_import_restore(&request, &undone, undone.count, &outcome)
        }
        hk_import_outcome_free(&outcome)
        for i in undone.indices { hk_import_slot_free_name(&undone[i]) }
    }

    func refresh(_ point: ImportHook) throws(HookError) {
        try locked { (entries) throws(HookError) in
            guard var entry = entries[point.symbol], entry.state.isInstalled else { return }
            defer { entries[point.symbol] = entry }
            try patch(point, &entry.state, scope: entry.state.scope, definition: false)
        }
    }

    func restore(_ point: ImportHook) throws(HookError) {
        // What the removed hooks captured is let go of after the lock: a
        // `deinit` of it may ask the registry (`isInstalled`), which locked
        // its lock again, a trap.
        var deferred = _DeferredReleases()
        defer { deferred.release() }
        try locked { (entries) throws(HookError) in
            guard var entry = entries[point.symbol] else { return }
            defer { entries[point.symbol] = entry }
            var outcome = hk_import_outcome()
            defer { hk_import_outcome_free(&outcome) }
            let status = withRequest(point, scope: nil, definition: false, restoreLoaderBound: true) { request in
                hk_import_restore(&request, &entry.state.slots, entry.state.slots.count, &outcome)
            }
            // Keep what could not be put back (a refused mprotect), forget the rest.
            entry.state.slots.removeAll { slot in
                guard slot.restored != 0 || slot.live == 0 || status == 0 else { return false }
                var slot = slot
                hk_import_slot_free_name(&slot)
                return true
            }
            entry.state.isInstalled = !entry.state.slots.isEmpty
            if status != 0 { throw protectionError(point, outcome) }
            // Under the lock: a request that reinstalls the hook point and adds a hook cannot come in between.
            point.removeAllHooks(deferring: &deferred)
        }
    }

    func slots(of point: ImportHook) -> [ImportHook.Slot] {
        locked { entries in
            guard var entry = entries[point.symbol] else { return [] }
            hk_import_read(&entry.state.slots, entry.state.slots.count)
            var result = entry.state.slots.filter { $0.live != 0 && $0.current == UnsafeMutableRawPointer(mutating: expected(for: $0, point)) }
                .map { slot(from: $0, previous: slot(previousOf: $0)) }
            // Slots the loader bound to the entry: a dry run over every object lists them.
            var outcome = hk_import_outcome()
            defer { hk_import_outcome_free(&outcome) }
            _ = withRequest(point, scope: entry.state.scope, definition: false, listOnly: true) { request in
                hk_import_patch(&request, &outcome)
            }
            let known = Set(result.map(\.address))
            for found in UnsafeBufferPointer(start: outcome.slots, count: outcome.count)
            where !known.contains(UnsafeRawPointer(found.address)) {
                result.append(slot(from: found, previous: nil))
            }
            return result
        }
    }

    // MARK: Helpers

    private func expected(for slot: hk_import_slot, _ point: ImportHook) -> UnsafeRawPointer? {
        let entry = UInt(bitPattern: point.entry)
        return UnsafeRawPointer(bitPattern: slot.kind == Int32(HK_SLOT_SYMBOL) ? entry &- slot.object_base : entry)
    }

    private func slot(previousOf slot: hk_import_slot) -> UnsafeRawPointer? { UnsafeRawPointer(slot.previous) }

    private func slot(from s: hk_import_slot, previous: UnsafeRawPointer?) -> ImportHook.Slot {
        let name = s.object_name.map { String(cString: $0) }
        return ImportHook.Slot(
            object: name.map { $0.isEmpty ? Self.programPath : $0 } ?? "<unknown object>", address: UnsafeRawPointer(s.address)!, previous: previous,
            kind: ImportHook.Slot.kind(of: Int32(s.kind)), wasReadOnly: s.unprotected != 0,
            objectBase: s.object_base, objectDynamic: s.object_dynamic)
    }

    private static let programPath: String = {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = buffer.withUnsafeMutableBytes { readlink("/proc/self/exe", $0.baseAddress!, $0.count - 1) }
        return n > 0 ? String(decoding: buffer.prefix(n), as: UTF8.self) : "<program>"
    }()

    /// Drops records of slots whose object is no longer loaded.
    private func forgetUnloaded(_ state: inout _ImportState) {
        guard !state.slots.isEmpty else { return }
        hk_import_read(&state.slots, state.slots.count)
        state.slots.removeAll { slot in
            guard slot.live == 0 else { return false }
            var slot = slot
            hk_import_slot_free_name(&slot)
            return true
        }
    }

    /// Whether an object of that name (path, soname or file name) is loaded; loads nothing.
    private func isLoaded(_ name: String) -> Bool {
        if name == Self.programPath || name == Self.programPath.split(separator: "/").last.map(String.init) { return true }
        guard let handle = dlopen(name, RTLD_NOW | RTLD_NOLOAD) else { return false }
        dlclose(handle)
        return true
    }

    private func protectionError(_ point: ImportHook, _ outcome: hk_import_outcome) -> HookError {
        let object = withUnsafeBytes(of: outcome.error_object) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        let code = outcome.error
        let place = "the slot at \(outcome.error_address.map { "\($0)" } ?? "?") in \(object.isEmpty ? Self.programPath : object)"
        let reason = "errno \(code) (\(String(cString: strerror(code))))"
        let undone = "no slot stays patched by this request"
        switch Int(outcome.error_kind) {
        case Int(HK_IMPORT_ERROR_UNMAPPED):
            return HookError(.patchingFailed, point: point.symbol, """
                /proc/self/maps could not be read or lists no mapping for \(place): \(reason); \(undone)
                """)
        case Int(HK_IMPORT_ERROR_MEMORY):
            return HookError(.patchingFailed, point: point.symbol, "out of memory while recording slots: \(reason); \(undone)")
        default:
            return HookError(.protectionRefused, point: point.symbol, """
                mprotect refused to make the page of \(place) writable: \(reason); \(undone)
                """)
        }
    }

    /// Calls `body` with a request for `point`'s symbol, its scope as C strings, and the excluded images.
    private func withRequest<R>(_ point: ImportHook, scope: Set<String>?, definition: Bool,
                                countOnly: Bool = false, listOnly: Bool = false, restoreLoaderBound: Bool = false,
                                _ body: (inout hk_import_request) -> R) -> R {
        let names = scope.map { Array($0) } ?? []
        let cNames = names.map { strdup($0) }
        defer { cNames.forEach { free($0) } }
        var definitionBase: UInt = 0
        var definitionDynamic: UnsafeRawPointer?
        _ = hk_import_image(point.original, &definitionBase, &definitionDynamic)
        return point.symbol.withCString { symbol in
            excludedImages.bases.withUnsafeBufferPointer { excluded in
              excludedImages.dynamics.withUnsafeBufferPointer { excludedDynamics in
                cNames.map { UnsafePointer($0) }.withUnsafeBufferPointer { scopeNames in
                    var request = hk_import_request()
                    request.symbol = symbol
                    request.original = UnsafeMutableRawPointer(mutating: point.original)
                    request.replacement = UnsafeMutableRawPointer(mutating: point.entry)
                    request.excluded_bases = excluded.baseAddress
                    request.excluded_dynamics = excludedDynamics.baseAddress
                    request.excluded_count = excluded.count
                    request.scope = scope == nil ? nil : scopeNames.baseAddress
                    request.scope_count = scopeNames.count
                    request.patch_definition = definition ? 1 : 0
                    request.definition_base = definitionBase
                    request.definition_dynamic = definitionDynamic
                    request.refuse_protection_change = ImportHook.protectionChangeRefused ? 1 : 0
                    request.dry_run = countOnly || listOnly ? 1 : 0
                    request.restore_loader_bound = restoreLoaderBound ? 1 : 0
                    return body(&request)
                }
              }
            }
        }
    }
}
