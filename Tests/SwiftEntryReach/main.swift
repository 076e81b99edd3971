// Which calls of another module's Swift code an entry hook sees, in the
// configuration this program is built in. Each case calls SwiftEntrySample
// one way, with a trace on every function of that module; the table says
// which cases reached the function. Then it hooks two identical methods of
// two classes by name (a release build merges them). It exits with 1 if
// what it sees is not what the article "Hooking Swift code by name"
// documents for this configuration (every call in a debug build; in
// release, the list below; the merged method refused in release only).
//
//   swift run swift-entry-reach                      # debug
//   swift run -c release swift-entry-reach           # release (HOOK_WITHOUT_MACROS=1 skips swift-syntax)
import Foundation
import Hook
import SwiftEntrySample
import Synchronization

let seen = Mutex<[String: Int]>([:])
let trace = try SwiftTrace("SwiftEntrySample.*") { call in seen.withLock { $0[call.name, default: 0] += 1 } }
let uuid = try SwiftTrace("Foundation.UUID.init()") { call in seen.withLock { $0[call.name, default: 0] += 1 } }

/// An object the optimizer cannot see the making of.
@inline(never) func opaque<T>(_ value: T) -> T { value }

struct Case {
    let name: String
    let function: String
    let run: () -> Void
}

var sink = 0
let cases: [Case] = [
    Case(name: "open method, object of unknown class (vtable)", function: "SwiftEntrySample.Person.greet(_:)") {
        sink &+= opaque(Person(name: "a")).greet("b").utf8.count
    },
    Case(name: "open method, object made here (type known)", function: "SwiftEntrySample.Person.greet(_:)") {
        let person = Person(name: "a")
        sink &+= person.greet("b").utf8.count
    },
    Case(name: "non-open method of an open class", function: "SwiftEntrySample.Person.haveBirthday()") {
        sink &+= opaque(Person(name: "a")).haveBirthday()
    },
    Case(name: "stored property setter of an open class", function: "SwiftEntrySample.Person.name.setter") {
        opaque(Person(name: "a")).name = "c"
    },
    Case(name: "computed property getter", function: "SwiftEntrySample.Person.title.getter") {
        sink &+= opaque(Person(name: "a")).title.utf8.count
    },
    Case(name: "static method", function: "SwiftEntrySample.Person.named(_:)") {
        sink &+= Person.named("n").age
    },
    Case(name: "initializer of a class", function: "SwiftEntrySample.Person.init(name:age:)") {
        sink &+= Person(name: "i", age: 1).age
    },
    Case(name: "method of a final class", function: "SwiftEntrySample.Counter.bump(by:)") {
        sink &+= opaque(Counter()).bump(by: 1)
    },
    Case(name: "non-mutating method of a struct", function: "SwiftEntrySample.Point.scaled(by:)") {
        sink &+= Int(opaque(Point(x: 1, y: 2)).scaled(by: 2).x)
    },
    Case(name: "mutating method of a struct", function: "SwiftEntrySample.Point.move(dx:dy:)") {
        var point = opaque(Point(x: 1, y: 2))
        point.move(dx: 1, dy: 1)
        sink &+= Int(point.x)
    },
    Case(name: "free function", function: "SwiftEntrySample.shout(_:)") {
        sink &+= shout(opaque("abc")).utf8.count
    },
    Case(name: "throwing free function", function: "SwiftEntrySample.parseNumber(_:)") {
        sink &+= (try? parseNumber(opaque("12"))) ?? 0
    },
    Case(name: "Foundation's UUID()", function: "FoundationEssentials.UUID.init()") {
        sink &+= UUID().hashValue & 1
    },
]

/// (Out of line: `_isDebugAssertConfiguration()` inlined is a constant, and
/// the branch not taken warned that it is never executed.)
@inline(never) func isReleaseBuild() -> Bool { !_isDebugAssertConfiguration() }
let release = isReleaseBuild()
/// What the article documents as not seen in a release build: SwiftPM's
/// release builds optimize across modules (`-enable-default-cmo`), which makes
/// the bodies of small public functions of SwiftEntrySample available to this
/// module, and the optimizer inlines them here (measured with Swift 6.3.1;
/// which functions it inlines depends on their size).
let unseenInRelease: Set<String> = [
    "static method",
    "initializer of a class",
    "method of a final class",
    "non-mutating method of a struct",
    "mutating method of a struct",
    "free function",
]

var surprises: [String] = []
print("| call from another module | seen (\(release ? "release" : "debug")) |")
print("| --- | --- |")
for item in cases {
    seen.withLock { $0 = [:] }
    item.run()
    let count = seen.withLock { $0[item.function, default: 0] }
    print("| \(item.name) | \(count > 0 ? "yes" : "no") |")
    let expected = !(release && unseenInRelease.contains(item.name))
    if (count > 0) != expected { surprises.append(item.name) }
}
trace.stop()
uuid.stop()

/// Identical methods of two classes (`Worker.work(_:)`, `Twin.work(_:)`): a
/// release build keeps one body and makes the other method a jump to it
/// (LLVM merges identical functions), and a hook by name on the one kept is
/// refused, naming the other (its hooks would run for the other's calls,
/// with the other's object as self); the one that jumps is hooked (its calls
/// are not counted here: a release build inlines them). A debug build merges
/// nothing: both are hooked, and each hook hears its own method's calls.
/// (Its own table, of other rows than the one above.)
let twins = ["SwiftEntrySample.Worker.work(_:)", "SwiftEntrySample.Twin.work(_:)"]
let heard = Mutex<[String: Int]>([:])
/// The method `name` hooked by name (a hook that counts its calls), or why not.
func hookTwin<T: AnyObject>(_ name: String, self type: T.Type) -> Result<SwiftEntryPoint, HookError> {
    Result { () throws(HookError) -> SwiftEntryPoint in
        let point = try SwiftEntryHook.named(name, as: ((T, Int) -> Int).self)
        point.after { _ in heard.withLock { $0[name, default: 0] += 1 } }
        return point
    }
}
print("")
print("| identical methods of two classes | hook by name (\(release ? "release" : "debug")) |")
print("| --- | --- |")
nonisolated(unsafe) var refusals: [String: String] = [:]
nonisolated(unsafe) var twinPoints: [SwiftEntryPoint] = []
for (name, outcome) in zip(twins, [hookTwin(twins[0], self: Worker.self), hookTwin(twins[1], self: Twin.self)]) {
    switch outcome {
    case .success(let point):
        twinPoints.append(point)
        print("| \(name) | hooked |")
    case .failure(let error):
        refusals[name] = error.detail
        print("| \(name) | refused: \(error.detail) |")
    }
}
sink &+= opaque(Worker()).work(1) &+ opaque(Twin()).work(2)
for point in twinPoints { try? point.restore() }
if release {
    // One refused, naming the other.
    let refused = twins.filter { refusals[$0] != nil }
    if refused.count != 1 || !twins.allSatisfy({ $0 == refused[0] || refusals[refused[0]]?.contains($0) == true }) {
        surprises.append("identical methods of two classes (refused: \(refused))")
    }
} else if !refusals.isEmpty || heard.withLock({ $0 }) != [twins[0]: 1, twins[1]: 1] {
    surprises.append("identical methods of two classes (refused: \(refusals.keys.sorted()), heard: \(heard.withLock { $0 }))")
}

if !surprises.isEmpty {
    print("not as documented: \(surprises.joined(separator: "; "))")
    exit(1)
}
print("as documented (sink \(sink & 1))")
