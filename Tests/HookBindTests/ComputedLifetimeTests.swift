import Testing
import HookBind
import CHookTestSupport

/// Holds a computed the way an app does (a property), so that a closure can
/// let go of it.
private final class ComputedHolder<Value> { var computed: Computed<Value>? }

/// Captured by a computed's closure: gone once that closure is.
private final class ClosureCanary {}

/// Sets its flag when it goes (captured by a closure: whether the closure went).
private final class ReleaseFlag: @unchecked Sendable {
    let flag: Shared<Bool>
    init(_ flag: Shared<Bool>) { self.flag = flag }
    deinit { flag.value = true }
}

/// A value without `==`: a computed of it publishes every evaluation.
private struct Plain { let value: Int }

/// A computed whose last reference goes while it evaluates (its own closure
/// lets go of it, or one it alone reads does): the evaluation runs to its
/// end, nothing of the gone computed is used afterwards (AddressSanitizer's
/// run checks), nothing is published, and the closure, what it captured and
/// what it read are released.
@Suite("A computed that goes while it evaluates")
struct ComputedGoneWhileEvaluatingTests {
    /// A subscriber that lets go of the computed while the computed's value
    /// is delivered to two hooks (the general path, which walks the hooks
    /// after the first returned): the hook point stays until the delivery
    /// ends. (Released in the computed's `deinit`, the delivery went on in
    /// a freed point.)
    @Test func aSubscriberThatLetsGoOfItsComputedAmongOthers() {
        let a = Observable(0)
        var doubled: Computed<Int>? = Computed { a.value &* 2 }
        weak var gone = doubled
        var heard: [Int] = []
        doubled!.subscribe { _, new in
            heard.append(new)
            doubled = nil
        }
        doubled!.subscribe { _, new in heard.append(new) }
        a.value = 1
        #expect(heard == [2, 2])
        #expect(doubled == nil && gone == nil)
    }

    /// Hooks added on the hook point of a computed that was dirty (written
    /// under, never read) hear its next change.
    @Test func hooksOnADirtyComputedsPointHearItsChanges() throws {
        let price = Observable(10.0)
        let total = Computed { price.value * 2 }
        price.value = 11
        var seen: [Double] = []
        let token = total.hookPoint.after { call in seen.append(try call.argument(0, as: Double.self)) }
        defer { token.remove() }
        price.value = 12
        #expect(seen == [24])
    }

    @Test func itsOwnClosureLetsGoOfItWhilePublished() {
        let a = Observable(0)
        let holder = ComputedHolder<Int>()
        weak var canary: ClosureCanary?
        var heard: [Int] = []
        var evaluations = 0
        do {
            let captured = ClosureCanary()
            canary = captured
            holder.computed = Computed {
                let value = a.value
                if value == 1 { holder.computed = nil }
                // Captures used after the computed went.
                evaluations += 1
                withExtendedLifetime(captured) {}
                return value &* 2 &+ a.value
            }
        }
        holder.computed!.subscribe { _, new in heard.append(new) }
        a.value = 1
        #expect(holder.computed == nil)
        #expect(heard.isEmpty)
        #expect(evaluations == 2)
        #expect(canary == nil, "the closure of the gone computed is still kept")
        a.value = 2
        #expect(evaluations == 2)
    }

    @Test func itsOwnClosureLetsGoOfAComputedWithoutEquality() {
        let a = Observable(0)
        let holder = ComputedHolder<Plain>()
        var heard: [Int] = []
        holder.computed = Computed {
            let value = a.value
            if value == 1 { holder.computed = nil }
            return Plain(value: value &+ a.value)
        }
        holder.computed!.subscribe { _, new in heard.append(new.value) }
        a.value = 1
        #expect(holder.computed == nil)
        #expect(heard.isEmpty)
        a.value = 2
        #expect(heard.isEmpty)
    }

    /// The published computed goes while one it alone reads evaluates:
    /// that one goes too, in the middle of its evaluation.
    @Test func aComputedItAloneReadsLetsGoOfIt() {
        let a = Observable(0)
        let holder = ComputedHolder<Int>()
        weak var inner: Computed<Int>?
        var heard: [Int] = []
        holder.computed = {
            let reader = Computed { () -> Int in
                let value = a.value
                if value == 1 { holder.computed = nil }
                return value &+ a.value
            }
            inner = reader
            return Computed { reader.value &* 10 }
        }()
        holder.computed!.subscribe { _, new in heard.append(new) }
        a.value = 1
        #expect(holder.computed == nil)
        #expect(inner == nil)
        #expect(heard.isEmpty)
        a.value = 2
        #expect(heard.isEmpty)
    }

    /// The published computed evaluates, and a dirty computed it reads as
    /// the next of its last reads lets go of it in its own evaluation: the
    /// read is not recorded in the gone one (its cursor is no index then:
    /// the record wrote 51 GB past its dependencies).
    @Test func aDirtyComputedReadInTheMiddleOfItsReaderLetsGoOfIt() {
        let x = Observable(0)
        let holder = ComputedHolder<Int>()
        weak var reader: Computed<Int>?
        let dropping = Computed { () -> Int in
            let value = x.value
            if value == 1 { holder.computed = nil }
            return value
        }
        holder.computed = Computed { x.value &+ dropping.value }   // reads x, then dropping
        reader = holder.computed
        var heard: [Int] = []
        holder.computed!.subscribe { _, new in heard.append(new) }
        x.value = 1   // the reader evaluates (x changed), reads dropping, dirty: it lets go of the reader
        #expect(holder.computed == nil && reader == nil)
        #expect(heard.isEmpty)
        x.value = 2
        #expect(dropping.value == 2 && heard.isEmpty)
    }

    /// It read other values than the last evaluation before it went, and
    /// more after: what it read is dropped with it, and no longer causes work.
    @Test func itsReadsChangedBeforeItWent() {
        let a = Observable(0), b = Observable(0), c = Observable(0)
        let holder = ComputedHolder<Int>()
        weak var canary: ClosureCanary?
        var evaluations = 0
        do {
            let captured = ClosureCanary()
            canary = captured
            holder.computed = Computed {
                evaluations += 1
                withExtendedLifetime(captured) {}
                var value = a.value
                if value == 1 {
                    value &+= b.value
                    holder.computed = nil
                    value &+= c.value &+ b.value
                }
                return value
            }
        }
        holder.computed!.subscribe { _, _ in }
        let sum = Computed { a.value &+ b.value &+ c.value }
        a.value = 1
        #expect(holder.computed == nil)
        #expect(canary == nil)
        b.value = 5
        c.value = 7
        #expect(evaluations == 2)
        // The thread's list of reads was left as found: a computed made now
        // records its own.
        #expect(sum.value == 13)
        #expect(sum.dependencyCount == 3)
    }

    /// Its last reference goes on another thread: one that borrowed its
    /// group's lock while the evaluating thread was parked on a lock that
    /// thread holds (reading `y` inside the evaluation). The borrowing thread
    /// retires nothing the evaluation still uses; the evaluating one, once it
    /// resumes, ends as above.
    @Test(.timeLimit(.minutes(1)))
    func aThreadThatBorrowedItsGroupsLockLetsGoOfIt() {
        let x = Observable(0), y = Observable(0)
        let held = Shared<Computed<Int>?>(nil)
        let meeting = Rendezvous(2)
        let evaluations = Shared(0)
        let released = Shared(false)
        do {
            let flag = ReleaseFlag(released)
            held.value = Computed {
                let value = x.value
                evaluations.mutate { $0 += 1 }
                withExtendedLifetime(flag) {}
                guard value == 1 else { return value }
                _ = meeting.arrive()
                return value &+ y.value   // y's group is the other thread's: parks
            }
        }
        let heard = Shared<[Int]>([])
        held.value!.subscribe { _, new in heard.mutate { $0.append(new) } }
        y.subscribe { _, new in
            guard new == 2 else { return }
            _ = meeting.arrive()
            usleep(20_000)   // let the other thread park on y's group (not required)
            var gone: Computed<Int>?
            held.mutate { gone = $0; $0 = nil }
            // Its `deinit` takes x's group, held by the parked thread: borrowed.
            gone = nil
        }
        onThreads(2) { thread in
            if thread == 0 { x.value = 1 } else { y.value = 2 }
        }
        #expect(held.value == nil)
        // (Nothing heard when it went during the evaluation; had the other
        // thread dropped it before this one asked for y's group, the
        // evaluation would have borrowed that lock and published 3.)
        #expect(heard.value.isEmpty || heard.value == [3])
        #expect(released.value, "the closure of the gone computed is still kept")
        x.value = 3
        #expect(evaluations.value == 2)
    }

    /// Nothing of the gone computeds stays allocated.
    @Test(.enabled(if: hk_test_malloc_counting_available(), "malloc is owned by the sanitizer"))
    func nothingIsKept() throws {
        let a = Observable(0)
        func once() {
            let holder = ComputedHolder<Int>()
            holder.computed = Computed {
                let value = a.value
                if value & 1 == 1 { holder.computed = nil }
                return value
            }
            holder.computed!.subscribe { _, _ in }
            a.value &+= 1
            a.value &+= 1
            // And one that a computed it alone reads lets go of.
            holder.computed = {
                let reader = Computed { () -> Int in
                    let value = a.value
                    if value & 1 == 1 { holder.computed = nil }
                    return value
                }
                return Computed { reader.value &+ 1 }
            }()
            holder.computed!.subscribe { _, _ in }
            a.value &+= 1
            a.value &+= 1
        }
        once()   // warm: the types, this thread's records
        let kept = try #require(keptAllocations { for _ in 0..<100 { once() } })
        #expect(kept <= 4, "\(kept) allocations kept by 200 computeds gone while they or those they read evaluated")
    }
}

@Suite("Computeds over one value, released in any order")
struct ComputedsReleasedInAnyOrderTests {
    /// 600 computeds over one observable, subscribed, released in turns
    /// from the last made, the first made and the middle: each goes (its
    /// closure released), and a write then evaluates exactly those left,
    /// each once.
    @Test func eachGoesAndAWriteEvaluatesTheRest() {
        let shared = Observable(1)
        let evaluations = Shared(0)
        var computeds: [Computed<Int>?] = (0..<600).map { k in Computed { evaluations.mutate { $0 += 1 }; return shared.value &+ k } }
        var gone: [() -> Bool] = []
        var subscriptions: [Subscription] = []
        for computed in computeds {
            subscriptions.append(computed!.subscribe { _, _ in })
            weak let weakComputed = computed
            gone.append { weakComputed == nil }
        }
        var order: [Int] = []
        var low = 0, high = 599, middle = 300
        while order.count < 300 {
            order.append(high); high -= 1
            order.append(low); low += 1
            order.append(middle); middle += 1
        }
        for i in order {
            subscriptions[i].dispose()
            computeds[i] = nil
        }
        #expect(order.allSatisfy { gone[$0]() })
        evaluations.value = 0
        shared.value = 2
        for (k, computed) in computeds.enumerated() { if let computed { #expect(computed.value == 2 &+ k) } }
        #expect(evaluations.value == 600 - Set(order).count)
        withExtendedLifetime(subscriptions) {}
    }
}
