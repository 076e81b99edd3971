// The no-hook cost of a @Hookable method and property against the plain
// members, optimized (-O). Built by run.sh from the package's debug build
// (its macro plug-in and Hook module; Hook's call path is inlinable, so it
// is optimized here), to spare a release build of swift-syntax.
import Foundation
import HookMacros

final class Plain {
    var total = 0
    var value = 0
    func add(_ x: Int) -> Int { total = total &* 31 &+ x; return total }
}

@Hookable
final class Model {
    @Unhooked var total = 0
    var value = 0
    func add(_ x: Int) -> Int { total = total &* 31 &+ x; return total }
}

@inline(never) func opaque<T: AnyObject>(_ x: T) -> T { x }

@inline(never) func callPlain(_ o: Plain, _ n: Int) -> Int {
    var s = 0
    for i in 0..<n { s &+= o.add(i) }
    return s
}

@inline(never) func callHooked(_ o: Model, _ n: Int) -> Int {
    var s = 0
    for i in 0..<n { s &+= o.add(i) }
    return s
}

@inline(never) func setPlain(_ o: Plain, _ n: Int) {
    for i in 0..<n { o.value = i }
}

@inline(never) func setHooked(_ o: Model, _ n: Int) {
    for i in 0..<n { o.value = i }
}

/// ns per iteration, best of 7 runs.
func measure(_ n: Int, _ body: (Int) -> Void) -> Double {
    var best = Double.infinity
    for _ in 0..<7 {
        let start = DispatchTime.now().uptimeNanoseconds
        body(n)
        let end = DispatchTime.now().uptimeNanoseconds
        best = min(best, Double(end - start) / Double(n))
    }
    return best
}

let n = CommandLine.arguments.count > 1 ? Int(CommandLine.arguments[1])! : 50_000_000
let plain = opaque(Plain()), noPoint = opaque(Model()), idle = opaque(Model())
_ = idle.$add         // a hook point with no hook
_ = idle.$value
var sink = 0
let rows: [(String, Double)] = [
    ("plain method call", measure(n) { sink &+= callPlain(plain, $0) }),
    ("@Hookable method, no hook point", measure(n) { sink &+= callHooked(noPoint, $0) }),
    ("@Hookable method, hook point, no hook", measure(n) { sink &+= callHooked(idle, $0) }),
    ("plain property set", measure(n) { setPlain(plain, $0) }),
    ("@Hookable property set, no hook point", measure(n) { setHooked(noPoint, $0) }),
    ("@Hookable property set, hook point, no hook", measure(n) { setHooked(idle, $0) }),
]
for (name, ns) in rows { print(String(format: "%-46@ %6.2f ns", name as NSString, ns)) }
print("checksum \(sink & 1)")
