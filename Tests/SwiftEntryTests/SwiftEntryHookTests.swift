import Hook
import SwiftEntrySample
import Testing

@Suite(.serialized, .enabled(if: EntryHook.isAvailable))
struct SwiftEntryHookTests {
    @Test func aFreeFunctionHookedByName() throws {
        let hook = try SwiftEntryHook.named("SwiftEntrySample.shout(_:)", as: ((String) -> String).self)
        defer { try? hook.restore() }
        #expect(shout("abc") == "ABC")
        var seen: [String] = []
        hook.after { call in
            seen.append(try call.argument(0, as: String.self))
            try call.setResult(try call.result(as: String.self) + "!")
        }
        #expect(shout("hello, a longer string than fifteen bytes") == "HELLO, A LONGER STRING THAN FIFTEEN BYTES!")
        #expect(seen == ["hello, a longer string than fifteen bytes"])
        try hook.restore()
        #expect(shout("x") == "X")
    }

    @Test func aMethodOfAnOpenClass() throws {
        let hook = try SwiftEntryHook.named("SwiftEntrySample.Person.greet(_:)", as: ((Person, String) -> String).self)
        defer { try? hook.restore() }
        let ada = Person(name: "Ada"), bob = Person(name: "Bob")
        hook.before { call in try call.setArgument(1, to: "you") }
        #expect(ada.greet("Carl") == "Hello you, I am Ada")
        hook.removeAllHooks()
        try hook.instead(for: bob) { call in try call.setResult("no") }
        #expect(bob.greet("x") == "no")
        #expect(ada.greet("x") == "Hello x, I am Ada")
    }
}
