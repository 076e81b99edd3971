import Hook
import SwiftEntrySample
import Synchronization
import Testing

/// Every suite of Swift entry hooks, one at a time: they hook the same
/// functions, and a trace counts calls other tests would make.
@Suite(.serialized, .enabled(if: EntryHook.isAvailable))
struct SwiftEntrySuites {}

extension SwiftEntrySuites {
@Suite struct SwiftEntryHookTests {
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
}

/// Every kind of function, and the types typed access lowers.
extension SwiftEntrySuites {
@Suite struct SwiftEntryKindsTests {
    @Test func collectionsOptionalsAndBooleans() throws {
        let sum = try SwiftEntryHook.named("SwiftEntrySample.total(_:)", as: (([Int]) -> Int).self)
        defer { try? sum.restore() }
        sum.before { call in try call.setArgument(0, to: try call.argument(0, as: [Int].self) + [100]) }
        #expect(total([1, 2, 3]) == 106)

        let find = try SwiftEntryHook.named("SwiftEntrySample.lookup(_:_:)", as: (([String: Int], String) -> Int?).self)
        defer { try? find.restore() }
        var keys: [String] = []
        try find.afterReturning { (result: Int?, table: [String: Int], key: String) in keys.append("\(key)=\(result.map(String.init) ?? "nil") of \(table.count)") }
        #expect(lookup(["a": 1, "b": 2], "b") == 2)
        #expect(lookup([:], "zz") == nil)
        #expect(keys == ["b=2 of 2", "zz=nil of 0"])
        find.after { call in if try call.result(as: Int?.self) == nil { try call.setResult(Int?.some(-1)) } }
        #expect(lookup([:], "q") == -1)

        let not = try SwiftEntryHook.named("SwiftEntrySample.negate(_:)", as: ((Bool) -> Bool).self)
        defer { try? not.restore() }
        not.after { call in try call.setResult(try call.argument(0, as: Bool.self)) }
        #expect(negate(true) == true)
        #expect(negate(false) == false)
    }

    @Test func floatingPointAndMixedArguments() throws {
        let hook = try SwiftEntryHook.named("SwiftEntrySample.mix(_:_:_:_:)", as: ((Int32, Float, Double, UInt8) -> Double).self)
        defer { try? hook.restore() }
        var seen: (Int32, Float, Double, UInt8)?
        try hook.afterReturning { (result: Double, a: Int32, f: Float, d: Double, b: UInt8) in seen = (a, f, d, b) }
        #expect(mix(-3, 1.5, 0.25, 200) == 198.75)
        #expect(seen.map { $0.0 == -3 && $0.1 == 1.5 && $0.2 == 0.25 && $0.3 == 200 } == true)
        hook.before { call in try call.setArgument(2, to: 10.0) }
        #expect(mix(1, 1, 1, 1) == 13)

        // Structs of two doubles: four xmm arguments, two xmm results.
        let middle = try SwiftEntryHook.named("SwiftEntrySample.midpoint(_:_:)", as: ((Point, Point) -> Point).self)
        defer { try? middle.restore() }
        middle.after { call in
            let b = try call.argument(1, as: Point.self)
            var result = try call.result(as: Point.self)
            result.y += b.y
            try call.setResult(result)
        }
        #expect(midpoint(Point(x: 0, y: 0), Point(x: 4, y: 8)) == Point(x: 2, y: 12))
    }

    /// Overloads that differ only in their types: the stated types choose.
    /// (Each was `.ambiguousSymbol`, whatever the types.)
    @Test func overloadsThatDifferInTheirTypes() throws {
        let ints = try SwiftEntryHook.named("SwiftEntrySample.describe(_:)", as: ((Int) -> String).self)
        defer { try? ints.restore() }
        ints.instead { call in try call.setResult("hooked \(try call.argument(0, as: Int.self))") }
        #expect(describe(3) == "hooked 3")
        #expect(describe("x") == "string x")
        let strings = try SwiftEntryHook.named("SwiftEntrySample.describe", as: ((String) -> String).self)
        defer { try? strings.restore() }
        try strings.afterReturning { (text: String, value: String) in #expect(text == "string " + value) }
        #expect(describe("y") == "string y")
        #expect(throws: HookError.self) { _ = try SwiftEntryHook.named("SwiftEntrySample.describe(_:)", as: ((Double) -> String).self) }
    }

    /// A function with an async overload of the same types is found by
    /// its synchronous type. (Both were candidates: ambiguous, whatever
    /// was written.)
    @Test func aFunctionBesideItsAsyncOverloadIsFoundByItsType() async throws {
        let load = try SwiftEntryHook.named("SwiftEntrySample.load(_:)", as: ((Int) -> Int).self)
        defer { try? load.restore() }
        load.after { call in try call.setResult(try call.result(as: Int.self) + 1) }
        // (In an async context a call takes the async overload.)
        func loadSynchronously(_ x: Int) -> Int { SwiftEntrySample.load(x) }
        #expect(loadSynchronously(2) == 7)
        #expect(await SwiftEntrySample.load(2) == 8)
    }

    /// A variadic parameter is stated as the array the function gets.
    /// (`Swift.Int...` did not compare with `[Int]`: a type mismatch.)
    @Test func aVariadicParameterIsStatedAsAnArray() throws {
        let sum = try SwiftEntryHook.named("SwiftEntrySample.sumAll(_:)", as: (([Int]) -> Int).self)
        defer { try? sum.restore() }
        sum.before { call in try call.setArgument(0, to: try call.argument(0, as: [Int].self) + [100]) }
        #expect(sumAll(1, 2) == 103)
    }

    /// A struct's self passed by value may be consumed by the function
    /// (`consuming`, which its name does not say): a lone typed after hook
    /// gets a copy made before the call. (It read self from the registers
    /// after the function had destroyed it: the token it held was freed.)
    @Test func aConsumedSelfIsCopiedForATypedAfterHook() throws {
        let spend = try SwiftEntryHook.named("SwiftEntrySample.Holder.spend()", as: ((Holder) -> Int).self)
        defer { try? spend.restore() }
        nonisolated(unsafe) var seen: [String] = []
        try spend.afterReturning { (result: Int, holder: Holder) in
            seen.append("\(result) \(holder.token.id) \(Token.deinits)")
        }
        let before = Token.deinits
        #expect(Holder(token: Token(7)).spend() == 7)
        #expect(seen == ["7 7 \(before)"], "the hook's copy keeps the token alive")
        #expect(Token.deinits == before + 1)
    }

    /// A member of an extension of another module's type is named by its
    /// type (`Swift.String.shouted(times:)`). (Its demangled name begins
    /// `(extension in SwiftEntrySample):`, which was left out with thunks.)
    @Test func membersOfExtensionsOfAnotherModulesTypes() throws {
        let shouted = try SwiftEntryHook.named("Swift.String.shouted(times:)", as: ((String, Int) -> String).self)
        defer { try? shouted.restore() }
        #expect(shouted.function == "(extension in SwiftEntrySample):Swift.String.shouted(times: Swift.Int) -> Swift.String")
        shouted.before { call in try call.setArgument(1, to: 3) }
        #expect("hi".shouted(times: 1) == "HI!!!")
        let doubled = try SwiftEntryHook.named("Swift.Int.doubledValue.getter", as: ((Int) -> Int).self)
        defer { try? doubled.restore() }
        try doubled.afterReturning { (result: Int, value: Int) in #expect(result == value * 2) }
        doubled.after { call in try call.setResult(try call.result(as: Int.self) + 1) }
        #expect(21.doubledValue == 43)
    }

    /// A throwing getter (`get throws`), whose symbol does not say it
    /// throws, is hooked as stated: `(Person) throws -> Int`, its errors
    /// seen and replaceable. (Stated as throwing, it was refused as a getter
    /// that does not throw; stated as not, its error and result were lost.)
    @Test func aThrowingGetterStatedAsThrowing() throws {
        let checked = try SwiftEntryHook.named("SwiftEntrySample.Person.checkedAge.getter", as: ((Person) throws -> Int).self)
        defer { try? checked.restore() }
        var errors: [String] = []
        checked.after { call in
            if let error = call.error {
                errors.append("\(error)")
                try call.setResult(0)
            }
        }
        #expect(try Person(name: "Ada", age: 36).checkedAge == 36)
        #expect(try Person(name: "Neg", age: -2).checkedAge == 0)
        #expect(errors == ["notANumber(\"-2\")"])
        checked.removeAllHooks()
        #expect(throws: SampleError.notANumber("-3")) { try Person(name: "Neg", age: -3).checkedAge }
    }

    /// A tuple parameter is its elements, a register each (`p.0` in rdi,
    /// `p.1` in rsi, `k` in rdx). (Lowered as one value, it was read from
    /// rdi alone, and `k` from rsi.)
    @Test func aTupleParameterIsItsElements() throws {
        let hook = try SwiftEntryHook.named("SwiftEntrySample.pairSum(_:_:)", as: (((Int8, Int8), Int) -> Int).self)
        defer { try? hook.restore() }
        var seen: [String] = []
        try hook.afterReturning { (result: Int, p: (Int8, Int8), k: Int) in seen.append("\(p.0) \(p.1) \(k) -> \(result)") }
        #expect(pairSum((1, 2), 3) == 123)
        #expect(seen == ["1 2 3 -> 123"])
        hook.before { call in try call.setArgument(0, to: (Int8(7), Int8(8))) }
        #expect(pairSum((1, 2), 3) == 783)
        #expect(seen.last == "7 8 3 -> 783")
    }

    /// A closure argument is refused: a non-escaping one (copying it, as
    /// a hook's record does, retained a context on the caller's stack that
    /// has no object header: a crash about half the time), and an escaping
    /// one (read through its type, it was a function returning its result
    /// indirectly: called, it gave garbage).
    @Test func aClosureArgumentIsRefused() throws {
        func expectRefused(_ name: String, _ text: String, _ make: () throws -> Void) {
            do {
                try make()
                Issue.record("no error thrown for \(name)")
            } catch let error as HookError {
                #expect(error.kind == .unsupportedType)
                #expect("\(error)".contains(name) && "\(error)".contains(text), "\(error)")
            } catch {
                Issue.record("\(error)")
            }
        }
        // (A type value can only state an escaping closure parameter; the
        // demangled name of a non-escaping one reads the same.)
        expectRefused("SwiftEntrySample.applyTwice", "argument 0 of 'SwiftEntrySample.applyTwice(() -> Swift.Int) -> Swift.Int' is a non-escaping closure") {
            _ = try SwiftEntryHook.named("SwiftEntrySample.applyTwice(_:)", as: ((@escaping () -> Int) -> Int).self)
        }
        expectRefused("SwiftEntrySample.applyKept", "is a closure") {
            _ = try SwiftEntryHook.named("SwiftEntrySample.applyKept(_:)", as: ((@escaping () -> Int) -> Int).self)
        }
        // In an Optional (and so in a tuple or a struct): its registers are the same closure's.
        expectRefused("SwiftEntrySample.applyMaybe", "a closure") {
            _ = try SwiftEntryHook.named("SwiftEntrySample.applyMaybe(_:)", as: (((() -> Int)?) -> Int).self)
        }
        #expect(applyTwice { 21 } == 42)
    }

    /// A class-bound existential (`AnyObject`, `any Named`) is a reference
    /// and its witness tables, an error one reference to its box: words in
    /// registers, read and written as other values.
    @Test func classBoundAndErrorExistentials() throws {
        let byObject = try SwiftEntryHook.named("SwiftEntrySample.identify(_:)", as: ((AnyObject) -> String).self)
        defer { try? byObject.restore() }
        let ada = Tag("Ada"), bob = Tag("Bob")
        var seen: [ObjectIdentifier] = []
        byObject.before { call in
            seen.append(ObjectIdentifier(try call.argument(0, as: AnyObject.self)))
            try call.setArgument(0, to: bob as AnyObject)
        }
        #expect(identify(ada) == "Bob")
        #expect(seen == [ObjectIdentifier(ada)])

        let byProtocol = try SwiftEntryHook.named("SwiftEntrySample.nameOf(_:)", as: ((any Named) -> String).self)
        defer { try? byProtocol.restore() }
        var names: [String] = []
        try byProtocol.afterReturning { (result: String, named: any Named) in names += [result, named.name] }
        #expect(nameOf(ada) == "Ada")
        byProtocol.before { call in try call.setArgument(0, to: bob as any Named) }
        #expect(nameOf(ada) == "Bob")
        #expect(names == ["Ada", "Ada", "Bob", "Bob"])

        let byError = try SwiftEntryHook.named("SwiftEntrySample.explain(_:)", as: ((any Error) -> String).self)
        defer { try? byError.restore() }
        var errors: [String] = []
        byError.before { call in errors.append("\(try call.argument(0, as: (any Error).self))") }
        #expect(explain(SampleError.notANumber("x")) == "notANumber(\"x\")")
        #expect(errors == ["notANumber(\"x\")"])

        // An existential metatype: the metatype and its witness table.
        let byKind = try SwiftEntryHook.named("SwiftEntrySample.kindName(_:)", as: ((any Named.Type) -> String).self)
        defer { try? byKind.restore() }
        var kinds: [String] = []
        byKind.before { call in kinds.append("\(try call.argument(0, as: (any Named.Type).self))") }
        #expect(kindName(Tag.self) == "Tag")
        #expect(kinds == ["Tag"])
    }

    /// A half-precision float is an xmm register's, as a `Float` is.
    @Test func aHalfPrecisionFloat() throws {
        let hook = try SwiftEntryHook.named("SwiftEntrySample.halve(_:_:)", as: ((Float16, Int) -> Float16).self)
        defer { try? hook.restore() }
        var seen: [Float16] = []
        try hook.afterReturning { (result: Float16, x: Float16, times: Int) in seen += [result, x, Float16(times)] }
        #expect(halve(6, 1) == 3)
        #expect(seen == [3, 6, 1])
        hook.before { call in try call.setArgument(0, to: Float16(10)) }
        #expect(halve(6, 2) == 2.5)
    }

    /// A lone typed after hook of a setter (which takes its value +1, and
    /// may release it before it returns) gets a copy of the value made
    /// before the call, not what the registers held after it. (It read the
    /// registers after the setter released the string: freed memory.)
    @Test func aTypedAfterHookOfASetterThatReleasesItsValue() throws {
        let lowered = try SwiftEntryHook.named("SwiftEntrySample.Person.lowered.setter", as: ((Person, String) -> Void).self)
        defer { try? lowered.restore() }
        var seen: [String] = []
        try lowered.afterReturning { (_: Void, person: Person, value: String) in seen.append(value + " -> " + person.name) }
        let ada = Person(name: "Ada")
        for i in 0..<200 {
            // Longer than a small string: on the heap, released by the setter.
            ada.lowered = String(repeating: "Ab", count: 30) + "\(i)"
        }
        #expect(seen.count == 200)
        #expect(seen.last == String(repeating: "Ab", count: 30) + "199 -> " + String(repeating: "ab", count: 30) + "199")
        #expect(seen.allSatisfy { $0.hasPrefix(String(repeating: "Ab", count: 30)) })
    }

    @Test func aThrowingFunction() throws {
        let hook = try SwiftEntryHook.named("SwiftEntrySample.parseNumber(_:)", as: ((String) throws -> Int).self)
        defer { try? hook.restore() }
        var errors: [String] = []
        hook.after { call in if let error = call.error { errors.append("\(error)") } }
        #expect(throws: SampleError.empty) { try parseNumber("") }
        #expect(try parseNumber("42") == 42)
        #expect(errors == ["empty"])
        // An instead hook answers for the empty text and throws for "x".
        hook.instead { call in
            let text = try call.argument(0, as: String.self)
            if text.isEmpty { try call.setResult(0) } else if text == "x" { try call.setError(SampleError.notANumber("hooked")) } else { try call.invokeOriginal() }
        }
        #expect(try parseNumber("") == 0)
        #expect(throws: SampleError.notANumber("hooked")) { try parseNumber("x") }
        #expect(try parseNumber("7") == 7)
    }

    @Test func membersOfAnOpenClass() throws {
        let ada = Person(name: "Ada", age: 36)
        // A non-open method, called directly.
        let birthday = try SwiftEntryHook.named("SwiftEntrySample.Person.haveBirthday()", as: ((Person) -> Int).self)
        defer { try? birthday.restore() }
        var who: [String] = []
        try birthday.afterReturning { (age: Int, person: Person) in who.append("\(person.name) \(age)") }
        #expect(ada.haveBirthday() == 37)
        #expect(who == ["Ada 37"])

        // A static method, an initializer.
        let named = try SwiftEntryHook.named("SwiftEntrySample.Person.named(_:)", as: ((String) -> Person).self)
        defer { try? named.restore() }
        named.before { call in try call.setArgument(0, to: "Grace") }
        #expect(Person.named("x").name == "Grace")
        let make = try SwiftEntryHook.named("SwiftEntrySample.Person.init(name:age:)", as: ((String, Int) -> Person).self)
        defer { try? make.restore() }
        make.after { call in try call.result(as: Person.self).age += 100 }
        #expect(Person(name: "Linus", age: 1).age == 101)

        // Getter and setter of a stored property; a computed property.
        let getter = try SwiftEntryHook.named("SwiftEntrySample.Person.name.getter", as: ((Person) -> String).self)
        defer { try? getter.restore() }
        try getter.after(for: ada) { call in try call.setResult(try call.result(as: String.self) + "!") }
        #expect(ada.name == "Ada!")
        #expect(Person(name: "Bea").name == "Bea")
        let setter = try SwiftEntryHook.named("SwiftEntrySample.Person.name.setter", as: ((Person, String) -> Void).self)
        defer { try? setter.restore() }
        var sets: [String] = []
        setter.before { call in
            let value = try call.argument(1, as: String.self)
            sets.append(value)
            if value == "veto" { try call.veto() } else { try call.setArgument(1, to: value.uppercased()) }
        }
        ada.name = "lovelace, augusta ada"
        ada.name = "veto"
        try getter.restore()
        #expect(ada.name == "LOVELACE, AUGUSTA ADA")
        #expect(sets == ["lovelace, augusta ada", "veto"])
        let title = try SwiftEntryHook.named("SwiftEntrySample.Person.title.getter", as: ((Person) -> String).self)
        defer { try? title.restore() }
        title.instead { call in try call.setResult("Countess") }
        #expect(ada.title == "Countess")

        // An Optional class argument.
        let older = try SwiftEntryHook.named("SwiftEntrySample.Person.isOlder(than:)", as: ((Person, Person?) -> Bool).self)
        defer { try? older.restore() }
        var others: [String?] = []
        try older.afterReturning { (_: Bool, _: Person, other: Person?) in others.append(other?.name) }
        _ = ada.isOlder(than: nil)
        _ = ada.isOlder(than: Person(name: "Bea"))
        #expect(others == [nil, "Bea"])
    }

    @Test func aFinalClass() throws {
        let counter = Counter()
        let bump = try SwiftEntryHook.named("SwiftEntrySample.Counter.bump(by:)", as: ((Counter, Int) -> Int).self)
        defer { try? bump.restore() }
        bump.before { call in try call.setArgument(1, to: try call.argument(1, as: Int.self) * 10) }
        #expect(counter.bump(by: 2) == 20)
        // A stored property of a final class is stored to directly by other
        // modules (no setter call): its setter hook does not see the set.
        let label = try SwiftEntryHook.named("SwiftEntrySample.Counter.label.setter", as: ((Counter, String?) -> Void).self)
        defer { try? label.restore() }
        var sets = 0
        label.before { _ in sets += 1 }
        counter.label = "direct"
        #expect(counter.label == "direct" && sets == 0)
    }

    @Test func anOptionalStringSetter() throws {
        let person = Person(name: "Ada")
        let nickname = try SwiftEntryHook.named("SwiftEntrySample.Person.nickname.setter", as: ((Person, String?) -> Void).self)
        defer { try? nickname.restore() }
        var seen: [String?] = []
        nickname.before { call in
            let value = try call.argument(1, as: String?.self)
            seen.append(value)
            if value == nil { try call.setArgument(1, to: String?.some("a default nickname, longer than fifteen")) }
        }
        person.nickname = nil
        #expect(person.nickname == "a default nickname, longer than fifteen")
        person.nickname = "mine"
        #expect(person.nickname == "mine")
        #expect(seen == [nil, "mine"])
    }

    @Test func membersOfAStruct() throws {
        // Self by value: after the explicit arguments.
        let scaled = try SwiftEntryHook.named("SwiftEntrySample.Point.scaled(by:)", as: ((Point, Double) -> Point).self)
        defer { try? scaled.restore() }
        var selves: [Point] = []
        try scaled.afterReturning { (_: Point, point: Point, _: Double) in selves.append(point) }
        scaled.before { call in try call.setArgument(1, to: 3.0) }
        #expect(Point(x: 1, y: 2).scaled(by: 10) == Point(x: 3, y: 6))
        #expect(selves == [Point(x: 1, y: 2)])
        // Mutating: self by address.
        let move = try SwiftEntryHook.named("SwiftEntrySample.Point.move(dx:dy:)", as: ((UnsafeMutablePointer<Point>, Double, Double) -> Void).self)
        defer { try? move.restore() }
        move.after { call in try call.argument(0, as: UnsafeMutablePointer<Point>.self).pointee.x = 0 }
        var point = Point(x: 5, y: 5)
        point.move(dx: 1, dy: 1)
        #expect(point == Point(x: 0, y: 6))
        let sum = try SwiftEntryHook.named("SwiftEntrySample.Point.sum.getter", as: ((Point) -> Double).self)
        defer { try? sum.restore() }
        sum.after { call in try call.setResult(try call.result(as: Double.self) * 2) }
        #expect(Point(x: 1, y: 2).sum == 6)
    }

    @Test func hooksForOneObjectLeaveOthersAloneAndGoWithIt() throws {
        let greet = try SwiftEntryHook.named("SwiftEntrySample.Person.greet(_:)", as: ((Person, String) -> String).self)
        defer { try? greet.restore() }
        let bob = Person(name: "Bob")
        weak var weakAda: Person?
        do {
            let ada = Person(name: "Ada")
            weakAda = ada
            try greet.instead(for: ada) { call in try call.setResult("hooked") }
            #expect(ada.greet("x") == "hooked")
            #expect(bob.greet("x") == "Hello x, I am Bob")
            #expect(greet.hookCount == 1)
            // Hooks for two objects: each sees its own, a third object's call goes through both.
            let bobs = try greet.instead(for: bob) { call in try call.setResult("bob's") }
            #expect(ada.greet("x") == "hooked" && bob.greet("x") == "bob's")
            #expect(Person(name: "Dee").greet("x") == "Hello x, I am Dee")
            bobs.remove()
        }
        // The hook held Ada weakly: she is gone, and so is her hook.
        #expect(weakAda == nil)
        #expect(bob.greet("y") == "Hello y, I am Bob")
        #expect(Person(name: "Cy").greet("z") == "Hello z, I am Cy")
    }

    /// A typed after hook for one object with an owner goes with either:
    /// with the object (a later object at its address does not get it), and
    /// with the owner. (With both, it went with the owner only.)
    @Test func aHookForOneObjectWithAnOwnerGoesWithEither() throws {
        let greet = try SwiftEntryHook.named("SwiftEntrySample.Person.greet(_:)", as: ((Person, String) -> String).self)
        defer { try? greet.restore() }
        final class Owner: HookOwner { let hookBag = HookBag() }
        let owner = Owner()
        var seen: [String] = []
        do {
            let ada = Person(name: "Ada")
            try greet.afterReturning(for: ada, owner: owner) { (text: String, _: Person, _: String) in seen.append(text) }
            _ = ada.greet("x")
        }
        // Ada is gone: no object made since gets her hook (one made at her
        // address would have), and the next change detaches it.
        for i in 0..<50 { _ = Person(name: "p\(i)").greet("y") }
        #expect(seen == ["Hello x, I am Ada"])
        greet.before { _ in }.remove()
        #expect(greet.hookCount == 0)

        // Gone with the owner, the object still alive.
        let bob = Person(name: "Bob")
        do {
            let other = Owner()
            try greet.afterReturning(for: bob, owner: other) { (text: String, _: Person, _: String) in seen.append(text) }
            _ = bob.greet("z")
        }
        _ = bob.greet("w")
        #expect(seen == ["Hello x, I am Ada", "Hello z, I am Bob"])
        #expect(greet.hookCount == 0)
        withExtendedLifetime(owner) {}
    }

    @Test func restoreAndAskAgain() throws {
        let first = try SwiftEntryHook.named("SwiftEntrySample.shout(_:)", as: ((String) -> String).self)
        let second = try SwiftEntryHook.named("SwiftEntrySample.shout", as: ((String) -> String).self)
        #expect(first === second)
        first.instead { call in try call.setResult("replaced") }
        #expect(shout("a") == "replaced")
        try first.restore()
        #expect(!first.isInstalled)
        #expect(shout("a") == "A")
        let again = try SwiftEntryHook.named("shout(_:)", as: ((String) -> String).self)
        #expect(again === first && again.isInstalled && again.hookCount == 0)
        try again.restore()
    }
}

    /// The stub's typed path for a throwing function (the hook sees the
    /// calls that returned), a recursive one (every level, innermost
    /// first) and a call the hook makes of its own function (the original
    /// only).
    @Test func typedAfterHooksOnThrowingRecursiveAndReentrantCalls() throws {
        let parse = try SwiftEntryHook.named("SwiftEntrySample.parseNumber(_:)", as: ((String) throws -> Int).self)
        defer { try? parse.restore() }
        var parsed: [Int] = []
        try parse.afterReturning { (number: Int, _: String) in parsed.append(number) }
        #expect(throws: SampleError.notANumber("x")) { try parseNumber("x") }
        #expect(try parseNumber("42") == 42)
        #expect(throws: SampleError.empty) { try parseNumber("") }
        #expect(parsed == [42])

        let factorialHook = try SwiftEntryHook.named("SwiftEntrySample.factorial(_:)", as: ((Int) -> Int).self)
        defer { try? factorialHook.restore() }
        var levels: [String] = []
        try factorialHook.afterReturning { (result: Int, n: Int) in levels.append("\(n)!=\(result)") }
        #expect(factorial(5) == 120)
        #expect(levels == ["1!=1", "2!=2", "3!=6", "4!=24", "5!=120"])
        // An instead hook's original is hooked again at every level too.
        var entered: [Int] = []
        let around = factorialHook.instead { call in
            entered.append(try call.argument(0, as: Int.self))
            try call.invokeOriginal()
        }
        levels = []
        #expect(factorial(3) == 6)
        #expect(entered == [3, 2, 1])
        #expect(levels == ["1!=1", "2!=2", "3!=6"])
        around.remove()

        let shoutHook = try SwiftEntryHook.named("SwiftEntrySample.shout(_:)", as: ((String) -> String).self)
        defer { try? shoutHook.restore() }
        var heard: [String] = []
        try shoutHook.afterReturning { (loud: String, text: String) in
            heard.append("\(text)->\(loud)")
            heard.append("inside: " + shout(text + "!"))  // runs the original only
        }
        #expect(shout("hey") == "HEY")
        #expect(heard == ["hey->HEY", "inside: HEY!"])
    }

    /// A typed after hook borrows the call's values (moved out of the
    /// registers and back): one that throws, or keeps what it was given,
    /// leaves the caller's result and objects as they were.
    @Test func aTypedAfterHookThatThrowsOrKeepsItsValues() throws {
        let greet = try SwiftEntryHook.named("SwiftEntrySample.Person.greet(_:)", as: ((Person, String) -> String).self)
        defer { try? greet.restore() }
        let errors = Mutex<[String]>([])
        greet.hookErrorHandler = { error, _ in errors.withLock { $0.append("\(error)") } }
        var kept: [(String, Person, String)] = []
        try greet.afterReturning { (text: String, person: Person, other: String) in
            if other == "x" { throw SampleError.notANumber(other) }
            kept.append((text, person, other))
        }
        weak var weakAda: Person?
        do {
            let ada = Person(name: "Ada", age: 36)
            weakAda = ada
            let guest = String(repeating: "Grace", count: 4)  // not a small string: a reference inside
            for _ in 0..<3 {
                #expect(ada.greet("x") == "Hello x, I am Ada")
                #expect(ada.greet(guest) == "Hello \(guest), I am Ada")
            }
        }
        #expect(errors.withLock { $0 } == Array(repeating: "notANumber(\"x\")", count: 3))
        #expect(kept.count == 3 && kept.allSatisfy { $0.0.hasSuffix("I am Ada") && $0.1.name == "Ada" && $0.2.count == 20 })
        #expect(weakAda != nil)  // kept by the hook
        kept.removeAll()
        #expect(weakAda == nil)  // and no more: not over-retained
    }
}
