import HookMacros
import Testing

@Hookable
actor Tally {
    @Unhooked private var total = 0
    func add(_ n: Int) -> Int { total += n; return total }
    func addSlowly(_ n: Int) async -> Int {
        await Task.yield()
        total += n
        return total
    }
    @Unhooked var snapshot: Int { total }
}

@Suite("@Hookable actors")
struct HookableActorTests {
    @Test func actorMethodsAreHookedPerInstance() async throws {
        let tally = Tally(), other = Tally()
        tally.$add.before { call in try call.setArgument(0, to: try call.argument(0, as: Int.self) * 10) }
        tally.$addSlowly.after { call in call.setResult(call.result! + 1_000) }
        #expect(await tally.add(1) == 10)
        #expect(await other.add(1) == 1)
        #expect(await tally.addSlowly(1) == 1_011)
        #expect(tally.$add.target === tally)
        #expect(tally.$add.name == "add")
    }

    @Test func concurrentCallsStaySerialized() async throws {
        let tally = Tally()
        let seen = Counter()
        tally.$add.after { _ in seen.add() }
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask { for _ in 0..<100 { _ = await tally.add(1) } }
            }
        }
        #expect(await tally.snapshot == 800)
        #expect(seen.value == 800)
    }
}
