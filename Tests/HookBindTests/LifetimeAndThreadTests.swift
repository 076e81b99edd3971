import CHookTestSupport
import Foundation
import Hook
import HookBind
import Testing

@Suite("Lifetimes")
struct BindingLifetimeTests {
    @Test func noBindingKeepsItsObjectsAlive() throws {
        weak var weakA: TestA?, weakB: TestB?, weakD: TestD?, weakWatcher: Holder?
        var binding: Binding?
        do {
            let a = TestA(), b = TestB(), d = TestD(), watcher = Holder()
            weakA = a; weakB = b; weakD = d; weakWatcher = watcher
            binding = try Binding.bind([
                .both(a, \.name),
                .both(b, \.bName),
                .both(d, \.setDK_Name) { call, d in d.setDK_Name(try call.argument(0, as: String.self)) },
                .observer(watcher) { _, watcher in watcher.value += 1 },
            ])
            a.name = "x"
            #expect(b.bName == "x" && d.DK_Name == "x" && watcher.value == 1)
        }
        #expect(weakA == nil && weakB == nil && weakD == nil && weakWatcher == nil)
        #expect(binding != nil)
    }

    @Test func aClosureHookIsNotKeptAliveByItsBinding() throws {
        weak var weakHook: ClosureHook<Int, Int>?
        let holder = Holder()
        do {
            let hook = ClosureHook { (x: Int) in x + 1 }
            weakHook = hook
            try Binding.bind([.post(hook), .observer(holder, \.value)])
            _ = hook(1)
        }
        #expect(weakHook == nil)
        #expect(holder.value == 2)
    }

    @Test func receiversThatAreGoneAreSkipped() throws {
        let a = Holder(), c = Holder()
        var b: Holder? = Holder()
        let calls = Shared(0)
        try Binding.bind([.both(a, \.value), .both(b!, \.value), .observer(b!) { _, _ in calls.mutate { $0 += 1 } }, .both(c, \.value)])
        a.value = 1
        #expect(b?.value == 1 && calls.value == 1)
        b = nil
        a.value = 2
        #expect(c.value == 2 && calls.value == 1)
        c.value = 3
        #expect(a.value == 3)
    }

    @Test func callbacksCaptureNothingTheyAreGiven() throws {
        weak var weakReceiver: TestB?
        let a = TestA()
        do {
            let receiver = TestB()
            weakReceiver = receiver
            try Binding.bind([.post(a, \.name), .observer(receiver) { call, b in b.bName = try call.argument(0, as: String.self) }])
            a.name = "seen"
            #expect(receiver.bName == "seen")
        }
        #expect(weakReceiver == nil)
        a.name = "no one left"      // nothing to deliver to: no crash
    }
}

@Suite("Bindings across threads")
struct BindingThreadTests {
    /// Four writers on four endpoints of one binding, plus chained and
    /// unrelated bindings, while a fifth thread binds and unbinds another group:
    /// no crash, no deadlock, and once they stop all endpoints are equal.
    @Test func concurrentWritersConverge() throws {
        let endpoints = (0..<4).map { _ in Holder() }
        let chained = Holder()
        try Binding.bind(endpoints.map { .both($0, \.value) })
        try Binding.bind([.both(endpoints[3], \.value), .both(chained, \.value)])
        let deliveries = Shared(0)
        try Binding.bind([.post(endpoints[0], \.value), .observer { _ in deliveries.mutate { $0 += 1 } }])
        nonisolated(unsafe) let objects = endpoints
        let others = (0..<2).map { _ in Holder() }
        nonisolated(unsafe) let churned = others
        onThreads(5) { thread in
            if thread == 4 {
                for _ in 0..<300 {
                    let binding = try! Binding.bind([.both(churned[0], \.value), .both(churned[1], \.value), .observer(objects[1], \.value)])
                    churned[0].value += 1
                    binding.unbind()
                }
                return
            }
            for i in 0..<2_000 { objects[thread].value = thread * 100_000 + i }
        }
        let final = endpoints[0].value
        #expect(endpoints.allSatisfy { $0.value == final })
        #expect(chained.value == final)
        #expect(deliveries.value > 0)
        #expect(churned[0].value == churned[1].value)
    }
}

@Suite("Allocations of a binding")
struct BindingAllocationTests {
    @Test(.enabled(if: hk_test_malloc_counting_available(), "malloc is owned by the sanitizer"))
    func aSetOnAThreeWayBindingAllocatesNothing() throws {
        let a = Holder(), b = Holder(), c = Holder()
        try Binding.bind([.both(a, \.value), .both(b, \.value), .both(c, \.value)])
        a.value = -1  // registers this thread's hook state
        var sum = 0
        let count = try #require(mallocCount {
            for i in 0..<1_000 {
                switch i % 3 {
                case 0: a.value = i
                case 1: b.value = i
                default: c.value = i
                }
                sum &+= c.value
            }
        })
        #expect(values(a, b, c) == [999, 999, 999])
        #expect(count == 0)
        #expect(sum != 0)
    }

    @Test(.enabled(if: hk_test_malloc_counting_available(), "malloc is owned by the sanitizer"))
    func aStringSetWithCallbacksAllocatesNothing() throws {
        // (A @HookableMethod is left out: calling one allocates its closure in debug builds.)
        let a = TestA(), b = TestB(), d = Label()
        try Binding.bind([
            .both(a, \.name) { call, a in a.userName = try call.argument(0, as: String.self) },
            .both(b, \.bName),
            .both(d, \.text) { call, d in d.text = "DK_" + (try call.argument(0, as: String.self)) },
        ])
        let words = ["json", "GCD", "apple"]
        a.name = "warm up"
        let count = try #require(mallocCount {
            for i in 0..<300 { a.name = words[i % 3]; b.bName = words[(i + 1) % 3] }
        })
        #expect(d.text == "DK_json")
        #expect(count == 0)
    }
}
