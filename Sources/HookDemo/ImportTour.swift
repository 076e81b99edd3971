// Import hooks: calls that a library we do not control (SQLite) makes to libc,
// observed and changed without its cooperation.
import CHookDemoSupport
import Foundation
import Hook

/// State the tour's hooks update (they run on the thread that calls SQLite: this one).
private final class WriteTally {
    var bytes = 0
    var calls = 0
}

private func run(_ db: OpaquePointer?, _ sql: String) -> String? {
    var statement: OpaquePointer?
    guard sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK else { return nil }
    defer { sqlite3_finalize(statement) }
    var last: String?
    while sqlite3_step(statement) == SQLITE_ROW {
        last = sqlite3_column_text(statement, 0).map { String(cString: $0) }
    }
    return last
}

func importTour() throws {
    section("Import hooks: what SQLite asks of libc, seen and changed from outside")
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hook-demo-\(getpid())")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let path = directory.appendingPathComponent("tour.db").path

    // After hooks on write and pwrite64 as libsqlite3 imports them: count the bytes written.
    let tally = WriteTally()
    let pwrite = try ImportHook(symbol: "pwrite64",
                                signature: Signature(returning: Int.self, arguments: Int32.self, UnsafeRawPointer?.self, Int.self, Int64.self),
                                in: ["libsqlite3.so.0"])
    let write = try ImportHook(symbol: "write",
                               signature: Signature(returning: Int.self, arguments: Int32.self, UnsafeRawPointer?.self, Int.self),
                               in: ["libsqlite3.so.0"])
    for hook in [pwrite, write] {
        hook.after { call in
            let written = try call.result(as: Int.self)
            if written > 0 { tally.bytes += written; tally.calls += 1 }
        }
    }
    print(pwrite)
    for slot in pwrite.slots { print("  patched \(slot)") }

    // Pin SQLite's clock: an instead hook on the gettimeofday it imports.
    let clock = try ImportHook(symbol: "gettimeofday",
                               signature: Signature(returning: Int32.self, arguments: UnsafeMutableRawPointer?.self, UnsafeMutableRawPointer?.self),
                               in: ["libsqlite3.so.0"])
    clock.instead { call in
        if let tv = try call.argument(0, as: UnsafeMutableRawPointer?.self) {
            tv.assumingMemoryBound(to: timeval.self).pointee = timeval(tv_sec: 1_000_000_000, tv_usec: 0)
        }
        try call.setResult(Int32(0))
    }

    var db: OpaquePointer?
    guard sqlite3_open(path, &db) == SQLITE_OK else { throw CocoaError(.fileWriteUnknown) }
    _ = run(db, "CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT, at TEXT)")
    for i in 1...100 { _ = run(db, "INSERT INTO notes(body, at) VALUES ('note \(i)', datetime('now'))") }
    let now = run(db, "SELECT datetime('now')") ?? "?"
    let stamped = run(db, "SELECT count(*) FROM notes WHERE at = '2001-09-09 01:46:40'") ?? "?"
    sqlite3_close(db)
    let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
    print("SQLite wrote \(tally.bytes) bytes in \(tally.calls) calls (the database file is \(size) bytes, plus its journal)")
    print("SQLite's clock, pinned: datetime('now') = \(now); rows stamped with it: \(stamped)")

    for hook in [pwrite, write, clock] { try hook.restore() }
    let bytesBefore = tally.bytes
    sqlite3_open(path, &db)
    _ = run(db, "INSERT INTO notes(body, at) VALUES ('after', datetime('now'))")
    let later = run(db, "SELECT datetime('now')") ?? "?"
    sqlite3_close(db)
    print("after restore(): writes no longer counted (\(tally.bytes - bytesBefore) more bytes seen); the clock is real again: \(later != now)")

    // Pin getenv for code that looks it up with dlsym after the hook (a plugin, a lazily bound library).
    let getenvHook = try ImportHook(symbol: "getenv",
                                    signature: Signature(returning: UnsafeMutablePointer<CChar>?.self, arguments: UnsafePointer<CChar>?.self))
    let pinned = strdup("pinned-by-hook")!
    defer { free(pinned) }
    nonisolated(unsafe) let answer = pinned
    getenvHook.instead { call in
        let name = try call.argument(0, as: UnsafePointer<CChar>?.self).map { String(cString: $0) }
        if name == "HOOK_DEMO_MODE" { try call.setResult(Optional(answer)) } else { try call.invokeOriginal() }
    }
    typealias GetenvFn = @convention(c) (UnsafePointer<CChar>?) -> UnsafeMutablePointer<CChar>?
    let lookedUp = unsafeBitCast(dlsym(nil, "getenv"), to: GetenvFn.self)
    print("getenv(\"HOOK_DEMO_MODE\") through a pointer from dlsym: \(lookedUp("HOOK_DEMO_MODE").map { String(cString: $0) } ?? "unset")")
    try getenvHook.restore()
    let real = unsafeBitCast(dlsym(nil, "getenv"), to: GetenvFn.self)
    print("after restore(), dlsym hands out the real getenv: \(real("HOOK_DEMO_MODE").map { String(cString: $0) } ?? "unset")")
}

/// Entry hooks: calls a library makes to its own functions, and a `static`
/// function nobody exports, seen at the function's first instruction.
func entryTour() throws {
    section("Entry hooks: any function, hooked at its first instructions")
    var db: OpaquePointer?
    guard sqlite3_open(":memory:", &db) == SQLITE_OK else { throw CocoaError(.fileWriteUnknown) }
    defer { sqlite3_close(db) }
    sqlite3_exec(db, "CREATE TABLE t(x); WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100) INSERT INTO t SELECT i FROM n;", nil, nil, nil)
    let step = try EntryHook(symbol: "sqlite3_step", signature: Signature(returning: .int32, arguments: [.pointer]))
    let steps = WriteTally()
    step.after { _ in steps.calls += 1 }
    var rows: Int32 = 0
    withUnsafeMutablePointer(to: &rows) { counter in
        _ = sqlite3_exec(db, "SELECT x FROM t", { counter, _, _, _ in
            counter!.assumingMemoryBound(to: Int32.self).pointee += 1
            return 0
        }, counter, nil)
    }
    try step.restore()
    print("sqlite3_exec returned \(rows) rows; an entry hook on sqlite3_step saw SQLite call it \(steps.calls) times")

    // A static C function of this program, found in its symbol table.
    print("sum of the digits of \"2026-11-25\": \(demo_sum_digits("2026-11-25"))")
    let digit = try EntryHook(symbol: "demo_digit_value", signature: Signature(returning: .int64, arguments: [.int64]))
    digit.after { call in try call.setResult(try call.result(as: Int64.self) * 10) }
    print("with an entry hook on the static demo_digit_value (result x 10): \(demo_sum_digits("2026-11-25"))")
    try digit.restore()
    print("restored: \(demo_sum_digits("2026-11-25"))")
}
