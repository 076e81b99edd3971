// The FishBind seed, example by example, in Swift: its objects, its
// bindings, and its output lines.
import Foundation
import HookBind
import HookMacros

@Hookable
final class TestA {
    /// FishBind's TestA declares `name` with `setter=setUserName:, getter=userName`.
    var name = ""
    var userName: String {
        get { name }
        set { name = newValue }
    }
}

@Hookable
final class TestB {
    var bName = ""
}

@Hookable
final class TestD {
    @Unhooked private(set) var DK_Name = ""
    /// FishBind binds TestD by its setter, `setDK_Name:`: a plain method, hooked as `$setDK_Name`.
    func setDK_Name(_ name: String) { DK_Name = name }
}

/// The seed's view controller: `viewDidLoad` makes the bindings; the two
/// appearance methods print "1" and "3", their observers "2" and "4".
@Hookable
final class ViewController {
    @Unhooked func viewDidLoad() throws {
        // Bilateral binding
        let objA = TestA(), objB = TestB(), objD = TestD()
        try Binding.bind([
            .both(objA, \.name) { callBack, deadFish in
                deadFish.userName = try callBack.argument(0, as: String.self)
            },
            .both(objB, \.bName) { callBack, deadFish in
                deadFish.bName = try callBack.argument(0, as: String.self)
            },
            .both(objD, \.$setDK_Name) { callBack, deadFish in
                deadFish.setDK_Name("DK_\(try callBack.argument(0, as: String.self))")
            },
        ])
        func log() { print("TestA : name = \(objA.userName)\nTestB : bName = \(objB.bName)\nTestD : DK_Name = \(objD.DK_Name)") }

        objA.name = "json"
        log()
        objB.bName = "GCD"
        log()
        objD.setDK_Name("apple")
        log()

        // Binding a block
        let testBlock = ClosureHook(name: "testBlock") { (i: Double, j: Double) in i + j }
        try Binding.bind([
            .post(testBlock),
            .observer(self) { callBack, deadFish in
                print("\(callBack.args[0]) + \(callBack.args[1]) = \(callBack.result!)")
            },
        ])
        let value = testBlock(3.1, 4.1)
        print("value = \(value)")

        // One-way method bindings
        try Binding.bind([
            .post(self, \.$viewDidAppear),
            .observer(self) { callBack, deadFish in print("======== 4 ===========") },
        ])
        try Binding.bind([
            .post(self, \.$viewWillAppear),
            .observer(self) { callBack, deadFish in print("======== 2 ===========") },
        ])
    }

    func viewWillAppear(_ animated: Bool) { print("======== 1 ===========") }
    func viewDidAppear(_ animated: Bool) { print("======== 3 ===========") }
}

final class Scalar {
    @Hooked var value = 0
}

final class TextField {
    @Hooked var text = ""
}

final class Price {
    @Hooked var amount = 0.0
}

func fishBindTour() throws {
    section("HookBind: the FishBind seed (bilateral, block, method bindings)")
    let viewController = ViewController()
    try viewController.viewDidLoad()
    viewController.viewWillAppear(true)
    viewController.viewDidAppear(true)

    section("HookBind: three properties, b is 100 times a and c")
    let a = Scalar(), b = Scalar(), c = Scalar()
    // The callbacks must not capture a bound object: b's hook point keeps the
    // binding, and so its callbacks, alive; a callback that held b would keep
    // b alive through b's own hook point. They receive the object they set,
    // and tell the sender by identity, which holds nothing.
    let bID = ObjectIdentifier(b)
    func fromB(_ call: CallBack) throws -> Int {
        let value = try call.argument(0, as: Int.self)
        return call.target.map(ObjectIdentifier.init) == bID ? value / 100 : value
    }
    try Binding.bind([
        .both(a, \.value) { call, a in a.value = try fromB(call) },
        .both(c, \.value) { call, c in c.value = try fromB(call) },
        .both(b, \.value) { call, b in b.value = 100 * (try call.argument(0, as: Int.self)) },
    ])
    a.value = 3
    print("a = 3    -> a = \(a.value), b = \(b.value), c = \(c.value)")
    b.value = 700
    print("b = 700  -> a = \(a.value), b = \(b.value), c = \(c.value)")

    section("HookBind: a chain of transformers (String <-> NSNumber <-> Double)")
    let formatter = NumberFormatter()
    formatter.locale = Locale(identifier: "en_US_POSIX")
    formatter.numberStyle = .decimal
    let field = TextField(), price = Price()
    field.$text.hookErrorHandler = { error, _ in print("refused: \(error)") }
    try Binding.bind([
        .both(field, \.text).transformed(by: Transformer.stringToNumber(formatter).then(.numberToDouble)),
        .both(price, \.amount),
    ])
    field.text = "12.5"
    print("text = \"12.5\"  -> amount = \(price.amount)")
    price.amount = 0.25
    print("amount = 0.25 -> text = \"\(field.text)\"")
    field.text = "twelve"
    print("text = \"twelve\" -> amount = \(price.amount)")

    section("HookBind: a cycle of bindings ends")
    let x = Scalar(), y = Scalar(), z = Scalar()
    try Binding.bind([.both(x, \.value), .both(y, \.value)])
    try Binding.bind([.both(y, \.value), .both(z, \.value)])
    try Binding.bind([.both(z, \.value), .both(x, \.value)])
    x.value = 42
    print("x = 42 -> x = \(x.value), y = \(y.value), z = \(z.value)")

    section("HookBind: a type mismatch is refused at bind time")
    do {
        try Binding.bind([.both(field, \.text), .both(price, \.amount)])
    } catch {
        print(error)
    }
}

// MARK: XKVO

/// XKVO's ViewController: a counted property and a login signal.
final class XKVOViewController {
    @Hooked var testCount = 0
    let loginSignal = Signal<String>()

    func viewDidLoad() throws {
        try KVO.observe(self, \.testCount, observer: self, initial: true) { kvoValue in
            print("监听到 testCount 属性变化 \(kvoValue.isInitial ? "初始值 " : "")\(kvoValue.oldValue) ==> \(kvoValue.newValue)")
        }
        testCount += 1

        loginSignal.subscribe(observer: self) { _, x in print("监听者1号 收到账号登录事件 nick:\(x)") }
        let monitor = loginSignal.subscribe(observer: self) { _, x in print("监听者2号 收到账号登录事件 nick:\(x)") }
        monitor.close()  // listener 2 prints nothing
        loginSignal.subscribe(observer: self) { _, x in print("监听者3号 收到账号登录事件 nick:\(x)") }
        loginSignal.emit("小白菜")
    }
}

func xkvoTour() throws {
    section("HookBind: the XKVO seed (property observation with an initial value, a signal)")
    try XKVOViewController().viewDidLoad()
}
