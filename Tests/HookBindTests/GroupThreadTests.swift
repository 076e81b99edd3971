import Foundation
import Hook
import HookBind
import Testing

/// Bindings and observables that are connected (share an endpoint, directly or
/// through a chain) converge under concurrent writers; groups that are not
/// connected stay independent; a batch is one step even across groups. These
/// hold whatever HookBind's locking is (one lock today, one per connected
/// group later): no deadlock, no torn state.
@Suite("Connected groups across threads")
struct GroupThreadTests {
    /// Two threads each write their own bound group while a third repeatedly
    /// binds a group that joins them and unbinds it.
    @Test func twoGroupsWrittenWhileAThirdThreadJoinsThem() throws {
        let a = (0..<2).map { _ in Holder() }, b = (0..<2).map { _ in Holder() }
        try Binding.bind([.both(a[0], \.value), .both(a[1], \.value)])
        try Binding.bind([.both(b[0], \.value), .both(b[1], \.value)])
        nonisolated(unsafe) let groups = (a, b)
        onThreads(3) { thread in
            switch thread {
            case 0: for i in 0..<3_000 { groups.0[0].value = i }
            case 1: for i in 0..<3_000 { groups.1[0].value = 1_000_000 + i }
            default:
                for _ in 0..<200 {
                    let join = try! Binding.bind([.both(groups.0[1], \.value), .both(groups.1[1], \.value)])
                    join.unbind()
                }
            }
        }
        #expect(a[0].value == a[1].value)
        #expect(b[0].value == b[1].value)
        // Joined for good: one write reaches all four.
        try Binding.bind([.both(a[1], \.value), .both(b[1], \.value)])
        a[0].value = 42
        #expect([a[0], a[1], b[0], b[1]].map(\.value) == [42, 42, 42, 42])
    }

    /// A chain x - y - z - w of three bindings, written from both ends at once.
    @Test func aChainWrittenFromBothEndsConverges() throws {
        let chain = (0..<4).map { _ in Holder() }
        for i in 0..<3 { try Binding.bind([.both(chain[i], \.value), .both(chain[i + 1], \.value)]) }
        nonisolated(unsafe) let ends = (chain[0], chain[3])
        onThreads(2) { thread in
            for i in 0..<3_000 {
                if thread == 0 { ends.0.value = i } else { ends.1.value = -i }
            }
        }
        let final = chain[0].value
        #expect(chain.allSatisfy { $0.value == final })
    }

    /// A batch writing two observables that share nothing is seen whole: a
    /// reader on another thread never sees one written and not the other.
    @Test func aBatchSpanningTwoGroupsIsOneStep() throws {
        let first = Observable(0), second = Observable(0)
        let doubledFirst = Computed { first.value * 2 }, doubledSecond = Computed { second.value * 2 }
        let torn = Shared(0)
        nonisolated(unsafe) let values = (first, second, doubledFirst, doubledSecond)
        onThreads(2) { thread in
            if thread == 0 {
                for i in 1...2_000 { batch { values.0.value = i; values.1.value = i } }
            } else {
                for _ in 0..<2_000 {
                    let seen = batch { (values.0.value, values.1.value, values.2.value, values.3.value) }
                    if seen.0 != seen.1 || seen.2 != seen.3 || seen.2 != 2 * seen.0 { torn.mutate { $0 += 1 } }
                }
            }
        }
        #expect(torn.value == 0)
        #expect(doubledFirst.value == 4_000)
        #expect(doubledSecond.value == 4_000)
    }
}
