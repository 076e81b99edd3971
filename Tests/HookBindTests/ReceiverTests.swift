import Hook
@testable import HookBind
import Testing

// How a binding sets its receivers: a receiver whose only hook is the
// binding's own is stored without a call (that hook would only store it);
// any other hook, and the set goes through every hook. And the property
// fishes optimized clients make, whose set and read are closures specialized
// for the value type (a debug build, as the tests are, makes fishes that use
// the endpoint's generic methods instead; `specialized` makes the others).

@Suite("A binding's receivers")
struct BindingReceiverTests {
    /// A `both` fish as an optimized client makes it.
    static func specialized<Object: AnyObject, Value>(_ object: Object, _ property: ReferenceWritableKeyPath<Object, Value>) -> Fish {
        Fish._property(.both, object, property, _PropertyAccess(specializing: Value.self), callBack: nil)
    }

    @Test func specializedFishesSetAndPostTrivialValues() throws {
        let a = Holder(), b = Holder(), c = Holder()
        let binding = try Binding.bind([Self.specialized(a, \.value), Self.specialized(b, \.value), Self.specialized(c, \.value)])
        a.value = 5
        #expect((b.value, c.value) == (5, 5))
        c.value = 7
        #expect((a.value, b.value) == (7, 7))
        binding.unbind()
        b.value = 1
        #expect((a.value, c.value) == (7, 7))
    }

    @Test func specializedFishesSetAndPostValuesThatNeedCopying() throws {
        let a = Label(), b = Label()
        try Binding.bind([Self.specialized(a, \.text), .both(b, \.text)])
        a.text = String(repeating: "long enough to live on the heap ", count: 4)
        #expect(b.text == a.text)
        b.text = "back"
        #expect(a.text == "back")
    }

    @Test func specializedFishesMixWithOthersAndTransformers() throws {
        let a = Holder(), label = Label()
        try Binding.bind([
            Self.specialized(a, \.value),
            Fish.both(label, \.text).transformed(by: Transformer<String, Int>(forward: { Int($0) ?? -1 }, reverse: { String($0) })),
        ])
        a.value = 42
        #expect(label.text == "42")
        label.text = "9"
        #expect(a.value == 9)
    }

    /// A hook of the user's on a receiver sees the binding's set, may change
    /// it, and once removed the receiver is set as before.
    @Test(arguments: [false, true])
    func aReceiversOwnHooksSeeTheSet(specializedFishes: Bool) throws {
        let a = Holder(), b = Holder()
        let fishes = specializedFishes ? [Self.specialized(a, \.value), Self.specialized(b, \.value)] : [.both(a, \.value), .both(b, \.value)]
        try Binding.bind(fishes)
        var seen: [Int] = []
        let after = b.$value.after { call in seen.append(try call.argument(0, as: Int.self)) }
        let before = b.$value.before { call in try call.setArgument(0, to: try call.argument(0, as: Int.self) * 10) }
        a.value = 3
        #expect(b.value == 30)
        #expect(seen == [30])
        before.remove()
        after.remove()
        a.value = 4
        #expect(b.value == 4)
        #expect(seen == [30])
    }

    /// A receiver that another binding also posts from passes the change on.
    @Test(arguments: [false, true])
    func aReceiverBoundTwiceStillPosts(specializedFishes: Bool) throws {
        let a = Holder(), b = Holder(), c = Holder()
        func fish(_ holder: Holder) -> Fish { specializedFishes ? Self.specialized(holder, \.value) : .both(holder, \.value) }
        try Binding.bind([fish(a), fish(b)])
        try Binding.bind([fish(b), fish(c)])
        a.value = 8
        #expect((b.value, c.value) == (8, 8))
        c.value = 2
        #expect((a.value, b.value) == (2, 2))
    }

    /// While one thread sets the poster, another adds and removes a hook of
    /// its own on a receiver: each set either is a call through that hook or
    /// a plain store, the hook sees only values the poster was given, and the
    /// receiver ends with the last one (also under ThreadSanitizer).
    @Test(arguments: [false, true])
    func hooksComeAndGoOnAReceiverWhileItIsSet(specializedFishes: Bool) throws {
        let a = Holder(), b = Holder()
        let fishes = specializedFishes ? [Self.specialized(a, \.value), Self.specialized(b, \.value)] : [.both(a, \.value), .both(b, \.value)]
        let binding = try Binding.bind(fishes)
        let bad = Shared(0), heard = Shared(0)
        let setter = Shared(true)
        nonisolated(unsafe) let poster = a, receiver = b
        onThreads(2) { thread in
            if thread == 0 {
                for i in 1...5_000 { poster.value = i }
                setter.value = false
            } else {
                while setter.value {
                    let token = receiver.$value.after { call in
                        let value = try call.argument(0, as: Int.self)
                        heard.mutate { $0 += 1 }
                        if value < 1 || value > 5_000 { bad.mutate { $0 += 1 } }
                    }
                    token.remove()
                }
            }
        }
        #expect(b.value == 5_000)
        #expect(bad.value == 0)
        withExtendedLifetime(binding) {}
    }

    /// A receiver that is an `Observable`'s bound property tells the observable's subscribers.
    @Test func aReceiverBoundToAnObservableTellsItsSubscribers() throws {
        let a = Holder(), b = Holder()
        try Binding.bind([Self.specialized(a, \.value), Self.specialized(b, \.value)])
        let observable = Observable(0)
        let bound = try observable.bind(b, \.value)
        var heard: [Int] = []
        let subscription = observable.subscribe { _, new in heard.append(new) }
        a.value = 6
        #expect(b.value == 6)
        #expect(observable.value == 6)
        #expect(heard.last == 6)
        withExtendedLifetime((bound, subscription)) {}
    }
}
