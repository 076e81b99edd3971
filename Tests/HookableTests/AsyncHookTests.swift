import CHookTestSupport
import Foundation
import Synchronization
import HookMacros
import Testing

@Hookable
final class Downloader: @unchecked Sendable {
    func fetch(_ id: Int) async -> String {
        await Task.yield()
        return "item \(id)"
    }
    func load(_ id: Int) async throws -> Int {
        try await Task.sleep(nanoseconds: 1_000)
        if id < 0 { throw Refusal.insufficient }
        return id * 10
    }
    func waitForCancellation() async throws -> Bool {
        try await Task.sleep(nanoseconds: 10_000_000_000)
        return false
    }
}

@Hookable
class AsyncBase: @unchecked Sendable {
    func name() async -> String { "base" }
}

@Hookable
final class AsyncDerived: AsyncBase, @unchecked Sendable {
    override func name() async -> String { "derived(" + (await super.name()) + ")" }
}

/// A task executor that runs its jobs on a thread of its own (for the
/// tests' whole run).
final class ThreadExecutor: TaskExecutor, @unchecked Sendable {
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var id: UInt = 0

    init() {
        let started = DispatchSemaphore(value: 0)
        Thread { [self] in
            condition.lock()
            id = HookableTests.threadID()
            condition.unlock()
            started.signal()
            while true {
                condition.lock()
                while jobs.isEmpty { condition.wait() }
                let job = jobs.removeFirst()
                condition.unlock()
                job.runSynchronously(on: asUnownedTaskExecutor())
            }
        }.start()
        started.wait()
    }

    var threadID: UInt {
        condition.lock()
        defer { condition.unlock() }
        return id
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }
}

/// The thread a piece of code runs on.
func threadID() -> UInt { UInt(bitPattern: Int(bitPattern: pthread_self())) }

@Suite("Async hook points")
struct AsyncHookTests {
    /// A before hook cancelled with its task ends the call with the
    /// `CancellationError`: the original does not run. (The error went to
    /// the error handler, and the call went on as if the hook had waited.)
    @Test func aHookCancelledWithItsTaskEndsTheCall() async throws {
        final class Ran: @unchecked Sendable { var original = false, reported = false }
        let ran = Ran()
        /// A point whose original notes that it ran.
        func point(_ name: String) -> AsyncClosureHook<Int, Int> {
            AsyncClosureHook(name: name) { (id: Int) async throws -> Int in
                ran.original = true
                return id
            }
        }
        let fetch = point("fetch")
        fetch.hookErrorHandler = { _, _ in ran.reported = true }
        fetch.before { _ in try await Task.sleep(nanoseconds: 60_000_000_000) }
        let task = Task { try await fetch(1) }
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(!ran.original && !ran.reported)
        // An instead hook's cancellation too: no other instead hook, no original.
        let load = point("load")
        load.instead { _ in try await Task.sleep(nanoseconds: 60_000_000_000) }
        let second = Task { try await load(2) }
        second.cancel()
        await #expect(throws: CancellationError.self) { try await second.value }
        #expect(!ran.original)
        // An after hook's cancellation leaves the outcome of the call that
        // happened (reported, as any hook's error).
        let save = point("save")
        save.hookErrorHandler = { _, _ in ran.reported = true }
        save.after { _ in try await Task.sleep(nanoseconds: 60_000_000_000) }
        let third = Task { try await save(3) }
        third.cancel()
        #expect(try await third.value == 3)
        #expect(ran.original && ran.reported)
    }

    /// A method's hook point is not called itself: no hook runs around a
    /// call that cannot happen. (Before hooks ran, and an after hook that
    /// set a result made one up for the method.)
    @Test func callingAMethodsHookPointRunsNoHook() async throws {
        final class Ran: @unchecked Sendable { var before = false }
        let downloader = Downloader(), ran = Ran()
        downloader.$fetch.before { _ in ran.before = true }
        downloader.$fetch.after { call in if call.result == nil { call.setResult("made up") } }
        await #expect(throws: HookError.self) { _ = try await downloader.$fetch(1) }
        #expect(!ran.before)
        #expect(await downloader.fetch(2) == "item 2")
        #expect(ran.before)
    }

    /// A record kept past its call does not run the original again.
    @Test func aKeptAsyncRecordExpires() async throws {
        final class Keep: @unchecked Sendable { var call: AsyncCallBack<Int, Int>?; var originals = 0 }
        let keep = Keep()
        let point = AsyncClosureHook(name: "p") { (x: Int) async throws -> Int in
            keep.originals += 1
            return x
        }
        point.instead { call in
            keep.call = call
            try await call.invokeOriginal()
        }
        #expect(try await point(1) == 1)
        var kept = try #require(keep.call)
        // (The record holds the point, whose hook holds `keep`: let go of,
        // or the cycle outlives the test, a leak LeakSanitizer reports.)
        keep.call = nil
        await #expect(throws: HookError.self) { try await kept.invokeOriginal() }
        #expect(keep.originals == 1)
    }

    /// `hasHooks` says whether an async point has a hook (it read the word
    /// of synchronous points, which async ones leave zero: always false).
    @Test func hasHooksOfAnAsyncPoint() async throws {
        let fetch = AsyncClosureHook(name: "fetch") { (x: Int) async in x }
        #expect(!fetch.hasHooks)
        let token = fetch.before { _ in }
        #expect(fetch.hasHooks)
        let generic: HookPoint = fetch
        #expect(generic.hasHooks)
        token.remove()
        #expect(!fetch.hasHooks)
        let value = try await fetch(3)
        #expect(value == 3)
    }

    /// Removing one hook removes that one only, also once the tokens of the
    /// others were dropped (and their memory reused by later tokens).
    @Test func removingOneHookLeavesTheOthers() async throws {
        let point = AsyncClosureHook(name: "same") { (x: Int) async throws -> Int in x }
        for _ in 0..<3 { point.after { _ in } }      // tokens dropped
        for _ in 0..<50 { point.before { _ in }.remove() }
        #expect(point.hookCount == 3)
        #expect(try await point(5) == 5)
    }

    /// A bag's hooks on one async point go in one change of its list (one
    /// a hook rebuilt the list and its snapshot each time: n² steps and
    /// allocations for a bag of n), and only they go.
    @Test(.enabled(if: hk_test_malloc_counting_available(), "malloc is owned by the sanitizer"))
    func aBagOfHooksOnAnAsyncPointGoesInOneChange() async throws {
        let point = AsyncClosureHook(name: "bagged") { (x: Int) async throws -> Int in x }
        let kept = Mutex(0)
        point.before { _ in kept.withLock { $0 += 1 } }
        let bag = HookBag()
        for _ in 0..<200 { point.after { _ in }.store(in: bag) }
        #expect(point.hookCount == 201)
        let before = hk_test_malloc_count()
        bag.removeAll()
        let allocations = hk_test_malloc_count() - before
        // (About 1,900 in a debug build, 9 a hook; one change a hook made 225,000.)
        #expect(allocations < 5_000, "\(allocations) allocations to remove 200 hooks")
        #expect(point.hookCount == 1)
        #expect(try await point(5) == 5)
        #expect(kept.withLock { $0 } == 1)
    }

    @Test func hooksAroundAnAsyncClosure() async throws {
        let double = AsyncClosureHook(name: "double") { (x: Int) async throws -> Int in
            await Task.yield()
            return x * 2
        }
        double.before { call in
            await Task.yield()                      // a hook may suspend
            call.arguments += 1
        }
        double.after { call in
            #expect(call.selector == "double")
            call.setResult((call.result ?? 0) + 100)
        }
        #expect(try await double(1) == 104)
        let token = double.instead { call in
            call.arguments = 10
            try await call.invokeOriginal()
            call.setResult(call.result! * 3)
        }
        #expect(try await double(0) == 60 + 100)   // before: 1 -> instead: 10 -> 20 * 3 -> after +100
        token.remove()
        #expect(double.hookCount == 2)
        let f: (Int) async throws -> Int = double.function
        #expect(try await f(0) == 102)
    }

    @Test func vetoAndErrors() async throws {
        let load = AsyncClosureHook(name: "load") { (x: Int) async throws -> Int in
            if x < 0 { throw Refusal.insufficient }
            return x
        }
        var seen: [String] = []
        load.after { call in seen.append(call.error.map { "\($0)" } ?? "ok") }
        await #expect(throws: Refusal.insufficient) { try await load(-1) }
        #expect(seen == ["insufficient"])
        let veto = load.before { call in
            if call.arguments == 7 {
                call.setResult(70)
                try call.veto()
            }
        }
        #expect(try await load(7) == 70)
        veto.remove()
        let rescue = load.after { call in if call.error != nil { call.setResult(0) } }
        #expect(try await load(-5) == 0)              // an after hook turned the error into a result
        rescue.remove()
        load.before { call in if call.arguments == 3 { try call.setError(Refusal.vetoed) } }
        await #expect(throws: Refusal.vetoed) { try await load(3) }
        // A hook that throws is reported, and the call goes on.
        let reported = Counter()
        load.hookErrorHandler = { _, _ in reported.add() }
        load.before { _ in throw Refusal.vetoed }
        #expect(try await load(2) == 2)
        #expect(reported.value == 1)
    }

    @Test func asyncMethodsOfAHookableClass() async throws {
        let downloader = Downloader()
        #expect(await downloader.fetch(1) == "item 1")
        downloader.$fetch.before { call in call.arguments *= 2 }
        // A hook that captures its object: a cycle, let go of at the end.
        defer { downloader.$fetch.removeAllHooks() }
        downloader.$fetch.after { call in
            #expect(call.target === downloader)
            call.setResult(call.result! + "!")
        }
        #expect(await downloader.fetch(2) == "item 4!")
        #expect(Downloader().$fetch.hookCount == 0)     // another instance
        downloader.$load.after { call in if call.error != nil { call.setResult(-1) } }
        #expect(try await downloader.load(-3) == -1)
        #expect(try await downloader.load(3) == 30)
        // A method that cannot throw refuses an error.
        var refused = false
        downloader.$fetch.before { call in
            do { try call.setError(Refusal.vetoed) } catch { refused = true }
        }
        _ = await downloader.fetch(0)
        #expect(refused)
    }

    @Test func asyncOverrideHooksRunOnce() async throws {
        let derived = AsyncDerived()
        let calls = Counter()
        derived.$name.before { _ in calls.add() }
        #expect(await derived.name() == "derived(base)")
        #expect(calls.value == 1)
    }

    @Test func cancellationReachesTheOriginal() async throws {
        let downloader = Downloader()
        let sawCancellation = Counter()
        downloader.$waitForCancellation.after { call in
            if call.error is CancellationError { sawCancellation.add() }
        }
        let task = Task { try await downloader.waitForCancellation() }
        try await Task.sleep(nanoseconds: 20_000_000)
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(sawCancellation.value == 1)
    }

    /// The guard and the record follow the task: the call starts on one
    /// thread, its hook and its original each suspend and resume on another
    /// (a task executor of a thread of its own), and there a call of the
    /// same point from the hook still runs the original only.
    @Test func theGuardFollowsTheTaskAcrossThreads() async throws {
        let a = ThreadExecutor(), b = ThreadExecutor()
        let movedOriginals = Counter()
        let point = AsyncClosureHook<Int, Int>(name: "work") { n in
            let start = threadID()
            let there = await withTaskExecutorPreference(b) { threadID() }
            #expect(there == b.threadID)
            if start == a.threadID { movedOriginals.add() }   // the outer call's original: a, then b
            return n * 2
        }
        let hooksRan = Counter()
        // A hook that calls its own point: a cycle, let go of at the end.
        defer { point.removeAllHooks() }
        point.before { call in
            hooksRan.add()
            let start = threadID()
            #expect(start == a.threadID)
            try await withTaskExecutorPreference(b) {
                #expect(threadID() == b.threadID)
                let inner = try await point(call.arguments)        // reentrant, on another thread: the original only
                #expect(inner == call.arguments * 2)
            }
            call.arguments += 1
        }
        point.after { call in
            hooksRan.add()
            call.setResult(call.result! + 1000)
        }
        let value = try await withTaskExecutorPreference(a) { try await point(1) }
        #expect(value == 1004)
        #expect(hooksRan.value == 2)                       // one before, one after: the inner call ran none
        #expect(movedOriginals.value == 1)
    }

    @Test func aRecursiveOriginalIsHookedAgain() async throws {
        final class Box: @unchecked Sendable { var point: AsyncClosureHook<Int, Int>? }
        let box = Box()
        let point = AsyncClosureHook<Int, Int>(name: "down") { n in
            n == 0 ? 0 : 1 + (try await box.point!(n - 1))
        }
        box.point = point
        // The original calls the point through the box: a cycle, let go of at the end.
        defer { box.point = nil }
        let calls = Counter()
        point.before { _ in calls.add() }
        #expect(try await point(3) == 3)
        #expect(calls.value == 4)
        // withoutHooks: none in this task.
        #expect(try await point.withoutHooks { try await point(2) } == 2)
        #expect(calls.value == 4)
    }
}
