import Hook
import SwiftEntrySample
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

extension SwiftEntrySuites {
@Suite struct SwiftEntryThreadTests {
    /// Runs `body(thread)` on `count` threads at once and waits for them.
    func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) -> [pthread_t] {
        final class Box: @unchecked Sendable { let body: () -> Void; init(_ body: @escaping () -> Void) { self.body = body } }
        return (0..<count).map { index in
            var thread = pthread_t()
            let box = Unmanaged.passRetained(Box { body(index) })
            pthread_create(&thread, nil, { context in
                let box = Unmanaged<Box>.fromOpaque(context!).takeRetainedValue()
                box.body()
                return nil
            }, box.toOpaque())
            return thread
        }
    }

    @Test func eightThreadsCallAHookedMethodWhileHooksComeAndGo() throws {
        let work = try SwiftEntryHook.named("SwiftEntrySample.Worker.work(_:)", as: ((Worker, Int) -> Int).self)
        defer { try? work.restore() }
        let counted = Atomic<Int>(0), wrong = Atomic<Int>(0), running = Atomic<Int>(8)
        let calls = 20_000
        // Every call is counted exactly once, whatever else comes and goes.
        try work.afterReturning { (result: Int, _: Worker, n: Int) in
            counted.add(1, ordering: .relaxed)
            if result != n &* 2 &+ 1 { wrong.add(1, ordering: .relaxed) }
        }
        let worker = Worker()
        let threads = onThreads(8) { index in
            for i in 0..<calls where worker.work(i &+ index) != (i &+ index) &* 2 &+ 1 { wrong.add(1, ordering: .relaxed) }
            running.subtract(1, ordering: .relaxed)
        }
        var changes = 0
        while running.load(ordering: .relaxed) > 0 {
            // A hook that changes nothing, added and removed; an instead hook that calls the original.
            let before = work.before { call in _ = try call.argument(1, as: Int.self) }
            let instead = work.instead { call in try call.invokeOriginal() }
            before.remove()
            instead.remove()
            changes += 1
        }
        for thread in threads { pthread_join(thread, nil) }
        #expect(counted.load(ordering: .relaxed) == 8 * calls)
        #expect(wrong.load(ordering: .relaxed) == 0)
        #expect(changes > 10)
    }

    @Test func eightThreadsCallWhileTheEntryIsPatchedAndRestored() throws {
        let work = try SwiftEntryHook.named("SwiftEntrySample.Worker.work(_:)", as: ((Worker, Int) -> Int).self)
        defer { try? work.restore() }
        work.after { call in try call.setResult(try call.result(as: Int.self)) }
        let wrong = Atomic<Int>(0), running = Atomic<Int>(8)
        let worker = Worker()
        let threads = onThreads(8) { index in
            for i in 0..<20_000 where worker.work(i) != i &* 2 &+ 1 { wrong.add(1, ordering: .relaxed) }
            running.subtract(1, ordering: .relaxed)
        }
        var patches = 0
        while running.load(ordering: .relaxed) > 0, patches < 2_000 {
            try work.uninstall()
            try work.install()
            patches += 1
        }
        for thread in threads { pthread_join(thread, nil) }
        #expect(wrong.load(ordering: .relaxed) == 0)
        #expect(patches > 0)
    }
}
}
