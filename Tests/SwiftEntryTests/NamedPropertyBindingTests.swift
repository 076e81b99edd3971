import Hook
import HookBind
import SwiftEntrySample
import Testing

/// A model that opted in, for the bindings below.
final class TitleModel {
    @Hooked var title = ""
    @Hooked var count = 0
}

extension SwiftEntrySuites {
@Suite struct NamedPropertyBindingTests {
    @Test func aPropertyThatDidNotOptInBoundBothWaysToAHookedOne() throws {
        let ada = Person(name: "Ada"), bob = Person(name: "Bob")
        let model = TitleModel()
        let binding = try Binding.bind(.both(ada, "name", as: String.self), .both(model, \.title))
        ada.name = "Grace"
        #expect(model.title == "Grace")
        model.title = "Linus"
        #expect(ada.name == "Linus")
        // Another object of the class is not part of the binding.
        #expect(bob.name == "Bob")
        bob.name = "Zed"
        #expect(model.title == "Linus")
        binding.unbind()
        ada.name = "after"
        #expect(model.title == "Linus")
    }

    @Test func twoObjectsOfTheSameClassAndTheirLifetimes() throws {
        let a = Person(name: "a")
        weak var weakB: Person?
        let binding: Binding
        do {
            let b = Person(name: "b")
            weakB = b
            binding = try Binding.bind(.both(a, "name", as: String.self), .both(b, "name", as: String.self))
            a.name = "one"
            #expect(b.name == "one")
            b.name = "two"
            #expect(a.name == "two")
            #expect(binding.isBound)
        }
        // The binding does not keep b alive; a set of a after b went is delivered to nobody.
        #expect(weakB == nil)
        a.name = "three"
        #expect(a.name == "three")
        binding.unbind()
    }

    @Test func bindTimeChecksNameTheFish() {
        let ada = Person(name: "Ada")
        let model = TitleModel()
        #expect { try Binding.bind(.both(ada, "nope", as: String.self), .both(model, \.title)) } throws: { error in
            (error as? BindError)?.kind == .notHookable && "\(error)".contains("SwiftEntrySample.Person.nope")
        }
        #expect { try Binding.bind(.both(ada, "name", as: Int.self), .both(model, \.count)) } throws: { error in
            (error as? BindError)?.kind == .typeMismatch && "\(error)".contains("SwiftEntrySample.Person.name")
        }
        // The value types of the group are checked as for @Hooked properties.
        #expect { try Binding.bind(.both(ada, "age", as: Int.self), .both(model, \.title)) } throws: { error in
            (error as? BindError)?.kind == .typeMismatch && "\(error)".contains("SwiftEntrySample.Person.age")
        }
    }
}
}
