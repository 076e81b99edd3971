import Foundation
import Synchronization
import Hook
import Testing

/// Foundation's own code, unchanged callers: pinned and counted by name.
extension SwiftEntrySuites {
@Suite struct FoundationByNameTests {
    @Test func uuidAndDatePinnedInATest() throws {
        let fixed = UUID(uuidString: "12345678-1234-1234-1234-123456789ABC")!
        let uuid = try SwiftEntryHook.named("Foundation.UUID.init()", as: (() -> UUID).self)
        defer { try? uuid.restore() }
        // Pinned on this test's thread only: tests beside it keep the real ones.
        let thread = pthread_self()
        uuid.instead { call in if pthread_equal(pthread_self(), thread) != 0 { try call.setResult(fixed) } else { try call.invokeOriginal() } }
        let date = try SwiftEntryHook.named("Foundation.Date.init()", as: (() -> Date).self)
        defer { try? date.restore() }
        let noon = Date(timeIntervalSince1970: 1_700_000_000)
        date.instead { call in if pthread_equal(pthread_self(), thread) != 0 { try call.setResult(noon) } else { try call.invokeOriginal() } }

        // The code under test calls UUID() and Date() as always.
        struct Order { let id = UUID(); let placed = Date() }
        let order = Order()
        #expect(order.id == fixed)
        #expect(order.placed == noon)
        try uuid.restore()
        try date.restore()
        #expect(UUID() != fixed)
        #expect(Date() != noon)
    }
}
}

extension SwiftEntrySuites.FoundationByNameTests {
    @Test func jsonEncoderCallsCounted() throws {
        struct Item: Codable { let id: Int }
        let calls = Mutex(0)
        // Generic (encode<T: Encodable>): traced, not typed.
        let trace = try SwiftTrace("Foundation.JSONEncoder.encode(_:)") { _ in calls.withLock { $0 += 1 } }
        defer { trace.stop() }
        #expect(trace.functions == ["FoundationEssentials.JSONEncoder.encode(_:)"])
        let encoder = JSONEncoder()
        for i in 0..<3 { _ = try encoder.encode(Item(id: i)) }
        #expect(String(decoding: try encoder.encode([1, 2]), as: UTF8.self) == "[1,2]")
        #expect(calls.withLock { $0 } == 4)
        trace.stop()
        _ = try encoder.encode(Item(id: 9))
        #expect(calls.withLock { $0 } == 4)

        // Every member of the class (the README's example).
        let names = Mutex<[String]>([])
        let all = try SwiftTrace("Foundation.JSONEncoder.*") { call in names.withLock { $0.append(call.name) } }
        _ = try JSONEncoder().encode([1, 2])
        all.stop()
        #expect(names.withLock { $0.contains("FoundationEssentials.JSONEncoder.init()") && $0.contains("FoundationEssentials.JSONEncoder.encode(_:)") },
                "\(names.withLock { $0 })")
    }
}
