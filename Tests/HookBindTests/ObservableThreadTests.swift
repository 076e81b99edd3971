import Foundation
import Hook
@testable import HookBind
import Testing

@Suite("Observables on threads")
struct ObservableThreadTests {
    /// 8 threads write observables that a diamond of computeds reads while
    /// two more threads subscribe and dispose; a permanent subscriber of each
    /// observable hears every write, and the computeds end consistent.
    @Test func eightWritersWhileSubscribersComeAndGo() {
        let writers = 8, writes = 500
        let sources = (0..<writers).map { Observable(0, name: "source \($0)") }
        let total = Computed { sources.reduce(0) { $0 + $1.value } }
        let doubled = Computed { total.value * 2 }
        let check = Computed { doubled.value - total.value * 2 }  // a diamond: always 0
        let heard = (0..<writers).map { _ in Shared(0) }
        for (source, count) in zip(sources, heard) {
            source.subscribe { _, _ in count.mutate { $0 += 1 } }
        }
        let inconsistent = Shared(0)
        check.subscribe { _, new in if new != 0 { inconsistent.mutate { $0 += 1 } } }
        let churned = Shared(0)
        onThreads(writers + 2) { i in
            if i < writers {
                for n in 1...writes { sources[i].value = n }
            } else {
                for n in 0..<200 {
                    let subscription = (n % 2 == 0 ? total : doubled).subscribe(SubscriptionOptions(notifyOnSubscription: true)) { _, _ in
                        churned.mutate { $0 += 1 }
                    }
                    if n % 3 == 0 { _ = sources[n % writers].value }
                    subscription.dispose()
                }
            }
        }
        #expect(heard.map(\.value) == Array(repeating: writes, count: writers))
        #expect(total.value == writers * writes)
        #expect(doubled.value == 2 * writers * writes)
        #expect(inconsistent.value == 0)
        #expect(churned.value >= 400)
    }

    /// Threads make chains of computeds over shared observables (merging
    /// their groups into ever larger ones, usually into a group taken after
    /// the new computed's own, which then moves down the thread's held
    /// locks) while others write; every chain ends up to date and its
    /// subscriber heard its last value. Three rounds: this found a thread
    /// that borrowed a lock and then came to hold it for real waiting for
    /// its own borrow to end (a hang in about one run of four).
    @Test(.timeLimit(.minutes(1)))
    func computedsMadeOnThreadsWhileOthersWrite() {
        for _ in 0..<3 {
            let sources = (0..<4).map { Observable(0, name: "source \($0)") }
            let makers = 4, chains = 40, writers = 4, writes = 300
            // Each chain: its last computed, what its subscriber heard, the
            // subscription, and the value it must end with.
            let made = Shared<[(Computed<Int>, Shared<Int>, Subscription, () -> Int)]>([])
            let written = Shared(Array(repeating: 0, count: writers))
            // The writers write while the makers make (at most `writes` each):
            // writes after that find every chain made, which the test is not about.
            let makersLeft = Shared(makers)
            let finished = onThreads(makers + writers, timeout: 30) { i in
                if i < makers {
                    for n in 0..<chains {
                        let first = sources[(i + n) % sources.count], second = sources[(i + n + 1) % sources.count]
                        var last = Computed { first.value &+ second.value }
                        for _ in 0..<(n % 5) { let previous = last; last = Computed { previous.value &+ 1 } }
                        let heard = Shared(0)
                        let subscription = last.subscribe(SubscriptionOptions(notifyOnSubscription: true)) { _, new in
                            heard.mutate { $0 = new }
                        }
                        let depth = n % 5
                        made.mutate { $0.append((last, heard, subscription, { first.value &+ second.value &+ depth })) }
                    }
                    makersLeft.mutate { $0 -= 1 }
                } else {
                    var n = 0
                    repeat {
                        n += 1
                        sources[i - makers].value = n
                    } while n < writes && makersLeft.value > 0
                    written.mutate { $0[i - makers] = n }
                }
            }
            // A hang: what the parked threads hold and wait for, then stop
            // (the threads cannot be freed).
            guard finished else { fatalError("threads still parked after 30 s:\n" + _Groups.dump()) }
            #expect(sources.map(\.value) == written.value)
            #expect(made.value.count == makers * chains)
            for (computed, heard, _, expected) in made.value {
                #expect(heard.value == computed.value)
                #expect(computed.value == expected())
            }
        }
    }

    @Test func batchesOnThreadsAreAtomic() {
        let a = Observable(0), b = Observable(0)
        let difference = Computed { a.value - b.value }
        let seen = Shared<Set<Int>>([])
        difference.subscribe { _, new in seen.mutate { $0.insert(new) } }
        onThreads(4) { _ in
            for _ in 0..<300 {
                batch {
                    a.value += 1
                    b.value += 1
                }
            }
        }
        #expect(a.value == 1200 && b.value == 1200)
        #expect(seen.value.isEmpty)  // a - b never published as anything but 0, which is no change
    }
}

/// Two plain models whose value a `Binding` keeps equal.
final class BoundPair: @unchecked Sendable {
    @Hooked var value = 0
}

@Suite("Bindings and observables together")
struct BindingAndObservableTests {
    /// One property bound by a FishBind `Binding` and to an `Observable`:
    /// writes through the binding on one thread and through the observable on
    /// another take both kinds of delivery in opposite orders. One lock for
    /// both keeps that from deadlocking, and everything ends equal.
    @Test(.timeLimit(.minutes(1)))
    func aPropertyBoundBothWaysFromTwoThreadsDoesNotDeadlock() throws {
        let a = BoundPair(), b = BoundPair()
        try Binding.bind([.both(a, \.value), .both(b, \.value)])
        let observable = Observable(0)
        try observable.bind(a, \.value)
        onThreads(2) { i in
            for n in 1...3_000 {
                if i == 0 { b.value = n } else { observable.value = -n }
            }
        }
        #expect(a.value == b.value)
        #expect(observable.value == a.value)
    }
}
