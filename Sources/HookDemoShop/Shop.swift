// A module of plain Swift code that knows nothing of hooks: the demo's
// "Swift code by name" tour spies on it, pins its UUIDs and traces it.
import Foundation

/// A shopping cart, as a library would write it.
open class Cart {
    public private(set) var items: [String] = []
    public private(set) var total = 0

    public init() {}

    open func add(_ item: String, price: Int) {
        items.append(item)
        total += price
    }

    /// An order number (a fresh UUID) and the total.
    open func checkout() -> String {
        "order \(UUID().uuidString.prefix(8)): \(items.count) items, \(total) cents"
    }
}
