import Hook
import SwiftEntrySample
import Synchronization
import Testing

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
}
}
