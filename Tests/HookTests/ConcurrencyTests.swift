import CHookTestSupport
import Foundation
import Hook
import Synchronization
import Testing

final class Counter: Sendable {
    let value = Atomic<Int>(0)
    func increment() { value.add(1, ordering: .relaxed) }
}

/// Whether the tests run under ThreadSanitizer (`swift test --sanitize=thread`).
/// There, unoptimized generic code that instantiates type metadata on every
/// call (a typed closure's call path builds its arguments' tuple type) takes
/// the runtime's metadata lock, which TSan's threads then queue on: loops of
/// hundreds of thousands of calls on eight threads take a minute. Such tests
/// make fewer calls there; TSan needs the interleavings, not the count.
let underThreadSanitizer = dlsym(nil, "__tsan_init") != nil

/// Whether the tests run under AddressSanitizer, whose runtime owns `malloc`
/// and the string functions.
let underAddressSanitizer = dlsym(nil, "__asan_init") != nil

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

/// A model shared by threads: writers take `lock`, as they would for any stored property.
/// (NSLock, whose pthread mutex ThreadSanitizer sees; it cannot see Mutex's on Linux.)
final class Gauge: @unchecked Sendable {
    @Hooked var level = 0
    let lock = NSLock()
}

@Suite("Concurrency")
struct ConcurrencyTests {
    /// An owner let go of on one thread while another changes the hooks of
    /// the point it owns a hook on: the change's look at the owner holds a
    /// strong reference for an instant, and when that is the last one the
    /// owner deinitializes on the changing thread, whose bag then removes
    /// its hooks: outside the point's lock. (Under it, the removal locked
    /// the point's `Mutex` again on the same thread: the process stopped,
    /// "Recursive call to lock Mutex".)
    @Test(arguments: [false, true])
    func anOwnerLetGoOfWhileHooksChangeDeinitializesOutsideTheLock(async: Bool) throws {
        final class Owner: HookOwner, @unchecked Sendable { let hookBag = HookBag() }
        final class Handoff: @unchecked Sendable {
            let lock = NSLock()
            var owners: [Owner] = []
        }
        let sync = ClosureHook(name: "sync") { (x: Int) in x }
        let asyncPoint = AsyncClosureHook(name: "async") { (x: Int) async in x }
        let point: HookPoint = async ? asyncPoint : sync
        let handoff = Handoff()
        let stop = Atomic<Bool>(false)
        let group = DispatchGroup()
        // Changes the hooks, looking at every owner each time.
        group.enter()
        Thread {
            while !stop.load(ordering: .relaxed) { point.add(.after) { _ in }.remove() }
            group.leave()
        }.start()
        // Lets go of the owners handed over.
        group.enter()
        Thread {
            while !stop.load(ordering: .relaxed) {
                let owner: Owner? = handoff.lock.withLock { handoff.owners.popLast() }
                withExtendedLifetime(owner) {}
            }
            group.leave()
        }.start()
        for _ in 0..<20_000 {
            let owner = Owner()
            if async {
                asyncPoint.add(.after, owner: owner) { _ in }
            } else {
                sync.add(.after, owner: owner) { _ in }
            }
            handoff.lock.withLock { handoff.owners.append(owner) }
        }
        stop.store(true, ordering: .relaxed)
        if group.wait(timeout: .now() + 30) == .timedOut {
            Issue.record("the threads did not finish")
        }
    }

    /// An `instead` hook tied to an owner that another thread lets go of
    /// while a set runs it: the set goes on as without the hook, and stores.
    /// (The call found the owner alive, then the hook found it gone and
    /// returned without running the original: the set stored nothing.)
    @Test func anInsteadHookWhoseOwnerGoesDuringASetLetsTheSetStore() throws {
        final class Owner: @unchecked Sendable {}
        final class Handoff: @unchecked Sendable {
            let lock = NSLock()
            var owners: [Owner] = []
        }
        let dial = Gauge()
        let point = dial.$level
        let handoff = Handoff()
        let stop = Atomic<Bool>(false), lost = Atomic<Int>(0)
        let setter = Thread {
            var i = 0
            while !stop.load(ordering: .relaxed) {
                i += 1
                dial.level = i
                if dial.level != i { lost.add(1, ordering: .relaxed) }
            }
        }
        setter.start()
        // Owners made here, their hooks added, and let go of here while the
        // other thread sets: some go between the call's look and the hook's.
        for _ in 0..<20_000 {
            let owner = Owner()
            point.add(.instead, owner: owner) { _, call in try call.invokeOriginal() }
            handoff.lock.withLock { handoff.owners.append(owner) }
            if handoff.owners.count > 4 { handoff.lock.withLock { handoff.owners.removeFirst() } }
        }
        stop.store(true, ordering: .relaxed)
        while !setter.isFinished { usleep(1000) }
        #expect(lost.load(ordering: .relaxed) == 0)
    }

    @Test func eightThreadsCallWhileHooksAreAddedAndRemoved() throws {
        let hook = try makeAddHook("concurrent")
        let f = hook.entry(as: AddFn.self)
        let seen = Counter(), mismatched = Counter()
        hook.after { call in
            seen.increment()
            let sum = try call.argument(0, as: Int32.self) &+ call.argument(1, as: Int32.self)
            // (Counted, checked once at the end: an #expect per call takes
            // Swift Testing's lock, which eight threads then queue on.)
            if try call.result(as: Int32.self) != sum { mismatched.increment() }
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
        #expect(mismatched.value.load(ordering: .relaxed) == 0)
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

    @Test func eightThreadsSetAHookedPropertyAndCallATypedHookWhileHooksComeAndGo() throws {
        let gauge = Gauge()
        let level = try PropertyHook.of(gauge, \.level)
        let scale = ClosureHook(name: "scale") { (x: Int, factor: Int) in x * factor }
        let sets = Counter(), calls = Counter(), wrong = Counter()
        level.after { call in
            sets.increment()
            if try call.argument(0, as: Int.self) < 0 { wrong.increment() }
        }
        scale.after { call in
            calls.increment()
            let (x, factor) = try call.arguments(as: (Int, Int).self)
            if try call.result(as: Int.self) != x * factor { wrong.increment() }
        }
        let threads = 8, rounds = 5_000
        let done = Atomic<Int>(0)
        let churn = Counter()
        onThreads(threads + 2) { index in
            if index >= threads {
                // Two churn threads add and remove hooks on both points until the others finish.
                while done.load(ordering: .acquiring) < threads {
                    let a = level.before { call in try call.setArgument(0, to: abs(try call.argument(0, as: Int.self))) }
                    let b = scale.instead { call in try call.invokeOriginal() }
                    let c = level.after(owner: Observer()) { _ in }  // its owner dies at once
                    a.remove()
                    b.remove()
                    c.remove()
                    churn.increment()
                }
                return
            }
            let f = scale.function
            for i in 0..<rounds {
                gauge.lock.withLock { gauge.level = i }
                if f(i, index) != i * index { wrong.increment() }
            }
            done.add(1, ordering: .releasing)
        }
        #expect(sets.value.load(ordering: .relaxed) == threads * rounds)
        #expect(calls.value.load(ordering: .relaxed) == threads * rounds)
        #expect(wrong.value.load(ordering: .relaxed) == 0)
        #expect(churn.value.load(ordering: .relaxed) > 0)
        #expect(level.hookCount == 1)
        #expect(scale.hookCount == 1)
    }

    @Test func aLoneAfterReturningHookSeesEveryCallWhileOtherHooksComeAndGo() throws {
        // The permanent hook is alone most of the time (the typed call path
        // with no record) and shares the point with a churned hook at other
        // times (the general path): every call must reach it exactly once.
        let scale = ClosureHook(name: "scale") { (x: Int, factor: Int) in x &* factor }
        let calls = Counter(), wrong = Counter(), extra = Counter()
        scale.afterReturning { result, x, factor in
            calls.increment()
            if result != x &* factor { wrong.increment() }
        }
        let threads = 8, rounds = underThreadSanitizer ? 2_000 : 20_000
        let done = Atomic<Int>(0)
        let churn = Counter()
        onThreads(threads + 1) { index in
            if index == threads {
                while done.load(ordering: .acquiring) < threads {
                    let a = scale.after { _ in extra.increment() }
                    let b = scale.afterReturning { _, _, _ in extra.increment() }
                    a.remove()
                    let c = scale.before { _ in }
                    b.remove()
                    c.remove()
                    churn.increment()
                }
                return
            }
            let f = scale.function
            for i in 0..<rounds {
                // Both call paths: the function's body and callAsFunction.
                let result = i & 1 == 0 ? f(i, index) : scale(i, index)
                if result != i &* index { wrong.increment() }
            }
            done.add(1, ordering: .releasing)
        }
        #expect(calls.value.load(ordering: .relaxed) == threads * rounds)
        #expect(wrong.value.load(ordering: .relaxed) == 0)
        #expect(churn.value.load(ordering: .relaxed) > 0)
        #expect(scale.hookCount == 1)
    }

    @Test func aLoneDidSetHookSeesEverySetWhileOtherHooksComeAndGo() throws {
        let gauge = Gauge()
        let sets = Counter(), wrong = Counter()
        gauge.$level.didSet { _, new in
            sets.increment()
            if new < 0 { wrong.increment() }
        }
        let threads = 8, rounds = 10_000
        let done = Atomic<Int>(0)
        let churn = Counter()
        onThreads(threads + 1) { index in
            if index == threads {
                while done.load(ordering: .acquiring) < threads {
                    let a = gauge.$level.after { _ in }
                    let b = gauge.$level.didSet { _, _ in }
                    a.remove()
                    b.remove()
                    churn.increment()
                }
                return
            }
            for i in 0..<rounds { gauge.lock.withLock { gauge.level = i } }
            done.add(1, ordering: .releasing)
        }
        #expect(sets.value.load(ordering: .relaxed) == threads * rounds)
        #expect(wrong.value.load(ordering: .relaxed) == 0)
        #expect(churn.value.load(ordering: .relaxed) > 0)
        #expect(gauge.$level.hookCount == 1)
    }
}
