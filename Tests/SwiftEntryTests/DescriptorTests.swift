@testable import Hook
import SwiftEntrySample
import Testing

extension SwiftEntrySuites {
@Suite struct DescriptorTests {
    /// A module built with library evolution keeps its methods' implementation
    /// symbols local (stripped, they are gone); their method descriptors stay.
    @Test func aClassMethodFoundThroughItsMethodDescriptorAlone() throws {
        let direct = try SwiftEntryPoint.find("SwiftEntrySample.Person.greet(_:)", object: nil)
        let described = try _SwiftNames.$descriptorsOnly.withValue(true) {
            try SwiftEntryPoint.find("SwiftEntrySample.Person.greet(_:)", object: nil)
        }
        #expect(described.address == direct.address)
        #expect(described.size == 0 && direct.size > 0)
        #expect(described.demangled == direct.demangled)
        // A free function has no descriptor: not found that way.
        #expect(throws: HookError.self) {
            try _SwiftNames.$descriptorsOnly.withValue(true) { try SwiftEntryPoint.find("SwiftEntrySample.shout(_:)", object: nil) }
        }
    }
}
}
