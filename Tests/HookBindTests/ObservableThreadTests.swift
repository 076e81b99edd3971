import Foundation
import Hook
import HookBind
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
