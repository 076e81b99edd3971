import Foundation
import Hook
import Testing

/// Runs `body` on a new thread with a stack of `stackSize` bytes and waits for it.
func onThread(stackSize: Int, _ body: @escaping @Sendable () -> Void) -> Bool {
    let done = DispatchSemaphore(value: 0)
    let thread = Thread {
        body()
        done.signal()
    }
    thread.stackSize = stackSize
    thread.start()
    return done.wait(timeout: .now() + 120) == .success
}

/// A hooked closure that calls itself through its hook point `depth` times,
/// and how many of its calls the after hook saw.
private func hookedRecursion(_ depth: Int) -> (result: Int, seen: Int) {
    final class State: @unchecked Sendable {
        var call: ((Int) -> Int)?
        var seen = 0
    }
    let state = State()
    let hook = ClosureHook(name: "down") { (n: Int) -> Int in n == 0 ? 0 : state.call!(n - 1) + 1 }
    hook.after { _ in state.seen += 1 }
    let down: (Int) -> Int = hook.function
    state.call = down
    defer { state.call = nil }
    let result = down(depth)
    return (result, state.seen)
}

@Suite("Calls nested deep on one thread")
struct DeepCallTests {
    /// A recursive function's nested calls each get their hooks, 300 deep.
    /// (A thread's frame stack was 64 deep: the calls past it ran their
    /// originals only, with no word of it; 64 of 301 were seen.)
    @Test func aRecursiveFunctionsHooksRunForEveryCall300Deep() {
        final class Outcome: @unchecked Sendable { var value = (result: 0, seen: 0) }
        let outcome = Outcome()
        #expect(onThread(stackSize: 16 << 20) { outcome.value = hookedRecursion(300) })
        #expect(outcome.value.result == 300)
        #expect(outcome.value.seen == 301)
    }

    /// Past 1,024 nested hook points a call runs its original only: a
    /// recursion 1,100 deep returns its result, and its hooks ran for the
    /// outer 1,024 calls.
    @Test func callsNestedPast1024RunTheirOriginalsOnly() {
        final class Outcome: @unchecked Sendable { var value = (result: 0, seen: 0) }
        let outcome = Outcome()
        #expect(onThread(stackSize: 64 << 20) { outcome.value = hookedRecursion(1_100) })
        #expect(outcome.value.result == 1_100)
        #expect(outcome.value.seen == 1_024)
    }

    /// A thread's record past 64 frames is cleared for the next thread that
    /// takes it: a second thread's recursion sees all its calls again.
    @Test func aSecondThreadGoesAsDeepAsTheFirst() {
        final class Outcome: @unchecked Sendable { var values: [Int] = [] }
        let outcome = Outcome()
        for _ in 0..<3 {
            #expect(onThread(stackSize: 16 << 20) { outcome.values.append(hookedRecursion(200).seen) })
        }
        #expect(outcome.values == [201, 201, 201])
    }
}
