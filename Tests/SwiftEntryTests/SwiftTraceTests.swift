import Hook
import SwiftEntrySample
import Synchronization
import Testing
import Foundation

extension SwiftEntrySuites {
@Suite struct SwiftTraceTests {
    @Test func everyMethodOfAClassWithDurationsAndDepth() throws {
        let calls = Mutex<[SwiftTrace.Call]>([])
        let trace = try SwiftTrace("SwiftEntrySample.Person.*") { call in calls.withLock { $0.append(call) } }
        defer { trace.stop() }
        #expect(trace.functions.contains("SwiftEntrySample.Person.greet(_:)"))
        #expect(trace.functions.contains("SwiftEntrySample.Person.init(name:age:)"))
        #expect(trace.functions.contains("SwiftEntrySample.Person.title.getter"))
        let ada = Person(name: "Ada", age: 3)
        #expect(ada.greet("Bob") == "Hello Bob, I am Ada")
        #expect(ada.title == "Ada (3)")
        let names = calls.withLock { $0.map(\.name) }
        // title's getter reads name and age: nested, reported first, one deeper.
        #expect(names == [
            "SwiftEntrySample.Person.init(name:age:)",
            "SwiftEntrySample.Person.name.getter", "SwiftEntrySample.Person.greet(_:)",
            "SwiftEntrySample.Person.name.getter", "SwiftEntrySample.Person.age.getter", "SwiftEntrySample.Person.title.getter",
        ] || names == [
            "SwiftEntrySample.Person.init(name:age:)", "SwiftEntrySample.Person.greet(_:)", "SwiftEntrySample.Person.title.getter",
        ])
        let title = try #require(calls.withLock { $0.last })
        #expect(title.depth == 0 && title.nanoseconds > 0)
        #expect(calls.withLock { $0.filter { $0.depth > 0 }.allSatisfy { $0.name.hasSuffix(".getter") } })
    }

    @Test func aThrowingFunctionAndAModuleWideTrace() throws {
        let calls = Mutex<[SwiftTrace.Call]>([])
        let trace = try SwiftTrace("SwiftEntrySample.parse*") { call in calls.withLock { $0.append(call) } }
        defer { trace.stop() }
        #expect(throws: SampleError.empty) { try parseNumber("") }
        #expect(try parseNumber("12") == 12)
        #expect(calls.withLock { $0.map(\.threw) } == [true, false])
    }

    /// Two traces of one function: each reports the call once, at its own
    /// depth (0: the call is one, however many traces hear it), and whether
    /// it threw, though the inner trace's report calls a traced function
    /// (run unhooked) that does not throw.
    @Test func twoTracesOfOneFunctionEachHearTheCallAsItWas() throws {
        let me = pthread_self()
        let outer = Mutex<[SwiftTrace.Call]>([]), inner = Mutex<[SwiftTrace.Call]>([])
        let first = try SwiftTrace("SwiftEntrySample.parseNumber(_:)") { call in
            if pthread_equal(pthread_self(), me) != 0 { outer.withLock { $0.append(call) } }
        }
        defer { first.stop() }
        let second = try SwiftTrace("SwiftEntrySample.parse*") { call in
            guard pthread_equal(pthread_self(), me) != 0 else { return }
            inner.withLock { $0.append(call) }
            _ = try? parseNumber("1")
        }
        defer { second.stop() }
        #expect(throws: SampleError.empty) { try parseNumber("") }
        #expect(try parseNumber("12") == 12)
        #expect(outer.withLock { $0.map(\.threw) } == [true, false])
        #expect(inner.withLock { $0.map(\.threw) } == [true, false])
        #expect(outer.withLock { $0.map(\.depth) } == [0, 0])
        #expect(inner.withLock { $0.map(\.depth) } == [0, 0])
    }

    /// Two threads each start a trace of the same function, call it and
    /// stop the trace, over and over: each trace hears each of its
    /// thread's calls while it runs, whatever the other's stop does (a
    /// stop puts the function's bytes back only where no trace follows it,
    /// and a trace that began meanwhile patches them again).
    @Test func twoTracesOfOneFunctionStartedAndStoppedOnTwoThreads() throws {
        let missed = Atomic<Int>(0), heard = Atomic<Int>(0)
        let threads = (0..<2).map { t in
            Thread {
                for i in 0..<300 {
                    let mine = Atomic<Int>(0)
                    let me = pthread_self()
                    guard let trace = try? SwiftTrace("SwiftEntrySample.tracedByTwo(_:)", { _ in
                        if pthread_equal(pthread_self(), me) != 0 { mine.add(1, ordering: .relaxed) }
                    }) else { missed.add(1000, ordering: .relaxed); return }
                    #expect(tracedByTwo(i + t) == i + t + 1)
                    #expect(tracedByTwo(i) == i + 1)
                    trace.stop()
                    let count = mine.load(ordering: .relaxed)
                    heard.add(count, ordering: .relaxed)
                    if count != 2 { missed.add(1, ordering: .relaxed) }
                }
            }
        }
        for thread in threads { thread.start() }
        while !threads.allSatisfy(\.isFinished) { usleep(1_000) }
        #expect(missed.load(ordering: .relaxed) == 0, "\(heard.load(ordering: .relaxed)) calls heard of 1,200")
    }

    @Test func whatCannotBeTracedIsSaid() throws {
        #expect { try SwiftTrace("Swift.String.*") { _ in } } throws: { error in
            (error as? HookError)?.kind == .invalidValue && "\(error)".contains("Swift")
        }
        #expect { try SwiftTrace("SwiftEntrySample.NoSuchType.*") { _ in } } throws: { error in
            (error as? HookError)?.kind == .symbolNotFound && "\(error)".contains("SwiftEntrySample.NoSuchType.*")
        }
        // A function with a typed hook point is left to it.
        let typed = try SwiftEntryHook.named("SwiftEntrySample.Point.scaled(by:)", as: ((Point, Double) -> Point).self)
        defer { try? typed.restore() }
        let trace = try SwiftTrace("SwiftEntrySample.Point.*") { _ in }
        defer { trace.stop() }
        #expect(trace.skipped.contains { $0.hasPrefix("SwiftEntrySample.Point.scaled(by:)") })
        #expect(Point(x: 1, y: 1).scaled(by: 2) == Point(x: 2, y: 2))
    }

    /// Async members are left out, async getters too (named as plain
    /// getters: the async function pointer beside them says it), and run as
    /// they did; the rest of the class is traced.
    @Test func asyncMembersAreSkipped() async throws {
        let calls = Mutex<[String]>([])
        let trace = try SwiftTrace("SwiftEntrySample.Remote.*") { call in calls.withLock { $0.append(call.name) } }
        defer { trace.stop() }
        #expect(trace.skipped.contains("SwiftEntrySample.Remote.answer.getter: async"), "\(trace.skipped)")
        #expect(trace.skipped.contains("SwiftEntrySample.Remote.fetch(): async"), "\(trace.skipped)")
        #expect(trace.functions == ["SwiftEntrySample.Remote.init()"])
        let remote = Remote()
        #expect(await remote.answer == 42)
        #expect(await remote.fetch() == 7)
        #expect(calls.withLock { $0 } == ["SwiftEntrySample.Remote.init()"])
        // A struct's async getter alone: nothing to trace, and the reason.
        #expect { try SwiftTrace("SwiftEntrySample.Gauge.level.getter") { _ in } } throws: { error in
            (error as? HookError)?.kind == .cannotPatch && "\(error)".contains("SwiftEntrySample.Gauge.level.getter: async")
        }
        #expect(await Gauge().level == 3)
    }
}
}
