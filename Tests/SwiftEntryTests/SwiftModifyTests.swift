import Hook
import SwiftEntrySample
import Testing

extension SwiftEntrySuites {
@Suite struct SwiftModifyTests {
    @Test func plusEqualsFromAnotherModuleIsObservedWithTheValueAfterTheAccess() throws {
        let age = try SwiftModifyHook.named("SwiftEntrySample.Person.age", of: Person.self, as: Int.self)
        defer { try? age.restore() }
        let ada = Person(name: "Ada", age: 36), bob = Person(name: "Bob", age: 50)
        var seen: [String] = []
        age.afterAccess { person, value in seen.append("\(person.name) \(value)") }
        ada.age += 1
        bob.age -= 10
        #expect(seen == ["Ada 37", "Bob 40"])
        #expect(ada.age == 37 && bob.age == 40)

        // For one object; a String property's append (an inout access) too.
        age.removeAllHooks()
        seen = []
        age.afterAccess(for: ada) { person, value in seen.append("\(person.name) \(value)") }
        ada.age += 2
        bob.age += 2
        #expect(seen == ["Ada 39"])
        let name = try SwiftModifyHook.named("SwiftEntrySample.Person.name", of: Person.self, as: String.self)
        defer { try? name.restore() }
        var names: [String] = []
        name.afterAccess { _, value in names.append(value) }
        ada.name += " Lovelace"
        ada.name.append("!")
        #expect(names == ["Ada Lovelace", "Ada Lovelace!"])
        #expect(ada.name == "Ada Lovelace!")

        // A computed property: its modify yields a copy and sets it when the access ends.
        let title = try SwiftModifyHook.named("SwiftEntrySample.Person.title", of: Person.self, as: String.self)
        defer { try? title.restore() }
        var titles: [String] = []
        title.afterAccess { person, value in titles.append("\(value) -> \(person.name)") }
        ada.title += "?"
        #expect(titles == ["Ada Lovelace! (39)? -> Ada Lovelace! (39)?"])
    }

    @Test func anAccessInsideTheHookRunsNoHookAndErrorsNameWhatWasWritten() throws {
        let age = try SwiftModifyHook.named("SwiftEntrySample.Person.age", of: Person.self, as: Int.self)
        defer { try? age.restore() }
        var runs = 0
        age.afterAccess { person, _ in
            runs += 1
            person.age += 100   // an access inside the hook: no hook
        }
        let ada = Person(name: "Ada", age: 1)
        ada.age += 1
        #expect(runs == 1 && ada.age == 102)
        #expect { try SwiftModifyHook.named("SwiftEntrySample.Person.age", of: Person.self, as: String.self) } throws: { error in
            (error as? HookError)?.kind == .typeMismatch && "\(error)".contains("Swift.Int") && "\(error)".contains("stated Swift.String")
        }
        #expect { try SwiftModifyHook.named("SwiftEntrySample.Person.height", of: Person.self, as: Int.self) } throws: { error in
            (error as? HookError)?.kind == .symbolNotFound && "\(error)".contains("SwiftEntrySample.Person.height")
        }
    }
}
}
