import CHookTestSupport
import Foundation
@testable import Hook
import Synchronization
import Testing

/// The address of `function`, a C function pointer.
private func address<F>(_ function: F) -> UnsafeRawPointer { unsafeBitCast(function, to: UnsafeRawPointer.self) }

private let int64Unary = Signature(returning: .int64, arguments: [.int64])
/// int deflate(z_streamp strm, int flush): one signature for every test (one hook point per function).
private let deflateSignature = Signature(returning: .int32, arguments: [.pointer, .int32])

/// The bytes at `address`.
private func bytes(at address: UnsafeRawPointer, _ count: Int) -> [UInt8] {
    Array(UnsafeBufferPointer(start: address.assumingMemoryBound(to: UInt8.self), count: count))
}

/// `source` compiled into `lib<name>.so` in `directory` (a new temporary
/// folder by default; at -O0: every function longer than the 5-byte jump),
/// with `flags(compiler)` besides, or nil without a C compiler.
func compiledLibrary(_ name: String, _ source: String, in directory: URL? = try? temporaryDirectory(),
                     flags: (String) -> [String] = { _ in [] }) -> String? {
    guard let directory else { return nil }
    let file = directory.appendingPathComponent("\(name).c")
    let library = directory.appendingPathComponent("lib\(name).so").path
    guard (try? source.write(to: file, atomically: true, encoding: .utf8)) != nil else { return nil }
    for compiler in ["cc", "clang", "gcc"]
    where runQuietly([compiler, "-shared", "-fPIC", "-O0"] + flags(compiler) + ["-o", library, file.path]) {
        return library
    }
    return nil
}

/// Two shared libraries that each define `long hk_twin(long)` (x + 1 and x + 2), or nil without a C compiler.
let twinLibraries: (String, String)? = {
    let directory = try? temporaryDirectory()
    let made = [(1, "x + 1"), (2, "x + 2")].compactMap { index, body in
        compiledLibrary("hktwin\(index)", "long hk_twin(long x) { long y = \(body); return y; }\n", in: directory)
    }
    return made.count == 2 ? (made[0], made[1]) : nil
}()

/// A library of one function, `long hk_kept(long x)` (3x), compiled here, or nil without a C compiler.
let keptLibrary = compiledLibrary("hkkept", "long hk_kept(long x) { long y = x * 3; return y; }\n")

func expectEntryError(_ kind: HookError.Kind, point: String, containing text: String, _ body: () throws -> Void) {
    do {
        try body()
        Issue.record("expected \(kind) for \(point)")
    } catch let error as HookError {
        #expect(error.kind == kind, "\(error)")
        #expect(error.point == point, "\(error)")
        #expect(error.description.contains(text), "\(error)")
    } catch {
        Issue.record("unexpected \(error)")
    }
}

// One suite, serialized: an entry hook is process-wide (every caller of the
// function goes through it while it is installed).
@Suite("EntryHook: any function, hooked at its first instructions", .serialized,
       .enabled(if: EntryHook.isAvailable, "entry hooks are unavailable under ThreadSanitizer"))
struct EntryHookTests {
    /// Every step of a `sqlite3_exec` over 100 rows. (Debian's libsqlite3
    /// calls its own exported functions through its PLT, so an `ImportHook`
    /// scoped to it sees these steps too; where a library calls itself
    /// directly it sees none: next test.)
    /// A name with versions (fmemopen@GLIBC_2.2.5 and fmemopen@@GLIBC_2.22
    /// are two functions): the default, as a call binds it; a version named
    /// explicitly, an IFUNC's (memcpy@GLIBC_2.14) included.
    @Test func aNameWithVersionsIsTheDefaultVersion() throws {
        let signature = Signature(returning: .pointer, arguments: [.pointer, .uint64, .pointer])
        let hook = try EntryHook(symbol: "fmemopen", signature: signature, in: "libc.so.6")
        defer { try? hook.restore() }
        // The one a call binds to: what libc's own dlsym gives.
        let libc = try #require(dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD))
        defer { dlclose(libc) }
        #expect(hook.address == UnsafeRawPointer(dlsym(libc, "fmemopen")))
        let me = threadID()
        let calls = Shared(0)
        let token = hook.before { _ in if threadID() == me { calls.mutate { $0 += 1 } } }
        defer { token.remove() }
        var buffer = [CChar](repeating: 0, count: 16)
        let file = try #require(buffer.withUnsafeMutableBytes { fmemopen($0.baseAddress, 16, "w") })
        fclose(file)
        #expect(calls.value == 1)
        // Named by version: found (an IFUNC's implementation, with no symbol
        // of its own); memcpy is then refused for mempcpy's jump into it,
        // not as a name no object defines.
        expectEntryError(.cannotPatch, point: "memcpy@GLIBC_2.14", containing: "branches to +") {
            _ = try EntryHook(symbol: "memcpy@GLIBC_2.14", signature: signature)
        }
        let versioned = try EntryHook(symbol: "fmemopen@GLIBC_2.22", signature: signature)
        #expect(versioned === hook)
    }

    @Test func aLoopInsideTheDisplacedBytesStaysInTheStub() throws {
        // decq; jnz back to the first instruction: both displaced. The
        // relocated jnz goes to the copy of decq in the stub: one call of the
        // hook a call, not one a turn (each a frame deeper).
        let hook = try EntryHook(symbol: "entry_spin", signature: Signature(returning: .int64, arguments: [.int64, .int64]))
        defer { try? hook.restore() }
        let calls = Mutex(0)
        let token = hook.before { _ in calls.withLock { $0 += 1 } }
        defer { token.remove() }
        #expect(entry_spin(10, 7) == 7)
        #expect(calls.withLock { $0 } == 1)
        #expect(entry_spin(1_000_000, 8) == 8)
        #expect(calls.withLock { $0 } == 2)
    }

    @Test func sqliteStepsInsideExecAreSeenByTheEntryHook() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("steps.db").path
        sqlite(path, "CREATE TABLE t(x); WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100) INSERT INTO t SELECT i FROM n;")
        var db: OpaquePointer?
        #expect(sqlite3_open(path, &db) == SQLITE_OK)
        defer { sqlite3_close(db) }
        #expect(sqlite3_exec(db, "SELECT count(*) FROM t", nil, nil, nil) == SQLITE_OK)   // the schema, read once
        let entry = try EntryHook(symbol: "sqlite3_step", signature: Signature(returning: .int32, arguments: [.pointer]))
        defer { try? entry.restore() }
        #expect(entry.object.hasSuffix("libsqlite3.so.0"))
        let steps = Shared(0), rows = Shared(0)
        let me = threadID()   // other suites use SQLite meanwhile
        entry.after { call in
            guard threadID() == me else { return }
            steps.mutate { $0 += 1 }
            if try call.result(as: Int32.self) == SQLITE_ROW { rows.mutate { $0 += 1 } }
        }
        var seen: Int32 = 0
        let status = withUnsafeMutablePointer(to: &seen) { counter in
            sqlite3_exec(db, "SELECT x FROM t", { counter, _, _, _ in
                counter!.assumingMemoryBound(to: Int32.self).pointee += 1
                return 0
            }, counter, nil)
        }
        #expect(status == SQLITE_OK && seen == 100)
        #expect(rows.value == 100)                 // every step that produced a row
        #expect(steps.value == 101)                // and the one that said done
    }

    /// Side by side: glibc's `strdup` calls `strlen` inside libc, through no
    /// slot that names it. An `ImportHook` on `strlen` scoped to libc has
    /// nothing to take over (`.notImported`); an entry hook on the
    /// implementation `strlen` resolves to (an IFUNC) sees each of those calls.
    @Test(.enabled(if: !underThreadSanitizer && !underAddressSanitizer,
                   "a sanitizer's runtime replaces strdup"))
    func libcsOwnCallsAreSeenByTheEntryHookNotTheImportHook() throws {
        let signature = Signature(returning: .uint64, arguments: [.pointer])
        expectEntryError(.notImported, point: "strlen", containing: "no relocation of the loaded objects named libc.so.6 names 'strlen'") {
            _ = try ImportHook(symbol: "strlen", signature: signature, in: ["libc.so.6"])
        }
        let entry = try EntryHook(symbol: "strlen", signature: signature, in: "libc.so.6")
        defer { try? entry.restore() }
        #expect(UnsafeMutableRawPointer(mutating: entry.address) == dlsym(nil, "strlen"))   // the implementation, not the resolver
        let me = threadID()
        let lengths = Shared<[UInt64]>([])
        entry.after { call in if threadID() == me { let n = try call.result(as: UInt64.self); lengths.mutate { $0.append(n) } } }
        let copy = strdup("seen from its entry: thirty-two")!
        free(copy)
        #expect(lengths.value.contains(31))
    }

    @Test func zlibsInternalCallsOfDeflateAreSeenWithTheirArguments() throws {
        // int deflate(z_streamp strm, int flush): compress2 calls it once, with Z_FINISH.
        let hook = try EntryHook(symbol: "deflate", signature: deflateSignature, in: "libz.so.1")
        defer { try? hook.restore() }
        let flushes = Shared<[Int32]>([]), results = Shared<[Int32]>([])
        let me = threadID()   // other suites use zlib meanwhile
        hook.after { call in
            guard threadID() == me else { return }
            let stream = try call.argument(0, as: UnsafeMutableRawPointer?.self)
            #expect(stream != nil)
            flushes.mutate { $0.append((try? call.argument(1, as: Int32.self)) ?? -1) }
            results.mutate { $0.append((try? call.result(as: Int32.self)) ?? -1) }
        }
        #expect(zlibRoundTrip(Array(repeating: 7, count: 10_000)) == Z_OK)
        #expect(flushes.value == [Z_FINISH])
        #expect(results.value == [Z_STREAM_END])
    }

    /// A function with both an ImportHook and an entry hook: a call through
    /// a patched slot runs each hook point's hooks once, the import hook's
    /// around the entry hook's.
    @Test func aTypedAfterHookSeesEveryDirectCallFromC() throws {
        let hook = try EntryHook(address: address(entry_target as @convention(c) (Int64) -> Int64), signature: int64Unary)
        defer { try? hook.restore() }
        #expect(hook.usesNativeEntry)
        let me = threadID()
        let seen = Shared<(count: Int, sum: Int64, wrong: Int)>((0, 0, 0))
        try hook.afterReturning { (result: Int64, x: Int64) in
            guard threadID() == me else { return }
            seen.mutate { $0.count += 1; $0.sum += x; if result != x * 2 + 1 { $0.wrong += 1 } }
        }
        #expect(entry_call_target_loop(10, 100) == 0)
        #expect(seen.value.count == 100)
        #expect(seen.value.sum == (10..<110).reduce(0, +))
        #expect(seen.value.wrong == 0)
    }

    @Test func anImportHookAndAnEntryHookOnOneFunctionEachRunOnce() throws {
        let imported = try ImportHook(symbol: "deflate", signature: deflateSignature, in: ["libz.so.1"])
        defer { try? imported.restore() }
        let entry = try EntryHook(symbol: "deflate", signature: deflateSignature, in: "libz.so.1")
        defer { try? entry.restore() }
        let me = threadID()
        let order = Shared<[String]>([])
        imported.before { _ in if threadID() == me { order.mutate { $0.append("import before") } } }
        imported.after { _ in if threadID() == me { order.mutate { $0.append("import after") } } }
        entry.before { _ in if threadID() == me { order.mutate { $0.append("entry before") } } }
        entry.after { _ in if threadID() == me { order.mutate { $0.append("entry after") } } }
        #expect(zlibRoundTrip(Array(repeating: 9, count: 4096)) == Z_OK)
        #expect(order.value == ["import before", "entry before", "entry after", "import after"])
    }

    @Test func mallocAtItsEntrySeesLibcsOwnCallsAndDoesNotRecurse() throws {
        // (Run alone, this test hung on the runtime's metadata lock until the
        // call path was run once before any point is made: `FunctionHook.callPathMade`.)
        let signature = Signature(returning: .pointer, arguments: [.uint64])
        let hook = try EntryHook(symbol: "malloc", signature: signature, in: "libc.so.6")
        defer { try? hook.restore() }
        // Under a sanitizer, malloc is its runtime's, and libc's is never called.
        let libcIsTheAllocator = dlsym(nil, "malloc") == UnsafeMutableRawPointer(mutating: hook.address)
        let me = threadID()
        let depth = Shared(0), deepest = Shared(0), sizes = Shared<[UInt64]>([])
        hook.after { call in
            guard threadID() == me else { return }
            depth.mutate { $0 += 1 }
            deepest.mutate { [d = depth.value] in $0 = max($0, d) }
            let size = try call.argument(0, as: UInt64.self)
            var copy = [UInt64](repeating: size, count: 64)   // allocates: runs the original only
            copy.append(1)
            sizes.mutate { $0.append(size) }
            depth.mutate { $0 -= 1 }
        }
        let text = strdup("entry hooks reach libc's own calls")!
        free(text)
        if libcIsTheAllocator {
            #expect(sizes.value.contains(35))   // strdup's malloc, made inside libc
            #expect(deepest.value == 1)
        }
        try hook.restore()
        #expect(!hook.isInstalled)
    }

    @Test func aStaticFunctionIsFoundInTheSymbolTableAndHooked() throws {
        #expect(entry_call_static_scale(5) == 1016)
        let hook = try EntryHook(symbol: "entry_static_scale", signature: int64Unary)
        defer { try? hook.restore() }
        // (Static: in this test bundle's own symbol table, not a library's.)
        #expect(hook.object == (try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")))
        let seen = Shared<[Int64]>([])
        hook.before { call in
            let x = try call.argument(0, as: Int64.self)
            seen.mutate { $0.append(x) }
            try call.setArgument(0, to: try call.argument(0, as: Int64.self) + 1)
        }
        #expect(entry_call_static_scale(5) == 1019)    // (5 + 1) * 3 + 1 + 1000
        #expect(seen.value == [5])
        try hook.restore()
        #expect(entry_call_static_scale(5) == 1016)
    }

    @Test func everyPositionTypedAccessAndOwnersWork() throws {
        let hook = try EntryHook(address: address(entry_target as @convention(c) (Int64) -> Int64), signature: int64Unary)
        defer { try? hook.restore() }
        #expect(hook.symbol == "entry_target")
        let runs = entry_target_run_count()
        final class Owner {}
        var owner: Owner? = Owner()
        hook.instead(owner: owner) { call in
            if try call.argument(0, as: Int64.self) == 7 { try call.setResult(Int64(-7)); return }
            try call.invokeOriginal()
        }
        #expect(entry_target(7) == -7)
        #expect(entry_target(8) == 17)
        #expect(entry_target_run_count() == runs + 1)
        owner = nil
        #expect(entry_target(7) == 15)
        // The original, unhooked: the stub.
        let original = unsafeBitCast(hook.original, to: (@convention(c) (Int64) -> Int64).self)
        #expect(original(10) == 21)
    }

    @Test func restorePutsTheOriginalBytesBackAndASecondRequestSharesThePoint() throws {
        let function = address(entry_rip_relative as @convention(c) (Int64) -> Int64)
        let before = bytes(at: function, 16)
        let hook = try EntryHook(symbol: "entry_rip_relative", signature: int64Unary)
        #expect(bytes(at: function, 1) == [0xE9])
        #expect(hook.originalBytes == Array(before.prefix(hook.originalBytes.count)))
        let again = try EntryHook(symbol: "entry_rip_relative", signature: int64Unary)
        #expect(again === hook)
        let calls = Shared(0)
        hook.after { _ in calls.mutate { $0 += 1 } }
        #expect(entry_rip_relative(2) == 42)    // the RIP-relative load, relocated into the stub
        #expect(calls.value == 1)
        try hook.restore()
        #expect(bytes(at: function, 16) == before)
        #expect(hook.hookCount == 0)
        #expect(entry_rip_relative(3) == 43)
        #expect(calls.value == 1)
        try hook.restore()                        // idempotent
        // Asked again: the same point, installed again.
        let third = try EntryHook(symbol: "entry_rip_relative", signature: int64Unary)
        #expect(third === hook && hook.isInstalled)
        try hook.restore()
        #expect(bytes(at: function, 16) == before)
    }

    @Test func eightThreadsCallWhileTheEntryIsPatchedAndRestored1000Times() throws {
        let function = address(entry_target as @convention(c) (Int64) -> Int64)
        let before = bytes(at: function, 16)
        let runsBefore = entry_target_run_count()
        let hook = try EntryHook(symbol: "entry_target", signature: int64Unary)
        let hooked = Atomic<Int>(0), wrongInHook = Atomic<Int>(0)
        hook.after { call in
            hooked.add(1, ordering: .relaxed)
            if try call.result(as: Int64.self) != (try call.argument(0, as: Int64.self)) * 2 + 1 { wrongInHook.add(1, ordering: .relaxed) }
        }
        let stop = Atomic<Bool>(false), wrong = Atomic<Int>(0), calls = Atomic<Int>(0)
        let group = DispatchGroup()
        for t in 0..<8 {
            group.enter()
            let thread = Thread {
                var i: Int64 = Int64(t) << 32
                while !stop.load(ordering: .relaxed) {
                    wrong.add(Int(entry_call_target_loop(i, 100)), ordering: .relaxed)
                    calls.add(100, ordering: .relaxed)
                    i += 100
                }
                group.leave()
            }
            thread.stackSize = 1 << 20
            thread.start()
        }
        // Unpatched and patched again 1,000 times, the counting hook staying on the point.
        var patches = 0
        for _ in 0..<1000 {
            try hook.uninstall()
            #expect(!hook.isInstalled)
            try hook.install()
            patches += 1
        }
        #expect(hook.hookCount == 1)
        stop.store(true, ordering: .relaxed)
        group.wait()
        try hook.restore()
        #expect(patches == 1000)
        #expect(wrong.load(ordering: .relaxed) == 0)
        #expect(wrongInHook.load(ordering: .relaxed) == 0)
        // Every call ran the original exactly once, hooked or not.
        #expect(entry_target_run_count() - runsBefore == Int64(calls.load(ordering: .relaxed)))
        #expect(hooked.load(ordering: .relaxed) > 0)
        #expect(hooked.load(ordering: .relaxed) <= calls.load(ordering: .relaxed))
        #expect(bytes(at: function, 16) == before)
    }

    /// A call among the displaced bytes, the last of them: relocated, it
    /// returns into the function past the patch, not into the stub (whose
    /// code has no unwind information: an exception thrown through it, or
    /// a backtrace, stopped there).
    @Test func aCallTheJumpDisplacesReturnsIntoTheFunction() throws {
        let function = address(entry_calls_first as @convention(c) (Int32) -> Int32)
        #expect(entry_calls_first(1) == 2)
        // push %rax (1 byte), call (5): the callee returns to +6.
        let inFunction = { (returned: UnsafeRawPointer?) in returned == function + 6 }
        #expect(inFunction(entry_call_returns_to()))
        let hook = try EntryHook(symbol: "entry_calls_first", signature: Signature(returning: .int32, arguments: [.int32]))
        defer { try? hook.restore() }
        let seen = Shared<[Int32]>([])
        hook.before { call in
            let x = try call.argument(0, as: Int32.self)
            seen.mutate { $0.append(x) }
        }
        #expect(entry_calls_first(5) == 6)
        #expect(seen.value == [5])
        #expect(inFunction(entry_call_returns_to()), "returned to \(String(describing: entry_call_returns_to())), not into the function at \(function)")

        // Through a pointer in memory: push (1 byte), call *slot(%rip) (6): +7.
        let throughSlot = address(entry_calls_through_slot as @convention(c) (Int32) -> Int32)
        #expect(entry_calls_through_slot(1) == 2 && entry_call_returns_to() == throughSlot + 7)
        let slotHook = try EntryHook(symbol: "entry_calls_through_slot", signature: Signature(returning: .int32, arguments: [.int32]))
        defer { try? slotHook.restore() }
        slotHook.before { call in
            let x = try call.argument(0, as: Int32.self)
            seen.mutate { $0.append(x) }
        }
        #expect(entry_calls_through_slot(8) == 9)
        #expect(seen.value == [5, 8])
        #expect(entry_call_returns_to() == throughSlot + 7, "returned to \(String(describing: entry_call_returns_to())), not into the function at \(throughSlot)")
    }

    /// A call through a register as the last displaced instruction is
    /// relocated as a push of its return address in the function and a jump
    /// through the same register; one the jump would split (its return
    /// address inside the patch, where a thread in its callee would return)
    /// is refused, naming the call.
    @Test func aCallThroughARegisterReturnsIntoTheFunctionOrIsRefused() throws {
        let function = address(entry_calls_through_register as @convention(c) (Int32, (@convention(c) (Int32) -> Int32)?) -> Int32)
        // mov %rsi, %rax (3 bytes), call *%rax (2): the callee returns to +5.
        #expect(entry_calls_through_register(1, entry_call_callee) == 2 && entry_call_returns_to() == function + 5)
        let hook = try EntryHook(symbol: "entry_calls_through_register",
                                 signature: Signature(returning: .int32, arguments: [.int32, .pointer]))
        defer { try? hook.restore() }
        let seen = Shared<[Int32]>([])
        hook.before { call in
            let x = try call.argument(0, as: Int32.self)
            seen.mutate { $0.append(x) }
        }
        #expect(entry_calls_through_register(7, entry_call_callee) == 8)
        #expect(seen.value == [7])
        #expect(entry_call_returns_to() == function + 5, "returned to \(String(describing: entry_call_returns_to())), not into the function at \(function)")

        #expect(entry_calls_first_through_register(3, entry_call_callee) == 4)
        do {
            let refused = try EntryHook(symbol: "entry_calls_first_through_register",
                                        signature: Signature(returning: .int32, arguments: [.int32, .pointer]))
            try? refused.restore()
            Issue.record("a call the jump splits was patched")
        } catch {
            #expect(error.kind == .cannotPatch)
            #expect(error.description.contains("a call inside the 5 bytes the jump displaces"), "\(error)")
        }
        #expect(entry_calls_first_through_register(3, entry_call_callee) == 4)
    }

    /// A restored hook point asked for again with other types is replaced,
    /// and the old one stays (a call that entered through its patch may
    /// still run its code) but no longer patches anything: its `install()`
    /// throws, its `uninstall()` leaves the new one alone, `isInstalled` is
    /// false. (The registry looked entries up by address: the old handle
    /// unpatched the new point, and dropped, the old point was freed.)
    @Test func aHookPointReplacedByOneOfOtherTypesStaysAndPatchesNothing() throws {
        let old: EntryHook? = try EntryHook(symbol: "entry_replaced_target", signature: Signature(returning: .int64, arguments: [.int64]))
        try old?.restore()
        let new = try EntryHook(symbol: "entry_replaced_target", signature: Signature(returning: .uint64, arguments: [.uint64]))
        defer { try? new.restore() }
        #expect(new !== old)
        new.after { call in try call.setResult(UInt64(7)) }
        #expect(entry_replaced_target(2) == 7)
        #expect(old?.isInstalled == false && new.isInstalled)
        try old?.uninstall()
        #expect(new.isInstalled && entry_replaced_target(2) == 7)
        #expect(throws: HookError.self) { try old?.install() }
        #expect(new.isInstalled && entry_replaced_target(2) == 7)
        try new.restore()
        #expect(entry_replaced_target(2) == 6)
    }

    /// The relocated call under threads: four threads call the function
    /// while its entry is patched and restored 300 times; every call
    /// returns x + 1, and its callee returns into the function.
    @Test func threadsCallWhileAnEntryWhoseFirstBytesCallIsPatchedAndRestored() throws {
        let returnsTo = UInt(bitPattern: address(entry_calls_first as @convention(c) (Int32) -> Int32) + 6)
        let hook = try EntryHook(symbol: "entry_calls_first", signature: Signature(returning: .int32, arguments: [.int32]))
        defer { try? hook.restore() }
        let hooked = Atomic<Int>(0)
        hook.before { _ in hooked.add(1, ordering: .relaxed) }
        let stop = Atomic<Bool>(false), wrong = Atomic<Int>(0)
        let group = DispatchGroup()
        for t in 0..<4 {
            group.enter()
            Thread {
                var i = Int32(t * 1_000_000)
                while !stop.load(ordering: .relaxed) {
                    if entry_calls_first(i) != i + 1 || UInt(bitPattern: entry_call_returns_to()) != returnsTo { wrong.add(1, ordering: .relaxed) }
                    i &+= 1
                }
                group.leave()
            }.start()
        }
        for _ in 0..<300 {
            try hook.uninstall()
            try hook.install()
        }
        stop.store(true, ordering: .relaxed)
        group.wait()
        #expect(wrong.load(ordering: .relaxed) == 0)
        #expect(hooked.load(ordering: .relaxed) > 0)
    }

    /// A signal handler that calls a hooked function, every 100 µs while
    /// the thread calls it in a loop: every result right, every call of the
    /// loop hooked, and the handler's too, but those that interrupted a
    /// call of the point while it ran its hooks or original (run unhooked,
    /// as any call a hook makes of its own point).
    @Test func aSignalHandlerCallsTheHookedFunction() throws {
        let hook = try EntryHook(symbol: "entry_target", signature: int64Unary)
        defer { try? hook.restore() }
        let seen = Atomic<Int>(0)
        hook.after { _ in seen.add(1, ordering: .relaxed) }
        var handled: Int64 = 0
        #expect(entry_call_target_under_signals(300_000, &handled) == 0)
        #expect(handled > 0)
        #expect(seen.load(ordering: .relaxed) >= 300_000 && seen.load(ordering: .relaxed) <= 300_000 + Int(handled), "\(handled) calls by the handler")
    }

    /// An address that is not code (the heap, the stack) is refused, and
    /// its page stays writable. (A heap address was patched: its page
    /// became read-execute, and the next write to it crashed.)
    @Test func anAddressThatIsNotCodeIsRefused() throws {
        let heap = UnsafeMutableRawPointer.allocate(byteCount: 64, alignment: 16)
        defer { heap.deallocate() }
        heap.initializeMemory(as: UInt8.self, repeating: 0x90, count: 64)   // nops: it decodes
        let name = "0x" + String(UInt(bitPattern: heap), radix: 16)
        expectEntryError(.invalidValue, point: name, containing: "is not in executable code") {
            _ = try EntryHook(address: UnsafeRawPointer(heap), signature: int64Unary)
        }
        heap.storeBytes(of: 1, toByteOffset: 0, as: UInt8.self)
        #expect(heap.load(as: UInt8.self) == 1)
        // Code that is also writable (a JIT's): patched, its page would be read-only.
        let writable: UnsafeMutableRawPointer = mmap(nil, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
        if writable != MAP_FAILED {
            defer { munmap(writable, 4096) }
            writable.initializeMemory(as: UInt8.self, repeating: 0x90, count: 64)
            let name = "0x" + String(UInt(bitPattern: writable), radix: 16)
            expectEntryError(.invalidValue, point: name, containing: "is in code that is also writable") {
                _ = try EntryHook(address: UnsafeRawPointer(writable), signature: int64Unary)
            }
            writable.storeBytes(of: 1, toByteOffset: 0, as: UInt8.self)
        }
        var local = 0
        withUnsafeMutablePointer(to: &local) { pointer in
            expectEntryError(.invalidValue, point: "on the stack", containing: "is not in executable code") {
                _ = try EntryHook(address: UnsafeRawPointer(pointer), signature: int64Unary, name: "on the stack")
            }
        }
    }

    @Test func errorsNameTheSymbol() throws {
        expectEntryError(.symbolNotFound, point: "hk_no_such_function", containing: "no loaded object defines 'hk_no_such_function'") {
            _ = try EntryHook(symbol: "hk_no_such_function", signature: int64Unary)
        }
        expectEntryError(.symbolNotFound, point: "entry_global", containing: "'entry_global' is a data object, not a function") {
            _ = try EntryHook(symbol: "entry_global", signature: int64Unary)
        }
        expectEntryError(.symbolNotFound, point: "deflate", containing: "'deflate' is not defined in libsqlite3.so.0; it is defined in") {
            _ = try EntryHook(symbol: "deflate", signature: int64Unary, in: "libsqlite3.so.0")
        }
        expectEntryError(.cannotPatch, point: "entry_too_short", containing: "shorter than the 5-byte jump") {
            _ = try EntryHook(symbol: "entry_too_short", signature: Signature(returning: .int32, arguments: []))
        }
        expectEntryError(.cannotPatch, point: "entry_with_loop", containing: "loop") {
            _ = try EntryHook(symbol: "entry_with_loop", signature: int64Unary)
        }
        expectEntryError(.cannotPatch, point: "entry_branch_inside", containing: "branches to +2, inside the") {
            _ = try EntryHook(symbol: "entry_branch_inside", signature: Signature(returning: .int32, arguments: [.int32]))
        }
        // Other code that jumps past their first instruction (glibc's
        // mempcpy into memmove), near or far: the jump would land inside the patch.
        let three = Signature(returning: .int64, arguments: [.int64, .int64, .int64])
        expectEntryError(.cannotPatch, point: "entry_two_doors", containing: "branches to +3, inside the") {
            _ = try EntryHook(symbol: "entry_two_doors", signature: three)
        }
        expectEntryError(.cannotPatch, point: "entry_far_target", containing: "branches to +3, inside the") {
            _ = try EntryHook(symbol: "entry_far_target", signature: int64Unary)
        }
        // A loop back to the first instruction from past the patch.
        expectEntryError(.cannotPatch, point: "entry_loop_head", containing: "branches back to the function's first instruction") {
            _ = try EntryHook(symbol: "entry_loop_head", signature: three)
        }
        #expect(entry_second_door(1, 2, 0) == 3)
        #expect(entry_two_doors(1, 2, 0) == 1)
        #expect(entry_far_door(1, 2) == 3)
        #expect(entry_far_target(1) == 2)
        #expect(entry_loop_head(3, 2, 1) == 7)
        // Nothing was written to any of them.
        #expect(entry_too_short() == 0)
        #expect(entry_with_loop(5) == 5)
        #expect(entry_branch_inside(6) == 6)
        // One function, two signatures.
        let hook = try EntryHook(symbol: "entry_rip_relative", signature: int64Unary)
        defer { try? hook.restore() }
        expectEntryError(.signatureMismatch, point: "entry_rip_relative", containing: "already has an entry hook point") {
            _ = try EntryHook(symbol: "entry_rip_relative", signature: Signature(returning: .int32, arguments: [.int32]))
        }
        // An address inside a function.
        let inside = address(entry_call_static_scale as @convention(c) (Int64) -> Int64) + 4
        expectEntryError(.invalidValue, point: "entry_call_static_scale", containing: "+4 into 'entry_call_static_scale', not the start of a function") {
            _ = try EntryHook(address: inside, signature: int64Unary)
        }
    }

    /// Two loaded objects define the same function: the error lists both, and
    /// `in:` chooses one. (Two small libraries compiled for the test.)
    @Test(.enabled(if: twinLibraries != nil, "needs a C compiler"))
    func aSymbolOfSeveralObjectsIsAmbiguousUntilOneIsNamed() throws {
        let (first, second) = try #require(twinLibraries)
        let one = try #require(dlopen(first, RTLD_NOW | RTLD_LOCAL))
        defer { dlclose(one) }
        let two = try #require(dlopen(second, RTLD_NOW | RTLD_LOCAL))
        defer { dlclose(two) }
        expectEntryError(.ambiguousSymbol, point: "hk_twin", containing: "'hk_twin' is defined by 2 objects: \(first), \(second); name one with in:") {
            _ = try EntryHook(symbol: "hk_twin", signature: int64Unary)
        }
        let hook = try EntryHook(symbol: "hk_twin", signature: int64Unary, in: "libhktwin2.so")
        defer { try? hook.restore() }
        hook.after { call in try call.setResult(try call.result(as: Int64.self) * 100) }
        typealias Twin = @convention(c) (Int64) -> Int64
        let viaOne = unsafeBitCast(try #require(dlsym(one, "hk_twin")), to: Twin.self)
        let viaTwo = unsafeBitCast(try #require(dlsym(two, "hk_twin")), to: Twin.self)
        #expect(viaOne(1) == 2)      // x + 1: not hooked
        #expect(viaTwo(1) == 300)    // (x + 2) * 100: hooked
    }

    /// A library whose function has an entry hook stays loaded after its
    /// last `dlclose`: the function runs, hooked, and `restore()` puts its
    /// bytes back. (It was unmapped: calling it, or `restore()`, which
    /// compares and writes its bytes, crashed with signal 11.)
    @Test(.enabled(if: keptLibrary != nil, "needs a C compiler"))
    func aLibraryWithAnEntryHookStaysLoadedAfterDlclose() throws {
        let path = try #require(keptLibrary)
        let handle = try #require(dlopen(path, RTLD_NOW | RTLD_LOCAL))
        typealias Kept = @convention(c) (Int64) -> Int64
        let kept = unsafeBitCast(try #require(dlsym(handle, "hk_kept")), to: Kept.self)
        let hook = try EntryHook(symbol: "hk_kept", signature: int64Unary, in: "libhkkept.so")
        hook.after { call in try call.setResult(try call.result(as: Int64.self) + 1) }
        #expect(kept(2) == 7)
        #expect(dlclose(handle) == 0)
        #expect(kept(2) == 7)
        try hook.restore()
        #expect(kept(2) == 6)
        // Hooked again at the same address: the same hook point, installed.
        let again = try EntryHook(symbol: "hk_kept", signature: int64Unary, in: "libhkkept.so")
        #expect(again === hook && again.isInstalled)
        try again.restore()
    }

    /// A process with more threads than the patch can move off the
    /// displaced instructions (4,096 others; here, a test's limit of 1 with
    /// two threads waiting) is refused, naming why, and the code is left as
    /// it was. (The thread list stopped at the limit and the patch went on:
    /// a thread left out, stopped between two displaced instructions, would
    /// have resumed inside the jump.)
    @Test func moreThreadsThanThePatchCanMoveIsRefused() throws {
        let function = address(entry_call_static_scale as @convention(c) (Int64) -> Int64)
        let before = bytes(at: function, 16)
        let release = DispatchSemaphore(value: 0), started = DispatchSemaphore(value: 0)
        for _ in 0..<2 {
            Thread {
                started.signal()
                release.wait()
            }.start()
        }
        started.wait()
        started.wait()
        defer { release.signal(); release.signal() }
        EntryHook.limitNextPatchToThreads(1)
        expectEntryError(.patchingFailed, point: "entry_call_static_scale",
                         containing: "the process has more than 1 other threads, more than the patch can move off the displaced instructions; nothing was patched") {
            let hook = try EntryHook(symbol: "entry_call_static_scale", signature: int64Unary)
            try hook.restore()
        }
        #expect(bytes(at: function, 16) == before)
        #expect(entry_call_static_scale(1) == 1004)
    }

    @Test func aRefusedWriteLeavesTheCodeAsItWas() throws {
        let function = address(entry_call_static_scale as @convention(c) (Int64) -> Int64)
        let before = bytes(at: function, 16)
        EntryHook.refuseNextWrite()
        expectEntryError(.protectionRefused, point: "entry_call_static_scale", containing: "W^X") {
            let hook = try EntryHook(symbol: "entry_call_static_scale", signature: int64Unary)
            // Reached only if the write was not refused (recorded as an issue
            // on return): put the code back, for the tests that run after.
            try hook.restore()
        }
        #expect(bytes(at: function, 16) == before)
        #expect(entry_call_static_scale(1) == 1004)
    }

    /// Every zlib function the relocator accepts, entry-hooked at once with a
    /// counting hook: a 1 MB compress2/uncompress round trip stays byte for
    /// byte, and the functions it uses count their calls.
    @Test func everyZlibFunctionHookedAtOnceLeavesARoundTripIntact() throws {
        let functions = try #require(EntryHook.functions(in: "libz.so.1"))
        // zlib passes integers and pointers only; deflateInit2_ takes 8 (two on the stack).
        let generic = Signature(returning: .uint64, arguments: Array(repeating: .uint64, count: 6))
        let eight = Signature(returning: .uint64, arguments: Array(repeating: .uint64, count: 8))
        let me = threadID()
        var hooks: [EntryHook] = []
        var counts: [String: Shared<Int>] = [:]
        defer { for hook in hooks { try? hook.restore() } }
        for function in functions where EntryHook.refusal(at: function.address, size: function.size) == nil {
            let signature = function.name == "deflateInit2_" ? eight : function.name == "deflate" ? deflateSignature : generic
            let hook = try EntryHook(address: function.address, signature: signature, name: function.name)
            let count = Shared(0)
            hook.before { _ in if threadID() == me { count.mutate { $0 += 1 } } }
            hooks.append(hook)
            counts[function.name] = count
        }
        #expect(hooks.count == functions.count)
        var input = [UInt8](repeating: 0, count: 1 << 20)
        var state: UInt32 = 12345
        for i in input.indices {
            state = state &* 1_103_515_245 &+ 12345
            input[i] = i % 3 == 0 ? UInt8(truncatingIfNeeded: state >> 16) : UInt8(i % 61)
        }
        #expect(zlibRoundTrip(input) == Z_OK)
        for name in ["compress2", "deflateInit2_", "deflate", "deflateEnd", "uncompress", "inflate", "inflateEnd"] {
            #expect((counts[name]?.value ?? 0) > 0, "\(name) was called")
        }
    }
}

/// What needs no patching: the relocator's survey, and the refusal under
/// ThreadSanitizer.
@Suite("EntryHook: planning without patching")
struct EntryHookPlanningTests {
    /// The relocator over every function of real libraries: it never crashes,
    /// and every refusal says why.
    @Test(arguments: ["libc.so.6", "libsqlite3.so.0", "libz.so.1", "libswiftCore.so"])
    func theRelocatorSurveysALibrary(_ library: String) throws {
        let functions = try #require(EntryHook.functions(in: library), "\(library) is loaded")
        #expect(functions.count > 50)
        var accepted = 0
        var reasons: [String: Int] = [:]
        for function in functions {
            if let why = EntryHook.refusal(at: function.address, size: function.size) {
                #expect(!why.isEmpty)
                let kind = why.replacing(/[+][0-9]+/, with: "+N").replacing(/[0-9]+ bytes/, with: "N bytes")
                reasons[kind, default: 0] += 1
            } else {
                accepted += 1
            }
        }
        print("relocator survey: \(library): \(functions.count) functions, \(accepted) accepted, \(functions.count - accepted) refused: \(reasons.sorted { $0.value > $1.value }.prefix(6))")
        #expect(accepted * 10 > functions.count * 8, "most functions are accepted")
    }

    @Test(.disabled(if: EntryHook.isAvailable, "only under ThreadSanitizer"))
    func underThreadSanitizerAnInstallIsRefused() {
        expectEntryError(.cannotPatch, point: "entry_target", containing: "unavailable under ThreadSanitizer") {
            _ = try EntryHook(symbol: "entry_target", signature: int64Unary)
        }
        #expect(entry_target(3) == 7)
    }
}
