import Foundation
import Hook
import HookBind
import Testing

final class Person: @unchecked Sendable {
    @Hooked var name: String
    @Hooked var age = NSNumber(value: 0)
    var nickname = ""
    init(name: String) { self.name = name }
}

final class Noted: @unchecked Sendable {
    @Hooked var title = ""
    var plain = "" { didSet { sets += 1 } }
    var sets = 0
}

final class Field: @unchecked Sendable {
    @Hooked var text = ""
    var number = 0.0
}

extension Notification.Name {
    static let fieldDidChange = Notification.Name("FieldTextDidChange")
}

@Suite("Bindings (BND): source -> destination with triggers and transformers")
struct PropertyBindingTests {
    /// A trigger added while another thread invalidates the binding is
    /// stopped (its hook removed) and the add throws, or it is stopped by
    /// the invalidation: it never runs on. (Started, then appended after the
    /// invalidation emptied the list, it stayed on the property.)
    @Test func aTriggerAddedWhileTheBindingIsInvalidatedDoesNotRunOn() throws {
        for _ in 0..<300 {
            let person = Person(name: "x"), field = Field()
            let binding = PropertyBinding(source: BoundProperty(person, \.name), destination: BoundProperty(field, \.text))
            let trigger = HookTrigger(person, \.name)
            onThreads(2) { t in
                if t == 0 { try? binding.addTrigger(trigger) } else { binding.invalidate() }
            }
            #expect(!binding.isActive)
            #expect(person.$name.hookCount == 0)
        }
    }

    /// The seed: person.name -> textField.text by the name's setter, and
    /// textField.text -> person.name by a notification from that field.
    @Test func theSeedsTwoBindings() throws {
        let person = Person(name: "Jimmy")
        let textField = Field()
        let bindings = PropertyBindings()
        let toField = PropertyBinding(source: BoundProperty(person, \.name), destination: BoundProperty(textField, \.text))
        try toField.addTrigger(HookTrigger(person, \.name))
        bindings.add(toField)
        #expect(textField.text == "Jimmy")  // the initial value, when the trigger started
        person.name = "James"
        #expect(textField.text == "James")

        let center = NotificationCenter()
        let toPerson = PropertyBinding(source: BoundProperty(textField, \.text), destination: BoundProperty(person, \.name))
        try toPerson.addTrigger(NotificationTrigger(center: center, name: .fieldDidChange, sender: textField))
        bindings.add(toPerson)
        textField.text = "Jim"  // no notification yet: not delivered
        #expect(person.name == "James")
        center.post(name: .fieldDidChange, object: textField)
        #expect(person.name == "Jim")
        #expect(bindings.count == 2)
        bindings.invalidateAll()
        person.name = "nobody"
        #expect(textField.text == "Jim")
    }

    /// Six fields bound pairwise both ways (30 bindings, each fired by a
    /// `HookTrigger` on its source): a set reaches all six, each binding
    /// delivering it once (at most 31 sets, 326 when each set went along
    /// every path of bindings).
    @Test func fieldsBoundPairwiseBothWaysGetASetOncePerBinding() throws {
        let fields = (0..<6).map { _ in Field() }
        var bindings: [PropertyBinding<String>] = []
        for source in fields {
            for destination in fields where destination !== source {
                let binding = PropertyBinding(source: BoundProperty(source, \.text), destination: BoundProperty(destination, \.text))
                try binding.addTrigger(HookTrigger(source, \.text))
                bindings.append(binding)
            }
        }
        var sets = 0
        for field in fields { field.$text.didSet { _, _ in sets += 1 } }
        fields[3].text = "mesh"
        #expect(fields.allSatisfy { $0.text == "mesh" })
        #expect(sets <= 31)
        withExtendedLifetime(bindings) {}
    }

    /// A set that stores nothing (taken over by an `instead` hook that does
    /// not run the original, or vetoed) does not fire the trigger.
    @Test func aSetThatStoresNothingDoesNotFire() throws {
        let source = Holder()
        let trigger = HookTrigger(source, \.value)
        let fired = Shared(0)
        try trigger.start { fired.mutate { $0 += 1 } }
        var token = source.$value.instead { _ in }
        source.value = 9
        token.remove()
        token = source.$value.before { call in try call.veto() }
        source.value = 8
        token.remove()
        #expect(fired.value == 0)
        source.value = 10
        #expect(fired.value == 1)
        trigger.stop()
    }

    @Test func aNotificationFromAnotherSenderIsIgnored() throws {
        let person = Person(name: "a"), field = Field(), otherField = Field()
        let center = NotificationCenter()
        let binding = PropertyBinding(source: BoundProperty(field, \.text), destination: BoundProperty(person, \.nickname))
        try binding.addTrigger(NotificationTrigger(center: center, name: .fieldDidChange, sender: field))
        field.text = "x"
        center.post(name: .fieldDidChange, object: otherField)
        #expect(person.nickname == "")
        center.post(name: .fieldDidChange, object: field)
        #expect(person.nickname == "x")
        binding.invalidate()
        field.text = "y"
        center.post(name: .fieldDidChange, object: field)
        #expect(person.nickname == "x")
    }

    @Test func aManualTriggerDeliversWhenFired() throws {
        let person = Person(name: "start"), field = Field()
        let trigger = ManualTrigger()
        let binding = PropertyBinding(source: BoundProperty(person, \.name), destination: BoundProperty(field, \.text))
        try binding.addTrigger(trigger)
        #expect(field.text == "start")
        person.name = "later"
        #expect(field.text == "start")
        trigger.fire()
        #expect(field.text == "later")
        #expect {
            try PropertyBinding(source: BoundProperty(person, \.name), destination: BoundProperty(field, \.text)).addTrigger(trigger)
        } throws: { ($0 as! BindError).kind == .duplicateFish }
    }

    /// A trigger that serves a binding already is refused with a message
    /// that names what it watches (it named neither).
    @Test func aTriggerServingABindingIsRefusedByName() throws {
        let person = Person(name: "start"), field = Field()
        let trigger = HookTrigger(person, \.name)
        try PropertyBinding(source: BoundProperty(person, \.name), destination: BoundProperty(field, \.text)).addTrigger(trigger)
        #expect {
            try PropertyBinding(source: BoundProperty(person, \.name), destination: BoundProperty(field, \.text)).addTrigger(trigger)
        } throws: { error in
            let error = error as! BindError
            return error.kind == .duplicateFish && error.message.contains("name") && error.message.contains("make a trigger for each binding")
        }
        let note = NotificationTrigger(name: Notification.Name("HookBindTests.changed"))
        try PropertyBinding(source: BoundProperty(person, \.name), destination: BoundProperty(field, \.text)).addTrigger(note)
        #expect {
            try PropertyBinding(source: BoundProperty(person, \.name), destination: BoundProperty(field, \.text)).addTrigger(note)
        } throws: { ($0 as! BindError).message.contains("HookBindTests.changed") }
    }

    /// BNDStringToNumberTransformer wrapping the destination, and a chain to Double.
    @Test func transformersWrapPropertiesAndChain() throws {
        let formatter = NumberFormatter()
        formatter.numberStyle = .decimal
        let person = Person(name: ""), field = Field()
        let age = BoundProperty(person, \.age).wrapped(by: .stringToNumber(formatter))
        field.text = "1,234"
        let binding = PropertyBinding(source: BoundProperty(field, \.text), destination: age)
        try binding.addTrigger(HookTrigger(field, \.text))
        #expect(person.age == 1234)
        #expect(try age.get() == "1,234")  // reads go back through reverse

        let double = BoundProperty(field, \.number).wrapped(by: Transformer.stringToNumber(formatter).then(.numberToDouble))
        try double.set("2.5")
        #expect(field.number == 2.5)
        #expect(try double.get() == "2.5")
    }

    @Test func aFailedConversionLeavesTheDestinationAndIsReported() throws {
        let person = Person(name: ""), field = Field()
        field.text = "12"
        let binding = PropertyBinding(source: BoundProperty(field, \.text),
                                      destination: BoundProperty(person, \.age).wrapped(by: .stringToNumber(NumberFormatter())))
        let errors = Shared<[String]>([])
        binding.errorHandler = { error in errors.mutate { $0.append("\(error)") } }
        try binding.addTrigger(HookTrigger(field, \.text))
        #expect(person.age == 12)
        field.text = "twelve"
        #expect(person.age == 12)
        #expect(errors.value == ["HookBind: \"twelve\" is not a number for the formatter"])
    }

    /// A delivery whose source's or destination's object is gone reports
    /// which one (it said "the object of a Person property" for both), by
    /// name once the name was asked for while the object lived. Making
    /// the binding writes nothing (working the names out probes a plain
    /// property's setter).
    @Test func aGoneObjectIsReportedByItsSideAndName() throws {
        var person: Person? = Person(name: "x")
        let other = Person(name: "y")
        let errors = Shared<[String]>([])
        let trigger = ManualTrigger()
        let binding = PropertyBinding(source: BoundProperty(person!, \.name), destination: BoundProperty(other, \.nickname))
        binding.errorHandler = { error in errors.mutate { $0.append("\(error)") } }
        try binding.addTrigger(trigger)
        #expect(other.nickname == "x")
        person = nil
        trigger.fire()
        #expect(errors.value == ["HookBind: source: the object of a Person property of type String is gone"])
        var field: Field? = Field()
        let back = PropertyBinding(source: BoundProperty(other, \.name), destination: BoundProperty(field!, \.text))
        back.errorHandler = { error in errors.mutate { $0.append("\(error)") } }
        #expect(back.destination.name == "Field.text")
        let again = ManualTrigger()
        try back.addTrigger(again)
        field = nil
        again.fire()
        #expect(errors.value.last == "HookBind: destination: the object of Field.text is gone")
    }

    /// Making a binding runs no setter (working out a plain property's
    /// name probes its setter: a write of its own value, `didSet` and all).
    @Test func makingABindingSetsNothing() {
        let a = Noted(), b = Noted()
        _ = PropertyBinding(source: BoundProperty(a, \.plain), destination: BoundProperty(b, \.title))
        #expect(a.sets == 0 && b.sets == 0)
    }

    @Test func aHookTriggerOnAPlainPropertyIsRefused() {
        let person = Person(name: ""), field = Field()
        let binding = PropertyBinding(source: BoundProperty(person, \.nickname), destination: BoundProperty(field, \.text))
        #expect {
            try binding.addTrigger(HookTrigger(person, \.nickname))
        } throws: { error in
            let error = error as! BindError
            return error.kind == .notHookable && error.message.contains("Person")
        }
    }

    @Test func aGoneObjectIsReportedNotCrashed() throws {
        var person: Person? = Person(name: "x")
        let field = Field()
        let trigger = ManualTrigger()
        let binding = PropertyBinding(source: BoundProperty(person!, \.name), destination: BoundProperty(field, \.text))
        let errors = Shared(0)
        binding.errorHandler = { _ in errors.mutate { $0 += 1 } }
        try binding.addTrigger(trigger)
        person = nil
        trigger.fire()
        #expect(errors.value == 1)
        #expect(field.text == "x")
    }

    @Test func bindingsHoldTheirObjectsWeakly() throws {
        weak var weakPerson: Person?
        let field = Field()
        let binding: PropertyBinding<String>
        do {
            let person = Person(name: "p")
            weakPerson = person
            binding = PropertyBinding(source: BoundProperty(person, \.name), destination: BoundProperty(field, \.text))
            try binding.addTrigger(HookTrigger(person, \.name))
        }
        #expect(weakPerson == nil)
        #expect(binding.isActive)
    }

    @Test func triggersOnSeveralThreads() throws {
        let person = Person(name: "0"), field = Field()
        let center = NotificationCenter()
        let trigger = ManualTrigger()
        let binding = PropertyBinding(source: BoundProperty(person, \.name), destination: BoundProperty(field, \.text))
        try binding.addTrigger(trigger)
        try binding.addTrigger(NotificationTrigger(center: center, name: .fieldDidChange))
        onThreads(4) { i in
            for _ in 0..<300 {
                if i % 2 == 0 { trigger.fire() } else { center.post(name: .fieldDidChange, object: nil) }
            }
        }
        #expect(field.text == "0")
        binding.invalidate()
    }
}
