// Swift code that did not opt in (another module's class, Foundation's
// UUID), hooked by name: a spy, a stub, a trace.
import Foundation
import Hook
import HookDemoShop
import Synchronization

func swiftByNameTour() throws {
    section("Swift code by name: a spy on another module's class (SwiftEntryHook)")
    let add = try SwiftEntryHook.named("HookDemoShop.Cart.add(_:price:)", as: ((Cart, String, Int) -> Void).self)
    let cart = Cart(), other = Cart()
    // Every item added to this cart (not the other one), typed.
    try add.afterReturning(for: cart) { (_: Void, cart: Cart, item: String, price: Int) in
        print("spy: \(item) for \(price) cents; the cart now holds \(cart.total)")
    }
    // A before hook for every cart: a discount on tea.
    add.before { call in
        if try call.argument(1, as: String.self) == "tea" { try call.setArgument(2, to: try call.argument(2, as: Int.self) / 2) }
    }
    cart.add("bread", price: 250)
    cart.add("tea", price: 400)
    other.add("milk", price: 120)
    print("cart total \(cart.total), other cart total \(other.total) (its call ran the discount hook only)")
    try add.restore()

    section("Swift code by name: UUID() pinned, the library unchanged")
    let uuid = try SwiftEntryHook.named("Foundation.UUID.init()", as: (() -> UUID).self)
    uuid.instead { call in try call.setResult(UUID(uuidString: "C0FFEE00-0000-0000-0000-000000000000")!) }
    print(cart.checkout())
    try uuid.restore()
    print("restored: a fresh order number again: \(!cart.checkout().hasPrefix("order C0FFEE00"))")

    section("Swift code by name: a trace of every method of Cart (SwiftTrace)")
    let lines = Mutex<[String]>([])
    let trace = try SwiftTrace("HookDemoShop.Cart.*") { call in
        lines.withLock { $0.append(String(repeating: "  ", count: call.depth) + call.name) }
    }
    let third = Cart()
    third.add("jam", price: 300)
    _ = third.checkout()
    trace.stop()
    for line in lines.withLock({ $0 }) { print("traced: \(line)") }
}
