import Foundation
import Hook
import HookBind
import Testing

/// Every bad group is refused with an error naming what was wrong, and leaves its objects unhooked.
@Suite("Bad input")
struct BindErrorTests {
    func refusal(_ fishes: [Fish]) -> BindError? {
        do {
            try Binding.bind(fishes)
            return nil
        } catch {
            return error
        }
    }

    @Test func propertiesOfDifferentTypesNeedATransformer() throws {
        let label = Label(), holder = Holder()
        let error = try #require(refusal([.both(label, \.text), .both(holder, \.value)]))
        #expect(error.kind == .typeMismatch)
        #expect(error.message == "both Label.text sends String but both Holder.value receives Int; add a Transformer<String, Int> to both Label.text or a Transformer<Int, String> to both Holder.value")
        #expect(label.$text.hookCount == 0 && holder.$value.hookCount == 0)
        // Either advice binds them (the second was Transformer<String, Int>
        // on the both receiver, whose transformer goes the other way: refused).
        let text = Transformer<String, Int>(forward: { Int($0) ?? 0 }, reverse: { String($0) })
        let number = Transformer<Int, String>(forward: { String($0) }, reverse: { Int($0) ?? 0 })
        let first = try Binding.bind([.both(label, \.text).transformed(by: text), .both(holder, \.value)])
        first.unbind()
        let second = try Binding.bind([.both(label, \.text), .both(holder, \.value).transformed(by: number)])
        holder.value = 7
        #expect(label.text == "7")
        second.unbind()
    }

    @Test func aTransformerOfTheWrongTypeIsNamed() throws {
        let label = Label(), model = Model()
        let error = try #require(refusal([
            .post(label, \.text).transformed(by: Transformer<Int, Double>(forward: { Double($0) })),
            .observer(model, \.price),
        ]))
        #expect(error.kind == .typeMismatch)
        #expect(error.message == "post Label.text sends String but its transformer takes Int")
        let wrongEnd = try #require(refusal([
            .post(model, \.price),
            .observer(label, \.text).transformed(by: Transformer<Double, Int>(forward: { Int($0) })),
        ]))
        #expect(wrongEnd.message == "observer Label.text is set with String but its transformers give Int")
    }

    @Test func emptyGroup() {
        #expect(refusal([])?.kind == .emptyGroup)
    }

    @Test func noPoster() throws {
        let a = Holder(), b = Holder()
        let error = try #require(refusal([.observer(a, \.value), .observer(b, \.value)]))
        #expect(error.kind == .noPoster)
        #expect(error.message.contains("observer Holder.value, observer Holder.value"))
    }

    @Test func noReceiver() throws {
        let a = Holder(), b = Holder()
        #expect(refusal([.post(a, \.value)])?.kind == .noReceiver)
        #expect(refusal([.post(a, \.value), .post(b, \.value)])?.kind == .noReceiver)
        #expect(refusal([.both(a, \.value)])?.kind == .noReceiver)
    }

    @Test func objectAlreadyGone() throws {
        let kept = Holder()
        var doomed: Holder? = Holder()
        let fish = Fish.both(doomed!, \.value)
        doomed = nil
        let error = try #require(refusal([fish, .both(kept, \.value)]))
        #expect(error.kind == .objectGone)
        #expect(error.message == "the object of both Holder.value is gone")
        #expect(kept.$value.hookCount == 0)
    }

    @Test func sameFishTwice() throws {
        let a = Holder(), b = Holder()
        let fish = Fish.both(a, \.value)
        #expect(refusal([fish, .both(b, \.value), fish])?.kind == .duplicateFish)
        let twoFishesOneProperty = try #require(refusal([.post(a, \.value), .observer(a, \.value), .both(b, \.value)]))
        #expect(twoFishesOneProperty.message == "observer Holder.value appears twice in the group (fishes 0 and 1); a group binds each endpoint once")
    }

    /// A group of hundreds (looked up, not scanned, and its types checked
    /// in one pass): a fish given twice, or one of another type, is named as
    /// in a small group, and nothing is bound; a right one binds them all.
    @Test func aLargeGroupIsCheckedAsASmallOne() throws {
        let holders = (0..<300).map { _ in Holder() }
        var fishes = holders.map { Fish.both($0, \.value) }
        let twice = try #require(refusal(fishes + [.observer(holders[123], \.value)]))
        #expect(twice.kind == .duplicateFish)
        #expect(twice.message == "observer Holder.value appears twice in the group (fishes 123 and 300); a group binds each endpoint once")
        let label = Label()
        fishes.insert(.both(label, \.text), at: 200)
        let mismatch = try #require(refusal(fishes))
        #expect(mismatch.kind == .typeMismatch)
        #expect(mismatch.message == "both Holder.value sends Int but both Label.text receives String; add a Transformer<Int, String> to both Holder.value or a Transformer<String, Int> to both Label.text")
        #expect(holders.allSatisfy { $0.$value.hookCount == 0 } && label.$text.hookCount == 0)
        fishes.remove(at: 200)
        // Observers among posters, one poster alone: still a group.
        fishes[0] = .post(holders[0], \.value)
        for i in 1..<300 where i % 3 == 0 { fishes[i] = .observer(holders[i], \.value) }
        let binding = try Binding.bind(fishes)
        holders[1].value = 42
        #expect(holders.dropFirst().allSatisfy { $0.value == 42 } && holders[0].value == 0)   // the first only posts
        holders[3].value = 7   // an observer posts nothing
        #expect(holders[1].value == 42)
        binding.unbind()
        // Posters only: no pair, found by the check of each pair.
        #expect(refusal([.post(holders[0], \.value), .post(holders[1], \.value)])?.kind == .noReceiver)
    }

    @Test func sameFishInTwoBindingsIsAllowed() throws {
        let a = Holder(), b = Holder(), c = Holder()
        let shared = Fish.both(a, \.value)
        try Binding.bind([shared, .both(b, \.value)])
        try Binding.bind([shared, .both(c, \.value)])
        a.value = 8
        #expect(b.value == 8 && c.value == 8)
    }

    @Test func keyPathsThatAreNotHookable() throws {
        let a = Holder(), b = Holder(), wallet = Wallet()
        let plain = try #require(refusal([.post(a, \.plain), .observer(b, \.value)]))
        #expect(plain.kind == .notHookable)
        // It names the property the user wrote (Holder is final: Swift keeps its stored properties' names).
        #expect(plain.message == "\\Holder.plain is not a @Hooked property of Holder (only a property declared @Hooked var has a hook point)")
        _ = wallet
    }

    /// A class that is not final: its key paths go through getters, which Swift names only by address.
    class OpenHolder {
        @Hooked var value = 0
        var plain = 0
        var other = 0
    }

    @Test func keyPathsOfAnOpenClassAreNamedWithoutAddresses() throws {
        let a = OpenHolder(), b = Holder()
        let error = try #require(refusal([.post(a, \.plain), .observer(b, \.value)]))
        #expect(error.kind == .notHookable)
        #expect(error.message == "\\OpenHolder.<a Int property: one of plain, other, or a computed one> is not a @Hooked property of OpenHolder (only a property declared @Hooked var has a hook point)")
        #expect(!error.message.contains("0x"))
    }

    @Test func bothWithAOneWayTransformer() throws {
        let label = Label(), model = Model()
        let error = try #require(refusal([
            .both(label, \.text).transformed(by: Transformer<String, Double>(forward: { Double($0) ?? 0 })),
            .both(model, \.price),
        ]))
        #expect(error.kind == .missingReverse)
        #expect(error.message.contains("both Label.text has a transformer String -> Double without a reverse"))
    }

    @Test func aPosterWithoutASingleValueCannotSetAProperty() throws {
        let wallet = Wallet(), holder = Holder()
        let error = try #require(refusal([.post(wallet, \.move), .observer(holder, \.value)]))
        #expect(error.kind == .typeMismatch)
        #expect(error.message.hasPrefix("post Wallet.move sends no single value"))
        // A callback can receive it.
        let moves = Shared(0)
        try Binding.bind([.post(wallet, \.move), .observer { call in moves.mutate { $0 += try! call.argument(1, as: Int.self) } }])
        wallet.move(1, 2)
        #expect(moves.value == 2)
    }

    /// The refusal says what a call posts, not a reason that is not this
    /// poster's (it said "several arguments" of a closure that has none).
    @Test func aPosterWithNoArgumentIsRefusedWithTheRule() throws {
        let tick = ClosureHook(name: "tick") { () in }
        let holder = Holder()
        let error = try #require(refusal([.post(tick), .observer(holder, \.value)]))
        withExtendedLifetime(holder) {}
        #expect(error.kind == .typeMismatch)
        #expect(error.message.hasPrefix("post closure 'tick' sends no single value (a call posts its result, or its only argument if it returns nothing"))
        #expect(!error.message.contains("several arguments"))
    }

    @Test func errorsDescribeThemselves() {
        #expect("\(BindError(.emptyGroup, "bind needs fishes; the group is empty"))" == "HookBind: bind needs fishes; the group is empty")
    }
}
