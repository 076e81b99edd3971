import CHookTestSupport
#if canImport(Glibc)
import Glibc
#endif
import Hook
import HookObservability
import InMemoryTracing
import Logging
import Metrics
import MetricsTestKit
import Prometheus
import Synchronization
import Testing
import Tracing

struct Negative: Error, CustomStringConvertible {
    var description: String { "negative" }
}

/// Log lines kept in memory.
final class LogLines: @unchecked Sendable {
    private let lines = Mutex<[(Logger.Level, String, Logger.Metadata?)]>([])
    func append(_ line: (Logger.Level, String, Logger.Metadata?)) { lines.withLock { $0.append(line) } }
    var all: [(Logger.Level, String, Logger.Metadata?)] { lines.withLock { $0 } }
}

struct MemoryLogHandler: LogHandler {
    let lines: LogLines
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }
    func log(event: LogEvent) {
        lines.append((event.level, event.message.description, event.metadata))
    }
}

@Suite("Hooked calls as spans, metrics and log lines")
struct HookObservabilityTests {
    @Test func everyCallIsASpanNamedAfterThePointWithTheCallAsAttribute() throws {
        let tracer = InMemoryTracer()
        let add = ClosureHook(name: "add") { (a: Int, b: Int) in a + b }
        add.traced(by: tracer)
        for i in 0..<5 { #expect(add(i, 10) == i + 10) }
        let spans = tracer.finishedSpans
        #expect(spans.count == 5)
        #expect(spans.allSatisfy { $0.operationName == "add" })
        #expect(spans.map { $0.attributes["hook.call"]?.toSpanAttribute() } == (0..<5).map { .string("add(\($0), 10) -> \($0 + 10)") })
        #expect(spans.allSatisfy { $0.errors.isEmpty && $0.status == nil })
    }

    @Test func attributesComeFromTheCall() throws {
        let tracer = InMemoryTracer()
        let add = ClosureHook(name: "add") { (a: Int, b: Int) in a + b }
        add.traced(by: tracer) { call, attributes in
            attributes["a"] = (try? call.argument(0, as: Int.self)) ?? -1
            attributes["sum"] = (try? call.result(as: Int.self)) ?? -1
        }
        _ = add(2, 3)
        let span = try #require(tracer.finishedSpans.first)
        #expect(span.attributes["a"]?.toSpanAttribute() == .int64(2))
        #expect(span.attributes["sum"]?.toSpanAttribute() == .int64(5))
        #expect(span.attributes["hook.call"] == nil)
    }

    /// The span ends when the call returned: building its attributes is not
    /// part of its duration (it ended after them), and an error is recorded
    /// at that instant too.
    @Test func theSpanEndsWhenTheCallReturnedNotAfterItsAttributes() throws {
        let tracer = InMemoryTracer()
        let check = ThrowingClosureHook(name: "check") { (x: Int) throws -> Int in
            if x < 0 { throw Negative() }
            return x
        }
        let attributesBegan = Mutex<UInt64>(0)
        check.traced(by: tracer) { _, attributes in
            attributesBegan.withLock { $0 = DefaultTracerClock.now.nanosecondsSinceEpoch }
            usleep(10_000)
            attributes["slow"] = true
        }
        #expect(throws: Negative.self) { try check(-1) }
        let span = try #require(tracer.finishedSpans.first)
        let began = attributesBegan.withLock { $0 }
        #expect(span.endInstant.nanosecondsSinceEpoch <= began, "the span ended after its attributes began")
        #expect(span.attributes["slow"]?.toSpanAttribute() == .bool(true))
        let error = try #require(span.errors.first)
        #expect(error.instant.nanosecondsSinceEpoch <= span.endInstant.nanosecondsSinceEpoch, "the error is recorded after the span's end")
    }

    /// A call's values in `hook.call` and in a log line are cut: a large
    /// argument does not become a megabyte attribute.
    @Test func largeValuesAreCutInTheCallsDescription() throws {
        let tracer = InMemoryTracer()
        let lines = LogLines()
        let count = ClosureHook(name: "count") { (text: String) in text.count }
        count.traced(by: tracer)
        count.logged(to: Logger(label: "calls") { _ in MemoryLogHandler(lines: lines) })
        let large = String(repeating: "x", count: 100_000)
        #expect(count(large) == 100_000)
        let attribute = try #require(tracer.finishedSpans.first?.attributes["hook.call"]?.toSpanAttribute())
        guard case .string(let text) = attribute else {
            Issue.record("hook.call is \(attribute)")
            return
        }
        let kept = HookPoint.describedValueLength
        #expect(text.count < kept + 40, "\(text.count) characters")
        #expect(text.hasPrefix("count(\"xxx"))
        #expect(text.hasSuffix("…) -> 100000"))
        let line = try #require(lines.all.first?.1)
        #expect(line == text)
        // Short values are whole.
        _ = count("ab")
        #expect(tracer.finishedSpans.last?.attributes["hook.call"]?.toSpanAttribute() == .string(#"count("ab") -> 2"#))
        // One character of 100,000 scalars (Hangul leading jamo join) is cut
        // too: by scalars (it was kept whole, 300 KB).
        _ = count(String(repeating: "\u{1100}", count: 100_000))
        guard case .string(let joined)? = tracer.finishedSpans.last?.attributes["hook.call"]?.toSpanAttribute() else {
            Issue.record("no hook.call")
            return
        }
        #expect(joined.utf8.count < 4 * (kept + 40), "\(joined.utf8.count) bytes")
        #expect(joined.hasSuffix("…) -> 1"))
    }

    @Test func anErrorIsRecordedOnTheSpanAndStillThrown() throws {
        let tracer = InMemoryTracer()
        let check = ThrowingClosureHook(name: "check") { (x: Int) throws -> Int in
            if x < 0 { throw Negative() }
            return x
        }
        check.traced(by: tracer)
        #expect(try check(1) == 1)
        #expect(throws: Negative.self) { try check(-1) }
        let spans = tracer.finishedSpans
        #expect(spans.count == 2)
        #expect(spans[0].errors.isEmpty)
        #expect(spans[1].errors.count == 1)
        #expect(spans[1].errors.first?.error is Negative)
        #expect(spans[1].status?.code == .error)
    }

    @Test func hookedCallsInsideAHookedCallAreItsChildren() throws {
        let tracer = InMemoryTracer()
        let inner = ClosureHook(name: "inner") { (x: Int) in x * 2 }
        let innerFunction = inner.function
        let outer = ClosureHook(name: "outer") { (x: Int) in innerFunction(x) + innerFunction(x + 1) }
        inner.traced(by: tracer)
        outer.traced(by: tracer)
        #expect(outer(1) == 6)
        let spans = tracer.finishedSpans
        let parent = try #require(spans.first { $0.operationName == "outer" })
        let children = spans.filter { $0.operationName == "inner" }
        #expect(children.count == 2)
        #expect(children.allSatisfy { $0.parentSpanID == parent.spanID && $0.traceID == parent.traceID })
        #expect(parent.parentSpanID == nil)
    }

    @Test func asyncCallsNestAcrossSuspensions() async throws {
        let tracer = InMemoryTracer()
        let inner = AsyncClosureHook(name: "load") { (x: Int) async -> Int in
            await Task.yield()
            return x + 1
        }
        let loadFunction = inner.function
        let outer = AsyncClosureHook(name: "fetch") { (x: Int) async throws -> Int in
            await Task.yield()
            let first = try await loadFunction(x)
            try await Task.sleep(nanoseconds: 1_000)
            return try await loadFunction(first)
        }
        inner.traced(by: tracer)
        outer.traced(by: tracer)
        #expect(try await outer(1) == 3)
        let spans = tracer.finishedSpans
        let parent = try #require(spans.first { $0.operationName == "fetch" })
        let children = spans.filter { $0.operationName == "load" }
        #expect(children.count == 2)
        #expect(children.allSatisfy { $0.parentSpanID == parent.spanID })
        #expect(children.first?.attributes["hook.call"]?.toSpanAttribute() == .string("load(1)"))
    }

    /// An async point traced with `attributes` (which it cannot call: an
    /// async call has no CallBack) records no arguments: they may be what
    /// the closure was given to keep out (they were recorded).
    @Test func anAsyncPointTracedWithAttributesRecordsNoArguments() async throws {
        let tracer = InMemoryTracer()
        let login = AsyncClosureHook(name: "login") { (user: String, password: String) async throws -> Bool in !password.isEmpty }
        login.traced(by: tracer) { _, attributes in attributes["user"] = "redacted" }
        #expect(try await login("ada", "hunter2"))
        let span = try #require(tracer.finishedSpans.first)
        #expect(span.operationName == "login")
        #expect(span.attributes["hook.call"] == nil)
    }

    @Test func aCFunctionIsTracedLikeAnyPoint() throws {
        let tracer = InMemoryTracer()
        let hook = try FunctionHook(cFunction: test_add as @convention(c) (Int32, Int32) -> Int32,
                                    signature: Signature(returning: Int32.self, arguments: Int32.self, Int32.self), name: "test_add")
        hook.traced(by: tracer)
        #expect(hook.entry(as: (@convention(c) (Int32, Int32) -> Int32).self)(3, 4) == 7)
        #expect(tracer.finishedSpans.map(\.operationName) == ["test_add"])
        #expect(tracer.finishedSpans.first?.attributes["hook.call"]?.toSpanAttribute() == .string("test_add(3, 4) -> 7"))
    }

    @Test func removedOrOwnerlessTracingStops() throws {
        let tracer = InMemoryTracer()
        let add = ClosureHook(name: "add") { (a: Int, b: Int) in a + b }
        let token = add.traced(by: tracer)
        _ = add(1, 1)
        token.remove()
        _ = add(1, 1)
        #expect(tracer.finishedSpans.count == 1)
        final class Owner {}
        var owner: Owner? = Owner()
        add.traced(by: tracer, owner: owner)
        _ = add(1, 1)
        owner = nil
        _ = add(1, 1)
        #expect(tracer.finishedSpans.count == 2)
        #expect(add.hookCount == 0)
    }

    @Test func callsErrorsAndDurationsAreCountedPerPoint() throws {
        let metrics = TestMetrics()
        let check = ThrowingClosureHook(name: "check") { (x: Int) throws -> Int in
            if x < 0 { throw Negative() }
            return x
        }
        let other = ClosureHook(name: "other") { (x: Int) in x }
        check.measured(factory: metrics)
        other.measured(prefix: "app", factory: metrics)
        for i in -3..<7 { _ = try? check(i) }
        _ = other(1)
        let calls = try metrics.expectCounter("hook_calls_total", [("point", "check")])
        let errors = try metrics.expectCounter("hook_errors_total", [("point", "check")])
        let durations = try metrics.expectTimer("hook_duration_seconds", [("point", "check")])
        #expect(calls.totalValue == 10)
        #expect(errors.totalValue == 3)
        #expect(durations.values.count == 10)
        #expect(durations.values.allSatisfy { $0 >= 0 })
        #expect(try metrics.expectCounter("app_calls_total", [("point", "other")]).totalValue == 1)
        #expect(try metrics.expectCounter("app_errors_total", [("point", "other")]).totalValue == 0)
    }

    /// Two points of the same name keep separate series when each is given
    /// a label of its own (by default they share the name's).
    @Test func aLabelNamesTheSeries() throws {
        let metrics = TestMetrics()
        let first = ClosureHook(name: "deposit") { (x: Int) in x }
        let second = ClosureHook(name: "deposit") { (x: Int) in x }
        first.measured(point: "Account.deposit", factory: metrics)
        second.measured(point: "Wallet.deposit", factory: metrics)
        _ = first(1)
        _ = second(1)
        _ = second(2)
        #expect(try metrics.expectCounter("hook_calls_total", [("point", "Account.deposit")]).totalValue == 1)
        #expect(try metrics.expectCounter("hook_calls_total", [("point", "Wallet.deposit")]).totalValue == 2)
    }

    /// Entry hooks on SQLite's API, measured into swift-prometheus: the
    /// registry's text exposition counts every call. (sqlite3_bind_int and
    /// sqlite3_column_int: no other test calls them, so the counts are this
    /// test's. Entry hooks, since the calls come from this process's own
    /// image, whose import slots an ImportHook leaves alone; the sanitizers'
    /// runs refuse entry hooks.)
    @Test(.enabled(if: hk_test_malloc_counting_available(), "entry hooks are refused under a sanitizer"))
    func sqliteCallsInPrometheusTextExposition() throws {
        let registry = PrometheusCollectorRegistry()
        let factory = PrometheusMetricsFactory(registry: registry)
        let bind = try EntryHook(symbol: "sqlite3_bind_int", signature: Signature(returning: .int32, arguments: [.pointer, .int32, .int32]))
        defer { try? bind.restore() }
        let column = try EntryHook(symbol: "sqlite3_column_int", signature: Signature(returning: .int32, arguments: [.pointer, .int32]))
        defer { try? column.restore() }
        bind.measured(prefix: "sqlite", factory: factory)
        column.measured(prefix: "sqlite", factory: factory)

        var db: OpaquePointer?
        #expect(sqlite3_open(":memory:", &db) == SQLITE_OK)
        defer { sqlite3_close(db) }
        func run(_ sql: String, _ body: (OpaquePointer?) -> Void = { _ in }) {
            var statement: OpaquePointer?
            #expect(sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK)
            body(statement)
            sqlite3_finalize(statement)
        }
        run("CREATE TABLE t(x INTEGER)") { #expect(sqlite3_step($0) == SQLITE_DONE) }
        run("INSERT INTO t VALUES (?)") { insert in
            for i in 1...7 {
                #expect(sqlite3_bind_int(insert, 1, Int32(i)) == SQLITE_OK)
                #expect(sqlite3_step(insert) == SQLITE_DONE)
                sqlite3_reset(insert)
            }
            #expect(sqlite3_bind_int(insert, 5, 0) == SQLITE_RANGE)   // no such parameter: a call all the same
        }
        var sum: Int32 = 0
        run("SELECT x FROM t") { select in
            while sqlite3_step(select) == SQLITE_ROW { sum += sqlite3_column_int(select, 0) }
        }
        #expect(sum == 28)

        let text = registry.emitToString()
        #expect(text.contains("# TYPE sqlite_calls_total counter"), "\(text)")
        #expect(text.contains(#"sqlite_calls_total{point="sqlite3_bind_int"} 8"#), "\(text)")
        #expect(text.contains(#"sqlite_calls_total{point="sqlite3_column_int"} 7"#), "\(text)")
        #expect(text.contains(#"sqlite_errors_total{point="sqlite3_bind_int"} 0"#), "\(text)")
        #expect(text.contains(#"sqlite_duration_seconds_count{point="sqlite3_column_int"} 7"#), "\(text)")
    }

    @Test func asyncCallsAreCountedWithTheirSuspensions() async throws {
        let metrics = TestMetrics()
        let wait = AsyncClosureHook(name: "wait") { (nanoseconds: UInt64) async throws -> Int in
            try await Task.sleep(nanoseconds: nanoseconds)
            return 1
        }
        wait.measured(factory: metrics)
        _ = try await wait(2_000_000)
        let durations = try metrics.expectTimer("hook_duration_seconds", [("point", "wait")])
        #expect(try metrics.expectCounter("hook_calls_total", [("point", "wait")]).totalValue == 1)
        #expect((durations.values.first ?? 0) >= 2_000_000, "the duration includes the suspension")
    }

    @Test func everyCallIsALogLineAtItsLevel() {
        let lines = LogLines()
        var logger = Logger(label: "calls") { _ in MemoryLogHandler(lines: lines) }
        logger.logLevel = .info
        let add = ClosureHook(name: "add") { (a: Int, b: Int) in a + b }
        add.logged(to: logger)
        let quiet = ClosureHook(name: "quiet") { (a: Int) in a }
        quiet.logged(to: logger, level: .debug)
        _ = add(1, 2)
        _ = add(3, 4)
        _ = quiet(5)
        let logged = lines.all
        #expect(logged.map(\.1) == ["add(1, 2) -> 3", "add(3, 4) -> 7"], "the debug line is below the logger's level")
        #expect(logged.allSatisfy { $0.0 == .info && $0.2?["hook.point"] == "add" })
    }

    @Test func withNoTracerBootstrappedCallsRunAsBefore() {
        // InstrumentationSystem is not bootstrapped in this process: its tracer is a no-op one.
        let add = ClosureHook(name: "add") { (a: Int, b: Int) in a + b }
        add.traced()
        #expect(add(20, 22) == 42)
    }
}
