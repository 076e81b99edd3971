import CHookTestSupport
import Foundation
import Hook
import Synchronization
import Testing

final class Counter: Sendable {
    let value = Atomic<Int>(0)
    func increment() { value.add(1, ordering: .relaxed) }
}

/// Runs `body(i)` on `count` new threads and waits for all of them.
func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    let group = DispatchGroup()
    for i in 0..<count {
        group.enter()
        let thread = Thread {
            body(i)
            group.leave()
        }
        thread.stackSize = 1 << 20
        thread.start()
    }
    group.wait()
}

@Suite("Concurrency")
struct ConcurrencyTests {
    @Test func eightThreadsCallWhileHooksAreAddedAndRemoved() throws {
        let hook = try makeAddHook("concurrent")
        let f = hook.entry(as: AddFn.self)
        let seen = Counter()
        hook.after { call in
            seen.increment()
            let sum = try call.argument(0, as: Int32.self) &+ call.argument(1, as: Int32.self)
            #expect(try call.result(as: Int32.self) == sum)
        }
        let callers = 8, callsEach = 100_000
        let done = Atomic<Int>(0)
        let churn = Counter()
        let wrong = Counter()
        onThreads(callers + 1) { index in
            if index == callers {
                // The churn thread: add and remove hooks until the callers finish.
                while done.load(ordering: .acquiring) < callers {
                    let before = hook.before { call in
                        let a = try call.argument(0, as: Int32.self)
                        try call.setArgument(0, to: a)
                    }
                    let after = hook.after { _ in }
                    let instead = hook.instead { call in try call.invokeOriginal() }
                    before.remove()
                    after.remove()
                    instead.remove()
                    churn.increment()
                }
                return
            }
            for i in 0..<callsEach {
                let a = Int32(truncatingIfNeeded: i), b = Int32(index)
                if f(a, b) != a &+ b { wrong.increment() }
            }
            done.add(1, ordering: .releasing)
        }
        #expect(seen.value.load(ordering: .relaxed) == callers * callsEach)
        #expect(wrong.value.load(ordering: .relaxed) == 0)
        #expect(churn.value.load(ordering: .relaxed) > 0)
        #expect(hook.hookCount == 1)
    }

    @Test func hookPointsMadeAndDroppedOnManyThreads() throws {
        let made = Counter()
        onThreads(8) { _ in
            for _ in 0..<200 {
                guard let hook = try? makeAddHook("short-lived") else { continue }
                let token = hook.after { call in try call.setResult(Int32(1)) }
                if hook.entry(as: AddFn.self)(5, 5) == 1 { made.increment() }
                token.remove()
            }
        }
        #expect(made.value.load(ordering: .relaxed) == 8 * 200)
    }
}
