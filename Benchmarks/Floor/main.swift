// A minimal push-pull graph with dynamic dependencies (the algorithm of
// alien-signals and Preact signals: versions, dirty flags pushed,
// dependencies pulled up to date in order, the last evaluation's reads
// matched in order), single-threaded, with no lock, no batch, no lifetime
// rules, no hook points and fixed buffers (64 dependencies or dependents a
// node): the kairo targets measured against an implementation of the same
// algorithm without HookBind's other guarantees. Not part of the package:
//
//   swiftc -O -wmo -enforce-exclusivity=unchecked Benchmarks/Floor/main.swift -o /tmp/floor && /tmp/floor
//
// (The Performance article, seventeenth round, compares its figures.)
import Foundation
nonisolated(unsafe) var current: Unmanaged<ComputedNode>? = nil
nonisolated(unsafe) var pending: [ComputedNode] = []

class Node {
    final var version: UInt64 = 0
    final var isComputed = false
    final var subs = UnsafeMutablePointer<Unmanaged<ComputedNode>>.allocate(capacity: 64)
    final var subCount = 0
    @inline(__always) final func markSubs() { for i in 0..<subCount { subs[i]._withUnsafeGuaranteedRef { $0.mark() } } }
}

final class Source: Node {
    var v: Int
    init(_ v: Int) { self.v = v }
    var value: Int {
        @inline(__always) get { if let c = current { c._withUnsafeGuaranteedRef { $0.track(self) } }; return v }
        set { v = newValue; version &+= 1; markSubs(); flush() }
    }
}

@inline(never) func flush() {
    for p in pending { p.refresh(); p.effect?(p.cache) }
    pending.removeAll(keepingCapacity: true)
}

final class ComputedNode: Node {
    var deps = UnsafeMutablePointer<(Unmanaged<Node>, UInt64)>.allocate(capacity: 64)
    var depCount = 0
    var matched = 0
    var cache = 0
    var dirty = false
    var effect: ((Int) -> Void)? = nil
    let fn: () -> Int
    init(_ fn: @escaping () -> Int) { self.fn = fn; super.init(); isComputed = true; evaluate() }
    @inline(__always) func track(_ n: Node) {
        let p = Unmanaged.passUnretained(n)
        if matched < depCount, deps[matched].0.toOpaque() == p.toOpaque() { deps[matched].1 = n.version; matched += 1; return }
        if matched > 0, deps[matched - 1].0.toOpaque() == p.toOpaque() { return }
        trackSlow(n)
    }
    @inline(never) func trackSlow(_ n: Node) {
        for i in 0..<depCount where deps[i].0.toOpaque() == Unmanaged.passUnretained(n).toOpaque() { return }
        deps[depCount] = (Unmanaged.passUnretained(n), n.version); depCount += 1; matched += 1
        n.subs[n.subCount] = Unmanaged.passUnretained(self); n.subCount += 1
    }
    @inline(never) func evaluate() {
        let outer = current
        current = Unmanaged.passUnretained(self)
        matched = 0
        let v = fn()
        current = outer
        if v != cache { cache = v; version &+= 1 }
    }
    func mark() {
        if dirty { return }
        dirty = true
        if effect != nil { pending.append(self) }
        markSubs()
    }
    func refresh() {
        guard dirty else { return }
        dirty = false
        for i in 0..<depCount {
            let (n, ver) = deps[i]
            let changed = n._withUnsafeGuaranteedRef { n in
                if n.isComputed { unsafeDowncast(n, to: ComputedNode.self).refresh() }
                return n.version != ver
            }
            if changed { evaluate(); return }
        }
    }
    var value: Int {
        refresh()
        if let c = current { c._withUnsafeGuaranteedRef { $0.track(self) } }
        return cache
    }
}

func time(_ name: String, _ n: Int = 200_000, _ update: (Int) -> Void) {
    for i in 0..<1000 { update(i) }
    let start = DispatchTime.now().uptimeNanoseconds
    for i in 0..<n { update(i) }
    let ns = Double(DispatchTime.now().uptimeNanoseconds - start) / Double(n)
    print(name, String(format: "%.1f ns", ns))
}
var sum = 0
do {
    let head = Source(0)
    var c = ComputedNode { head.value }
    for _ in 0..<49 { let p = c; c = ComputedNode { p.value &+ 1 } }
    c.effect = { sum &+= $0 }
    let end = c
    time("deep") { _ = end; head.value = $0 }
}
do {
    let head = Source(0)
    let c = ComputedNode { (0..<30).reduce(0) { s, _ in s &+ head.value } }
    c.effect = { sum &+= $0 }
    time("repeated") { _ = c; head.value = $0 }
}
do {
    let head = Source(0)
    var chain = [ComputedNode { head.value }]
    for _ in 1..<10 { let p = chain[chain.count - 1]; chain.append(ComputedNode { p.value &+ 1 }) }
    let nodes = chain
    let s = ComputedNode { nodes.reduce(0) { $0 &+ $1.value } }
    s.effect = { sum &+= $0 }
    time("triangle") { _ = s; head.value = $0 }
}
print(sum)
