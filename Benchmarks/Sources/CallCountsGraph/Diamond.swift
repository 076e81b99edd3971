// call-counts' diamond case, in a module of its own: the specializations it
// makes (a Computed<Int>'s subscription) would otherwise be merged with the
// Observable case's identical ones in call-counts' module, and that case would
// call the merged function instead of inlining it.
import HookBind

/// A subscriber's sum (a class: a captured `var` would add an exclusivity check per write).
public final class DiamondSum: @unchecked Sendable {
    public var total = 0
    public init() {}
    func add(_ value: Int) { total &+= value }
}

/// The diamond of the benchmarks: a -> b, c -> d, d subscribed; `n` writes to a.
public func diamondWrites(_ n: Int) -> Int {
    let a = Observable(0)
    let b = Computed { a.value &* 2 }
    let c = Computed { a.value &* 3 }
    let d = Computed { b.value &+ c.value }
    let seen = DiamondSum()
    let subscription = d.subscribe { _, new in seen.add(new) }
    var i = 0
    while i < n { a.value = i; i += 1 }
    return withExtendedLifetime((subscription, b, c)) { seen.total }
}

/// kairo's deep shape: a chain of 50 computeds over `a`, the last
/// subscribed; `n` writes to a.
public func deepWrites(_ n: Int) -> Int {
    let a = Observable(0)
    var last = Computed { a.value }
    for _ in 0..<49 { let previous = last; last = Computed { previous.value &+ 1 } }
    let seen = DiamondSum()
    let subscription = last.subscribe { _, new in seen.add(new) }
    var i = 0
    while i < n { a.value = i; i += 1 }
    return withExtendedLifetime((subscription, last)) { seen.total }
}

/// kairo's broad shape: 50 computeds over `a`, each subscribed; `n` writes to a.
public func broadWrites(_ n: Int) -> Int {
    let a = Observable(0)
    let nodes = (0..<50).map { i in Computed { a.value &+ i } }
    let seen = DiamondSum()
    let subscriptions = nodes.map { $0.subscribe { _, new in seen.add(new) } }
    var i = 0
    while i < n { a.value = i; i += 1 }
    return withExtendedLifetime((subscriptions, nodes)) { seen.total }
}

/// kairo's repeated shape: one computed reads `a` 30 times, subscribed; `n` writes to a.
public func repeatedWrites(_ n: Int) -> Int {
    let a = Observable(0)
    let sum = Computed { (0..<30).reduce(0) { total, _ in total &+ a.value } }
    let seen = DiamondSum()
    let subscription = sum.subscribe { _, new in seen.add(new) }
    var i = 0
    while i < n { a.value = i; i += 1 }
    return withExtendedLifetime((subscription, sum)) { seen.total }
}

/// kairo's unstable shape: a computed reading `double` or `inverse` 20 times by the source's parity.
public func unstableWrites(_ n: Int) -> Int {
    let a = Observable(0)
    let double = Computed { a.value &* 2 }
    let inverse = Computed { 0 &- a.value }
    let current = Computed {
        var result = 0
        for _ in 0..<20 { result &+= a.value & 1 == 1 ? double.value : inverse.value }
        return result
    }
    let seen = DiamondSum()
    let subscription = current.subscribe { _, new in seen.add(new) }
    var i = 0
    while i < n { a.value = i; i += 1 }
    return withExtendedLifetime((subscription, current)) { seen.total }
}

/// kairo's triangle shape: a chain of 10 over `a` and a computed summing all
/// ten, subscribed; `n` writes to a.
public func triangleWrites(_ n: Int) -> Int {
    let a = Observable(0)
    var chain: [Computed<Int>] = [Computed { a.value }]
    for _ in 1..<10 { let previous = chain[chain.count - 1]; chain.append(Computed { previous.value &+ 1 }) }
    // (A constant captured: the captured `var` was a box retained, released
    // and checked for exclusive access on every evaluation.)
    let nodes = chain
    let sum = Computed { nodes.reduce(0) { $0 &+ $1.value } }
    let seen = DiamondSum()
    let subscription = sum.subscribe { _, new in seen.add(new) }
    var i = 0
    while i < n { a.value = i; i += 1 }
    return withExtendedLifetime((subscription, sum)) { seen.total }
}

/// kairo's mux shape: 100 sources into one computed (all their values),
/// split into 100 computeds (one value each, then + 1), each subscribed;
/// `n` writes to one of the first ten sources, in turn. (The mux's array is
/// the one allocation an update makes.)
public func muxWrites(_ n: Int) -> Int {
    let heads = (0..<100).map { _ in Observable(0) }
    let mux = Computed { heads.map { $0.value } }
    let splits = (0..<100).map { i in Computed { mux.value[i] } }.map { split in Computed { split.value &+ 1 } }
    let seen = DiamondSum()
    let subscriptions = splits.map { $0.subscribe { _, new in seen.add(new) } }
    var i = 0
    while i < n { heads[i % 10].value = i; i += 1 }
    return withExtendedLifetime((subscriptions, splits)) { seen.total }
}

/// A computed over 1,000 sources that leaves out the one `skip` names:
/// each of the `n` writes to `skip` changes which it reads (its reads
/// diverge from the last evaluation's at the one left out, or at the one
/// read again), subscribed.
public func wideUnstableWrites(_ n: Int) -> Int {
    let sources = (0..<1_000).map { Observable($0) }
    let skip = Observable(0)
    let sum = Computed {
        let left = skip.value
        var total = 0
        for i in 0..<sources.count where i != left { total &+= sources[i].value }
        return total
    }
    let seen = DiamondSum()
    let subscription = sum.subscribe { _, new in seen.add(new) }
    var i = 0
    while i < n { skip.value = (i &* 7) % 1_000; i += 1 }
    return withExtendedLifetime((subscription, sum)) { seen.total }
}

/// 1,000 computeds reading one shared value, each also its own source
/// while `toggle` is off: each of the `n` writes to `toggle` changes what
/// every one of them reads, subscribed.
public func fanToggleWrites(_ n: Int) -> Int {
    let shared = Observable(1)
    let toggle = Observable(false)
    let own = (0..<1_000).map { Observable($0) }
    let computeds = (0..<1_000).map { i in Computed { toggle.value ? shared.value : shared.value &+ own[i].value } }
    let seen = DiamondSum()
    let subscriptions = computeds.map { $0.subscribe { _, new in seen.add(new) } }
    var i = 0
    while i < n { toggle.value = i & 1 == 0; i += 1 }
    return withExtendedLifetime((subscriptions, computeds)) { seen.total }
}
