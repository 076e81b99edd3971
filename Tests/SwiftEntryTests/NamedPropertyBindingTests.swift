import Foundation
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

    /// Two bindings of the same property of two objects share nothing: a
    /// callback of one can wait for another thread's write of the other.
    /// (The setter's hook point is the class's, and its lock group joined
    /// every binding of any object's `name`: the other thread waited for
    /// the callback, which waited for it, 2 s.)
    @Test(.timeLimit(.minutes(1)))
    func bindingsOfOnePropertyOfTwoObjectsDoNotWaitForEachOther() throws {
        let p1 = Person(name: "a"), p2 = Person(name: "b")
        let m1 = TitleModel(), m2 = TitleModel()
        let b2 = try Binding.bind(.both(p2, "name", as: String.self), .both(m2, \.title))
        final class Outcome: @unchecked Sendable { var waited: DispatchTimeoutResult? }
        let outcome = Outcome()
        nonisolated(unsafe) let other = m2
        let b1 = try Binding.bind(.both(p1, "name", as: String.self), .both(m1, \.title) { _, _ in
            let done = DispatchSemaphore(value: 0)
            Thread {
                other.title = "x"
                done.signal()
            }.start()
            outcome.waited = done.wait(timeout: .now() + 2)
        })
        p1.name = "go"
        #expect(outcome.waited == .success)
        #expect(p2.name == "x")
        b1.unbind()
        b2.unbind()
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
