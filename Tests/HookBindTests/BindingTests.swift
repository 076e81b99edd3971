import CHookTestSupport
import Foundation
import Hook
import HookBind
import Testing

@Suite("Bindings")
struct BindingTests {
    @Test func oneWayPropertyToPropertyDoesNotFlowBack() throws {
        let source = Holder(), target = Holder()
        try Binding.bind([.post(source, \.value), .observer(target, \.value)])
        source.value = 5
        #expect(target.value == 5)
        target.value = 9
        #expect(source.value == 5)
    }

    @Test func propertyToCallbackSeesTheWholeCall() throws {
        let label = Label(), watcher = Holder()
        let seen = Shared<[String]>([])
        // Identities, not the objects: the callback lives in label's hook point.
        let labelID = ObjectIdentifier(label), watcherID = ObjectIdentifier(watcher)
        try Binding.bind([
            .post(label, \.text),
            .observer(watcher) { call, receiver in
                let text = try call.argument(0, as: String.self)
                let old = try call.oldValue(as: String.self)
                let fromLabel = call.target.map { ObjectIdentifier($0) } == labelID
                let toWatcher = ObjectIdentifier(receiver) == watcherID
                seen.mutate { $0.append("\(call.selector): \(old) -> \(text), from label: \(fromLabel), to watcher: \(toWatcher)") }
            },
        ])
        label.text = "a"
        label.text = "b"
        #expect(seen.value == ["text:  -> a, from label: true, to watcher: true", "text: a -> b, from label: true, to watcher: true"])
    }

    @Test func aReplacedNewValueIsWhatTravels() throws {
        let source = Label(), target = Label()
        source.$text.before { call in try call.setArgument(0, to: (try call.argument(0, as: String.self)).uppercased()) }
        try Binding.bind([.post(source, \.text), .observer(target, \.text)])
        source.text = "quiet"
        #expect(target.text == "QUIET")
    }

    @Test func aVetoedSetTravelsNowhere() throws {
        let source = Holder(), target = Holder()
        source.$value.before { call in if try call.argument(0, as: Int.self) < 0 { try call.veto() } }
        try Binding.bind([.both(source, \.value), .both(target, \.value)])
        source.value = -1
        #expect(source.value == 0 && target.value == 0)
        source.value = 4
        #expect(target.value == 4)
    }

    /// A set an `instead` hook took over without running the original
    /// stored nothing: no member hears of it (a callback got the argument
    /// never stored, a property was set to the poster's unchanged value).
    @Test func aSetThatStoresNothingTravelsNowhere() throws {
        let source = Label(), target = Label()
        let heard = Shared<[String]>([])
        let binding = try Binding.bind([
            .both(source, \.text), .both(target, \.text),
            .observer { call in
                let text = try call.argument(0, as: String.self)
                heard.mutate { $0.append(text) }
            },
        ])
        let targetSets = Shared(0)
        target.$text.after { _ in targetSets.mutate { $0 += 1 } }
        let token = source.$text.instead { _ in }
        source.text = "swallowed"
        token.remove()
        #expect(source.text == "" && target.text == "")
        #expect(heard.value.isEmpty && targetSets.value == 0)
        source.text = "stored"
        #expect(target.text == "stored" && heard.value == ["stored"] && targetSets.value == 1)
        binding.unbind()
    }

    @Test func methodPosterSendsItsResult() throws {
        let wallet = Wallet(), display = Holder()
        try Binding.bind([.post(wallet, \.deposit), .observer(display, \.value)])
        _ = wallet.deposit(5)
        _ = wallet.deposit(7)
        #expect(display.value == 12)
    }

    @Test func closurePosterSendsItsResultToAProperty() throws {
        let sum = ClosureHook(name: "sum") { (a: Double, b: Double) in a + b }
        let model = Model()
        try Binding.bind([.post(sum), .observer(model, \.price)])
        #expect(sum(1.5, 2) == 3.5)
        #expect(model.price == 3.5)
    }

    @Test func voidClosureWithOneArgumentSendsTheArgument() throws {
        let setter = ClosureHook(name: "setTitle") { (_: String) in }
        let label = Label()
        try Binding.bind([.post(setter), .observer(label, \.text)])
        setter("hello")
        #expect(label.text == "hello")
    }

    /// A call of a posting closure or method that an `instead` hook inside
    /// the binding's swallowed (no original, no result) sends nothing, as
    /// a property's set that stored nothing: its own object took nothing.
    /// (Its argument reached the receivers; a swallowed call with a result
    /// sent an error to the error handler.) A result an instead hook set
    /// is sent.
    @Test func aSwallowedCallOfAPosterTravelsNowhere() throws {
        let stored = Shared("")
        let setter = ClosureHook(name: "setTitle") { (text: String) in stored.value = text }
        let label = Label()
        let binding = try Binding.bind([.post(setter), .observer(label, \.text)])
        let swallow = setter.instead { _ in }
        setter("hello")
        swallow.remove()
        #expect(stored.value == "" && label.text == "")
        setter("kept")
        #expect(stored.value == "kept" && label.text == "kept")
        binding.unbind()

        let wallet = Wallet(), display = Holder()
        let errors = Shared(0)
        wallet.$deposit.hookErrorHandler = { _, _ in errors.mutate { $0 += 1 } }
        let deposits = try Binding.bind([.post(wallet, \.deposit), .observer(display, \.value)])
        // (A method with a result whose instead hooks neither ran the
        // original nor set one: the point runs it after them and reports
        // that, one error; the binding, inside, saw no result.)
        var token = wallet.$deposit.instead { _ in }
        _ = wallet.deposit(5)
        token.remove()
        #expect(display.value == 0 && errors.value == 1)
        token = wallet.$deposit.instead { call in try call.setResult(40) }
        _ = wallet.deposit(5)
        token.remove()
        #expect(display.value == 40 && errors.value == 1)
        deposits.unbind()
    }

    @Test func cFunctionPosterSendsItsResult() throws {
        typealias Add = @convention(c) (Int32, Int32) -> Int32
        let add = try FunctionHook(cFunction: test_counted_add as Add, signature: Signature(returning: Int32.self, arguments: Int32.self, Int32.self), name: "add")
        final class Total { @Hooked var sum: Int32 = 0 }
        let total = Total()
        let binding = try Binding.bind([.post(add), .observer(total, \.sum)])
        #expect(add.entry(as: Add.self)(20, 22) == 42)
        #expect(total.sum == 42)
        binding.unbind()
    }

    /// Six setter closures bound pairwise both ways (15 bindings): a call
    /// reaches all six, each binding delivering it once (16 calls at most;
    /// 76 when each binding's hook began a change of its own). A vetoed
    /// call posts nothing, and a result is posted as the original
    /// returned it, before the point's after hooks.
    @Test func closuresBoundPairwiseBothWaysAreCalledOncePerBinding() throws {
        final class Setter: @unchecked Sendable {
            var value = 0, calls = 0
            var hook: ClosureHook<Int, Void>!
            init() { hook = ClosureHook(name: "set") { [unowned self] in value = $0; calls += 1 } }
        }
        let setters = (0..<6).map { _ in Setter() }
        var bindings: [Binding] = []
        for i in 0..<6 {
            for j in (i + 1)..<6 {
                let (a, b) = (setters[i], setters[j])
                bindings.append(try Binding.bind([.both(a.hook) { [weak a] call in a?.hook(try call.argument(0, as: Int.self)) },
                                                  .both(b.hook) { [weak b] call in b?.hook(try call.argument(0, as: Int.self)) }]))
            }
        }
        setters[2].hook(42)
        #expect(setters.allSatisfy { $0.value == 42 })
        #expect(setters.reduce(0) { $0 + $1.calls } <= 16)
        let veto = setters[0].hook.before { call in if try call.argument(0, as: Int.self) < 0 { try call.veto() } }
        setters[0].hook(-1)
        #expect(setters.allSatisfy { $0.value == 42 })
        veto.remove()

        let double = ClosureHook(name: "double") { (x: Int) in x * 2 }
        let holder = Holder()
        double.after { call in try call.setResult(try call.result(as: Int.self) + 1) }
        try Binding.bind([.post(double), .observer(holder, \.value)])
        #expect(double(5) == 11)        // the caller gets what the after hook made
        #expect(holder.value == 10)     // the binding posted what the original returned
        withExtendedLifetime(bindings) {}
    }

    @Test func throwingClosureThatThrowsSendsNothing() throws {
        struct Refused: Error {}
        let parse = ThrowingClosureHook(name: "parse") { (text: String) throws -> Int in
            guard let value = Int(text) else { throw Refused() }
            return value
        }
        let holder = Holder()
        try Binding.bind([.post(parse), .observer(holder, \.value)])
        #expect(try parse("12") == 12)
        #expect(throws: Refused.self) { try parse("x") }
        #expect(holder.value == 12)
    }

    @Test func unbindStopsDeliveryAndIsIdempotent() throws {
        let a = Holder(), b = Holder()
        let binding = try Binding.bind([.both(a, \.value), .both(b, \.value)])
        a.value = 1
        #expect(b.value == 1 && binding.isBound)
        binding.unbind()
        binding.unbind()
        #expect(!binding.isBound)
        a.value = 2
        b.value = 3
        #expect(a.value == 2 && b.value == 3)
        #expect(a.$value.hookCount == 0 && b.$value.hookCount == 0)
    }

    @Test func droppingTheBindingKeepsItBound() throws {
        let a = Holder(), b = Holder()
        do { try Binding.bind([.both(a, \.value), .both(b, \.value)]) }
        a.value = 6
        #expect(b.value == 6)
    }

    @Test func aBagEndsTheBindingWithItsOwner() throws {
        final class Screen: HookOwner { let hookBag = HookBag() }
        let a = Holder(), b = Holder()
        var screen: Screen? = Screen()
        let binding = try Binding.bind([.both(a, \.value), .both(b, \.value)]).store(in: screen!.hookBag)
        a.value = 1
        #expect(b.value == 1)
        #expect(binding.isBound)
        screen = nil
        a.value = 2
        #expect(b.value == 1)
        #expect(!binding.isBound)   // ended with its owner, as by unbind()
        #expect(a.$value.hookCount == 0 && b.$value.hookCount == 0)
    }

    /// A bound object that goes takes its hook with its point: the binding
    /// was not unbound, whether or not a bag holds its tokens. (Stored in a
    /// bag, the token the point detached was inactive and `isBound` false.)
    @Test(arguments: [false, true])
    func anObjectThatGoesLeavesItsBindingBound(storedInABag: Bool) throws {
        final class Owner: HookOwner { let hookBag = HookBag() }
        let owner = Owner(), b = Holder()
        var a: Holder? = Holder()
        let binding = try Binding.bind([.both(a!, \.value), .both(b, \.value)])
        if storedInABag { binding.store(in: owner.hookBag) }
        a = nil
        #expect(binding.isBound)
        b.value = 3
        #expect(b.value == 3)
        binding.unbind()
        #expect(!binding.isBound)
    }

    /// `isBound` asked while a bound object goes on another thread (its
    /// binding's hooks removed, its point alive while it is): the object is
    /// held until its point is retained. (Only tested for nil, the object
    /// and its point could go before the point was retained: freed memory,
    /// which AddressSanitizer reports.)
    @Test func isBoundWhileABoundObjectGoesOnAnotherThread() throws {
        for _ in 0..<300 {
            final class Slot: @unchecked Sendable { var holder: Holder? = Holder() }
            let slot = Slot(), b = Holder()
            let binding = try Binding.bind([.both(slot.holder!, \.value), .both(b, \.value)])
            let bag = HookBag()
            binding.store(in: bag)
            bag.removeAll()
            onThreads(2) { t in
                if t == 0 {
                    for _ in 0..<20 { _ = binding.isBound }
                } else {
                    slot.holder = nil
                }
            }
            #expect(!binding.isBound)
        }
    }

    /// A binding one of whose hooks was removed by its token is no longer bound,
    /// while its other members' hooks stay until `unbind()`.
    @Test func removingOneOfTheBindingsHooksEndsIsBound() throws {
        let a = Holder(), b = Holder(), c = Holder()
        let binding = try Binding.bind([.both(a, \.value), .both(b, \.value), .observer(c, \.value)])
        #expect(binding.isBound)
        let bag = HookBag()
        binding.store(in: bag)
        #expect(bag.count == 2)     // the two posters' hooks: the observer has none
        bag.removeAll()
        #expect(!binding.isBound)
        binding.unbind()
        #expect(!binding.isBound)
    }

    @Test func deliveryFollowsTheOrderOfTheFishes() throws {
        let source = Holder()
        let order = Shared<[String]>([])
        func note(_ name: String) -> Fish { .observer { _ in order.mutate { $0.append(name) } } }
        try Binding.bind([note("first"), .post(source, \.value), note("second"), note("third")])
        source.value = 1
        #expect(order.value == ["first", "second", "third"])
    }

    @Test func aFailingReceiverDoesNotStopTheOthers() throws {
        struct Broken: Error {}
        let source = Holder(), after = Holder()
        let reported = Shared<[String]>([])
        source.$value.hookErrorHandler = { error, _ in reported.mutate { $0.append("\(error)") } }
        try Binding.bind([.post(source, \.value), .observer { _ in throw Broken() }, .observer(after, \.value)])
        source.value = 3
        #expect(after.value == 3)
        #expect(reported.value == ["Broken()"])
    }

    // MARK: Chains and cycles

    @Test func chainedBindingsKeepEveryObjectEqual() throws {
        let a = Holder(), b = Holder(), c = Holder()
        try Binding.bind([.both(a, \.value), .both(b, \.value)])
        try Binding.bind([.both(b, \.value), .both(c, \.value)])
        a.value = 1
        #expect(values(a, b, c) == [1, 1, 1])
        c.value = 2
        #expect(values(a, b, c) == [2, 2, 2])
        b.value = 3
        #expect(values(a, b, c) == [3, 3, 3])
    }

    @Test func aCycleOfBindingsEndsWithEachDeliveringOnce() throws {
        let a = Holder(), b = Holder(), c = Holder()
        let deliveries = Shared<[String: Int]>([:])
        func counted(_ name: String) -> Fish { .observer { _ in deliveries.mutate { $0[name, default: 0] += 1 } } }
        try Binding.bind([.both(a, \.value), .both(b, \.value), counted("ab")])
        try Binding.bind([.both(b, \.value), .both(c, \.value), counted("bc")])
        try Binding.bind([.both(c, \.value), .both(a, \.value), counted("ca")])
        a.value = 10
        #expect(values(a, b, c) == [10, 10, 10])
        #expect(deliveries.value == ["ab": 1, "bc": 1, "ca": 1])
        c.value = 11
        #expect(values(a, b, c) == [11, 11, 11])
        #expect(deliveries.value == ["ab": 2, "bc": 2, "ca": 2])
    }

    @Test func aDiamondDeliversEachBindingAtMostOncePerChange() throws {
        let a = Holder(), b = Holder(), c = Holder(), d = Holder()
        let deliveries = Shared<[String: Int]>([:])
        func counted(_ name: String) -> Fish { .observer { _ in deliveries.mutate { $0[name, default: 0] += 1 } } }
        try Binding.bind([.both(a, \.value), .both(b, \.value), counted("ab")])
        try Binding.bind([.both(a, \.value), .both(c, \.value), counted("ac")])
        try Binding.bind([.both(b, \.value), .both(d, \.value), counted("bd")])
        try Binding.bind([.both(c, \.value), .both(d, \.value), counted("cd")])
        a.value = 5
        #expect(values(a, b, c, d) == [5, 5, 5, 5])
        #expect(deliveries.value.values.allSatisfy { $0 == 1 })
        #expect(deliveries.value.count == 4)
    }

    @Test func aCallbackThatWritesAnotherBindingsEndpointStillPropagatesThere() throws {
        let a = Holder(), b = Holder(), mirror = Holder()
        try Binding.bind([.post(a, \.value), .observer(b) { call, b in b.value = 2 * (try call.argument(0, as: Int.self)) }])
        try Binding.bind([.post(b, \.value), .observer(mirror, \.value)])
        a.value = 4
        #expect(b.value == 8 && mirror.value == 8)
    }
}

func values(_ holders: Holder...) -> [Int] { holders.map(\.value) }
