import CFFIShim
import CImportSlots
import CHookTestSupport
import Foundation
@testable import Hook
import Synchronization
import Testing

// The signatures of the libc functions these tests take over (one per symbol:
// a symbol has one hook point, whose signature every request must repeat).
let mallocSignature = Signature(returning: UnsafeMutableRawPointer?.self, arguments: Int.self)
let pwriteSignature = Signature(returning: Int.self, arguments: Int32.self, UnsafeRawPointer?.self, Int.self, Int64.self)
let gettimeofdaySignature = Signature(returning: Int32.self, arguments: UnsafeMutableRawPointer?.self, UnsafeMutableRawPointer?.self)
let getenvSignature = Signature(returning: UnsafeMutablePointer<CChar>?.self, arguments: UnsafePointer<CChar>?.self)
let fopenSignature = Signature(returning: UnsafeMutableRawPointer?.self, arguments: UnsafePointer<CChar>?.self, UnsafePointer<CChar>?.self)

/// The calling thread, comparable inside a hook that runs on every thread.
func threadID() -> UInt { UInt(pthread_self()) }

/// A fresh directory, removed by the caller.
func temporaryDirectory() throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("hook-import-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// zlib's compress2 on `input`, checked by uncompressing; returns zlib's status.
@discardableResult
func zlibRoundTrip(_ input: [UInt8]) -> Int32 {
    var compressed = [UInt8](repeating: 0, count: Int(compressBound(uLong(input.count))))
    var length = uLongf(compressed.count)
    let status = compress2(&compressed, &length, input, uLong(input.count), 6)
    guard status == Z_OK else { return status }
    var output = [UInt8](repeating: 0, count: input.count)
    var outputLength = uLongf(output.count)
    let back = uncompress(&output, &outputLength, compressed, length)
    return back == Z_OK && output == input ? Z_OK : Z_DATA_ERROR
}

/// Runs SQL on a database file; returns the first column of the last row, if any.
@discardableResult
func sqlite(_ path: String, _ sql: String) -> String? {
    var db: OpaquePointer?
    guard sqlite3_open(path, &db) == SQLITE_OK else { return nil }
    defer { sqlite3_close(db) }
    var statement: OpaquePointer?
    var last: String?
    var rest: UnsafePointer<CChar>?
    let text = strdup(sql)!
    defer { free(text) }
    rest = UnsafePointer(text)
    while let current = rest, current.pointee != 0 {
        guard sqlite3_prepare_v2(db, current, -1, &statement, &rest) == SQLITE_OK else { return nil }
        guard let statement else { continue }
        while sqlite3_step(statement) == SQLITE_ROW {
            last = sqlite3_column_text(statement, 0).map { String(cString: $0) }
        }
        sqlite3_finalize(statement)
    }
    return last
}

func expectImportError(_ kind: HookError.Kind, symbol: String, containing text: String, _ body: () throws -> Void) {
    do {
        try body()
        Issue.record("expected \(kind) for \(symbol)")
    } catch let error as HookError {
        #expect(error.kind == kind, "\(error)")
        #expect(error.point == symbol)
        #expect(error.description.contains("hook point '\(symbol)'"), "\(error)")
        #expect(error.description.contains(text), "\(error)")
    } catch {
        Issue.record("expected a HookError, got \(error)")
    }
}

/// A shared library compiled here from `text` with the system C compiler,
/// lazy binding off (`-z now`) unless `lazy` (`-z lazy`: its slots hold their
/// PLT stubs until the first call, when loaded with RTLD_LAZY). Its path; nil
/// if there is no compiler or the text does not build.
func linkedLibrary(_ name: String, _ text: String, lazy: Bool = false) -> String? {
    // -fsemantic-interposition: a call of its own exported function goes
    // through the PLT (clang may bind it directly otherwise).
    compiledLibrary(name, text) { compiler in
        (compiler == "gcc" ? [] : ["-fsemantic-interposition"]) + [lazy ? "-Wl,-z,lazy" : "-Wl,-z,now"]
    }
}

/// A small library that defines getenv itself and calls it through its PLT:
/// loaded with RTLD_DEEPBIND, that slot binds to its own getenv.
let deepBindLibrary: String? = linkedLibrary("hkdeep", """
    char *getenv(const char *name) { (void)name; return (char *)"deep"; }
    const char *hk_deep_getenv(const char *name) { return getenv(name); }
    """)

/// deepBindLibrary, lazily bound: loaded with RTLD_LAZY | RTLD_DEEPBIND, its
/// getenv slot holds its PLT stub until the first call binds its own getenv.
let lazyDeepBindLibrary: String? = linkedLibrary("hklazydeep", """
    char *getenv(const char *name) { (void)name; return (char *)"deep"; }
    const char *hk_lazydeep_getenv(const char *name) { return getenv(name); }
    """, lazy: true)

/// A library built against the old realpath (realpath@GLIBC_2.2.5, which
/// refuses a NULL buffer with EINVAL; the default realpath@@GLIBC_2.3
/// allocates one), lazily bound. nil off glibc on x86-64.
let oldRealpathLibrary: String? = linkedLibrary("hkoldrealpath", """
    #include <stdlib.h>
    __asm__(".symver realpath,realpath@GLIBC_2.2.5");
    const char *hk_old_realpath(const char *path) { return realpath(path, 0); }
    """, lazy: true)

/// A library built against pthread_join@GLIBC_2.2.5, which glibc 2.34+
/// defines at the same address as its default pthread_join@@GLIBC_2.34,
/// lazily bound. nil without a compiler.
let oldJoinLibrary: String? = linkedLibrary("hkoldjoin", """
    #include <pthread.h>
    __asm__(".symver pthread_join,pthread_join@GLIBC_2.2.5");
    static void *nothing(void *unused) { return unused; }
    int hk_old_join(void) {
      pthread_t thread;
      if (pthread_create(&thread, 0, nothing, 0) != 0) return -1;
      return pthread_join(thread, 0);
    }
    """, lazy: true)

/// Whether pthread_join@GLIBC_2.2.5 is the default pthread_join (glibc 2.34+, no sanitizer's).
let oldJoinIsTheDefault = hk_import_lookup("pthread_join") != nil
    && hk_import_lookup("pthread_join") == hk_import_lookup_version("pthread_join", "GLIBC_2.2.5")

/// libbz2's file where Debian and others keep it (its soname's link resolved), or nil.
let libbz2File: String? = ["/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/lib64", "/usr/lib"]
    .lazy.compactMap { folder -> String? in
        realpath(folder + "/libbz2.so.1.0", nil).map { path in
            defer { free(path) }
            return String(cString: path)
        }
    }.first

/// Whether dlsym finds glibc's default realpath (the sanitizers' runtimes interpose their own).
let realpathIsGlibcs = hk_import_lookup("realpath") != nil
    && hk_import_lookup("realpath") == hk_import_lookup_version("realpath", "GLIBC_2.3")

/// A library that defines a function and calls it through its own PLT, for
/// one test alone (hooked, it stays loaded: see aHookedSymbolsLibraryStaysLoaded).
let pinnedLibrary: String? = linkedLibrary("hkpinned", """
    int hk_pinned_value(void) { return 42; }
    int hk_pinned_call(void) { return hk_pinned_value(); }
    """)

/// Runs a program found in `PATH` with its output discarded; true when it
/// exits with status 0. (posix_spawnp rather than Foundation's `Process`,
/// which leaks a weak reference's side table now and then under
/// LeakSanitizer.)
func runQuietly(_ arguments: [String]) -> Bool {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
    let argv = arguments.map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) } }
    var pid: pid_t = 0
    guard posix_spawnp(&pid, arguments[0], &actions, nil, argv, environ) == 0 else { return false }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    // WIFEXITED and WEXITSTATUS: low 7 bits 0, exit status in bits 8-15.
    return status & 0x7f == 0 && (status >> 8) & 0xff == 0
}

/// One suite, run serially: a symbol has one hook point for the whole process.
@Suite("ImportHook: imported functions hooked in libraries the package does not control", .serialized)
struct ImportHookTests {
    @Test func zlibMallocCallsAreSeenWithTheirArgumentsAndResults() throws {
        let hook = try ImportHook(symbol: "malloc", signature: mallocSignature, in: ["libz.so.1"])
        defer { try? hook.restore() }
        let me = threadID()
        let seen = Shared<[(size: Int, result: UInt, usable: Int)]>([])
        hook.after { call in
            guard threadID() == me else { return }
            let size = try call.argument(0, as: Int.self)
            let result = try call.result(as: UnsafeMutableRawPointer?.self)
            seen.mutate { $0.append((size, UInt(bitPattern: result), hk_test_usable_size(result))) }
        }
        #expect(zlibRoundTrip(Array(repeating: 7, count: 10_000)) == Z_OK)
        let calls = seen.value
        // deflateInit2 allocates its state, window, prev, head and pending buffers; inflateInit2 its state and window.
        #expect(calls.count >= 5, "\(calls.count) calls")
        for call in calls {
            #expect(call.result != 0)
            #expect(call.usable >= call.size, "the result is a block of at least the size asked for")
        }
        #expect(calls.contains { $0.size == 32 * 1024 * 2 })  // the window: 2 * 32 KiB, windowBits 15
        #expect(hook.original == UnsafeRawPointer(dlsym(nil, "malloc")))
    }

    @Test func aTypedAfterHookSeesZlibsAllocations() throws {
        let hook = try ImportHook(symbol: "malloc", signature: mallocSignature, in: ["libz.so.1"])
        defer { try? hook.restore() }
        #expect(hook.usesNativeEntry == (hk_direct_calls() != 0))
        let me = threadID()
        let sizes = Shared<[Int]>([])
        try hook.afterReturning { (block: UnsafeMutableRawPointer?, size: Int) in
            guard threadID() == me else { return }
            sizes.mutate { $0.append(hk_test_usable_size(block) >= size ? size : -size) }
        }
        #expect(zlibRoundTrip(Array(repeating: 3, count: 10_000)) == Z_OK)
        #expect(sizes.value.count >= 5, "\(sizes.value)")
        #expect(sizes.value.allSatisfy { $0 > 0 }, "every block at least the size asked for: \(sizes.value)")
        #expect(sizes.value.contains(32 * 1024 * 2))  // the window: 2 * 32 KiB, windowBits 15
    }

    @Test func zlibMallocArgumentsAndResultsCanBeReplaced() throws {
        let hook = try ImportHook(symbol: "malloc", signature: mallocSignature, in: ["libz.so.1"])
        defer { try? hook.restore() }
        let me = threadID()
        let grown = Shared<[(Int, Int)]>([])
        let before = hook.before { call in
            guard threadID() == me else { return }
            try call.setArgument(0, to: try call.argument(0, as: Int.self) + 4096)
        }
        hook.after { call in
            guard threadID() == me else { return }
            let size = try call.argument(0, as: Int.self)
            let result = try call.result(as: UnsafeMutableRawPointer?.self)
            grown.mutate { $0.append((size, hk_test_usable_size(result))) }
        }
        #expect(zlibRoundTrip(Array(repeating: 1, count: 1000)) == Z_OK)
        #expect(!grown.value.isEmpty)
        #expect(grown.value.allSatisfy { $0.1 >= $0.0 && $0.0 > 4096 })
        before.remove()
        // Every allocation zlib asks for fails: compress2 reports it.
        hook.after { call in
            guard threadID() == me else { return }
            free(try call.result(as: UnsafeMutableRawPointer?.self))
            try call.setResult(nil as UnsafeMutableRawPointer?)
        }
        #expect(zlibRoundTrip(Array(repeating: 1, count: 1000)) == Z_MEM_ERROR)
        try hook.restore()
        #expect(zlibRoundTrip(Array(repeating: 1, count: 1000)) == Z_OK)
    }

    /// What a removed hook captured is released after `restore()` has let
    /// go of the registry's lock: a `deinit` there may ask the hook point
    /// again. (It was released under the lock, when the removal found a
    /// hook whose owner had gone and freed the removed hooks at once: the
    /// `deinit`'s `isInstalled` locked the registry again, a trap.)
    @Test func aDeinitRunByRestoreMayAskTheHookPoint() throws {
        final class Asker: @unchecked Sendable {
            let hook: ImportHook, answers: Shared<[Bool]>
            init(_ hook: ImportHook, _ answers: Shared<[Bool]>) { self.hook = hook; self.answers = answers }
            deinit {
                let installed = hook.isInstalled
                answers.mutate { $0.append(installed) }
            }
        }
        let hook = try ImportHook(symbol: "malloc", signature: mallocSignature, in: ["libz.so.1"])
        defer { try? hook.restore() }
        let answers = Shared<[Bool]>([])
        do {
            let asker = Asker(hook, answers)
            hook.after { _ in withExtendedLifetime(asker) {} }
            // A hook whose owner is gone, not yet detached: the removal
            // frees what it removed at once.
            var owner: NSObject? = NSObject()
            hook.add(.before, owner: owner) { _ in }
            owner = nil
        }
        #expect(zlibRoundTrip(Array(repeating: 3, count: 1000)) == Z_OK)
        try hook.restore()
        // (A batch that another suite's hook change runs may hold the removed
        // hooks a moment after this reclaim returns: looked at again.)
        let deadline = Date().addingTimeInterval(10)
        repeat {
            HookPoint.reclaimRetiredHooks()
            if answers.value.isEmpty { usleep(1_000) }
        } while answers.value.isEmpty && Date() < deadline
        #expect(answers.value == [false])
    }

    @Test func sqliteWritesToItsDatabaseFileAreSeen() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("test.db").path
        let hook = try ImportHook(symbol: "pwrite64", signature: pwriteSignature, in: ["libsqlite3.so.0"])
        defer { try? hook.restore() }
        // SQLite keeps write and pwrite64 in a table of function pointers (R_X86_64_64 relocations).
        #expect(hook.slots.contains { $0.kind == .dataPointer })
        let me = threadID()
        let writes = Shared<[(fd: Int32, count: Int, offset: Int64, result: Int)]>([])
        hook.after { call in
            guard threadID() == me else { return }
            let fd = try call.argument(0, as: Int32.self)
            let count = try call.argument(2, as: Int.self)
            let offset = try call.argument(3, as: Int64.self)
            let result = try call.result(as: Int.self)
            writes.mutate { $0.append((fd, count, offset, result)) }
        }
        sqlite(path, "CREATE TABLE t(x TEXT); INSERT INTO t VALUES ('hello'); INSERT INTO t VALUES (zeroblob(10000));")
        let seen = writes.value
        #expect(!seen.isEmpty)
        #expect(seen.allSatisfy { $0.result == $0.count && $0.count > 0 && $0.offset >= 0 })
        let size = try FileManager.default.attributesOfItem(atPath: path)[.size] as! Int
        let end = seen.map { Int($0.offset) + $0.count }.max() ?? 0
        #expect(end <= size + 512)  // the journal is written too; the database ends where its last page does
        #expect(seen.map(\.count).reduce(0, +) >= 10_000)
    }

    @Test func sqliteClockCanBePinned() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("clock.db").path
        // gettimeofday is an IFUNC: the slot holds the implementation the resolver chose, and so does `original`.
        let hook = try ImportHook(symbol: "gettimeofday", signature: gettimeofdaySignature, in: ["libsqlite3.so.0"])
        defer { try? hook.restore() }
        hook.instead { call in
            let tv = try call.argument(0, as: UnsafeMutableRawPointer?.self)!.assumingMemoryBound(to: timeval.self)
            tv.pointee = timeval(tv_sec: 1_000_000_000, tv_usec: 0)
            try call.setResult(Int32(0))
        }
        #expect(sqlite(path, "SELECT strftime('%s', 'now');") == "1000000000")
        try hook.restore()
        #expect(sqlite(path, "SELECT strftime('%s', 'now');") != "1000000000")
    }

    @Test func fullRelroSlotsArePatchedAndProtectedAgain() throws {
        let hook = try ImportHook(symbol: "getenv", signature: getenvSignature, in: ["libsqlite3.so.0"])
        defer { try? hook.restore() }
        let slots = hook.slots.filter { $0.kind == .jumpSlot }
        #expect(!slots.isEmpty)
        for slot in slots {
            #expect(slot.wasReadOnly, "libsqlite3 is linked with -z relro -z now: its GOT is read-only")
            #expect(slot.currentValue == hook.entry)
            #expect(ImportHook.protection(at: slot.address) == PROT_READ)
        }
        try hook.restore()
        for slot in slots {
            #expect(slot.currentValue == slot.previous)
            #expect(ImportHook.protection(at: slot.address) == PROT_READ)
        }
    }

    @Test func removalPutsEverySlotBack() throws {
        let hook = try ImportHook(symbol: "malloc", signature: mallocSignature, in: ["libz.so.1", "libsqlite3.so.0"])
        let slots = hook.slots
        #expect(Set(slots.map { ($0.object as NSString).lastPathComponent }) == ["libz.so.1", "libsqlite3.so.0"])
        #expect(slots.allSatisfy { $0.currentValue == hook.entry && $0.previous != nil })
        try hook.restore()
        #expect(!hook.isInstalled)
        #expect(hook.slots.isEmpty)
        for slot in slots { #expect(slot.currentValue == slot.previous, "\(slot)") }
        try hook.restore()  // idempotent
        for slot in slots { #expect(slot.currentValue == slot.previous, "\(slot)") }
        #expect(zlibRoundTrip([1, 2, 3]) == Z_OK)
    }

    @Test func aSecondRequestSharesTheHookPoint() throws {
        let first = try ImportHook(symbol: "malloc", signature: mallocSignature, in: ["libz.so.1"])
        defer { try? first.restore() }
        let second = try ImportHook(symbol: "malloc", signature: mallocSignature, in: ["libsqlite3.so.0"])
        #expect(first === second)
        #expect(first.objects == ["libsqlite3.so.0", "libz.so.1"])
        #expect(Set(first.slots.map { ($0.object as NSString).lastPathComponent }) == ["libz.so.1", "libsqlite3.so.0"])
        let me = threadID()
        let count = Shared(0)
        second.after { _ in if threadID() == me { count.mutate { $0 += 1 } } }
        #expect(first.hookCount == 1)
        zlibRoundTrip([1, 2, 3])
        #expect(count.value > 0)
        try first.restore()
        #expect(second.hookCount == 0)
        // Asked for again after restore(): the same trampoline, reinstalled.
        let again = try ImportHook(symbol: "malloc", signature: mallocSignature, in: ["libz.so.1"])
        #expect(again === first && again.isInstalled)
    }

    @Test func aLibraryLoadedLaterIsPatchedAndDlsymReturnsTheEntry() throws {
        #expect(dlopen("libbz2.so.1.0", RTLD_NOW | RTLD_NOLOAD) == nil, "libbz2 must not be loaded before the hook")
        let hook = try ImportHook(symbol: "fopen64", signature: fopenSignature)
        defer { try? hook.restore() }
        // dlsym and dlvsym after the hook hand out the entry.
        #expect(UnsafeRawPointer(dlsym(nil, "fopen64")) == hook.entry)
        // dlvsym finds the versioned definition: libc's, unless the program interposes fopen64
        // itself (ThreadSanitizer's runtime does, unversioned), and then libc's is not the original.
        if hk_import_image_base(hook.original) != hk_import_own_image_base() {
            #expect(UnsafeRawPointer(hk_import_lookup_version("fopen64", "GLIBC_2.2.5")) == hook.entry)
        }
        #expect(hook.slots.contains { $0.kind == .symbolTable })

        let me = threadID()
        let opened = Shared<[String]>([])
        hook.before { call in
            guard threadID() == me else { return }
            let path = try call.argument(0, as: UnsafePointer<CChar>?.self).map { String(cString: $0) } ?? ""
            opened.mutate { $0.append(path) }
        }
        let library = try #require(dlopen("libbz2.so.1.0", RTLD_NOW))
        defer { dlclose(library) }
        let bzopen = unsafeBitCast(try #require(dlsym(library, "BZ2_bzopen")),
                                   to: (@convention(c) (UnsafePointer<CChar>?, UnsafePointer<CChar>?) -> OpaquePointer?).self)
        let bzclose = unsafeBitCast(try #require(dlsym(library, "BZ2_bzclose")), to: (@convention(c) (OpaquePointer?) -> Void).self)
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("later.bz2").path
        let file = bzopen(path, "w")
        #expect(file != nil)
        bzclose(file)
        #expect(opened.value == [path])
        let bz2Slots = hook.slots.filter { $0.object.hasSuffix("libbz2.so.1.0") }
        #expect(!bz2Slots.isEmpty && bz2Slots.allSatisfy { $0.currentValue == hook.entry })

        try hook.restore()
        #expect(UnsafeRawPointer(dlsym(nil, "fopen64")) == hook.original)
        for slot in bz2Slots { #expect(slot.currentValue == hook.original) }
    }

    @Test func aClosedLibraryIsNeverWrittenTo() throws {
        // Loaded first and named, so that its slots are written and recorded (not bound by the loader).
        let library = try #require(dlopen("libbz2.so.1.0", RTLD_NOW))
        let hook = try ImportHook(symbol: "fopen64", signature: fopenSignature, in: ["libbz2.so.1.0"])
        defer { try? hook.restore() }
        let bz2Slots = hook.slots.filter { $0.object.hasSuffix("libbz2.so.1.0") }
        #expect(!bz2Slots.isEmpty && bz2Slots.allSatisfy { $0.previous != nil && $0.wasReadOnly })
        let recorded = _ImportRegistry.shared.withState(of: hook) { $0.slots.count }
        #expect(recorded == bz2Slots.count)
        dlclose(library)
        #expect(dlopen("libbz2.so.1.0", RTLD_NOW | RTLD_NOLOAD) == nil)
        for slot in bz2Slots { #expect(slot.currentValue == nil, "unloaded: not even read") }
        #expect(!hook.slots.contains { $0.object.hasSuffix("libbz2.so.1.0") })
        // No refresh() in between: restore() itself meets the records of the unloaded library.
        try hook.restore()  // would fault on an unmapped page if it wrote there
        #expect(_ImportRegistry.shared.withState(of: hook) { $0.slots.isEmpty }, "the records of the closed library are dropped")
        #expect(!hook.isInstalled)
        #expect(UnsafeRawPointer(dlsym(nil, "fopen64")) == hook.original)
    }

    /// ImportHooks.md, "Removal": a symbol defined by a library loaded
    /// with `dlopen` keeps that library loaded for the life of the process
    /// once it has a hook point (dlsym(RTLD_DEFAULT) found its definition,
    /// and glibc then never unloads it), so the hook point's original never
    /// dangles: restored, closed and asked for again, it is the same.
    @Test(.enabled(if: pinnedLibrary != nil, "needs a C compiler"))
    func aHookedSymbolsLibraryStaysLoaded() throws {
        let path = try #require(pinnedLibrary)
        let signature = Signature(returning: .int32, arguments: [])
        let library = try loadedThenUnlinked(path, RTLD_NOW | RTLD_GLOBAL)
        let definition = try #require(dlsym(library, "hk_pinned_value"))
        typealias Call = @convention(c) () -> Int32
        let call = try symbol(in: library, "hk_pinned_call", as: Call.self)
        let hook = try ImportHook(symbol: "hk_pinned_value", signature: signature, in: ["libhkpinned.so"])
        defer { try? hook.restore() }
        #expect(hook.original == UnsafeRawPointer(definition))
        hook.after { call in try call.setResult(try call.result(as: Int32.self) + 1) }
        #expect(call() == 43)
        try hook.restore()
        dlclose(library)
        #expect(dlopen(path, RTLD_NOW | RTLD_NOLOAD) != nil, "still loaded")
        let again = try ImportHook(symbol: "hk_pinned_value", signature: signature, in: ["libhkpinned.so"])
        #expect(again === hook && again.original == UnsafeRawPointer(definition))
        again.after { call in try call.setResult(try call.result(as: Int32.self) + 2) }
        #expect(call() == 44)
    }

    @Test func eightThreadsCallWhileTheHookIsMadeAndRestored() throws {
        let input = (0..<4000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        // How many allocations one round trip makes through zlib's GOT.
        let probe = try ImportHook(symbol: "malloc", signature: mallocSignature, in: ["libz.so.1"])
        let me = threadID()
        let single = Shared(0)
        let token = probe.after { _ in if threadID() == me { single.mutate { $0 += 1 } } }
        #expect(zlibRoundTrip(input) == Z_OK)
        token.remove()
        let perCall = single.value
        #expect(perCall >= 5)

        // Attached throughout: exact counts.
        let calls = 200
        let counted = Counter()
        probe.after { _ in counted.increment() }
        let failures = Counter()
        onThreads(8) { _ in
            for _ in 0..<calls where zlibRoundTrip(input) != Z_OK { failures.increment() }
        }
        #expect(failures.value.load(ordering: .relaxed) == 0)
        let attached = counted.value.load(ordering: .relaxed)
        #expect(attached == 8 * calls * perCall)
        try probe.restore()

        // Made and restored over and over while the threads call: no crash, no call lost.
        let done = Atomic<Bool>(false)
        let completed = Counter()
        let group = DispatchGroup()
        for _ in 0..<8 {
            group.enter()
            Thread {
                while !done.load(ordering: .relaxed) {
                    if zlibRoundTrip(input) == Z_OK { completed.increment() } else { failures.increment() }
                }
                group.leave()
            }.start()
        }
        let rounds = 50
        for _ in 0..<rounds {
            let hook = try ImportHook(symbol: "malloc", signature: mallocSignature, in: ["libz.so.1"])
            let start = counted.value.load(ordering: .relaxed)
            hook.after { _ in counted.increment() }
            usleep(200)
            // Each time it is installed, the threads' calls reach the hook (waits up to 2 s for one).
            for _ in 0..<10_000 where counted.value.load(ordering: .relaxed) == start { usleep(200) }
            try hook.restore()
        }
        done.store(true, ordering: .relaxed)
        group.wait()
        #expect(failures.value.load(ordering: .relaxed) == 0)
        let finished = completed.value.load(ordering: .relaxed)
        #expect(finished > 0)
        // Counted while made and restored: at least one call a round, and no more than the round trips made.
        let whileToggled = counted.value.load(ordering: .relaxed) - attached
        #expect(whileToggled >= rounds, "\(whileToggled) calls counted in \(rounds) rounds")
        #expect(whileToggled <= finished * perCall, "\(whileToggled) calls counted, \(finished) round trips of \(perCall)")
    }

    @Test func aMallocHookThatAllocatesDoesNotRecurse() throws {
        // (Run alone, as the first hook point of the process, this test hung
        // until the call path was run once before any point is made:
        // `FunctionHook.callPathMade`.)
        // Swift allocates through libswiftCore's GOT: the hook body's own
        // allocations reach this hook point again, and run the original only.
        let hook = try ImportHook(symbol: "malloc", signature: mallocSignature, in: ["libz.so.1", "libswiftCore.so"])
        defer { try? hook.restore() }
        let me = threadID()
        let depth = Shared(0)
        let deepest = Shared(0)
        let sizes = Shared<[Int]>([])
        hook.after { call in
            guard threadID() == me else { return }
            depth.mutate { $0 += 1 }
            deepest.mutate { [d = depth.value] in $0 = max($0, d) }
            let size = try call.argument(0, as: Int.self)
            let description = "malloc(\(size)) from a hooked library"  // allocates
            var copy = [Int](repeating: size, count: 64)  // allocates
            copy.append(description.count)
            sizes.mutate { $0.append(size) }
            depth.mutate { $0 -= 1 }
        }
        #expect(zlibRoundTrip(Array(repeating: 3, count: 5000)) == Z_OK)
        #expect(deepest.value == 1)
        #expect(sizes.value.count >= 5)
    }

    /// The registry's own calls, made under its lock, run no hooks: a hook
    /// of `malloc` that asks its hook point something (which takes that
    /// lock) met the registry's own allocations there, and locked it again
    /// (Swift's `Mutex` traps).
    @Test(.enabled(if: !underAddressSanitizer, "AddressSanitizer owns malloc"))
    func aHookThatAsksTheRegistryIsNotRunUnderItsLock() throws {
        let hook = try ImportHook(symbol: "malloc", signature: mallocSignature, in: ["libswiftCore.so"])
        defer { try? hook.restore() }
        let me = threadID()
        let asked = Shared(0)
        hook.after { _ in
            guard threadID() == me else { return }
            if hook.isInstalled && hook.objects == ["libswiftCore.so"] { asked.mutate { $0 += 1 } }
        }
        // Under the lock: arrays and sets of slots, made by Swift (libswiftCore's malloc slot).
        #expect(!hook.slots.isEmpty)
        try hook.refresh()
        // Outside it, hooked as before.
        let made = [Int](repeating: 1, count: 1_000)
        #expect(made.count == 1_000 && asked.value > 0)
    }

    /// A scope names an object by its soname too: a copy of libbz2 loaded
    /// from another path (the loader's name for it) is `libbz2.so.1.0`,
    /// as dlopen(RTLD_NOLOAD) says. (It was not in scope: the request
    /// failed with "no relocation ... names 'fopen64'" although the object
    /// imports it.)
    @Test(.enabled(if: libbz2File != nil, "libbz2.so.1.0 is not where Debian keeps it"))
    func aScopeNamesAnObjectByItsSoname() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let copy = directory.appendingPathComponent("libbzlink.so").path
        let original = try #require(libbz2File)
        try FileManager.default.copyItem(atPath: original, toPath: copy)
        let library = try #require(dlopen(copy, RTLD_NOW | RTLD_LOCAL))
        defer { dlclose(library) }
        let hook = try ImportHook(symbol: "fopen64", signature: fopenSignature, in: ["libbz2.so.1.0"])
        defer { try? hook.restore() }
        #expect(hook.slots.contains { $0.object.hasSuffix("libbzlink.so") })
    }

    // The sanitizers' runtimes refuse RTLD_DEEPBIND (they abort the process).
    @Test(.enabled(if: !underThreadSanitizer && !underAddressSanitizer,
                   "RTLD_DEEPBIND is refused under ThreadSanitizer and AddressSanitizer"),
          .enabled(if: deepBindLibrary != nil, "needs a C compiler"))
    func aSlotBoundToItsOwnObjectsDefinitionIsLeftAlone() throws {
        let path = try #require(deepBindLibrary)
        let handle = try loadedThenUnlinked(path, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND)
        defer { dlclose(handle) }
        typealias Lookup = @convention(c) (UnsafePointer<CChar>?) -> UnsafePointer<CChar>?
        let lookup = try symbol(in: handle, "hk_deep_getenv", as: Lookup.self)
        #expect(lookup("HOME").map { String(cString: $0) } == "deep", "its getenv slot is bound to its own getenv")
        // Its slot imports getenv but holds a definition inside the object that is not the original (libc's):
        // not a lazy slot, not ours.
        let hook = try ImportHook(symbol: "getenv", signature: getenvSignature, in: ["libhkdeep.so"])
        defer { try? hook.restore() }
        #expect(!hook.slots.contains { $0.object.hasSuffix("libhkdeep.so") })
        let calls = Shared(0)
        hook.before { _ in calls.mutate { $0 += 1 } }
        #expect(lookup("HOME").map { String(cString: $0) } == "deep")
        #expect(calls.value == 0)
    }

    // A lazy slot is taken over only if the loader would have bound it to the original. This
    // one asks for realpath@GLIBC_2.2.5, not the realpath@@GLIBC_2.3 dlsym found: left alone,
    // its first call binds the old version, which returns NULL for a NULL buffer.
    @Test(.enabled(if: oldRealpathLibrary != nil, "needs a C compiler, and glibc's realpath@GLIBC_2.2.5"),
          .enabled(if: realpathIsGlibcs, "the sanitizers' runtimes interpose realpath (every version reaches theirs)"))
    func aLazySlotOfAnOlderVersionIsLeftAlone() throws {
        let path = try #require(oldRealpathLibrary)
        let handle = try loadedThenUnlinked(path, RTLD_LAZY | RTLD_LOCAL)
        defer { dlclose(handle) }
        typealias Resolve = @convention(c) (UnsafePointer<CChar>?) -> UnsafeMutablePointer<CChar>?
        let resolve = try symbol(in: handle, "hk_old_realpath", as: Resolve.self)
        // Hooked before its first call: its slot still holds its PLT stub. Its one import left
        // alone, the request may be refused as not imported, or made with no slot of it.
        let hook: ImportHook?
        do {
            hook = try ImportHook(symbol: "realpath", signature: Signature(returning: .pointer, arguments: [.pointer, .pointer]),
                                  in: ["libhkoldrealpath.so"])
        } catch let error as HookError {
            #expect(error.kind == .notImported, "\(error)")
            hook = nil
        } catch {
            Issue.record("expected a HookError, got \(error)")
            hook = nil
        }
        defer { try? hook?.restore() }
        #expect(hook?.slots.contains { $0.object.hasSuffix("libhkoldrealpath.so") } != true)
        let calls = Shared(0)
        hook?.before { _ in calls.mutate { $0 += 1 } }
        let resolved = resolve(".")
        defer { free(resolved) }
        #expect(resolved == nil, "realpath@GLIBC_2.2.5 refuses a NULL buffer; the default one allocated \(resolved.map { String(cString: $0) } ?? "")")
        #expect(calls.value == 0)
    }

    // An older version's name, but the same function: glibc defines pthread_join@GLIBC_2.2.5
    // and @@GLIBC_2.34 at one address. The lazy slot is taken over (compared by name, it was
    // left alone: a library built before glibc 2.34 had its calls missed).
    @Test(.enabled(if: oldJoinLibrary != nil, "needs a C compiler"),
          .enabled(if: oldJoinIsTheDefault, "glibc 2.34 or later, no sanitizer's pthread_join"))
    func aLazySlotOfAnOlderVersionAtTheSameAddressIsTaken() throws {
        let path = try #require(oldJoinLibrary)
        let handle = try loadedThenUnlinked(path, RTLD_LAZY | RTLD_LOCAL)
        defer { dlclose(handle) }
        typealias Join = @convention(c) () -> Int32
        let join = try symbol(in: handle, "hk_old_join", as: Join.self)
        let hook = try ImportHook(symbol: "pthread_join", signature: Signature(returning: .int32, arguments: [.uint64, .pointer]),
                                  in: ["libhkoldjoin.so"])
        defer { try? hook.restore() }
        #expect(hook.slots.contains { $0.object.hasSuffix("libhkoldjoin.so") })
        let me = threadID()
        let calls = Shared(0)
        hook.before { _ in if threadID() == me { calls.mutate { $0 += 1 } } }
        #expect(join() == 0)
        #expect(calls.value == 1)
    }

    // A lazy slot of an object that defines the symbol itself, loaded with RTLD_DEEPBIND,
    // would bind its own definition: left alone, like the bound one above.
    @Test(.enabled(if: !underThreadSanitizer && !underAddressSanitizer,
                   "RTLD_DEEPBIND is refused under ThreadSanitizer and AddressSanitizer"),
          .enabled(if: lazyDeepBindLibrary != nil, "needs a C compiler"))
    func aLazySlotOfADeepBoundDefinitionIsLeftAlone() throws {
        let path = try #require(lazyDeepBindLibrary)
        let handle = try loadedThenUnlinked(path, RTLD_LAZY | RTLD_LOCAL | RTLD_DEEPBIND)
        defer { dlclose(handle) }
        typealias Lookup = @convention(c) (UnsafePointer<CChar>?) -> UnsafePointer<CChar>?
        let lookup = try symbol(in: handle, "hk_lazydeep_getenv", as: Lookup.self)
        // Hooked before its first call: its slot still holds its PLT stub.
        let hook = try ImportHook(symbol: "getenv", signature: getenvSignature, in: ["libhklazydeep.so"])
        defer { try? hook.restore() }
        #expect(!hook.slots.contains { $0.object.hasSuffix("libhklazydeep.so") })
        let calls = Shared(0)
        hook.before { _ in calls.mutate { $0 += 1 } }
        #expect(lookup("HOME").map { String(cString: $0) } == "deep", "its first call binds its own getenv")
        #expect(calls.value == 0)
    }

    // MARK: Errors name the symbol

    @Test func noSuchSymbol() {
        expectImportError(.symbolNotFound, symbol: "hk_no_such_function", containing: "no loaded object defines") {
            _ = try ImportHook(symbol: "hk_no_such_function", signature: mallocSignature)
        }
        expectImportError(.symbolNotFound, symbol: "environ", containing: "data object") {
            _ = try ImportHook(symbol: "environ", signature: mallocSignature)
        }
        expectImportError(.symbolNotFound, symbol: "", containing: "empty") {
            _ = try ImportHook(symbol: "", signature: mallocSignature)
        }
    }

    @Test func noObjectInScopeImportsIt() {
        expectImportError(.notImported, symbol: "sqlite3_libversion", containing: "libz.so.1") {
            _ = try ImportHook(symbol: "sqlite3_libversion", signature: Signature(returning: .pointer, arguments: []), in: ["libz.so.1"])
        }
        expectImportError(.notImported, symbol: "getenv", containing: "not loaded: libhk-not-here.so") {
            _ = try ImportHook(symbol: "getenv", signature: getenvSignature, in: ["libhk-not-here.so"])
        }
    }

    /// ImportHooks.md, "Libraries loaded later": a hook needs an object loaded
    /// now that imports the symbol. A library's export that nobody imports (a
    /// plug-in's function, once the plug-in is loaded) is `.notImported`, with
    /// or without a scope, and nothing is patched. (libbz2 imports some of its
    /// own exports, `BZ2_bzlibVersion` among them, through slots of its own;
    /// not `BZ2_bzBuffToBuffCompress`.)
    @Test func aSymbolNobodyImportsYetIsNotImportedEvenWithoutAScope() throws {
        // Global, as a plug-in whose exports others may use: its definition is found.
        let library = try #require(dlopen("libbz2.so.1.0", RTLD_NOW | RTLD_GLOBAL))
        defer { dlclose(library) }
        let definition = try #require(dlsym(library, "BZ2_bzBuffToBuffCompress"))
        let signature = Signature(returning: .int32, arguments: [.pointer, .pointer, .pointer, .uint32, .int32, .int32, .int32])
        expectImportError(.notImported, symbol: "BZ2_bzBuffToBuffCompress", containing: "any loaded object") {
            _ = try ImportHook(symbol: "BZ2_bzBuffToBuffCompress", signature: signature)
        }
        #expect(dlsym(nil, "BZ2_bzBuffToBuffCompress") == definition, "the symbol table is left alone")
    }

    /// ImportHooks.md, "What cannot be caught": some of a library's calls of
    /// its own functions go through slots of its own, and those are patched:
    /// libsqlite3 has a JUMP_SLOT and an API-table pointer for
    /// `sqlite3_libversion_number`.
    @Test func aLibrarysOwnSlotsForItsOwnFunctionArePatched() throws {
        let hook = try ImportHook(symbol: "sqlite3_libversion_number", signature: Signature(returning: .int32, arguments: []),
                                  in: ["libsqlite3.so.0"])
        defer { try? hook.restore() }
        let kinds = Set(hook.slots.filter { $0.object.hasSuffix("libsqlite3.so.0") }.map(\.kind))
        #expect(kinds.contains(.jumpSlot))
        #expect(kinds.contains(.dataPointer))
    }

    @Test func mprotectRefused() throws {
        // The slot, found by a hook made and restored first.
        let hook = try ImportHook(symbol: "getenv", signature: getenvSignature, in: ["libsqlite3.so.0"])
        let slot = try #require(hook.slots.first { $0.kind == .jumpSlot })
        try hook.restore()
        let previous = try #require(slot.previous)
        #expect(slot.currentValue == previous)
        expectImportError(.protectionRefused, symbol: "getenv", containing: "libsqlite3.so.0") {
            try ImportHook.$protectionChangeRefused.withValue(true) {
                _ = try ImportHook(symbol: "getenv", signature: getenvSignature, in: ["libsqlite3.so.0"])
            }
        }
        #expect(slot.currentValue == previous, "nothing stays patched")
        #expect(ImportHook.protection(at: slot.address) == PROT_READ)
        #expect(!hook.isInstalled)
    }

    @Test func aFailedWideningLeavesTheEarlierSlotsPatched() throws {
        let hook = try ImportHook(symbol: "malloc", signature: mallocSignature, in: ["libz.so.1"])
        defer { try? hook.restore() }
        let zlibSlots = hook.slots
        #expect(!zlibSlots.isEmpty && zlibSlots.allSatisfy { $0.currentValue == hook.entry })
        // libsqlite3's malloc slot is under RELRO: refused.
        expectImportError(.protectionRefused, symbol: "malloc", containing: "libsqlite3.so.0") {
            try ImportHook.$protectionChangeRefused.withValue(true) {
                _ = try ImportHook(symbol: "malloc", signature: mallocSignature, in: ["libsqlite3.so.0"])
            }
        }
        #expect(hook.isInstalled)
        #expect(hook.objects == ["libz.so.1"])
        for slot in zlibSlots { #expect(slot.currentValue == hook.entry, "\(slot) was unhooked by the failed request") }
        #expect(Set(hook.slots.map(\.address)) == Set(zlibSlots.map(\.address)))
        let me = threadID()
        let count = Shared(0)
        hook.after { _ in if threadID() == me { count.mutate { $0 += 1 } } }
        #expect(zlibRoundTrip([1, 2, 3]) == Z_OK)
        #expect(count.value > 0, "zlib's calls still reach the hook")
    }

    @Test func aFailedFirstInstallKeepsItsTrampoline() throws {
        let freeSignature = Signature(returning: .void, arguments: [.pointer])
        #expect(_ImportRegistry.shared.point(for: "free") == nil, "no test makes a hook point for free before")
        // libz (lazy binding: its GOT is writable) comes before libc (free's GLOB_DAT slot under RELRO, refused):
        // libz's slot is pointed at the entry, and a caller may read it, before the request fails.
        expectImportError(.protectionRefused, symbol: "free", containing: "libc.so.6") {
            try ImportHook.$protectionChangeRefused.withValue(true) {
                _ = try ImportHook(symbol: "free", signature: freeSignature, in: ["libz.so.1", "libc.so.6"])
            }
        }
        let kept = try #require(_ImportRegistry.shared.point(for: "free"), "the trampoline was handed out: it must never be freed")
        #expect(!kept.isInstalled)
        #expect(kept.slots.isEmpty, "nothing stays patched")
        // Still a working trampoline: it calls the original.
        let entry = unsafeBitCast(kept.entry, to: (@convention(c) (UnsafeMutableRawPointer?) -> Void).self)
        entry(malloc(16))
        let again = try ImportHook(symbol: "free", signature: freeSignature, in: ["libz.so.1"])
        defer { try? again.restore() }
        #expect(again === kept && again.isInstalled)
    }

    // Under AddressSanitizer, libc's strdup allocates through the sanitizer's malloc, not libc's GOT.
    @Test(.enabled(if: !underAddressSanitizer, "AddressSanitizer owns malloc"))
    func nothingIsAllocatedWhileTheLoaderListIsWalked() throws {
        // glibc's own calls to malloc (strdup's) go through libc's GOT: a hook there runs on them.
        let hook = try ImportHook(symbol: "malloc", signature: mallocSignature, in: ["libc.so.6"])
        defer { try? hook.restore() }
        let me = threadID()
        let seen = Atomic<Int>(0)
        let insideWalk = Atomic<Int>(0)
        hook.after { _ in
            if hk_import_walking() != 0 { insideWalk.add(1, ordering: .relaxed) }
            if threadID() == me { seen.add(1, ordering: .relaxed) }
        }
        free(strdup("through libc's GOT"))
        #expect(seen.load(ordering: .relaxed) > 0, "libc's strdup reaches the hook")
        // Every kind of walk, each one recording slots.
        let widened = try ImportHook(symbol: "malloc", signature: mallocSignature, in: ["libz.so.1"])
        #expect(widened === hook)
        #expect(!hook.slots.isEmpty)
        try hook.refresh()
        try hook.restore()
        #expect(insideWalk.load(ordering: .relaxed) == 0, "a hook ran inside dl_iterate_phdr, under the loader's lock")
    }

    @Test func signatureThatCannotMatch() throws {
        let hook = try ImportHook(symbol: "malloc", signature: mallocSignature, in: ["libz.so.1"])
        defer { try? hook.restore() }
        expectImportError(.signatureMismatch, symbol: "malloc", containing: "2 arguments instead of 1") {
            _ = try ImportHook(symbol: "malloc", signature: Signature(returning: UnsafeMutableRawPointer?.self, arguments: Int.self, Int.self))
        }
        expectImportError(.variadicClosure, symbol: "printf", containing: "variadic") {
            _ = try ImportHook(symbol: "printf", signature: .variadic(returning: .int32, fixed: [.pointer]))
        }
    }
}

/// Loads the library at `path`, built into a folder of its own, and removes
/// that folder (the object is mapped now): a test's library leaves nothing.
func loadedThenUnlinked(_ path: String, _ flags: Int32) throws -> UnsafeMutableRawPointer {
    let handle = try #require(dlopen(path, flags))
    try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent)
    return handle
}

/// The function `name` of the library `handle`, as `F`.
func symbol<F>(in handle: UnsafeMutableRawPointer, _ name: String, as type: F.Type) throws -> F {
    unsafeBitCast(try #require(dlsym(handle, name)), to: F.self)
}
