import Hook
import Testing

class Person {
    @Hooked var name = ""
    @Hooked var age = 0
    var plain = 0
    var computed: Int {
        get { plain }
        set { plain = newValue }
    }
}

final class Employee: Person {
    @Hooked var title = "none"
}

final class Account {
    private(set) var balance = 0
    @HookableMethod(Account.depositBody) var deposit
    @HookableMethod(Account.describeBody) var describe
    private func depositBody(_ amount: Int) -> Int {
        balance += amount
        return balance
    }
    private func describeBody() -> String { "balance \(balance)" }
}

@Suite("@Hooked properties")
struct HookedPropertyTests {
    @Test func hooksSeeTargetSelectorOldAndNewValues() throws {
        let ada = Person()
        ada.name = "first"
        var seen: [String] = []
        let point = try PropertyHook.of(ada, \.name)
        point.after { call in
            let target = try #require(call.target as? Person)
            seen.append("\(call.selector): \(try call.oldValue(as: String.self)) -> \(try call.argument(0, as: String.self)) stored \(target.name) \(call.oldValue!) \(call.args)")
        }
        ada.name = "Ada"
        #expect(seen == [#"name: first -> Ada stored Ada first ["Ada"]"#])
        #expect(point.name == "name")
        #expect(point.target === ada)
        #expect(ada.name == "Ada")
    }

    @Test func hooksArePerInstance() throws {
        let a = Person(), b = Person()
        var count = 0
        try PropertyHook.of(a, \.age).after { _ in count += 1 }
        a.age = 1
        b.age = 2
        b.age = 3
        #expect(count == 1)
        #expect(a.$age !== b.$age)
        #expect(try PropertyHook.of(b, \.age) === b.$age)
        #expect(try PropertyHook.of(a, \.age) === a.$age)
    }

    @Test func beforeHooksReplaceOrVetoTheNewValue() throws {
        let p = Person()
        p.$age.before { call in
            let new = try call.argument(0, as: Int.self)
            if new < 0 { try call.veto() }
            if new > 150 { try call.setArgument(0, to: 150) }
        }
        var afterSaw: [String] = []
        p.$age.after { call in afterSaw.append("\(call.args[0]) vetoed=\(call.isVetoed)") }
        p.age = 30
        p.age = -1
        #expect(p.age == 30)
        p.age = 400
        #expect(p.age == 150)
        // A vetoed set stores nothing, so the after hooks do not run for it.
        #expect(afterSaw == ["30 vetoed=false", "150 vetoed=false"])
    }

    /// The README's `@Hooked` example: the after hook reports stored values only.
    @Test func afterHooksDoNotRunForAVetoedSet() throws {
        let ada = Person()
        var printed: [String] = []
        let name = try PropertyHook.of(ada, \.name)
        name.before { call in
            if try call.argument(0, as: String.self).isEmpty { try call.veto() }
        }
        name.after { call in
            printed.append("\(call.selector) \(try call.oldValue(as: String.self)) -> \(call.args[0])")
        }
        ada.name = "Ada"
        ada.name = ""
        ada.name = "Grace"
        #expect(printed == ["name  -> Ada", "name Ada -> Grace"])
        #expect(ada.name == "Grace")
    }

    /// A vetoed call of a closure still returns (the result the hook set): its after hooks run and see it.
    @Test func afterHooksRunForAVetoedCallThatReturns() throws {
        let double = ClosureHook(name: "double") { (x: Int) in x * 2 }
        double.before { call in
            if try call.argument(0, as: Int.self) < 0 {
                try call.setResult(0)
                try call.veto()
            }
        }
        var seen: [String] = []
        double.after { call in seen.append("\(call.args[0]) -> \(try call.result(as: Int.self)) vetoed=\(call.isVetoed)") }
        #expect(double(4) == 8)
        #expect(double(-1) == 0)
        #expect(seen == ["4 -> 8 vetoed=false", "-1 -> 0 vetoed=true"])
    }

    @Test func insteadHooksDecideWhetherTheValueIsStored() throws {
        let p = Person()
        p.$name.instead { call in
            try call.setArgument(0, to: try call.argument(0, as: String.self).lowercased())
            try call.invokeOriginal()
        }
        p.name = "LOUD"
        #expect(p.name == "loud")
        p.$name.removeAllHooks()
        p.$name.instead { _ in }  // never stores
        p.name = "ignored"
        #expect(p.name == "loud")
    }

    @Test func aHookSettingTheSamePropertyDoesNotRecurse() throws {
        let p = Person()
        var runs = 0
        p.$name.after { call in
            runs += 1
            let target = call.target as! Person
            target.name = try call.argument(0, as: String.self) + "!"  // stored without hooks
        }
        p.name = "hi"
        #expect(p.name == "hi!")
        #expect(runs == 1)
    }

    @Test func keyPathsResolveInSubclassesAndRejectOtherProperties() throws {
        let e = Employee()
        let title = try PropertyHook.of(e, \.title)
        let name = try PropertyHook.of(e, \.name)
        #expect(title !== name)
        #expect(title.name == "title")
        #expect(name.name == "name")
        var seen: [String] = []
        title.after { call in seen.append("\(call.selector)=\(call.args[0])") }
        name.after { call in seen.append("\(call.selector)=\(call.args[0])") }
        e.title = "CTO"
        e.name = "Grace"
        #expect(seen == ["title=CTO", "name=Grace"])
        // A second object of the class resolves by the remembered name.
        let other = Employee()
        #expect(try PropertyHook.of(other, \.title) === other.$title)
        #expect(throws: HookError.self) { _ = try PropertyHook.of(e, \.plain) }
        #expect(throws: HookError.self) { _ = try PropertyHook.of(e, \.computed) }
        #expect(e.plain == 0)
    }

    @Test func theNameIsFoundAtTheFirstHookedSetWithoutALookup() throws {
        let p = Person()
        var selectors: [String] = []
        p.$age.after { call in selectors.append(call.selector) }
        p.age = 3
        #expect(selectors == ["age"])
    }
}

@Suite("Hookable methods")
struct HookableMethodTests {
    /// A function value taken before the hook point existed
    /// (`button.onTap = model.refresh`), hooked later: its calls run the hooks.
    @Test func aMethodTakenBeforeItsPointWasMadeRunsTheHooksAddedLater() throws {
        let account = Account()
        let tap = account.deposit
        #expect(tap(1) == 1)
        var seen: [Int] = []
        account.$deposit.before { call in seen.append(try call.argument(0, as: Int.self)) }
        #expect(tap(2) == 3)
        #expect(seen == [2])
    }

    @Test func methodsRunThroughPerInstanceHookPoints() throws {
        let account = Account(), other = Account()
        var seen: [String] = []
        let deposit = try MethodHook.of(account, \.deposit)
        #expect(deposit === account.$deposit)
        deposit.before { call in
            if try call.argument(0, as: Int.self) < 0 { try call.setArgument(0, to: 0) }
        }
        deposit.after { call in
            seen.append("\((call.target as! Account).balance) \(call)")
        }
        #expect(account.deposit(10) == 10)
        #expect(account.deposit(-5) == 10)
        #expect(other.deposit(-5) == -5)
        #expect(seen == ["10 deposit(10) -> 10", "10 deposit(0) -> 10"])
        #expect(deposit.name == "deposit")
    }

    @Test func insteadHooksReplaceAMethodAndKeyPathsAreChecked() throws {
        let account = Account()
        account.$describe.instead { call in try call.setResult("hidden") }
        #expect(account.describe() == "hidden")
        _ = account.deposit(1)
        account.$describe.removeAllHooks()
        #expect(account.describe() == "balance 1")
        #expect(try MethodHook.of(account, \.describe) === account.$describe)
    }

    // MARK: didSet, the typed after hook

    @Test func didSetGetsTheOldAndTheNewValueTyped() throws {
        let ada = Person()
        ada.name = "first"
        var seen: [String] = []
        let token = ada.$name.didSet { old, new in seen.append("\(old) -> \(new)") }
        ada.name = "Ada"
        ada.name = "Ada L."
        #expect(ada.$name.hookCount == 1)
        token.remove()
        ada.name = "gone"
        #expect(seen == ["first -> Ada", "Ada -> Ada L."])
        #expect(ada.name == "gone")
        // Another object's property has its own hooks.
        let bob = Person()
        bob.$age.didSet { old, new in seen.append("age \(old) -> \(new)") }
        bob.age = 3
        ada.age = 4
        #expect(seen.last == "age 0 -> 3")
    }

    @Test func didSetAmongOtherHooksSeesTheStoredValueAndNotVetoedSets() throws {
        let ada = Person()
        var seen: [String] = []
        ada.$age.before { call in
            let value = try call.argument(0, as: Int.self)
            if value < 0 { try call.veto() } else { try call.setArgument(0, to: value * 10) }
        }
        ada.$age.didSet { old, new in seen.append("\(old) -> \(new)") }
        ada.$age.after { _ in seen.append("after") }
        ada.age = 1
        ada.age = -5          // vetoed: nothing stored, no didSet
        ada.age = 2
        #expect(ada.age == 20)
        #expect(seen == ["0 -> 10", "after", "10 -> 20", "after"])

        // An instead hook that stores nothing: no didSet either.
        let bob = Person()
        bob.$age.instead { _ in }
        bob.$age.didSet { _, new in seen.append("bob \(new)") }
        bob.age = 7
        #expect(bob.age == 0)
        #expect(seen.count == 4)
    }

    @Test func didSetIsGuardedAgainstReentrySuppressedAndOwned() throws {
        let ada = Person()
        var seen: [Int] = []
        ada.$age.didSet { [unowned ada] _, new in
            seen.append(new)
            ada.age = new + 1    // stores only: no recursion into the hook
        }
        ada.age = 1
        #expect(ada.age == 2)
        #expect(seen == [1])
        ada.$age.withoutHooks { ada.age = 5 }
        withoutHooks { ada.age = 6 }
        #expect(seen == [1])
        #expect(ada.age == 6)

        var owner: Observer? = Observer()
        let bob = Person()
        bob.$name.didSet(owner: owner) { _, new in seen.append(new.count) }
        bob.name = "abc"
        owner = nil
        bob.name = "abcdef"
        #expect(seen == [1, 3])
        #expect(bob.$name.hookCount == 0)
        #expect(bob.name == "abcdef")
    }

    @Test func didSetErrorsGoToTheHandlerAndTheValueIsStored() throws {
        let ada = Person()
        let errors = Shared<[String]>([])
        ada.$age.hookErrorHandler = { error, position in errors.mutate { $0.append("\(position) \(error)") } }
        ada.$age.didSet { _, new in if new > 10 { throw Failure(code: new) } }
        ada.age = 3
        ada.age = 11
        #expect(ada.age == 11)
        #expect(errors.value == ["after Failure(code: 11)"])
    }
}
