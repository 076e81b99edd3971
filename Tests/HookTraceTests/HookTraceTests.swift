import CHookTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// What a run of a program printed, and how it ended.
struct Run {
    var status: Int32
    var output: String
    var errors: String
}

/// The folder of the products this test bundle was built with (hook-trace,
/// libHookTrace.so, HookTraceSample).
let products: URL = {
    let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
    var folder = bundle.deletingLastPathComponent()
    while folder.path != "/" {
        if FileManager.default.fileExists(atPath: folder.appendingPathComponent("hook-trace").path) { return folder }
        folder.deleteLastPathComponent()
    }
    return URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../.build/debug").standardized
}()

let launcher = products.appendingPathComponent("hook-trace").path
let sample = products.appendingPathComponent("HookTraceSample").path
let swiftSample = products.appendingPathComponent("HookTraceSwiftSample").path

/// Runs `arguments` (found on PATH when not a path), its output and errors in files.
func run(_ arguments: [String]) throws -> Run {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("hook-trace-\(getpid())-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    let out = folder.appendingPathComponent("out").path, err = folder.appendingPathComponent("err").path
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, out, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    posix_spawn_file_actions_addopen(&actions, 2, err, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    let argv = arguments.map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) } }
    var pid: pid_t = 0
    let spawned = posix_spawnp(&pid, arguments[0], &actions, nil, argv, environ)
    guard spawned == 0 else { throw POSIXError(POSIXErrorCode(rawValue: spawned) ?? .EINVAL) }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    // WIFEXITED: the low 7 bits are 0; then the status is in bits 8-15.
    let code = status & 0x7f == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    return Run(status: code,
               output: (try? String(contentsOfFile: out, encoding: .utf8)) ?? "",
               errors: (try? String(contentsOfFile: err, encoding: .utf8)) ?? "")
}

/// Runs `arguments` in `folder`, with `environment` added to the test's
/// (through /bin/sh's `cd` and `env`).
func run(_ arguments: [String], in folder: String, environment: [String: String] = [:]) throws -> Run {
    let settings = environment.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
    return try run(["/bin/sh", "-c", #"cd "$0" && exec env "$@""#, folder] + settings + arguments)
}

/// A new folder of the test's own, removed after `body`.
func withFolder(_ name: String, _ body: (URL) throws -> Void) throws {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("hook-trace-\(name)-\(getpid())-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    try body(folder)
}

/// The summary tables in `text` (`-c`): per process, calls and errors by function.
func summaries(_ text: String) -> [[String: (calls: Int, errors: Int)]] {
    var tables: [[String: (calls: Int, errors: Int)]] = []
    for line in text.split(separator: "\n") {
        if line.hasPrefix("hook-trace: ") && line.contains("calls traced in process") {
            tables.append([:])
            continue
        }
        let fields = line.split(separator: " ", omittingEmptySubsequences: true)
        guard fields.count == 6, !tables.isEmpty, Double(fields[0]) != nil,
              let calls = Int(fields[3]), let errors = Int(fields[4]), fields[5] != "total" else { continue }
        tables[tables.count - 1][String(fields[5])] = (calls, errors)
    }
    return tables
}

func counts(_ table: [String: (calls: Int, errors: Int)]) -> [String: Int] { table.mapValues(\.calls) }

func program(_ name: String) -> String? {
    for folder in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
        let path = "\(folder)/\(name)"
        if access(path, X_OK) == 0 { return path }
    }
    return nil
}

/// A C compiler on PATH, if any.
let cCompiler = ["cc", "clang", "gcc"].lazy.compactMap { program($0) }.first
let cxxCompiler = ["c++", "clang++", "g++"].lazy.compactMap { program($0) }.first

/// Compiles the C program `source` with the C compiler (and `flags`, after
/// the source: libraries) into a folder of its own, runs `body` with the
/// executable's path, and removes the folder.
func withCompiledC(_ name: String, _ source: String, flags: [String] = [], _ body: (String) throws -> Void) throws {
    let cc = try #require(cCompiler)
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("hook-trace-\(name)-\(getpid())")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    let file = folder.appendingPathComponent(name + ".c"), exe = folder.appendingPathComponent(name).path
    try source.write(to: file, atomically: true, encoding: .utf8)
    let compiled = try run([cc, "-O0", "-o", exe, file.path] + flags)
    try #require(compiled.status == 0, "\(compiled.errors)")
    try body(exe)
}

/// hook-trace runs programs with a library preloaded; a build with a
/// sanitizer instruments that library too, which a plain program cannot load.
let unsanitized = hk_test_malloc_counting_available()

@Suite("hook-trace: a program's calls, as ltrace and uftrace show them", .enabled(if: unsanitized, "not under a sanitizer"))
struct HookTraceTests {
    @Test func theSummaryCountsEveryCallAndTheProgramRunsAsBefore() throws {
        let plain = try run([sample, "loop", "1000"])
        #expect(plain.status == 3 && plain.output == "total 12000\n" && plain.errors.isEmpty)
        let traced = try run([launcher, "-c", "-L", "-e", "strdup+strlen+free", "--", sample, "loop", "1000"])
        #expect(traced.status == 3)
        #expect(traced.output == plain.output)
        let tables = summaries(traced.errors)
        #expect(tables.count == 1, "\(traced.errors)")
        #expect(counts(tables.first ?? [:]) == ["strdup": 1000, "strlen": 1000, "free": 1000])
        #expect(traced.errors.contains("3000         0 total"))
    }

    /// Every import of real programs traced (no `-e`): they run as before.
    /// (The stub page was made writable to add each stub, and the tracer's
    /// own mprotect back, traced, jumped to a stub on it: /bin/true spun in
    /// the fault handler. Then memcpy's entry was patched, and glibc's
    /// mempcpy, which jumps to memcpy's third byte, landed in the patch:
    /// SIGILL. Then an alias of a patched function was patched again. And
    /// python3's extension modules import variables, `_Py_NoneStruct`,
    /// whose slots were pointed at a stub: the first increment of its count
    /// wrote into the stub, SIGSEGV.)
    @Test(arguments: [["/bin/true"], ["/bin/ls", "/"], ["/bin/echo", "hello"], ["python3", "-c", "print(6 * 7)"]])
    func everyImportOfARealProgramTraced(_ command: [String]) throws {
        guard command[0].hasPrefix("/") || program(command[0]) != nil else { return }
        let plain = try run(command)
        for library in [false, true] {
            let traced = try run(["timeout", "-s", "KILL", "60", launcher, "-c"] + (library ? ["-L"] : []) + ["--"] + command)
            #expect(traced.status == plain.status, "\(traced.errors.suffix(2000))")
            #expect(traced.output == plain.output)
            #expect(summaries(traced.errors).count >= 1, "\(traced.errors.suffix(2000))")
        }
    }

    /// Two names of one function (glibc's `fopen` and `fopen64`, one
    /// address) each traced once a call: the second goes by its import
    /// slots on to the relocated entry, not through the first's patch.
    @Test(.enabled(if: cCompiler != nil, "needs a C compiler"))
    func twoNamesOfOneFunctionAreEachTracedOnceACall() throws {
        try withCompiledC("alias", """
            #define _LARGEFILE64_SOURCE
            #include <stdio.h>
            int main(void) {
              FILE *a = fopen("/dev/null", "r"), *b = fopen64("/dev/null", "r");
              int ok = a && b;
              if (a) fclose(a);
              if (b) fclose(b);
              return ok ? 0 : 1;
            }
            """) { exe in
            let traced = try run([launcher, "-c", "-e", "fopen*", exe])
            #expect(traced.status == 0, "\(traced.errors)")
            let table = counts(summaries(traced.errors).first ?? [:])
            #expect(table["fopen"] == 1 && table["fopen64"] == 1, "\(table) \(traced.errors)")
        }
    }

    /// A traced C program keeps its signals' handlers: Swift's runtime,
    /// which the tracer's library is built with, installs none. (Its
    /// backtracer took SIGSEGV and the other fatal signals: a crash printed
    /// a Swift backtrace.) A Swift program keeps its own runtime's.
    @Test(.enabled(if: cCompiler != nil, "needs a C compiler"))
    func aTracedCProgramKeepsItsSignalHandlers() throws {
        try withCompiledC("handlers", """
            #include <signal.h>
            #include <stdio.h>
            #include <string.h>
            int main(int argc, char **argv) {
              struct sigaction current;
              sigaction(SIGSEGV, NULL, &current);
              printf("%s %d\\n", current.sa_handler == SIG_DFL ? "default" : "replaced", strlen(argv[0]) > 0);
              return 0;
            }
            """) { exe in
            #expect(try run([exe]).output == "default 1\n")
            // (Without a SWIFT_BACKTRACE of the test's environment: it is kept.)
            let traced = try run(["env", "-u", "SWIFT_BACKTRACE", launcher, "-e", "strlen", exe])
            #expect(traced.status == 0 && traced.output == "default 1\n", "\(traced.output) \(traced.errors)")
        }
    }

    /// Calls a longjmp left (out of qsort, to a setjmp outside any traced
    /// call) are dropped at the next traced call: later calls are traced at
    /// their depth. (They stayed: each later line was indented by them, and
    /// past 8,192 nothing more was traced.)
    @Test func callsALongjmpLeftAreDropped() throws {
        let traced = try run([launcher, "-c", "-e", "qsort+strlen", sample, "longjmp", "9000"])
        #expect(traced.status == 0 && traced.output == "6\n", "\(traced.errors.suffix(1000))")
        #expect(summaries(traced.errors).first.map(counts)?["strlen"] == 3, "\(traced.errors.suffix(1000))")
        #expect(!traced.errors.contains("were not traced"), "\(traced.errors.suffix(1000))")
        let lines = try run([launcher, "-e", "qsort+strlen", sample, "longjmp", "3"])
        let strlenLines = lines.errors.split(separator: "\n").filter { $0.contains("strlen(") }
        #expect(strlenLines.count == 3 && strlenLines.allSatisfy { $0.contains("] strlen(") }, "\(strlenLines)")
    }

    /// An image that ends by `_Exit`, `quick_exit` or an `execl` of the
    /// family still has its table written. (They reach `_exit` and `execve`
    /// inside glibc, past the tracer's wrappers: the table was lost.)
    @Test(arguments: ["_Exit", "quick_exit", "execl", "execlp", "execle"])
    func anImageThatEndsByThisHasItsTable(_ end: String) throws {
        let traced = try run([launcher, "-c", "-e", "strlen", sample, "ends", end])
        #expect(traced.status == 0 && traced.output == "4\n", "\(traced.errors)")
        let tables = summaries(traced.errors)
        #expect(tables.first.map(counts)?["strlen"] == 1, "\(traced.errors)")
    }

    /// A command that system() runs, whose output and errors go to a file,
    /// inherits the tracer without its descriptor (glibc's own exec closes
    /// it): its file gets the command's output only. (Its trace went to its
    /// fd 2, the command's file.)
    @Test func aCommandThatSystemRunsKeepsItsFileToItself() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("hook-trace-system-\(getpid()).txt").path
        defer { unlink(file) }
        let traced = try run([launcher, "-e", "*", sample, "system", file])
        #expect(traced.status == 0, "\(traced.errors.suffix(2000))")
        #expect(try String(contentsOfFile: file, encoding: .utf8) == "child\n")
        #expect(traced.errors.contains("] system("), "\(traced.errors.suffix(2000))")
    }

    /// A string argument that begins near a page's end is shown cut at 32
    /// bytes. (Its first bytes were taken one by one, then eight at a time
    /// from an odd offset: up to seven bytes were written past the 32-byte
    /// buffer, into the next record, and the line showed all 36.)
    @Test func aStringNearAPagesEndIsCutAt32Bytes() throws {
        let traced = try run([launcher, "-L", "-e", "strlen", sample, "pageend"])
        #expect(traced.status == 0 && traced.output == "36\n")
        let line = traced.errors.split(separator: "\n").first { $0.contains("] strlen(") }
        #expect(line?.contains(#"strlen("abcdefghijklmnopqrstuvwxyz012345"...) = 36"#) == true, "\(traced.errors)")
    }

    /// A string argument with a length (strncmp's, strnlen's and strncpy's
    /// n; SQLite's nByte) is read no further than that length: here a
    /// fixed-size field with no NUL, at the end of a page whose next page
    /// cannot be read. The program runs as untraced, and the line shows the
    /// field. (It was read as a C string, past its length: the traced
    /// program ended with SIGSEGV.)
    @Test(.enabled(if: cCompiler != nil, "needs a C compiler"))
    func aStringWithALengthIsReadNoFurtherThanIt() throws {
        try withCompiledC("field", """
            #include <stdio.h>
            #include <string.h>
            #include <sys/mman.h>
            int main(void) {
              char *pages = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
              if (pages == MAP_FAILED || mprotect(pages + 4096, 4096, PROT_NONE) != 0) return 2;   /* the next page: unreadable */
              char *field = pages + 4096 - 8;   /* an 8-byte field of a fixed-size record: no NUL */
              memcpy(field, "ABCDEFGH", 8);
              char copy[9] = {0};
              int same = strncmp(field, "ABCDEFGH", 8) == 0;
              size_t length = strnlen(field, 8);
              strncpy(copy, field, 8);
              printf("%d %zu %s\\n", same, length, copy);
              return 0;
            }
            """) { exe in
            let plain = try run([exe])
            #expect(plain.status == 0 && plain.output == "1 8 ABCDEFGH\n", "\(plain)")
            let lines = [("strncmp", #"strncmp("ABCDEFGH", "ABCDEFGH", 8) = 0 <"#), ("strnlen", #"strnlen("ABCDEFGH", 8) = 8 <"#),
                         ("strncpy", #", "ABCDEFGH", 8) = 0x"#)]
            for mode in [[], ["-L"]] {
                for (function, line) in lines {
                    let traced = try run([launcher] + mode + ["-e", function, exe])
                    #expect(traced.status == 0 && traced.output == plain.output, "\(mode) \(function): \(traced)")
                    #expect(traced.errors.contains("] \(function)(") && traced.errors.contains(line), "\(mode) \(function): \(traced.errors)")
                }
            }
        }
    }

    @Test func eachCallIsPrintedWithItsArgumentsResultThreadAndDuration() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("hook-trace-lines-\(getpid()).txt").path
        defer { unlink(file) }
        let traced = try run([launcher, "-L", "-o", file, "-e", "str*", "-e", "free", sample, "loop", "50"])
        #expect(traced.status == 3 && traced.output == "total 600\n")
        #expect(traced.errors.isEmpty, "the trace goes to the file: \(traced.errors)")
        let lines = try String(contentsOfFile: file, encoding: .utf8).split(separator: "\n").map(String.init)
        // Lines of the calls the loop makes (strtol and strcmp read the arguments first).
        let loopLines = lines.filter { !$0.contains("] strtol(") && !$0.contains("] strcmp(") }
        #expect(loopLines.count == 150, "\(lines.prefix(5))")
        let pattern = #/^\[(\d+)\] (strdup|strlen|free)\(("hello, world"|0x[0-9a-f]+)\)( = (0x[0-9a-f]+|12))? <\d+ ns>$/#
        var lastCopy: String?
        var threads: Set<Substring> = []
        for (i, line) in loopLines.enumerated() {
            let match = try #require(try pattern.wholeMatch(in: line), "\(line)")
            threads.insert(match.1)
            switch i % 3 {
            case 0:
                #expect(match.2 == "strdup" && match.3 == "\"hello, world\"")
                lastCopy = match.5.map(String.init)
            case 1:
                #expect(match.2 == "strlen" && match.5 == "12")
            default:
                #expect(match.2 == "free" && String(match.3) == lastCopy && match.4 == nil)
            }
        }
        #expect(threads.count == 1)   // one thread, its kernel thread ID on every line
        #expect(lines.contains { $0.hasPrefix("[") && $0.contains("] strtol(\"50\", NULL, 10) = 50 <") })
    }

    /// By default the functions' entries are patched: calls from inside
    /// libc count too (glibc's strdup measures its argument with strlen).
    @Test func entryHooksAlsoSeeCallsInsideTheLibrary() throws {
        let traced = try run([launcher, "-c", "-e", "strdup+strlen+free", sample, "loop", "200"])
        #expect(traced.status == 3 && traced.output == "total 2400\n")
        let table = counts(try #require(summaries(traced.errors).first))
        #expect(table["strdup"] == 200 && table["free"] == 200)
        #expect(table["strlen"] == 400 || table["strlen"] == 200, "\(table)")
        let lines = try run([launcher, "-e", "strdup+strlen", sample, "loop", "1"])
        #expect(lines.status == 3)
        if table["strlen"] == 400 {
            // A line is written when its call returns: the nested call's
            // first, indented by its depth, then its caller's.
            let calls = lines.errors.split(separator: "\n").map { $0.drop { $0 != "]" }.dropFirst(2) }
            #expect(calls.count == 3, "\(lines.errors)")
            #expect(calls.first?.hasPrefix(#"  strlen("hello, world") = 12 <"#) == true, "\(lines.errors)")
            #expect(calls.dropFirst().first?.hasPrefix(#"strdup("hello, world") = 0x"#) == true, "\(lines.errors)")
            #expect(calls.last?.hasPrefix(#"strlen("hello, world") = 12 <"#) == true, "\(lines.errors)")
        }
    }

    @Test func sqliteCallsAndTheirErrors() throws {
        let plain = try run([sample, "sqlite", "40"])
        #expect(plain.status == 0 && plain.output == "rows 40 40, missing table: 1\n")
        // Library calls only: the program's own calls into SQLite.
        let traced = try run([launcher, "-c", "-L", "-e", "sqlite3_*", sample, "sqlite", "40"])
        #expect(traced.status == 0 && traced.output == plain.output)
        let table = try #require(summaries(traced.errors).first)
        #expect(counts(table) == [
            "sqlite3_open": 1, "sqlite3_exec": 43, "sqlite3_prepare_v2": 1, "sqlite3_step": 2,
            "sqlite3_column_int": 1, "sqlite3_finalize": 1, "sqlite3_close": 1,
        ])
        #expect(table["sqlite3_exec"]?.errors == 1)   // the missing table
        #expect(table["sqlite3_step"]?.errors == 0)   // ROW and DONE are no errors
        // Entries: also SQLite's calls of its own API (sqlite3_exec prepares and steps each statement).
        let entries = try run([launcher, "-c", "-e", "sqlite3_*", sample, "sqlite", "40"])
        #expect(entries.status == 0 && entries.output == plain.output)
        let inside = counts(try #require(summaries(entries.errors).first))
        #expect((inside["sqlite3_step"] ?? 0) >= 2 + 43 && (inside["sqlite3_prepare_v2"] ?? 0) >= 1 + 43, "\(inside)")
        let lines = try run([launcher, "-L", "-e", "sqlite3_open+sqlite3_exec", sample, "sqlite", "1"])
        #expect(lines.errors.contains(#"sqlite3_open(":memory:", 0x"#), "\(lines.errors)")
        #expect(lines.errors.contains(#"sqlite3_exec(0x"#) && lines.errors.contains(#", "SELECT * FROM missing", NULL, NULL) = 1 <"#))
    }

    @Test func everyThreadsCallsAreCounted() throws {
        let traced = try run([launcher, "-c", "-L", "-e", "strdup+strlen+free", sample, "threads", "4", "2000"])
        #expect(traced.status == 0 && traced.output == "total 96000\n")
        // (glibc frees a thread's memory when it ends, but through its own
        // slot: a call inside libc, not a library call.)
        #expect(counts(try #require(summaries(traced.errors).first)) == ["strdup": 8000, "strlen": 8000, "free": 8000])
        let lines = try run([launcher, "-L", "-e", "strdup", sample, "threads", "3", "10"])
        let threads = Set(lines.errors.split(separator: "\n").filter { $0.contains("strdup(") }.map { $0.split(separator: "]")[0] })
        #expect(threads.count == 3, "\(threads)")
    }

    /// A child of fork is traced too and reports its own calls (its table
    /// at _exit); an exec'd image is traced as the launcher's was.
    @Test func forkAndExec() throws {
        let forked = try run([launcher, "-c", "-L", "-e", "strdup+strlen+free", sample, "fork", "100"])
        #expect(forked.status == 0)
        #expect(forked.output.contains("child total 1200\n") && forked.output.contains("parent total 1200, child status 0\n"))
        let tables = summaries(forked.errors)
        #expect(tables.count == 2, "\(forked.errors)")
        for table in tables { #expect(counts(table) == ["strdup": 100, "strlen": 100, "free": 100]) }

        let execed = try run([launcher, "-c", "-L", "-e", "strdup+strlen+free", sample, "exec", "30"])
        #expect(execed.status == 3 && execed.output == "exec\ntotal 360\n")
        let images = summaries(execed.errors)
        #expect(images.count == 2, "\(execed.errors)")   // the image before exec (none of these calls), the one after
        #expect(counts(images.last ?? [:]) == ["strdup": 30, "strlen": 30, "free": 30])
    }

    /// A child forked while another thread was inside dlopen (the tracer's
    /// search of the new object's imports under way) can dlopen too. (The
    /// search's lock stayed taken in the child, by a thread it does not
    /// have: its first dlopen waited for good; 19 children of 20 hung.)
    @Test(.enabled(if: cCompiler != nil, "needs a C compiler"))
    func aChildForkedDuringADlopenCanDlopen() throws {
        try withCompiledC("forkdlopen", """
            #include <dlfcn.h>
            #include <pthread.h>
            #include <signal.h>
            #include <stdio.h>
            #include <sys/wait.h>
            #include <unistd.h>
            static volatile int stop;
            static void *loader(void *unused) {
              while (!stop) {
                void *library = dlopen("libc.so.6", RTLD_NOW);   /* loaded already: in and out of dlopen */
                if (library) dlclose(library);
              }
              return 0;
            }
            int main(void) {
              pthread_t thread;
              pthread_create(&thread, 0, loader, 0);
              int forked = 0, hung = 0, failed = 0;
              /* Each child has 5 s to dlopen and exit; the first that does not ends the loop. */
              for (int i = 0; i < 20 && hung == 0; i++) {
                pid_t child = fork();
                if (child == 0) _exit(dlopen("libc.so.6", RTLD_NOW) ? 0 : 1);
                forked++;
                int status = 0, waited = 0;
                pid_t done;
                while ((done = waitpid(child, &status, WNOHANG)) == 0 && waited < 500) {
                  usleep(10000);
                  waited++;
                }
                if (done == 0) {
                  hung++;
                  kill(child, SIGKILL);
                  waitpid(child, &status, 0);
                } else if (done < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                  failed++;
                }
              }
              stop = 1;
              pthread_join(thread, 0);
              printf("forked %d, hung %d, failed %d\\n", forked, hung, failed);
              return 0;
            }
            """, flags: ["-pthread", "-ldl"]) { exe in
            let plain = try run([exe])
            #expect(plain.status == 0 && plain.output == "forked 20, hung 0, failed 0\n", "\(plain)")
            let traced = try run(["timeout", "-s", "KILL", "120", launcher, "-e", "strlen", exe])
            #expect(traced.status == 0 && traced.output == plain.output, "\(traced.output) \(traced.errors.suffix(1000))")
        }
    }

    /// A thread's state is given back at its exit and taken by the next
    /// thread: 2,000 threads, one after another, each calling strdup and
    /// free, leave the traced program's address space about where one
    /// thread does. (A call a thread made after its state was given back,
    /// glibc freeing its caches through free, took a state again that no
    /// one gave back: each thread kept one, 1.9 MB, 3.9 GB in all.)
    @Test(.enabled(if: cCompiler != nil, "needs a C compiler"))
    func exitedThreadsGiveTheirStateBack() throws {
        try withCompiledC("threadstates", """
            #include <pthread.h>
            #include <stdio.h>
            #include <stdlib.h>
            #include <string.h>
            static long vm_kib(void) {
              FILE *status = fopen("/proc/self/status", "r");
              char line[256];
              long kib = -1;
              while (status && fgets(line, sizeof line, status)) {
                if (strncmp(line, "VmSize:", 7) == 0) kib = atol(line + 7);
              }
              if (status) fclose(status);
              return kib;
            }
            static void *work(void *unused) {
              char *copy = strdup("a thread's string");
              free(copy);
              return 0;
            }
            int main(void) {
              long before = -1;
              for (int i = 0; i < 2000; i++) {
                pthread_t thread;
                if (pthread_create(&thread, 0, work, 0) != 0) return 1;
                pthread_join(thread, 0);
                if (i == 10) before = vm_kib();
              }
              long grown = vm_kib() - before;
              printf("%s\\n", grown < 200 * 1024 ? "bounded" : "grew");
              if (grown >= 200 * 1024) fprintf(stderr, "grew %ld KiB\\n", grown);
              return 0;
            }
            """, flags: ["-pthread"]) { exe in
            let traced = try run(["timeout", "-s", "KILL", "120", launcher, "-e", "strdup+free", "-o", "/dev/null", exe])
            #expect(traced.status == 0 && traced.output == "bounded\n", "\(traced.output) \(traced.errors.suffix(1000))")
        }
    }

    /// An exec that fails returns to an image that goes on: its writer is
    /// started again, so its later lines are written as they come (they
    /// waited for the program's exit), and a path that cannot be executed
    /// does not end the image (a program that tries each PATH entry, as
    /// Python's os.execvp does, printed its -c table once an attempt).
    @Test(.enabled(if: cCompiler != nil, "needs a C compiler"))
    func aFailedExecLeavesTheImageTraced() throws {
        try withCompiledC("execfails", """
            #include <stdio.h>
            #include <string.h>
            #include <unistd.h>
            extern char **environ;
            static const char *volatile text = "hello";
            int main(int argc, char **argv) {
              char *args[] = {"x", 0};
              for (int i = 0; i < 3; i++) execve("/nonexistent/hook-trace-missing", args, environ);
              execve(argv[1], args, environ);   /* executable, but no program: ENOEXEC */
              size_t total = 0;
              for (int i = 0; i < 5; i++) total += strlen(text);
              usleep(300000);
              int lines = 0;
              if (argc > 2) {
                FILE *trace = fopen(argv[2], "r");
                char line[512];
                while (trace && fgets(line, sizeof line, trace)) if (strstr(line, "strlen(")) lines++;
                if (trace) fclose(trace);
              }
              printf("%zu %d\\n", total, lines);
              return 0;
            }
            """) { exe in
            try withFolder("execfails") { folder in
                let notAProgram = folder.appendingPathComponent("not-a-program").path
                try "no program here\n".write(toFile: notAProgram, atomically: true, encoding: .utf8)
                chmod(notAProgram, 0o755)
                let log = folder.appendingPathComponent("trace").path
                let traced = try run([launcher, "-e", "strlen", "-o", log, exe, notAProgram, log])
                #expect(traced.status == 0 && traced.output == "25 5\n", "\(traced)")
                // -c: one table at the attempt that could run (ENOEXEC), one at the exit.
                let counted = try run([launcher, "-c", "-e", "strlen", exe, notAProgram])
                let tables = counted.errors.components(separatedBy: "calls traced in process").count - 1
                #expect(counted.status == 0 && tables == 2, "\(counted.errors)")
            }
        }
    }

    /// A traced program may enter a new user namespace, which the kernel
    /// refuses to a process of more than one thread: the tracer's writer
    /// is paused for the call. (`unshare -U` failed with EINVAL, and so did
    /// bwrap and rootless containers.)
    @Test(.enabled(if: (try? run(["unshare", "-U", "true"]).status) == 0, "user namespaces are not allowed here"))
    func aProgramMayEnterAUserNamespace() throws {
        let traced = try run([launcher, "-e", "strlen", "unshare", "-U", "sh", "-c", "echo inside"])
        #expect(traced.status == 0 && traced.output == "inside\n", "\(traced.output) \(traced.errors.suffix(500))")
    }

    /// A child of fork writes its own lines only: those the parent's writer
    /// had made and not yet written are the parent's. A thread calls strlen
    /// as fast as it can while the main thread forks 20 children that _exit
    /// at once: one line a call. (Each child wrote the parent's pending
    /// lines again at its exit: hundreds to thousands of lines too many, in
    /// most runs.)
    @Test(.enabled(if: cCompiler != nil, "needs a C compiler"))
    func aForkChildDoesNotWriteTheParentsLinesAgain() throws {
        try withCompiledC("forklines", """
            #include <pthread.h>
            #include <stdio.h>
            #include <string.h>
            #include <sys/wait.h>
            #include <unistd.h>
            static const char *volatile text = "hello, world";
            static volatile int stop;
            static volatile long count;
            static void *busy(void *unused) {
              while (!stop) {
                size_t length = strlen(text);   /* (strlen(text) ? 1 : 0, gcc tests the first byte: no call) */
                count += length == 12;
              }
              return 0;
            }
            int main(void) {
              pthread_t thread;
              pthread_create(&thread, 0, busy, 0);
              while (count < 50000) {}   /* the writer busy with its lines */
              for (int i = 0; i < 20; i++) {
                pid_t child = fork();
                if (child == 0) _exit(0);
                waitpid(child, NULL, 0);
              }
              stop = 1;
              pthread_join(thread, 0);
              printf("%ld\\n", count);
              return 0;
            }
            """, flags: ["-pthread"]) { exe in
            // (Counted by grep: some hundred thousand lines a run.)
            for attempt in 0..<3 {
                let file = FileManager.default.temporaryDirectory.appendingPathComponent("hook-trace-forklines-\(getpid())-\(attempt).txt").path
                defer { unlink(file) }
                let traced = try run([launcher, "-o", file, "-e", "strlen", exe])
                let counted = try run(["grep", "-c", "-F", #"] strlen("hello, world") = 12 <"#, file])
                let all = try run(["grep", "-c", "", file])
                let calls = Int(traced.output.trimmingCharacters(in: .whitespacesAndNewlines))
                let lines = Int(counted.output.trimmingCharacters(in: .whitespacesAndNewlines))
                #expect(traced.status == 0 && calls != nil, "\(traced)")
                #expect(lines == calls && all.output == counted.output, "run \(attempt): \(calls ?? -1) calls, \(counted.output) lines (\(all.output) in all)")
            }
        }
    }

    /// A program that points its stderr at a log file of its own: the trace
    /// goes where hook-trace's stderr goes, not into the program's log (it
    /// wrote into the program's fd 2, whatever that had become).
    @Test func aProgramsOwnStderrRedirectionKeepsTheTraceOut() throws {
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("hook-trace-log-\(getpid()).txt").path
        defer { try? FileManager.default.removeItem(atPath: log) }
        let traced = try run([launcher, "-e", "strlen", sample, "log", log])
        #expect(traced.status == 0 && traced.output == "total 120\n", "\(traced)")
        #expect(try String(contentsOfFile: log, encoding: .utf8) == "the program's own line\n")
        #expect(traced.errors.split(separator: "\n").filter { $0.contains("strlen(") }.count >= 10, "\(traced.errors)")
        // The copy is close-on-exec in the program (its children that are
        // not traced do not keep it); an exec of a traced image passes it on.
        #expect(try run([launcher, "-e", "strlen", sample, "fd"]).output == "close-on-exec\n")
    }

    /// A trace descriptor the program made non-blocking (HOOK_TRACE_FD is a
    /// copy of hook-trace's stderr, sharing its flags: a program that sets
    /// O_NONBLOCK on its fd 2, as node.js does, sets it on the trace's),
    /// through a pipe whose reader starts a second late: every line is
    /// written, whole. (A write the full pipe refused was given up: of
    /// 100,000 lines some 1,500 came out, and lines were cut in two.)
    @Test(.enabled(if: cCompiler != nil, "needs a C compiler"))
    func aNonBlockingTraceDescriptorLosesNoLine() throws {
        try withCompiledC("nonblocking", """
            #include <fcntl.h>
            #include <stdio.h>
            #include <stdlib.h>
            #include <string.h>
            static const char *volatile text = "hello, world";
            int main(int argc, char **argv) {
              fcntl(2, F_SETFL, fcntl(2, F_GETFL) | O_NONBLOCK);
              long n = atol(argv[1]);
              size_t total = 0;
              for (long i = 0; i < n; i++) total += strlen(text);
              printf("%zu\\n", total);
              return 0;
            }
            """) { exe in
            // The lines, whole, and the traced program's status, counted by awk.
            // (The status line is written again until it goes in: the pipe
            // is the shell's too, non-blocking now, and full while awk has
            // not read the last lines: echo failed with EAGAIN, 1 CI run.)
            let counted = try run(["/bin/sh", "-c", #"""
                { "$0" -e strlen "$1" 100000 2>&1 >/dev/null; s=$?; until echo "status $s" 2>/dev/null; do sleep 0.05; done; } |
                (sleep 1; awk '/^\[[0-9]+\] strlen[(]"hello, world"[)] = 12 <[0-9]+ ns>$/ { n++ } /^status / { s = $2 } END { print n + 0, s }')
                """#, launcher, exe])
            #expect(counted.status == 0 && counted.output == "100000 0\n", "\(counted)")
        }
    }

    /// A signal handler that calls a traced function, interrupting traced
    /// calls of it every 20 µs: the program runs as untraced, and every
    /// call of the main loop is counted. (A handler that interrupted the
    /// tracer's own work on a call took the frame it was filling or
    /// reading: the call returned to the handler's call's return address,
    /// and the program crashed.)
    @Test func aSignalHandlerCallingATracedFunction() throws {
        let plain = try run([sample, "signals", "1000000"])
        #expect(plain.status == 0 && plain.output == "total 12000000, signals handled\n", "\(plain)")
        let traced = try run([launcher, "-c", "-e", "strlen", sample, "signals", "1000000"])
        #expect(traced.status == 0 && traced.output == plain.output, "\(traced.errors.prefix(400))")
        #expect((counts(summaries(traced.errors).first ?? [:])["strlen"] ?? 0) >= 1_000_000, "\(traced.errors.prefix(400))")
        let lines = try run([launcher, "-o", "/dev/null", "-e", "strlen", sample, "signals", "300000"])
        #expect(lines.status == 0 && lines.output == "total 3600000, signals handled\n", "\(lines.errors.prefix(400))")
    }

    /// A child of vfork that execs, or fails to and `_exit`s, runs on the
    /// parent's memory: the parent's calls before and after are all its
    /// own, in one table. (The child's exec wrote the parent's table so far
    /// as its own and ended the parent's tracing: 100 of 200 calls were
    /// counted, in two tables.)
    @Test func aVforkChildThatExecsLeavesTheParentsTrace() throws {
        let plain = try run([sample, "vfork", "100"])
        #expect(plain.status == 0 && plain.output == "total 2400, children 7\n", "\(plain)")
        let traced = try run([launcher, "-c", "-L", "-e", "strdup+strlen+free", sample, "vfork", "100"])
        #expect(traced.status == 0 && traced.output == plain.output, "\(traced.errors)")
        // /bin/true's image is traced too (its table has none of these calls).
        let tables = summaries(traced.errors).filter { !$0.isEmpty }
        #expect(tables.count == 1, "\(traced.errors)")
        #expect(counts(tables.first ?? [:]) == ["strdup": 200, "strlen": 200, "free": 200], "\(traced.errors)")
        // The tracer's own look at its process id is not a traced getpid
        // (the vfork child's exec and a fork child each made one).
        for mode in [["vfork", "10"], ["fork", "10"]] {
            let own = try run([launcher, "-c", "-e", "getpid", sample] + mode)
            #expect(summaries(own.errors).allSatisfy { $0["getpid"] == nil }, "\(mode): \(own.errors)")
        }
    }

    /// A function patched while threads are inside it: four threads call
    /// ferror in a loop (through a pointer: the program does not import it);
    /// loading libbz2, which imports it, makes hook-trace patch its entry
    /// then. Every call still returns what it should, the program ends as
    /// it would, and the calls made after the patch are counted (and, in the
    /// other mode, printed).
    @Test func aFunctionPatchedWhileThreadsAreInsideIt() throws {
        let plain = try run([sample, "late", "10"])
        #expect(plain.status == 0 && plain.output == "late: libbz2 loaded, every call returned 0\n")
        var patched = 0, withoutTable = 0
        for _ in 0..<5 {
            let traced = try run([launcher, "-c", "-e", "ferror", sample, "late", "20"])
            #expect(traced.status == 0 && traced.output == plain.output, "\(traced.errors)")
            // An open defect, seen once in thirty runs beside the entry hooks'
            // load tests: the traced program ended normally and printed no
            // table at all. Counted, not hidden: at most one run in five.
            if summaries(traced.errors).isEmpty {
                withoutTable += 1
                continue
            }
            let made = traced.errors.split(separator: "\n").first { $0.hasPrefix("calls ") }.flatMap { Int($0.dropFirst(6)) }
            let counted = summaries(traced.errors).first?["ferror"]?.calls ?? 0
            #expect(counted <= (made ?? 0), "\(traced.errors)")
            if counted > 0 {
                patched += 1
            } else {
                // The patch may be refused (a thread that did not answer its
                // signal in time, on a loaded machine): then the trace says so,
                // and the calls through the pointer go unseen.
                #expect(traced.errors.contains("hook-trace: ferror: its entry could not be patched ("), "\(traced.errors)")
            }
        }
        #expect(patched > 0, "no run patched ferror's entry")
        #expect(withoutTable <= 1, "\(withoutTable) of 5 runs printed no table")
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("hook-trace-late-\(getpid()).txt").path
        defer { unlink(file) }
        let lines = try run([launcher, "-o", file, "-e", "ferror", sample, "late", "20"])
        #expect(lines.status == 0 && lines.output == plain.output)
        let written = try String(contentsOfFile: file, encoding: .utf8).split(separator: "\n")
        #expect(!written.isEmpty)
        // (Every line read; the pattern checked on a sample of them: a debug
        // build's regex takes seconds over a hundred thousand lines.)
        #expect(written.allSatisfy { $0.contains("] ferror(0x") && $0.hasSuffix(" ns>") }, "\(written.prefix(3))")
        for line in written.enumerated().filter({ $0.offset % 997 == 0 }).map(\.element) {
            #expect(line.wholeMatch(of: #/\[\d+\] ferror\(0x[0-9a-f]+\) = 0 <\d+ ns>/#) != nil, "\(line)")
        }
    }

    /// A Swift program's calls of the standard library, by their mangled
    /// symbols' pattern, printed with their demangled names (and, having no
    /// prototype, six raw words).
    @Test func swiftNamesAreDemangled() throws {
        for mode in [["-L"], []] {
            let traced = try run([launcher] + mode + ["-e", "$ss5print*", swiftSample, "hello", "there"])
            #expect(traced.status == 0 && traced.output == "hello there\n")
            let lines = traced.errors.split(separator: "\n")
            #expect(lines.count == 1, "\(traced.errors)")
            let pattern = #/^\[\d+\] Swift\.print\(_: Any\.\.\., separator: Swift\.String, terminator: Swift\.String\) -> \(\)\((0x[0-9a-f]+, ){5}0x[0-9a-f]+\) = 0x[0-9a-f]+ <\d+ ns>$/#
            #expect(try pattern.wholeMatch(in: String(lines.first ?? "")) != nil, "\(traced.errors)")
        }
    }

    /// A recursion through a traced function is traced as deep as it goes:
    /// qsort nested 300 deep (its comparator sorts again) is 300 calls; past
    /// 8,192 traced calls under way on a thread, the calls run untraced and
    /// their count is said at the end. (The limit was 256, and the calls past
    /// it went untraced without a word: 256 of 300.)
    @Test func aRecursionIsTracedAsDeepAsItGoes() throws {
        let traced = try run([launcher, "-c", "-e", "qsort", sample, "deep", "300"])
        #expect(traced.status == 0 && traced.output == "depth 300\n")
        #expect(counts(summaries(traced.errors).first ?? [:]) == ["qsort": 300], "\(traced.errors)")
        #expect(!traced.errors.contains("not traced"))
        let deeper = try run([launcher, "-c", "-e", "qsort", sample, "deep", "8200"])
        #expect(deeper.status == 0 && deeper.output == "depth 8200\n")
        #expect(counts(summaries(deeper.errors).first ?? [:]) == ["qsort": 8_192], "\(deeper.errors)")
        #expect(deeper.errors.contains("hook-trace: 8 calls in process"), "\(deeper.errors)")
        #expect(deeper.errors.contains("were not traced: 8192 traced calls of their thread were under way"))
    }

    /// More functions matched than the table holds (4,096): those past it
    /// go untraced, and the trace says so, naming the first. (They went
    /// untraced without a word.) A program of 4,100 functions in a library
    /// of its own, each called once, compiled here.
    @Test(.enabled(if: cCompiler != nil, "needs a C compiler"))
    func moreFunctionsThanTheTableHoldsAreSaidSo() throws {
        let cc = try #require(cCompiler)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("hook-trace-many-\(getpid())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let count = 4_100
        let library = (0..<count).map { "int many_\($0)(int x) { return x + \($0); }\n" }.joined()
        let main = (0..<count).map { "int many_\($0)(int);\n" }.joined()
            + "int main(void) { long total = 0;\n" + (0..<count).map { "  total += many_\($0)(1);\n" }.joined()
            + "  return total == \(count + count * (count - 1) / 2) ? 0 : 1; }\n"
        try library.write(to: folder.appendingPathComponent("many.c"), atomically: true, encoding: .utf8)
        try main.write(to: folder.appendingPathComponent("main.c"), atomically: true, encoding: .utf8)
        let lib = folder.appendingPathComponent("libmany.so").path, exe = folder.appendingPathComponent("many").path
        #expect(try run([cc, "-shared", "-fPIC", "-O0", "-o", lib, folder.appendingPathComponent("many.c").path]).status == 0)
        #expect(try run([cc, "-O0", "-o", exe, folder.appendingPathComponent("main.c").path, "-L", folder.path, "-lmany",
                         "-Wl,-rpath," + folder.path]).status == 0)
        let traced = try run([launcher, "-c", "-L", "-e", "many_*", exe])
        #expect(traced.status == 0, "\(traced.errors)")
        #expect(counts(summaries(traced.errors).first ?? [:]).count == 4_096)
        #expect(traced.errors.contains("hook-trace: more than 4096 functions match; 'many_"), "\(traced.errors.prefix(300))")
        #expect(traced.errors.contains("and those after it are not traced (narrow -e)"))
    }

    /// A program that loads a plug-in by its RUNPATH (`$ORIGIN/plug`) and
    /// by a `$ORIGIN` path loads it traced too. (glibc's dlopen searches its
    /// caller's RUNPATH, and the tracer's wrapper was the caller: "cannot
    /// open shared object file".)
    @Test(.enabled(if: cCompiler != nil, "needs a C compiler"))
    func aPlugInFoundByTheProgramsRunpath() throws {
        let cc = try #require(cCompiler)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("hook-trace-runpath-\(getpid())")
        let plugins = folder.appendingPathComponent("plug")
        try FileManager.default.createDirectory(at: plugins, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try "int plug_value(void) { return 42; }\n".write(to: folder.appendingPathComponent("plug.c"), atomically: true, encoding: .utf8)
        try """
            #include <dlfcn.h>
            #include <stdio.h>
            #include <string.h>
            int main(int argc, char **argv) {
              void *plug = dlopen(argc > 1 ? "$ORIGIN/plug/libplug.so" : "libplug.so", RTLD_NOW);
              if (!plug) { printf("%s\\n", dlerror()); return 1; }
              int (*value)(void) = (int (*)(void))dlsym(plug, "plug_value");
              printf("%d %zu\\n", value(), strlen("ok"));
              return 0;
            }
            """.write(to: folder.appendingPathComponent("main.c"), atomically: true, encoding: .utf8)
        let lib = plugins.appendingPathComponent("libplug.so").path, exe = folder.appendingPathComponent("loader").path
        #expect(try run([cc, "-shared", "-fPIC", "-o", lib, folder.appendingPathComponent("plug.c").path]).status == 0)
        #expect(try run([cc, "-o", exe, folder.appendingPathComponent("main.c").path, "-ldl",
                         "-Wl,--enable-new-dtags,-rpath,$ORIGIN/plug"]).status == 0)
        for arguments in [[exe], [exe, "origin"]] {
            let plain = try run(arguments)
            #expect(plain.status == 0 && plain.output == "42 2\n", "\(plain.output)")
            let traced = try run([launcher, "-c", "-e", "strlen+dlopen"] + arguments)
            #expect(traced.status == 0 && traced.output == plain.output, "\(traced.output) \(traced.errors)")
        }
    }

    /// A C++ program whose exceptions pass through traced functions (thrown
    /// by one, caught by another, rethrown, thrown and caught in a
    /// destructor while another unwinds) and a thread that ends with
    /// pthread_exit inside two: it runs as untraced (the thread's
    /// destructors run), and each call that returns is counted, those that
    /// caught an exception included. (The unwinder found the tracer's
    /// return address, with no unwind information, where a traced call's
    /// was: an exception ended the program with std::terminate, and
    /// pthread_exit skipped the destructors above it; and where the
    /// displaced first bytes of a function made a call, its callee returned
    /// into the stub, with none either.)
    @Test(.enabled(if: cxxCompiler != nil, "needs a C++ compiler"))
    func exceptionsAndThreadExitsThroughTracedCalls() throws {
        let cxx = try #require(cxxCompiler)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("hook-trace-cxx-\(getpid())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let library = """
            #include <pthread.h>
            #include <stdexcept>
            extern "C" {
            int x_throws(int x) { if (x % 2) throw std::runtime_error("odd"); return x; }
            int x_middle(int x) {
              struct Cleanup { ~Cleanup() { try { x_throws(1); } catch (...) {} } } cleanup;
              return x_throws(x) + 1;
            }
            int x_catches(int x) { try { return x_middle(x); } catch (const std::exception &) { return -1; } }
            int x_rethrows(int x) { try { return x_middle(x); } catch (...) { throw; } }
            __attribute__((noinline)) void x_exits(int x) { volatile int v = x; if (v) pthread_exit(nullptr); }
            }
            """
        let main = """
            #include <cstdio>
            #include <pthread.h>
            extern "C" { int x_catches(int); int x_rethrows(int); void x_exits(int); }
            static int cleaned;
            static void *thread_body(void *) {
              struct Flag { ~Flag() { cleaned = 1; } } flag;   // run by pthread_exit's unwind
              x_exits(0);
              x_exits(1);
              return nullptr;
            }
            int main() {
              long sum = 0;
              for (int i = 0; i < 10; i++) sum += x_catches(i);
              int caught = 0;
              for (int i = 0; i < 4; i++) { try { x_rethrows(i); } catch (...) { caught++; } }
              pthread_t thread;
              pthread_create(&thread, nullptr, thread_body, nullptr);
              pthread_join(thread, nullptr);
              printf("sum %ld caught %d cleaned %d\\n", sum, caught, cleaned);
              return 0;
            }
            """
        try library.write(to: folder.appendingPathComponent("x.cpp"), atomically: true, encoding: .utf8)
        try main.write(to: folder.appendingPathComponent("main.cpp"), atomically: true, encoding: .utf8)
        let lib = folder.appendingPathComponent("libx.so").path, exe = folder.appendingPathComponent("x").path
        let built = try run([cxx, "-shared", "-fPIC", "-O1", "-o", lib, folder.appendingPathComponent("x.cpp").path, "-lpthread"])
        #expect(built.status == 0, "\(built.errors)")
        #expect(try run([cxx, "-O1", "-o", exe, folder.appendingPathComponent("main.cpp").path, "-L", folder.path, "-lx",
                         "-lpthread", "-Wl,-rpath," + folder.path]).status == 0)
        let plain = try run([exe])
        #expect(plain.status == 0 && plain.output == "sum 20 caught 2 cleaned 1\n", "\(plain)")
        let summary = try run([launcher, "-c", "-e", "x_*", exe])
        #expect(summary.status == 0, "\(summary.errors.prefix(600))")
        #expect(summary.output == plain.output)
        let calls = counts(summaries(summary.errors).first ?? [:])
        // Every x_catches call returns (five after catching); x_rethrows
        // returns for even numbers only.
        #expect(calls["x_catches"] == 10 && calls["x_rethrows"] == 2 && calls["x_exits"] == 1, "\(calls)")
        let lines = try run([launcher, "-e", "x_*", exe])
        #expect(lines.status == 0, "\(lines.errors.prefix(600))")
        #expect(lines.output == plain.output)
    }

    @Test func badInputEndsWithAMessageAndAStatus() throws {
        let badPattern = try run([launcher, "-e", "str len", sample, "loop", "1"])
        #expect(badPattern.status == 2 && badPattern.errors.contains("bad pattern 'str len': ' ' is not part of a symbol name"))
        let unclosed = try run([launcher, "-e", "str[ab", sample])
        #expect(unclosed.status == 2 && unclosed.errors.contains("bad pattern 'str[ab': '[' is never closed"))
        let empty = try run([launcher, "-e", "", sample])
        #expect(empty.status == 2 && empty.errors.contains("an empty pattern"))
        let missing = try run([launcher, "-c", "no-such-program-of-hook-trace"])
        #expect(missing.status == 127 && missing.errors.contains("cannot run 'no-such-program-of-hook-trace': No such file or directory"))
        let unwritable = try run([launcher, "-o", "/nonexistent/folder/trace.txt", sample, "loop", "1"])
        #expect(unwritable.status == 2 && unwritable.errors.contains("cannot write the trace to '/nonexistent/folder/trace.txt': No such file or directory"))
        #expect(unwritable.output.isEmpty, "the program never ran")
        let nothing = try run([launcher, "-c"])
        #expect(nothing.status == 2 && nothing.errors.contains("no program to run"))
    }

    /// An option after `-e` is not taken for a pattern ('-' and '!' are
    /// glob characters only inside '[...]'), a folder is no program (126,
    /// as a shell says of what it found but cannot run), and a statically
    /// linked program, which no preloaded library reaches, is refused
    /// rather than run untraced without a word. (`-e -c` exited 0 having
    /// traced nothing; a folder was "Permission denied", 127; a static
    /// program ran with no trace and no table.)
    @Test func optionsFoldersAndStaticProgramsAreNamed() throws {
        let option = try run([launcher, "-e", "-c", sample, "loop", "1"])
        #expect(option.status == 2 && option.errors.contains("bad pattern '-c': '-' is part of a glob only inside '[...]'"), "\(option)")
        let range = try run([launcher, "-c", "-e", "str[a-m]*+[!x]trdup", sample, "loop", "1"])
        #expect(range.status == 3, "\(range)")
        try withFolder("folder-program") { folder in
            let folderProgram = try run([launcher, folder.path])
            #expect(folderProgram.status == 126 && folderProgram.errors.contains("cannot run '\(folder.path)': Is a directory"), "\(folderProgram)")
        }
        guard FileManager.default.fileExists(atPath: "/usr/lib/x86_64-linux-gnu/libc.a") else { return }
        try withCompiledC("static", "#include <string.h>\nint main(int argc, char **argv) { return (int)strlen(argv[0]) > 0 ? 0 : 1; }\n",
                          flags: ["-static"]) { program in
            let plain = try run([program])
            try #require(plain.status == 0, "\(plain)")
            let refused = try run([launcher, "-c", "-e", "strlen", program])
            #expect(refused.status == 2 && refused.errors.contains("'\(program)' is statically linked"), "\(refused)")
        }
    }

    /// The -o file is opened once, by hook-trace, once every check has
    /// passed, and handed to the program: a named pipe gets the whole trace
    /// and its end, and a run that never started leaves the file as it
    /// was. (It was opened, emptied and closed before the checks, then
    /// opened again by the traced program: the pipe's reader saw the end
    /// at the first close, and the second open waited for a reader for
    /// ever; a run refused for a missing library emptied the file.)
    @Test func theOutputFileIsOpenedOnceWhenTheProgramRuns() throws {
        try withFolder("output-once") { folder in
            let fifo = try run(["/bin/sh", "-c", #"""
                cd "$1" && mkfifo trace && { cat trace > got & } &&
                timeout 60 "$0" -o trace -e strlen -- "$2" loop 1; echo "rc=$?"; wait; grep -c strlen got
                """#, launcher, folder.path, sample])
            #expect(fifo.output.hasSuffix("rc=3\n1\n"), "\(fifo)")
            let kept = folder.appendingPathComponent("kept.txt")
            try "precious\n".write(to: kept, atomically: true, encoding: .utf8)
            let noLibrary = try run(["env", "HOOK_TRACE_LIBRARY=/nonexistent/libHookTrace.so", launcher, "-o", kept.path, sample, "loop", "1"])
            #expect(noLibrary.status == 2, "\(noLibrary)")
            let noProgram = try run([launcher, "-o", kept.path, folder.path])
            #expect(noProgram.status == 126, "\(noProgram)")
            #expect(try String(contentsOf: kept, encoding: .utf8) == "precious\n")
            let traced = try run([launcher, "-o", kept.path, "-e", "strlen", sample, "loop", "2"])
            #expect(traced.status == 3, "\(traced)")
            let lines = try String(contentsOf: kept, encoding: .utf8)
            #expect(!lines.contains("precious") && lines.contains("strlen"), "\(lines)")
        }
    }

    /// A library whose path has a space or a ':' is refused: ld.so splits
    /// LD_PRELOAD at both, with no escape. (The program ran untraced, ld.so's
    /// "cannot be preloaded ... ignored" the only word of it.)
    @Test func aLibraryPathThatLdPreloadCannotCarryIsRefused() throws {
        try withFolder("library-path") { folder in
            for name in ["a b", "a:b"] {
                let inside = folder.appendingPathComponent(name)
                try FileManager.default.createDirectory(at: inside, withIntermediateDirectories: true)
                let library = inside.appendingPathComponent("libHookTrace.so").path
                try FileManager.default.copyItem(atPath: products.appendingPathComponent("libHookTrace.so").path, toPath: library)
                let refused = try run(["env", "HOOK_TRACE_LIBRARY=" + library, launcher, "-c", "-e", "strlen", sample, "loop", "1"])
                #expect(refused.status == 2, "\(refused)")
                #expect(refused.errors.contains("hook-trace: the library path '\(library)' has a space or ':', which LD_PRELOAD cannot carry"),
                        "\(refused.errors)")
                #expect(refused.output.isEmpty, "the program never ran")
            }
        }
    }

    /// A program is found and run as execvp would: an empty PATH entry
    /// (leading, '::' or trailing) is the current folder, and a file without
    /// a '#!' line is run by /bin/sh. (An empty entry was searched as "/", a
    /// trailing one not at all: "No such file or directory"; and a script
    /// without '#!' ended in "Exec format error".)
    @Test func aProgramIsFoundAndRunAsExecvpDoes() throws {
        try withFolder("path") { folder in
            // (Written by a shell of their own: a descriptor of this process
            // open on them, inherited by a program another test starts
            // meanwhile, would make their exec fail with ETXTBSY.)
            let written = try run(["/bin/sh", "-c", #"""
                printf '#!/bin/sh\necho "line $*"\n' > with-line && printf 'echo "no line $*"\n' > without-line &&
                chmod 755 with-line without-line
                """#], in: folder.path)
            try #require(written.status == 0, "\(written.errors)")
            for path in [":/usr/bin:/bin", "/usr/bin::/bin", "/usr/bin:/bin:"] {
                let found = try run([launcher, "-c", "-e", "strlen", "--", "with-line", "a", "b"], in: folder.path, environment: ["PATH": path])
                #expect(found.status == 0 && found.output == "line a b\n", "PATH=\(path): \(found)")
            }
            for program in ["without-line", "./without-line"] {
                let script = try run([launcher, "-c", "-e", "strlen", "--", program, "x", "y"], in: folder.path,
                                     environment: ["PATH": ":/usr/bin:/bin"])
                #expect(script.status == 0 && script.output == "no line x y\n", "\(program): \(script)")
            }
        }
    }

    /// `-e` with nothing but '+' names no pattern, and no pattern would
    /// mean every function: refused, as `-e ''` is. (It traced everything.)
    @Test func aPatternOfSeparatorsOnlyIsRefused() throws {
        for value in ["+", "++"] {
            let refused = try run([launcher, "-e", value, sample, "loop", "1"])
            #expect(refused.status == 2 && refused.errors.contains("hook-trace: an empty pattern (-e '\(value)')"), "\(refused)")
            #expect(refused.output.isEmpty, "the program never ran")
        }
        let beside = try run([launcher, "-e", "strlen", "-e", "+", sample, "loop", "1"])
        #expect(beside.status == 2 && beside.errors.contains("an empty pattern"), "\(beside)")
    }

    /// A relative HOOK_TRACE_LIBRARY is made absolute: a child that changes
    /// its folder before it execs is traced too. (ld.so looked for the
    /// library in the child's folder: "cannot be preloaded", untraced.)
    @Test func aRelativeLibraryPathStillReachesAChildInAnotherFolder() throws {
        let traced = try run([launcher, "-c", "-L", "-e", "strdup+strlen+free", "--", "/bin/sh", "-c", #"cd / && exec "$0" loop 3"#, sample],
                             in: products.path, environment: ["HOOK_TRACE_LIBRARY": "./libHookTrace.so"])
        #expect(traced.status == 3 && traced.output == "total 36\n", "\(traced)")
        #expect(!traced.errors.contains("cannot be preloaded"), "\(traced.errors)")
        #expect(counts(summaries(traced.errors).last ?? [:]) == ["strdup": 3, "strlen": 3, "free": 3], "\(traced.errors)")
        let missing = try run([launcher, "-c", "/bin/true"], in: products.path, environment: ["HOOK_TRACE_LIBRARY": "no-such-folder/libHookTrace.so"])
        #expect(missing.status == 2 && missing.errors.contains("cannot read its library 'no-such-folder/libHookTrace.so'"), "\(missing)")
    }

    /// A long LD_PRELOAD of the environment is passed on whole, after the
    /// library. (It was cut at 8,192 bytes, without a word.)
    @Test func aLongLdPreloadIsPassedOnWhole() throws {
        let long = (0..<200).map { "/nonexistent/hook-trace-\($0)-" + String(repeating: "a", count: 40) + ".so" }.joined(separator: ":")
        let traced = try run(["env", "LD_PRELOAD=" + long, launcher, "-o", "/dev/null", "-e", "strlen", "--", "/usr/bin/env"])
        #expect(traced.status == 0, "\(traced.errors.suffix(500))")
        let value = traced.output.split(separator: "\n").first { $0.hasPrefix("LD_PRELOAD=") }.map(String.init) ?? ""
        #expect(value.hasPrefix("LD_PRELOAD=/") && value.hasSuffix("/libHookTrace.so:" + long), "\(value.count) bytes: \(value.suffix(200))")
    }

    /// The same calls and counts as ltrace and uftrace report for the same program.
    @Test(.enabled(if: program("ltrace") != nil && program("uftrace") != nil, "ltrace and uftrace are installed by .ci/run"))
    func theSameCountsAsLtraceAndUftrace() throws {
        let ours = try run([launcher, "-c", "-L", "-e", "strdup+strlen+free", sample, "loop", "300"])
        let ourCounts = counts(try #require(summaries(ours.errors).first))
        #expect(ourCounts == ["strdup": 300, "strlen": 300, "free": 300])

        let ltrace = try run(["ltrace", "-c", "-e", "strdup+strlen+free", sample, "loop", "300"])
        #expect(ltrace.output == ours.output)   // (ltrace -c ends with status 0)
        var ltraceCounts: [String: Int] = [:]
        for line in ltrace.errors.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            if fields.count == 5, Double(fields[0]) != nil, let calls = Int(fields[3]) { ltraceCounts[String(fields[4])] = calls }
        }
        #expect(ltraceCounts == ourCounts, "ltrace: \(ltrace.errors)")

        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("hook-trace-uftrace-\(getpid())").path
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let recorded = try run(["uftrace", "record", "--force", "-d", folder, sample, "loop", "300"])
        #expect(recorded.output == ours.output)
        let report = try run(["uftrace", "report", "-d", folder])
        var uftraceCounts: [String: Int] = [:]
        for line in report.output.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            if let name = fields.last, ["strdup", "strlen", "free"].contains(name), fields.count >= 2,
               let calls = Int(fields[fields.count - 2]) { uftraceCounts[String(name)] = calls }
        }
        #expect(uftraceCounts == ourCounts, "uftrace: \(report.output)")
    }
}
