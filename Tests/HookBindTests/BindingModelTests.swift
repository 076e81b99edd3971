import Testing
import Hook
import HookBind

// Random groups of bound properties, driven through the public API and
// checked against a model of what `Binding`'s documentation promises: a set
// of a posting fish's property reaches every receiving fish of its binding,
// and, through receivers that post in other bindings, everything reachable
// so (each binding delivering at most once a change, so cycles end);
// nothing else changes; an unbound binding delivers nothing; a binding
// keeps no object alive, and a gone object is skipped. Seeded; a failure
// names its seed and step.

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
        // What it reaches: through bindings where it, or what it reached, posts.
        var reached: Set<Int> = [node]
        var used = Set<Int>()
        var queue = [node]
        while !queue.isEmpty {
            let from = queue.removeFirst()
            for (g, group) in groups.enumerated() where group.bound && !used.contains(g) {
                guard group.members.contains(where: { $0.node == from && $0.role.posts }) else { continue }
                used.insert(g)
                for member in group.members where member.role.receives && member.node != from && boxes[member.node] != nil {
                    if reached.insert(member.node).inserted { queue.append(member.node) }
                }
            }
        }
        for n in reached { expected[n] = value }
        boxes[node]!.value = value
        for n in live where boxes[n]!.value != expected[n] {
            fail("box \(n) holds \(boxes[n]!.value), the model says \(expected[n]) (reached: \(reached.sorted()))")
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
        for seed in UInt64(batchOfSeeds * 10)..<UInt64(batchOfSeeds * 10 + 10) {
            let run = BindingRun(seed: seed)
            run.run(steps: 150)
            #expect(run.failures.isEmpty, "\(run.failures.prefix(2).joined(separator: "\n"))")
            if !run.failures.isEmpty { return }
        }
    }
}
