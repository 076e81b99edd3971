import Testing
import Hook
import HookBind

// Random groups of bound properties, driven through the public API and
// checked against a model of what `Binding`'s documentation promises: a set
// of a posting fish's property reaches every receiving fish of its binding,
// and, through receivers that post in other bindings, everything reachable
// so (each binding delivering at most once a change, so cycles end);
// nothing else changes; an unbound binding delivers nothing; a binding
// keeps no object alive, and a gone object is skipped. And how many times
// each box is set, exactly (an observer of each counts): a binding's hook on
// a property is an `instead` hook around the store, a point's `instead`
// hooks nest, each binding delivers a change once (the reentrancy flag), and
// a box set again from inside its own set stores without hooks (Hook's
// reentrancy guard). Seeded; a failure names its seed and step.

private final class Box {
    @Hooked var value = 0
}

private final class WeakBox {
    weak var box: Box?
    init(_ box: Box) { self.box = box }
}

private enum Role: CaseIterable {
    case post, observer, both
    var posts: Bool { self != .observer }
    var receives: Bool { self != .post }
}

private struct BoundGroup {
    let members: [(node: Int, role: Role)]
    let binding: Binding
    var bound = true
}

private final class BindingRun {
    var random: SeededGenerator
    let seed: UInt64
    var step = 0
    var failures: [String] = []
    var log: [String] = []

    var boxes: [Box?] = []
    var weaks: [WeakBox] = []
    var expected: [Int] = []
    var groups: [BoundGroup] = []
    /// How many times each box was set in this step (an observer of each).
    var sets: [Int: Int] = [:]
    var observations: [SignalMonitor] = []

    init(seed: UInt64) {
        self.seed = seed
        random = SeededGenerator(state: seed)
    }

    func fail(_ message: String) {
        failures.append("seed \(seed), step \(step): \(message)\n" + log.suffix(10).joined(separator: "\n"))
    }

    var live: [Int] { boxes.indices.filter { boxes[$0] != nil } }

    func addBox() {
        let box = Box()
        let node = boxes.count
        // (Unowned: the observation's hook lives as long as the box.)
        observations.append(try! KVO.observe(box, \.value) { [unowned self] _ in self.sets[node, default: 0] += 1 })
        boxes.append(box)
        weaks.append(WeakBox(box))
        expected.append(0)
    }

    func fish(_ node: Int, _ role: Role) -> Fish {
        let box = boxes[node]!
        switch role {
        case .post: return .post(box, \.value)
        case .observer: return .observer(box, \.value)
        case .both: return .both(box, \.value)
        }
    }

    func bind() {
        let nodes = live
        guard nodes.count >= 2 else { return }
        var members: [(node: Int, role: Role)] = Array(nodes.shuffled(using: &random).prefix(Int.random(in: 2...4, using: &random)))
            .map { ($0, Role.allCases.randomElement(using: &random)!) }
        // One in ten names a fish twice: refused, nothing bound.
        let twice = Int.random(in: 0..<10, using: &random) == 0
        if twice { members.append(members[0]) }
        let valid = !twice && members.contains { $0.role.posts }
            && members.contains { poster in poster.role.posts && members.contains { $0.node != poster.node && $0.role.receives } }
        log.append("bind \(members.map { "\($0.node):\($0.role)" })")
        do {
            let binding = try Binding.bind(members.map { fish($0.node, $0.role) })
            if !valid { fail("bound \(members.map { "\($0.node):\($0.role)" }), which the model refuses") }
            groups.append(BoundGroup(members: members, binding: binding))
        } catch {
            if valid { fail("refused \(members.map { "\($0.node):\($0.role)" }): \(error)") }
        }
    }

    func set() {
        let nodes = live
        guard let node = nodes.randomElement(using: &random) else { return }
        let value = step * 1_000 + node
        log.append("set \(node) = \(value)")
        // What it reaches, and how many times each box is set. A binding's
        // hook on a property is an `instead` hook around the store, and the
        // `instead` hooks of a point nest (each calls the next as its
        // original): a set enters each binding where the box posts, in the
        // order they were made, each taking this change as its own unless it
        // has delivered it already (the reentrancy flag), the store runs
        // innermost, and then each binding entered, the last made first,
        // delivers it to its other receivers in the order of its fishes; each
        // such set does the same at once, unless the box's own set is under
        // way further up (Hook's reentrancy guard: a call of a point from
        // inside its own hooks runs no hooks; the value is stored plainly).
        var reached: Set<Int> = [node]
        var used = Set<Int>()
        var expectedSets: [Int: Int] = [:]
        var underWay = Set<Int>()
        func store(_ box: Int) {
            guard underWay.insert(box).inserted else { return }
            defer { underWay.remove(box) }
            expectedSets[box, default: 0] += 1
            var entered: [Int] = []
            for (g, group) in groups.enumerated() where group.bound && !used.contains(g) {
                guard group.members.contains(where: { $0.node == box && $0.role.posts }) else { continue }
                used.insert(g)
                entered.append(g)
            }
            for g in entered.reversed() {
                for member in groups[g].members where member.role.receives && member.node != box && boxes[member.node] != nil {
                    reached.insert(member.node)
                    store(member.node)
                }
            }
        }
        store(node)
        for n in reached { expected[n] = value }
        sets = [:]
        boxes[node]!.value = value
        for n in live where boxes[n]!.value != expected[n] {
            fail("box \(n) holds \(boxes[n]!.value), the model says \(expected[n]) (reached: \(reached.sorted()))")
        }
        if sets != expectedSets {
            fail("boxes were set \(sets.sorted { $0.key < $1.key }), the model says \(expectedSets.sorted { $0.key < $1.key })")
        }
    }

    func unbind() {
        guard let g = groups.indices.filter({ groups[$0].bound }).randomElement(using: &random) else { return }
        log.append("unbind \(groups[g].members.map { "\($0.node):\($0.role)" })")
        groups[g].binding.unbind()
        groups[g].bound = false
        if groups[g].binding.isBound { fail("a binding still bound after unbind()") }
    }

    func drop() {
        guard let node = live.randomElement(using: &random) else { return }
        log.append("drop \(node)")
        boxes[node] = nil
        if weaks[node].box != nil { fail("box \(node), held by bindings only, was not freed") }
    }

    func run(steps: Int) {
        for _ in 0..<Int.random(in: 3...8, using: &random) { addBox() }
        while step < steps, failures.isEmpty {
            step += 1
            switch Int.random(in: 0..<100, using: &random) {
            case 0..<20: bind()
            case 20..<75: set()
            case 75..<85: unbind()
            case 85..<92: drop()
            default: if boxes.count < 16 { addBox() }
            }
        }
        for group in groups { group.binding.unbind() }
    }
}

@Suite("Random bindings against a model")
struct BindingModelTests {
    @Test(arguments: 0..<20)
    func randomBindingsDoWhatTheModelSays(batchOfSeeds: Int) {
        expectSeededRunsPass(batch: batchOfSeeds) { seed in
            let run = BindingRun(seed: seed)
            run.run(steps: 150)
            return run.failures
        }
    }
}
