import Foundation
import Testing
import HookBind

// Random graphs of observables and computeds, driven through the public API
// and checked against a model: a plain, unoptimized statement of what the
// documentation promises (Computed's "When it evaluates" and "Subscribers",
// `batch`, Observable's "every write counts"). Every run is seeded, and a
// failure names its seed and step.
//
// What is checked, after every step:
// - every live computed's value (read, or heard by its subscriber) is what
//   its recipe gives over the observables' values now;
// - every evaluation saw consistent values: what its closure read is what
//   the recipes give over the observables at that moment (glitch-free);
//   and so did every subscriber, which reads other nodes as it runs;
// - `evaluationCount` of every live computed is the model's: a computed
//   evaluates only when a value it read last time changed (an observable's
//   every write, a computed's changed result), and only when it is read or,
//   subscribed, once the write or batch ends;
// - a subscriber hears each change once, from the value it heard last to
//   the new one, and nothing when the value is the one it heard last;
//   an observable's subscriber hears each write, a batch's writes once;
// - a computed nobody holds (the test's reference dropped, and no live
//   computed's closure captures it) is freed at once.
//
// A second test lets subscribers of computeds write observables: the rounds
// that follow come in an order the model does not follow, so there what
// each subscriber hears is checked as a chain (each change from the value
// it heard before, none to the same value, the last one the value now) and
// evaluation counts are not (`GRAPH_CASCADE_SEED` shows one run).
//
// The end of a batch is a write of each observable it wrote (at its hook
// point, in the order of their first writes): "every write counts", so a
// computed read inside the batch evaluates again after it.
//
// To see one seed's whole run (every step, and each evaluation of the model
// and of the graph): `GRAPH_SEED=85 swift test --filter GraphModelTests`.
// (This test found two defects: a batch's end told the computeds of each
// observable twice, so one that a subscriber read in between evaluated
// twice; and an `Equatable` computed that changed and changed back in a
// batch published its unchanged value.)

/// What a computed's closure does: reads `selector`; if it is a multiple of
/// three and `stopsEarly`, nothing more; else each of `even` or `odd`
/// (by the selector's parity, in order, repeats included), folded into a
/// value modulo `modulus` (small moduli make equal results common).
private struct Recipe {
    let selector: Int
    let even: [Int]
    let odd: [Int]
    let stopsEarly: Bool
    let modulus: Int

    var captured: Set<Int> { Set([selector] + even + odd) }

    func value(_ read: (Int) -> Int) -> Int {
        let s = read(selector)
        if stopsEarly, s % 3 == 0 { return s % modulus }
        var total = s
        for node in s & 1 == 0 ? even : odd { total = total &* 31 &+ read(node) }
        return ((total % modulus) + modulus) % modulus
    }
}

/// A value without `==`: a computed of it publishes every evaluation.
private struct Plain { let value: Int }

/// A node as the closures read it.
private enum Handle {
    case observable(Observable<Int>)
    case computed(Computed<Int>)
    case plain(Computed<Plain>)

    var value: Int {
        switch self {
        case .observable(let o): o.value
        case .computed(let c): c.value
        case .plain(let c): c.value.value
        }
    }

    var evaluationCount: Int {
        switch self {
        case .observable: 0
        case .computed(let c): c.evaluationCount
        case .plain(let c): c.evaluationCount
        }
    }
}

private final class Weak {
    weak var object: AnyObject?
    init(_ object: AnyObject) { self.object = object }
    var handle: Handle? {
        if let c = object as? Computed<Int> { return .computed(c) }
        if let c = object as? Computed<Plain> { return .plain(c) }
        return nil
    }
}

/// The model and the real graph side by side.
private final class GraphRun {
    var random: SeededGenerator
    let seed: UInt64
    var step = 0
    var failures: [String] = []

    // The model.
    var recipes: [Recipe?] = []            // nil: an observable
    var equatable: [Bool] = []             // a computed's value: Int, or Plain
    var unheard: [Bool] = []               // evaluated since its subscriber heard
    var observed: [Int] = []               // observables' values (0 for computeds)
    var versions: [Int] = []
    var cached: [Int] = []
    var dirty: [Bool] = []
    var lastReads: [[(node: Int, version: Int)]] = []
    var evaluations: [Int] = []
    var alive: [Bool] = []
    var held: [Bool] = []                  // the test's own reference
    var lastHeard: [Int?] = []             // a subscribed computed's
    var inBatch = false
    var writtenInBatch: [Int: Int] = [:]   // observable: value before the batch
    /// The batch's observables, in the order of their first writes: at its
    /// end each is written once more, at its hook point (a write: its
    /// version bumped), in this order, its subscribers called then.
    var commits: [Int] = []

    // The real graph.
    var observables: [Int: Observable<Int>] = [:]
    var computeds: [Int: Handle] = [:]     // the test's references
    var weaks: [Int: Weak] = [:]
    var subscriptions: [Int: Subscription] = [:]
    var heard: [Int: [(old: Int?, new: Int)]] = [:]

    init(seed: UInt64) {
        self.seed = seed
        random = SeededGenerator(state: seed)
    }

    var log: [String] = []
    var fullLog = false
    /// Subscribers of computeds write observables (at most `budget` writes
    /// a step): what a step causes then comes in rounds whose order the
    /// model does not follow, so what subscribers hear is checked as a
    /// chain (each change from the value heard before, none to the same
    /// value, the last the value now), and evaluation counts are not.
    var cascades = false
    var budget = 0
    /// How many writes subscribers made.
    var cascaded = 0
    /// Inside a subscriber: what goes is released once the delivery's lock
    /// is (what a computed read is released outside the lock), so checked
    /// at the step's end.
    var delivering = 0
    var goneSoon: [Int] = []
    /// A subscriber let go of computeds this step: which others the
    /// publishing brought up to date before they went depends on its order,
    /// which the model does not follow. A computed the graph evaluated more
    /// often than the model is brought up to date in the model too (no write
    /// came after the publishing), then counts are compared.
    var droppedWhileDelivering = false
    func fail(_ message: String) {
        failures.append("seed \(seed), step \(step): \(message)\n" + log.suffix(fullLog ? 1000 : 12).joined(separator: "\n"))
    }

    var count: Int { recipes.count }
    func isComputed(_ node: Int) -> Bool { recipes[node] != nil }

    // MARK: The model's rules

    /// What a node's value is over the observables' values now.
    func truth(_ node: Int) -> Int {
        var memo: [Int: Int] = [:]
        func value(_ n: Int) -> Int {
            guard let recipe = recipes[n] else { return observed[n] }
            if let known = memo[n] { return known }
            let v = recipe.value(value)
            memo[n] = v
            return v
        }
        return value(node)
    }

    /// A write of an observable: its version bumped, everything that read it
    /// (through computeds) marked dirty.
    func modelWrite(_ node: Int, _ value: Int) {
        observed[node] = value
        versions[node] += 1
        var changed: Set<Int> = [node]
        for n in node + 1..<count where alive[n] && isComputed(n) {
            if lastReads[n].contains(where: { changed.contains($0.node) }) {
                dirty[n] = true
                changed.insert(n)
            }
        }
    }

    /// Brings a computed up to date as documented: its last reads in order,
    /// each computed brought up to date first, until one's version differs
    /// (then it evaluates) or none does.
    func modelRefresh(_ node: Int) {
        guard isComputed(node), dirty[node] else { return }
        for read in lastReads[node] {
            modelRefresh(read.node)
            if versions[read.node] != read.version {
                modelEvaluate(node)
                return
            }
        }
        dirty[node] = false
    }

    func modelEvaluate(_ node: Int) {
        if fullLog { log.append("model evaluates \(node)") }
        evaluations[node] += 1
        var reads: [(node: Int, version: Int)] = []
        let value = recipes[node]!.value { n in
            modelRefresh(n)
            if !reads.contains(where: { $0.node == n }) { reads.append((n, versions[n])) }
            return isComputed(n) ? cached[n] : observed[n]
        }
        lastReads[node] = reads
        dirty[node] = false
        if value != cached[node] || !equatable[node] {
            cached[node] = value
            versions[node] += 1
            unheard[node] = true
        }
    }

    /// The end of a write or batch: subscribed computeds brought up to date,
    /// and what their subscribers must have heard.
    func modelFlush() -> [Int: [(old: Int?, new: Int)]] {
        var expected: [Int: [(old: Int?, new: Int)]] = [:]
        for node in 0..<count where alive[node] && isComputed(node) && subscriptions[node] != nil {
            modelRefresh(node)
            if let last = lastHeard[node], unheard[node], last != cached[node] || !equatable[node] {
                expected[node] = [(last, cached[node])]
                lastHeard[node] = cached[node]
            }
            unheard[node] = false
        }
        return expected
    }

    // MARK: Checks run inside closures and subscribers

    func checkRead(_ node: Int, _ value: Int, _ by: String) {
        let expected = truth(node)
        if value != expected { fail("\(by) read node \(node) as \(value), not \(expected)") }
    }

    func handle(_ node: Int) -> Handle {
        if let o = observables[node] { return .observable(o) }
        if let c = computeds[node] ?? weaks[node]?.handle { return c }
        fatalError("node \(node) is gone")
    }

    /// A subscriber's look at the graph: a few live nodes, read and checked.
    func lookAround(_ by: String) {
        for _ in 0..<2 {
            let node = Int.random(in: 0..<count, using: &random)
            guard alive[node] else { continue }
            if isComputed(node) { modelRefresh(node) }
            checkRead(node, handle(node).value, by)
        }
    }

    // MARK: Operations

    func addObservable() {
        let node = count
        let value = Int.random(in: 0..<5, using: &random)
        recipes.append(nil)
        equatable.append(true); unheard.append(false)
        observed.append(value); versions.append(0); cached.append(0); dirty.append(false)
        lastReads.append([]); evaluations.append(0); alive.append(true); held.append(true); lastHeard.append(nil)
        observables[node] = Observable(value)
    }

    func addComputed() {
        let candidates = (0..<count).filter { alive[$0] }
        func pick() -> Int { candidates.randomElement(using: &random)! }
        // One in ten reads many values (past the evaluation's small-list
        // scans), repeats included.
        let wide = Int.random(in: 0..<10, using: &random) == 0
        let length = { wide ? Int.random(in: 30...45, using: &self.random) : Int.random(in: 0...4, using: &self.random) }
        let recipe = Recipe(selector: pick(),
                            even: (0..<length()).map { _ in pick() },
                            odd: (0..<length()).map { _ in pick() },
                            stopsEarly: Bool.random(using: &random),
                            modulus: [2, 3, 5, 1_000_003].randomElement(using: &random)!)
        let node = count
        let isEquatable = Int.random(in: 0..<5, using: &random) != 0
        recipes.append(recipe)
        equatable.append(isEquatable); unheard.append(false)
        observed.append(0); versions.append(0); cached.append(0); dirty.append(true)
        lastReads.append([]); evaluations.append(0); alive.append(true); held.append(true); lastHeard.append(nil)
        var captured: [Int: Handle] = [:]
        for n in recipe.captured { captured[n] = handle(n) }
        let evaluate = { [unowned self] in
            if self.fullLog { self.log.append("real evaluates \(node)") }
            return recipe.value { n in
                let v = captured[n]!.value
                self.checkRead(n, v, "an evaluation of node \(node)")
                return v
            }
        }
        let computed: Handle = isEquatable ? .computed(Computed(evaluate)) : .plain(Computed { Plain(value: evaluate()) })
        modelEvaluate(node)
        unheard[node] = false
        log.append("computed \(node)\(isEquatable ? "" : " (not Equatable)"): \(recipe)")
        computeds[node] = computed
        switch computed {
        case .computed(let c): weaks[node] = Weak(c)
        case .plain(let c): weaks[node] = Weak(c)
        case .observable: break
        }
    }

    func write(_ node: Int) {
        if cascades { return cascadingWrite(node) }
        let value = Int.random(in: 0..<5, using: &random)
        if inBatch, writtenInBatch[node] == nil {
            writtenInBatch[node] = observed[node]
            commits.append(node)
        }
        let old = observed[node]
        modelWrite(node, value)
        if !inBatch { heard.removeAll() }
        log.append("write \(node) = \(value)\(inBatch ? " (batch)" : "")")
        observables[node]!.value = value
        if inBatch { return }
        var expected = modelFlush()
        if subscriptions[node] != nil { expected[node] = [(old, value)] }
        compareHeard(expected)
    }

    /// A write whose subscribers may write (see `cascades`).
    func cascadingWrite(_ node: Int) {
        let value = Int.random(in: 0..<5, using: &random)
        let observedBefore = observed
        heard.removeAll()
        budget = 4
        log.append("write \(node) = \(value)")
        modelWrite(node, value)
        observables[node]!.value = value
        for n in 0..<count where alive[n] && subscriptions[n] != nil {
            var last: Int? = isComputed(n) ? lastHeard[n] : observedBefore[n]
            for change in heard[n] ?? [] {
                if change.old != last { fail("node \(n)'s subscriber heard \(change), after \(last.map(String.init) ?? "nil")") }
                if isComputed(n), equatable[n], change.old == change.new { fail("node \(n)'s subscriber heard \(change): no change") }
                last = change.new
            }
            if isComputed(n) {
                modelRefresh(n)
                if last != cached[n] { fail("node \(n)'s subscriber heard \(heard[n] ?? []), not the value now, \(cached[n])") }
                lastHeard[n] = cached[n]
                unheard[n] = false
            } else if last != observed[n] {
                fail("node \(n)'s subscriber heard \(heard[n] ?? []), not the value now, \(observed[n])")
            }
        }
        heard.removeAll()
        // (Which evaluations the rounds made is theirs: counts taken as they are.)
        for n in 0..<count where alive[n] && isComputed(n) {
            if let c = weaks[n]?.handle { evaluations[n] = c.evaluationCount }
        }
    }

    func runBatch() {
        heard.removeAll()
        writtenInBatch = [:]
        commits = []
        inBatch = true
        // Reads, writes and batches inside (the outermost publishes).
        func steps(_ depth: Int) {
            for _ in 0..<Int.random(in: 1...4, using: &random) {
                switch Int.random(in: 0..<10, using: &random) {
                case 0..<4: readSomething()
                case 4 where depth < 2:
                    log.append("inner batch")
                    batch { steps(depth + 1) }
                default: write(randomObservable())
                }
            }
        }
        batch {
            steps(0)
            // (Subscribers hear nothing before the batch ends.)
            if !heard.isEmpty { fail("subscribers heard \(heard.keys.sorted()) inside a batch") }
        }
        inBatch = false
        commit(through: nil)
        var expected = modelFlush()
        for (node, before) in writtenInBatch where subscriptions[node] != nil {
            expected[node] = [(before, observed[node])]
        }
        compareHeard(expected)
    }

    /// The ends of the batch's writes up to `node`'s (all if nil).
    func commit(through node: Int?) {
        while !commits.isEmpty {
            let next = commits.removeFirst()
            modelWrite(next, observed[next])
            if next == node { return }
        }
    }

    func compareHeard(_ expected: [Int: [(old: Int?, new: Int)]]) {
        // (A computed a subscriber let go of may have been published first.)
        for node in Set(expected.keys).union(heard.keys) where alive[node] {
            let want = expected[node] ?? [], got = heard[node] ?? []
            if want.map({ "\($0.old.map(String.init) ?? "nil")->\($0.new)" }) != got.map({ "\($0.old.map(String.init) ?? "nil")->\($0.new)" }) {
                fail("node \(node)'s subscriber heard \(got) where the model says \(want)")
            }
        }
        heard.removeAll()
    }

    func randomObservable() -> Int {
        (0..<count).filter { !isComputed($0) }.randomElement(using: &random)!
    }

    func readSomething() {
        guard let node = (0..<count).filter({ alive[$0] && isComputed($0) }).randomElement(using: &random) else { return }
        modelRefresh(node)
        log.append("read \(node)")
        let value = handle(node).value
        checkRead(node, value, "a read")
        if value != cached[node] { fail("node \(node) read as \(value), the model's cache is \(cached[node])") }
    }

    func toggleSubscription() {
        guard let node = (0..<count).filter({ alive[$0] }).randomElement(using: &random) else { return }
        log.append("toggle subscription of \(node)")
        if let subscription = subscriptions.removeValue(forKey: node) {
            subscription.dispose()
            lastHeard[node] = nil
            return
        }
        let subscriber: (Int?, Int) -> Void = { [unowned self] old, new in
            self.heard[node, default: []].append((old, new))
            // (At a batch's end its observables are written before any
            // computed publishes.)
            self.commit(through: self.isComputed(node) ? nil : node)
            self.checkRead(node, new, "node \(node)'s subscriber")
            // (What a subscriber does is drawn from a sequence of its own, of
            // the step, the node and its call: the order in which the graph
            // publishes, which may follow addresses where heights tie, does
            // not change what the run does after.)
            let outer = self.random
            self.random = SeededGenerator(state: self.seed &* 0x2545_F491_4F6C_DD1D &+ UInt64(self.step) << 24
                &+ UInt64(node) << 8 &+ UInt64(self.heard[node]!.count))
            defer { self.random = outer }
            self.lookAround("node \(node)'s subscriber")
            // One in eight lets go of a computed: it may be queued to
            // publish, or being published (this subscriber's own).
            if Int.random(in: 0..<8, using: &self.random) == 0 {
                self.delivering += 1
                self.drop()
                self.delivering -= 1
                self.droppedWhileDelivering = true
            }
            if self.cascades, self.isComputed(node), self.budget > 0, Int.random(in: 0..<3, using: &self.random) == 0 {
                self.budget -= 1
                self.cascaded += 1
                let target = self.randomObservable(), value = Int.random(in: 0..<5, using: &self.random)
                self.log.append("node \(node)'s subscriber writes \(target) = \(value)")
                self.modelWrite(target, value)
                self.observables[target]!.value = value
            }
        }
        switch handle(node) {
        case .observable(let o):
            subscriptions[node] = o.subscribe(subscriber)
        case .computed(let c):
            modelRefresh(node)
            subscriptions[node] = c.subscribe(subscriber)
            lastHeard[node] = cached[node]
            unheard[node] = false
        case .plain(let c):
            modelRefresh(node)
            subscriptions[node] = c.subscribe { old, new in subscriber(old?.value, new.value) }
            lastHeard[node] = cached[node]
            unheard[node] = false
        }
    }

    /// Drops the test's reference to a computed; what no live computed
    /// captures is gone at once (and what only it captured).
    func drop() {
        guard let node = (0..<count).filter({ held[$0] && isComputed($0) }).randomElement(using: &random) else { return }
        held[node] = false
        log.append("drop \(node)")
        computeds[node] = nil
        // Alive: held, or captured by a live computed (captures come before).
        var live = held
        for n in stride(from: count - 1, through: 0, by: -1) where live[n] {
            for c in recipes[n]?.captured ?? [] { live[c] = true }
        }
        let gone = (0..<count).filter { alive[$0] && !live[$0] }
        for n in gone {
            alive[n] = false
            subscriptions.removeValue(forKey: n)?.dispose()
            lastHeard[n] = nil
        }
        if delivering > 0 { goneSoon += gone; return }
        for n in gone where weaks[n]?.object != nil { fail("node \(n), held by nothing, was not freed") }
    }

    func checkCounts() {
        for node in 0..<count where alive[node] && isComputed(node) {
            guard let c = weaks[node]?.handle else {
                fail("node \(node), still held, was freed")
                continue
            }
            // (With cascades, which of the computeds nobody subscribes to
            // the rounds brought up to date is theirs: the model's may be
            // left dirty, and evaluate at a later read instead.)
            if c.evaluationCount != evaluations[node] {
                if !cascades { fail("node \(node) evaluated \(c.evaluationCount) times; the model says \(evaluations[node])") }
                evaluations[node] = c.evaluationCount
            }
        }
    }

    func run(steps: Int) {
        for _ in 0..<Int.random(in: 2...5, using: &random) { addObservable() }
        for _ in 0..<Int.random(in: 3...8, using: &random) { addComputed() }
        while step < steps, failures.isEmpty {
            step += 1
            if fullLog { log.append("-- step \(step): subscribed \(subscriptions.keys.sorted()), evaluations \(evaluations), dirty \(dirty)") }
            switch Int.random(in: 0..<100, using: &random) {
            case 0..<35: write(randomObservable())
            case 35..<47: if cascades { write(randomObservable()) } else { runBatch() }
            case 47..<62: readSomething()
            case 62..<77: toggleSubscription()
            case 77..<88: if count < 30 { addComputed() }
            default: drop()
            }
            if droppedWhileDelivering {
                droppedWhileDelivering = false
                for n in 0..<count where alive[n] && isComputed(n) {
                    if let c = weaks[n]?.handle, c.evaluationCount > evaluations[n] { modelRefresh(n) }
                }
            }
            checkCounts()
            for n in goneSoon where weaks[n]?.object != nil { fail("node \(n), held by nothing, was not freed once the step ended") }
            goneSoon = []
        }
    }
}

@Suite("Random graphs against a model")
struct GraphModelTests {
    /// Subscribers of computeds write observables too (see `cascades`).
    @Test(arguments: 0..<20)
    func randomGraphsWhoseSubscribersWriteStayConsistent(batchOfSeeds: Int) {
        var cascaded = 0
        expectSeededRunsPass(batch: batchOfSeeds, first: 10_000) { seed in
            let run = GraphRun(seed: seed)
            run.cascades = true
            run.run(steps: 200)
            cascaded += run.cascaded
            return run.failures
        }
        #expect(cascaded > 10, "subscribers wrote \(cascaded) times in ten runs")
    }

    @Test(arguments: 0..<40)
    func randomGraphsDoWhatTheModelSays(batchOfSeeds: Int) {
        // One seed replayed with its whole log: GRAPH_SEED, or
        // GRAPH_CASCADE_SEED for the test above.
        let environment = ProcessInfo.processInfo.environment
        let replay = environment["GRAPH_SEED"].flatMap(UInt64.init).map { ($0, false) }
            ?? environment["GRAPH_CASCADE_SEED"].flatMap(UInt64.init).map { ($0, true) }
        if let (only, cascades) = replay {
            if batchOfSeeds != 0 { return }
            let run = GraphRun(seed: only)
            run.fullLog = true
            run.cascades = cascades
            run.run(steps: 200)
            #expect(run.failures.isEmpty, "\(run.failures.prefix(1).joined())")
            return
        }
        expectSeededRunsPass(batch: batchOfSeeds) { seed in
            let run = GraphRun(seed: seed)
            run.run(steps: 200)
            return run.failures
        }
    }
}

// MARK: - On threads

/// A computed of the threaded test: the sum of the observables in `sources`,
/// made by reading an earlier sum and the rest of them.
private final class SumNode: @unchecked Sendable {
    let computed: Computed<Int>
    let sources: [Int]
    init(_ computed: Computed<Int>, _ sources: [Int]) {
        self.computed = computed
        self.sources = sources
    }
}

/// What the threads share: the observables, the sums alive, what went wrong.
private final class ThreadedGraph: @unchecked Sendable {
    let values = (0..<8).map { Observable($0, name: "value \($0)") }
    private let lock = NSLock()
    private var sums: [SumNode] = []
    private var problems: [String] = []
    /// Evaluations that saw values of two moments (each run again).
    private var mixed = 0

    func fail(_ message: String) { lock.withLock { if problems.count < 5 { problems.append(message) } } }
    var failures: [String] { lock.withLock { problems } }
    func sawMixed() { lock.withLock { mixed += 1 } }
    /// Writes that subscribers may still make (bounded: a subscriber's
    /// write may cause others').
    private var writesLeft = 400
    func mayWrite() -> Bool { lock.withLock { writesLeft -= 1; return writesLeft >= 0 } }
    var mixedRuns: Int { lock.withLock { mixed } }
    func anySum(_ random: inout SeededGenerator) -> SumNode? { lock.withLock { sums.randomElement(using: &random) } }
    func add(_ sum: SumNode) { lock.withLock { sums.append(sum) } }
    /// (Released after the lock: a computed's `deinit` takes its group's
    /// lock, and an evaluation holding that lock may be waiting for this one.)
    func dropOne(_ random: inout SeededGenerator) {
        let dropped = lock.withLock { sums.isEmpty ? nil : sums.remove(at: Int.random(in: 0..<sums.count, using: &random)) }
        withExtendedLifetime(dropped) {}
    }
    var allSums: [SumNode] { lock.withLock { sums } }

    /// The sum of `sources` read now (inside an evaluation or a subscriber:
    /// under the lock of their group).
    func sum(of sources: [Int]) -> Int { sources.reduce(0) { $0 &+ values[$1].value } }

    /// A new sum: an earlier one (if any) and up to three more observables;
    /// its closure counts the runs whose reads disagree. (There are some: a
    /// thread that parks in an evaluation while another waits for a lock
    /// it holds lends that lock, and the borrower may write what the
    /// evaluation read. Such a run is run again, and its value is never
    /// seen: the checks of subscribers, reads and the end say so.)
    func makeSum(_ random: inout SeededGenerator) -> SumNode {
        let base = Bool.random(using: &random) ? anySum(&random) : nil
        let taken = Set(base?.sources ?? [])
        let extra = Array((0..<values.count).filter { !taken.contains($0) }.shuffled(using: &random).prefix(Int.random(in: 1...3, using: &random)))
        let sources = (base?.sources ?? []) + extra
        let computed = Computed { [unowned self] in
            let total = (base?.computed.value ?? 0) &+ sum(of: extra)
            // (Read again, one by one: the same values, or a glitch.)
            let again = sum(of: sources)
            if total != again { sawMixed() }
            return total
        }
        return SumNode(computed, sources)
    }
}

@Suite("Random graphs on threads")
struct GraphOnThreadsTests {
    /// Four threads at once write values, batches of two, make sums of sums
    /// (joining groups as they go), subscribe to them, read them and drop
    /// them, while some subscribers write values of other sums. Every
    /// subscriber checks that what it hears is its values' sum
    /// (the group lock makes each write one step), a read in a batch sees a
    /// sum and its values alike, and at the end every sum is its values'
    /// sum and every subscriber heard it last. (An evaluation that saw a
    /// borrower's write under it ran again: at the end, a computed whose
    /// first evaluation read a value a borrowing batch then wrote kept its
    /// value of two moments, see `GroupThreadTests`.)
    @Test(.timeLimit(.minutes(1)), arguments: 0..<4)
    func fourThreadsChangeAGraphWhileTheyUseIt(round: Int) {
        let graph = ThreadedGraph()
        // (What a subscriber captures holds no computed: the computed's
        // hook point holds the subscriber.)
        let lastHeard = Shared<[ObjectIdentifier: Int]>([:])
        let kept = Shared<[Subscription]>([])
        let subscribed = Shared<[SumNode]>([])
        onThreads(4) { thread in
            var random = SeededGenerator(state: UInt64(round * 16 + thread))
            for _ in 0..<300 {
                switch Int.random(in: 0..<100, using: &random) {
                case 0..<40:
                    graph.values[Int.random(in: 0..<8, using: &random)].value = Int.random(in: 0..<1_000, using: &random)
                case 40..<50:
                    let a = Int.random(in: 0..<8, using: &random), b = Int.random(in: 0..<8, using: &random)
                    let x = Int.random(in: 0..<1_000, using: &random)
                    batch {
                        graph.values[a].value = x
                        graph.values[b].value = x &+ 1
                    }
                case 50..<65:
                    graph.add(graph.makeSum(&random))
                case 65..<75:
                    guard let node = graph.anySum(&random) else { continue }
                    let id = ObjectIdentifier(node.computed), sources = node.sources
                    let subscription = node.computed.subscribe { [unowned graph] _, new in
                        let now = graph.sum(of: sources)
                        if new != now { graph.fail("a subscriber of the sum of \(sources) heard \(new) while they sum to \(now)") }
                        lastHeard.mutate { $0[id] = new }
                        // One in four writes a value it does not read, of
                        // another group perhaps: its lock taken inside this
                        // delivery (threads wait for each other's, and borrow).
                        let other = new & 7
                        if new % 4 == 0, !sources.contains(other), graph.mayWrite() {
                            graph.values[other].value = new % 1_000
                        }
                    }
                    kept.mutate { $0.append(subscription) }
                    subscribed.mutate { $0.append(node) }
                case 75..<90:
                    guard let node = graph.anySum(&random) else { continue }
                    let (value, now) = batch { (node.computed.value, graph.sum(of: node.sources)) }
                    if value != now { graph.fail("the sum of \(node.sources) read as \(value) in a batch while they sum to \(now)") }
                default:
                    graph.dropOne(&random)
                }
            }
        }
        #expect(graph.failures.isEmpty, "\(graph.failures.joined(separator: "\n"))")
        for node in graph.allSums {
            #expect(node.computed.value == graph.sum(of: node.sources))
        }
        // A subscribed sum that lives heard its last value.
        let heard = lastHeard.value
        for node in subscribed.value {
            guard let last = heard[ObjectIdentifier(node.computed)] else { continue }
            #expect(last == node.computed.value, "the subscriber of the sum of \(node.sources) last heard \(last), not \(node.computed.value)")
        }
        withExtendedLifetime(kept.value) {}
    }
}
