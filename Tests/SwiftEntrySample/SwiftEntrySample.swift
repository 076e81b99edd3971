// Swift code that did not opt in to hooks, in a module of its own: the
// SwiftEntryHook tests hook it by name from another module.

/// An open class: its methods are called through the vtable from other modules.
open class Person {
    public var name: String
    public var age: Int
    public var nickname: String?

    public init(name: String, age: Int = 0) {
        self.name = name
        self.age = age
    }

    open func greet(_ other: String) -> String { "Hello \(other), I am \(name)" }

    /// Not open: called directly.
    public func haveBirthday() -> Int {
        age += 1
        return age
    }

    public static func named(_ name: String) -> Person { Person(name: name) }

    /// A computed property.
    public var title: String {
        get { "\(name) (\(age))" }
        set { name = newValue }
    }

    public func isOlder(than other: Person?) -> Bool { age > (other?.age ?? -1) }
}

/// A final class: no vtable entries.
public final class Counter {
    public private(set) var count = 0
    public var label: String? = nil

    public init() {}

    public func bump(by step: Int) -> Int {
        count += step
        return count
    }
}

/// A struct: self by value, or by address when mutating.
public struct Point: Equatable, Sendable {
    public var x: Double
    public var y: Double

    public init(x: Double, y: Double) {
        self.x = x
        self.y = y
    }

    public func scaled(by factor: Double) -> Point { Point(x: x * factor, y: y * factor) }

    public mutating func move(dx: Double, dy: Double) {
        x += dx
        y += dy
    }

    public var sum: Double { x + y }
}

/// A variadic parameter: an array to the function.
@inline(never) public func sumAll(_ values: Int...) -> Int { values.reduce(0, &+) }

/// A function and its async overload of the same types.
@inline(never) public func load(_ x: Int) -> Int { x &* 3 }
@inline(never) public func load(_ x: Int) async -> Int { x &* 4 }

/// A value whose deinit is counted, held by `Holder`.
public final class Token: @unchecked Sendable {
    public nonisolated(unsafe) static var deinits = 0
    public let id: Int
    public init(_ id: Int) { self.id = id }
    deinit { Token.deinits += 1 }
}

/// A struct with a reference whose `consuming` method takes self at +1
/// (its mangled name does not say so) and destroys it before returning.
public struct Holder {
    public var token: Token
    public init(token: Token) { self.token = token }
    @inline(never) public consuming func spend() -> Int { token.id }
}

public enum SampleError: Error, Equatable {
    case empty
    case notANumber(String)
}

public func shout(_ text: String) -> String { text.uppercased() }

public func total(_ values: [Int]) -> Int { values.reduce(0, +) }

public func lookup(_ table: [String: Int], _ key: String) -> Int? { table[key] }

public func parseNumber(_ text: String) throws -> Int {
    if text.isEmpty { throw SampleError.empty }
    guard let value = Int(text) else { throw SampleError.notANumber(text) }
    return value
}

public func negate(_ on: Bool) -> Bool { !on }

/// Members of extensions of another module's types.
extension String {
    public func shouted(times: Int) -> String { uppercased() + String(repeating: "!", count: times) }
}
extension Int {
    public var doubledValue: Int { self &* 2 }
}

/// Overloads that differ only in their types.
public func describe(_ value: Int) -> String { "int \(value)" }
public func describe(_ value: String) -> String { "string \(value)" }

/// Typed throws: the error comes back in the result registers.
public func strictNumber(_ text: String) throws(SampleError) -> Int {
    guard let value = Int(text) else { throw SampleError.notANumber(text) }
    return value
}

/// Existentials in registers: a class reference, one with a protocol's
/// witness table, an error's box; and one passed indirectly.
public protocol Named: AnyObject { var name: String { get } }
public final class Tag: Named {
    public let name: String
    public init(_ name: String) { self.name = name }
}
public func identify(_ object: AnyObject) -> String { (object as? Tag)?.name ?? "?" }
public func nameOf(_ named: any Named) -> String { named.name }
public func explain(_ error: any Error) -> String { "\(error)" }
public func anything(_ value: Any) -> String { "\(value)" }
public func kindName(_ kind: any Named.Type) -> String { "\(kind)" }
/// An enum with a payload of any type: passed indirectly, as its payload is.
public enum Boxed { case any(Any), none }
public func unbox(_ boxed: Boxed) -> String { if case .any(let value) = boxed { "\(value)" } else { "none" } }
/// A 16-byte integer.
public func doubled(_ value: UInt128) -> UInt128 { value &* 2 }

/// A half-precision float (an xmm register) and a SIMD vector (a vector register).
public func halve(_ x: Float16, _ times: Int) -> Float16 { x / Float16(1 << times) }
public func length(_ v: SIMD2<Float>) -> Float { (v * v).sum().squareRoot() }

extension Person {
    /// Stores the value lowercased: its setter releases the value it was given.
    public var lowered: String {
        get { name }
        set { name = newValue.lowercased() }
    }

    /// A throwing getter (its symbol does not say it throws).
    public var checkedAge: Int {
        get throws {
            guard age >= 0 else { throw SampleError.notANumber("\(age)") }
            return age
        }
    }

    /// A static stored property (its modify's self is the type).
    nonisolated(unsafe) public static var census = 0
}

public func mix(_ a: Int32, _ f: Float, _ d: Double, _ b: UInt8) -> Double { Double(a) + Double(f) + d + Double(b) }

/// A tuple parameter: passed as its elements, a register each.
public func pairSum(_ p: (Int8, Int8), _ k: Int) -> Int { Int(p.0) * 100 + Int(p.1) * 10 + k }

public func midpoint(_ a: Point, _ b: Point) -> Point { Point(x: (a.x + b.x) / 2, y: (a.y + b.y) / 2) }

/// Called by the thread test: a method whose count says how often it ran.
public final class Worker: @unchecked Sendable {
    public init() {}
    public func work(_ n: Int) -> Int { n &* 2 &+ 1 }
}

/// Calls itself: each level's call reaches the entry.
public func factorial(_ n: Int) -> Int { n <= 1 ? 1 : n &* factorial(n &- 1) }

/// Where `modelOriginal` reports each run (HookTests' random hook model).
nonisolated(unsafe) public var modelReport: ((Int64) -> Void)?
nonisolated(unsafe) private var modelDepth = 0

/// The random hook model's Swift original (as its C ones): reports each
/// run, returns 2x + 1 (wrapping), or, for a positive multiple of 7 (three
/// levels deep at most), itself at x - 1 plus 1, by a direct call.
/// (Not optimized: the recursion stays a call of its own entry.)
@_optimize(none) @inline(never)
public func modelOriginal(_ x: Int64) -> Int64 {
    modelReport?(x)
    if x > 0, x % 7 == 0, modelDepth < 3 {
        modelDepth += 1
        defer { modelDepth -= 1 }
        return modelOriginal(x - 1) &+ 1
    }
    return x &* 2 &+ 1
}

/// The threaded hook model's Swift original: 2x + 1 (wrapping).
@inline(never)
public func threadsOriginal(_ x: Int64) -> Int64 { x &* 2 &+ 1 }

/// Traced by two threads at once, each starting and stopping its own
/// trace (SwiftTraceTests).
@inline(never)
public func tracedByTwo(_ x: Int) -> Int { x &+ 1 }

/// `Worker.work(_:)`'s body, exactly, in another class: an optimized build
/// keeps one body and makes the other method a jump to it (LLVM merges
/// identical functions: with Swift 6.3.1, `Worker.work(_:)` becomes a jump
/// to `Twin.work(_:)`, and `Worker.init()` and `Remote.init()` jumps to
/// `Twin.init()`). A hook by name on the one kept is refused there: it would
/// run for the other's calls, with a `Worker` as its `Twin` (the reach
/// probe checks it). A debug build keeps both bodies.
public final class Twin: @unchecked Sendable {
    public init() {}
    public func work(_ n: Int) -> Int { n &* 2 &+ 1 }
}

/// Async members of a class: an async getter's symbol is named as a plain
/// getter's; the async function pointer beside it (its symbol + `Tu`) and
/// its method descriptor's flags say it is async.
open class Remote: @unchecked Sendable {
    public init() {}
    open var answer: Int { get async { 42 } }
    open func fetch() async -> Int { 7 }
}

/// A struct's async getter: no method descriptor, the async function pointer alone says it.
public struct Gauge: Sendable {
    public init() {}
    public var level: Int { get async { 3 } }
}
