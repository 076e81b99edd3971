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
    /// `hookedRecursion(depth)` on a thread of its own with a `stackSize`-byte stack.
    private func hookedRecursionOnAThread(_ depth: Int, stackSize: Int) -> (result: Int, seen: Int)? {
        final class Outcome: @unchecked Sendable { var value: (result: Int, seen: Int)? }
        let outcome = Outcome()
        guard onThread(stackSize: stackSize, { outcome.value = hookedRecursion(depth) }) else { return nil }
        return outcome.value
    }

    /// A recursive function's nested calls each get their hooks, 300 deep.
    /// (A thread's frame stack was 64 deep: the calls past it ran their
    /// originals only, with no word of it; 64 of 301 were seen.)
    @Test func aRecursiveFunctionsHooksRunForEveryCall300Deep() throws {
        let outcome = try #require(hookedRecursionOnAThread(300, stackSize: 16 << 20))
        #expect(outcome.result == 300)
        #expect(outcome.seen == 301)
    }

    /// Past 1,024 nested hook points a call runs its original only: a
    /// recursion 1,100 deep returns its result, and its hooks ran for the
    /// outer 1,024 calls.
    @Test func callsNestedPast1024RunTheirOriginalsOnly() throws {
        let outcome = try #require(hookedRecursionOnAThread(1_100, stackSize: 64 << 20))
        #expect(outcome.result == 1_100)
        #expect(outcome.seen == 1_024)
    }

    /// A thread's record past 64 frames is cleared for the next thread that
    /// takes it: a second thread's recursion sees all its calls again.
    @Test func aSecondThreadGoesAsDeepAsTheFirst() {
        let seen = (0..<3).map { _ in hookedRecursionOnAThread(200, stackSize: 16 << 20)?.seen }
        #expect(seen == [201, 201, 201])
    }
}
