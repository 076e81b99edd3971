import Hook
import HookBind
import Testing

/// Every example of the FishBind seed, as a test named after what it shows.
@Suite("FishBind seed examples")
struct FishBindSeedTests {
    /// The seed's first example: A and B by property, D by its setter method,
    /// each receiving through a callback that writes the receiver directly
    /// (FishBind's deadFish), D's callback prefixing "DK_".
    @Test func threeWayBilateralBindingWithConvertingCallback() throws {
        let objA = TestA(), objB = TestB(), objD = TestD()
        try Binding.bind([
            .both(objA, \.name) { call, a in a.userName = try call.argument(0, as: String.self) },
            .both(objB, \.bName) { call, b in b.bName = try call.argument(0, as: String.self) },
            .both(objD, \.setDK_Name) { call, d in d.setDK_Name("DK_" + (try call.argument(0, as: String.self))) },
        ])

        objA.name = "json"
        #expect([objA.userName, objB.bName, objD.DK_Name] == ["json", "json", "DK_json"])

        objB.bName = "GCD"
        #expect([objA.userName, objB.bName, objD.DK_Name] == ["GCD", "GCD", "DK_GCD"])

        objD.setDK_Name("apple")
        #expect([objA.userName, objB.bName, objD.DK_Name] == ["apple", "apple", "apple"])
    }

    /// `postBlock:` + `observer:callBack:`: the callback sees the block's
    /// arguments and result; the caller still gets the result.
    @Test func closurePosterReachesObserverCallback() throws {
        let testBlock = ClosureHook(name: "testBlock") { (i: Double, j: Double) in i + j }
        let observer = SeedViewController()
        let lines = Shared<[String]>([])
        try Binding.bind([
            .post(testBlock),
            .observer(observer) { call, _ in
                lines.mutate { $0.append("\(call.args[0]) + \(call.args[1]) = \(call.result!)") }
            },
        ])
        let value = testBlock(3.1, 4.1)
        #expect(lines.value == ["3.1 + 4.1 = 7.199999999999999"])
        #expect("value = \(value)" == "value = 7.199999999999999")
    }

    /// Two one-way method bindings: each observer runs right after its
    /// method, so appearing logs 1, 2, 3, 4 in order.
    @Test func methodBindingsFireAfterTheirMethods() throws {
        let vc = SeedViewController()
        try Binding.bind([
            .post(vc, \.viewDidAppear),
            .observer(vc) { _, vc in vc.log.append("4") },
        ])
        try Binding.bind([
            .post(vc, \.viewWillAppear),
            .observer(vc) { _, vc in vc.log.append("2") },
        ])
        vc.viewWillAppear(true)
        vc.viewDidAppear(true)
        #expect(vc.log == ["1", "2", "3", "4"])
    }

    /// `both:property:callBack:nil` three times: a change to any reaches the two others.
    @Test func threePropertiesStayEqual() throws {
        let a = Holder(), b = Holder(), c = Holder()
        try Binding.bind([.both(a, \.value), .both(b, \.value), .both(c, \.value)])
        for (index, object) in [a, b, c, b, a, c].enumerated() {
            object.value = index * 7 + 1
            #expect([a.value, b.value, c.value] == Array(repeating: index * 7 + 1, count: 3))
        }
    }

    /// "b is 100 times a and c": B converts what it receives, A and C convert
    /// what comes from B; the callbacks write their object directly.
    @Test func bIsAHundredTimesAAndC() throws {
        let a = Holder(), b = Holder(), c = Holder()
        let bID = ObjectIdentifier(b)  // not b: the callbacks live in the objects' hook points
        func fromB(_ call: CallBack) throws -> Int {
            let value = try call.argument(0, as: Int.self)
            return call.target.map { ObjectIdentifier($0) } == bID ? value / 100 : value
        }
        try Binding.bind([
            .both(a, \.value) { call, a in a.value = try fromB(call) },
            .both(c, \.value) { call, c in c.value = try fromB(call) },
            .both(b, \.value) { call, b in b.value = 100 * (try call.argument(0, as: Int.self)) },
        ])
        a.value = 3
        #expect([a.value, b.value, c.value] == [3, 300, 3])
        b.value = 700
        #expect([a.value, b.value, c.value] == [7, 700, 7])
        c.value = 2
        #expect([a.value, b.value, c.value] == [2, 200, 2])
    }
}
