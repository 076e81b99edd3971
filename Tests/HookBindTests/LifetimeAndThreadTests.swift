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

    /// A computed that goes while its core is queued to publish or being
    /// published (the queue takes no reference: the computed hands it its
    /// own; see `GoneWhileQueued`): nothing runs for it after it went, and
    /// the graph works on. (Also under AddressSanitizer in CI, where the
    /// allocation count of the same cases does not run.)
    @Test func aComputedThatGoesWhileQueuedOrPublishingIsSkipped() {
        let cases = GoneWhileQueued()
        for _ in 0..<20 { cases.runEach() }
        cases.expectTheGraphStillWorks()
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

@Suite("What a binding keeps alive")
struct BindingEndpointLifetimeTests {
    /// After `unbind()` nothing of the binding keeps an endpoint alive, whatever
    /// its kind, even while the `Binding` itself is kept; while bound, closure
    /// and C function hook points are held weakly too.
    @Test func unbindReleasesEveryKindOfEndpoint() throws {
        typealias Add = @convention(c) (Int32, Int32) -> Int32
        weak var weakClosure: ClosureHook<Int, Int>?
        weak var weakFunction: FunctionHook?
        weak var weakPoster: Holder?
        weak var weakWallet: Wallet?
        var binding: Binding?
        var heard = 0
        do {
            let closure = ClosureHook(name: "doubler") { (x: Int) in x * 2 }
            let function = try FunctionHook(cFunction: test_counted_add as Add,
                                            signature: Signature(returning: Int32.self, arguments: Int32.self, Int32.self), name: "add")
            let poster = Holder(), wallet = Wallet()
            weakClosure = closure; weakFunction = function; weakPoster = poster; weakWallet = wallet
            binding = try Binding.bind([
                .post(closure), .post(function), .post(poster, \.value), .post(wallet, \.deposit),
                .observer { _ in heard += 1 },
            ])
            _ = closure(1)
            _ = function.entry(as: Add.self)(1, 2)
            poster.value = 3
            _ = wallet.deposit(4)
            #expect(heard == 4)
            binding!.unbind()
        }
        HookPoint.reclaimRetiredHooks()
        #expect(binding != nil)
        #expect(releasedSoon { weakClosure == nil && weakFunction == nil && weakPoster == nil && weakWallet == nil })
    }

    @Test func whileBoundClosureHookPointsAreHeldWeakly() throws {
        weak var weakClosure: ClosureHook<Int, Int>?
        var binding: Binding?
        do {
            let closure = ClosureHook(name: "doubler") { (x: Int) in x * 2 }
            weakClosure = closure
            binding = try Binding.bind([.post(closure), .observer { _ in }])
        }
        #expect(weakClosure == nil)
        #expect(binding?.isBound == true)  // its hook point went, it was not unbound
    }

    /// Dropping the `Binding` does not end it; once its posters are gone, it goes too.
    @Test func aDroppedBindingLivesWithItsPostersOnly() throws {
        weak var weakBinding: Binding?
        let receiver = Holder()
        do {
            let poster = Holder()
            weakBinding = try Binding.bind([.post(poster, \.value), .observer(receiver, \.value)])
            poster.value = 7
            #expect(receiver.value == 7)
            #expect(weakBinding != nil)  // kept by the hook at the poster
        }
        #expect(weakBinding == nil)
    }
}

@Suite("Allocations of a binding")
struct BindingAllocationTests {
    /// A bind of two objects both ways, their hook points made, keeps six
    /// allocations: the binding, each fish's endpoint, each poster's hook
    /// (a point with one hook publishes it without a snapshot), and the
    /// lock of their new connected group.
    @Test(.enabled(if: hk_test_malloc_counting_available(), "malloc is owned by the sanitizer"))
    func bindingTwoObjectsKeepsSixAllocations() throws {
        let pairs = (0..<3).map { _ in (Holder(), Holder()) }
        for (a, b) in pairs { _ = a.$value; _ = b.$value }
        var bindings: [Binding] = []
        bindings.reserveCapacity(pairs.count)
        bindings.append(try Binding.bind([.both(pairs[0].0, \.value), .both(pairs[0].1, \.value)]))  // first use of the types
        for (a, b) in pairs.dropFirst() {
            let kept = try #require(try keptAllocations {
                bindings.append(try Binding.bind([.both(a, \.value), .both(b, \.value)]))
            })
            #expect(kept == 6)
            a.value = 9
            #expect(b.value == 9)
        }
    }

    /// What those six allocations weigh, in glibc's chunks (the binding 64,
    /// each endpoint 80, each hook 64, the group 48): 400 bytes a bind, at
    /// 1,000 objects and at 100,000 alike (the target: at most 400). Counted
    /// per thread (the chunks this thread's allocations hold), so that the
    /// tests running beside it do not count.
    /// (package-benchmark's footprint case reads 404 at 100,000: its malloc
    /// counter adds 16 bytes to each allocation, and bench-report takes off
    /// 16 for each allocation the sample kept, counted as mallocs less frees.)
    @Test(.enabled(if: hk_test_malloc_counting_available(), "malloc is owned by the sanitizer"))
    func aBindKeepsAtMost400BytesAt100000Objects() throws {
        let first = (Holder(), Holder())
        let warm = try Binding.bind([.both(first.0, \.value), .both(first.1, \.value)])   // first use of the types
        defer { warm.unbind() }
        do {
            let n = 100_000
            var pairs: [(Holder, Holder)] = []
            pairs.reserveCapacity(n)
            for _ in 0..<n {
                let pair = (Holder(), Holder())
                _ = pair.0.$value
                _ = pair.1.$value
                pairs.append(pair)
            }
            var bindings: [Binding] = []
            bindings.reserveCapacity(n)
            let before = hk_test_thread_heap_bytes()
            for (a, b) in pairs { bindings.append(try Binding.bind([.both(a, \.value), .both(b, \.value)])) }
            let perBind = Double(hk_test_thread_heap_bytes() - before) / Double(n)
            // (Less than half a byte a bind over 400: the thread's once-only bookkeeping.)
            #expect(perBind < 400.5, "\(perBind) bytes a bind at \(n) objects")
            pairs[n - 1].0.value = 5
            #expect(pairs[n - 1].1.value == 5)
        }
    }

    /// A `Computed<Int>` over an `Observable<Int>` (whose node, its lock,
    /// exists: the observable's first read or write makes it, a 64-byte
    /// block) keeps four allocations: the computed (a 64-byte block; 80
    /// while it kept its name, which its core now keeps only if it is not
    /// the default), its core (128), the dependency buffer (32) and, in this
    /// unoptimized build, the closure's context (48; an optimized build uses
    /// the one object it captures as the context). 272 bytes, counted per
    /// thread in glibc's chunks (288 before). The
    /// observable's list of dependents holds its only one in place (a
    /// 32-byte block before), and the core no longer keeps the published
    /// version, the evaluation count and the list of an evaluation's reads
    /// that differ from the last one's (a 160-byte block before): 352
    /// bytes in five allocations before.
    @Test(.enabled(if: hk_test_malloc_counting_available(), "malloc is owned by the sanitizer"))
    func aComputedOverAnObservableKeepsFourAllocations() throws {
        let warm = Observable(0)
        let warmed = Computed { warm.value &+ 1 }   // first use of the types
        #expect(warmed.value == 1)
        let n = 100_000
        let sources = (0..<n).map { Observable($0) }
        // The observables' nodes made (the first read or write makes one): a
        // 64-byte block each (80 before its list of dependents was one word).
        let beforeNodes = hk_test_thread_heap_bytes()
        for source in sources { _ = source.value }
        let perNode = Double(hk_test_thread_heap_bytes() - beforeNodes) / Double(n)
        #expect(perNode < 64.5, "\(perNode) bytes an observable's node")
        var computeds: [Computed<Int>] = []
        computeds.reserveCapacity(n)
        let before = hk_test_thread_heap_bytes()
        let kept = try #require(keptAllocations {
            for source in sources { computeds.append(Computed { source.value &+ 1 }) }
        })
        let perComputed = Double(hk_test_thread_heap_bytes() - before) / Double(n)
        #expect(kept == 4 * n)
        #expect(perComputed < 272.5, "\(perComputed) bytes a computed at \(n) computeds")
        sources[n - 1].value = 5
        #expect(computeds[n - 1].value == 6)
        #expect(computeds[0].value == 1)
    }

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

    /// Updates of computeds allocate nothing once warm: a chain, a fan of
    /// subscribed computeds (a publishing round of many), a diamond, and a
    /// computed whose dependencies change on every update (its reads
    /// collected in storage the thread lends it).
    @Test(.enabled(if: hk_test_malloc_counting_available(), "malloc is owned by the sanitizer"))
    func computedUpdatesAllocateNothingEvenWhenTheirReadsChange() throws {
        let head = Observable(0)
        var chain = [Computed { head.value }]
        for _ in 1..<10 { let previous = chain[chain.count - 1]; chain.append(Computed { previous.value &+ 1 }) }
        let fan = (0..<8).map { i in Computed { head.value &* i } }
        let double = Computed { head.value &* 2 }, inverse = Computed { 0 &- head.value }
        let unstable = Computed { head.value & 1 == 1 ? double.value : inverse.value &+ chain[9].value }
        let heard = Shared(0)
        var subscriptions = [chain[9], unstable].map { $0.subscribe { _, new in heard.mutate { $0 &+= new } } }
        subscriptions += fan.map { $0.subscribe { _, new in heard.mutate { $0 &+= new } } }
        for i in 0..<4 { head.value = i }
        let count = try #require(mallocCount {
            for i in 4..<304 { head.value = i }
        })
        #expect(count == 0)
        #expect(unstable.dependencyCount == 2)   // the last write, 303, is odd: head and double
        #expect(chain[9].value == 303 + 9)
        withExtendedLifetime(subscriptions) {}
    }

    /// Computeds that go while their core is queued to publish or being
    /// published (see `GoneWhileQueued`) are freed once the queue is done
    /// with them: 100 of each case keep nothing (a core left behind would
    /// keep two allocations each: its own and its dependencies' buffer).
    @Test(.enabled(if: hk_test_malloc_counting_available(), "malloc is owned by the sanitizer"))
    func aComputedThatGoesWhileQueuedOrPublishingIsFreedOnceThrough() throws {
        let cases = GoneWhileQueued()
        cases.runEach()   // warm: the types, this thread's records
        // Counted on this thread: a hook snapshot this thread retired and a
        // test running beside it freed counts as kept. So up to three tries;
        // a core left behind keeps 200 allocations a try.
        var kept = Int.max
        for _ in 0..<3 where kept > 8 {
            kept = try #require(keptAllocations {
                for _ in 0..<100 { cases.runEach() }
            })
        }
        #expect(kept <= 8, "\(kept) allocations kept by 300 computeds gone while queued")
        cases.expectTheGraphStillWorks()
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

/// Three ways a computed goes while its core is queued to publish or being
/// published: dropped by its own subscriber during its delivery; dropped by
/// that subscriber after a write that queues it again; queued in another
/// group by a computed's subscriber (which runs while the thread publishes,
/// so the write is published in the next round), then dropped before its
/// turn.
final class GoneWhileQueued {
    let a = Observable(0), other = Observable(0)
    /// Deliveries to the computeds dropped before their turn (none expected).
    var heardOther = 0

    /// One of each.
    func runEach() {
        ownSubscriberDropsIt(writingAgain: false)
        ownSubscriberDropsIt(writingAgain: true)
        droppedWhileQueuedElsewhere()
    }

    func ownSubscriberDropsIt(writingAgain: Bool) {
        let a = self.a
        var doubled: Computed<Int>? = Computed { a.value &* 2 }
        var heard: [Int] = []
        doubled!.subscribe { _, new in
            heard.append(new)
            if writingAgain { a.value &+= 1 }   // queues it again, then it goes
            doubled = nil
        }
        a.value &+= 1
        #expect(doubled == nil)
        #expect(heard.count == 1)
    }

    func droppedWhileQueuedElsewhere() {
        let a = self.a, other = self.other
        var tripled: Computed<Int>? = Computed { other.value &* 3 }
        tripled!.subscribe { [unowned self] _, _ in heardOther += 1 }
        let trigger = Computed { a.value }
        let subscription = trigger.subscribe { _, _ in
            other.value &+= 1   // another group: queued on this thread
            tripled = nil       // gone before its turn: skipped
        }
        a.value &+= 1
        subscription.dispose()
        #expect(tripled == nil)
    }

    /// No delivery to a dropped computed, and a new computed over both
    /// sources hears each write.
    func expectTheGraphStillWorks() {
        #expect(heardOther == 0)
        let sum = Computed { [a, other] in a.value &+ other.value }
        var sums: [Int] = []
        let subscription = sum.subscribe { _, new in sums.append(new) }
        let before = other.value
        a.value = 100
        other.value = 1
        #expect(sums == [100 &+ before, 101])
        subscription.dispose()
    }
}
