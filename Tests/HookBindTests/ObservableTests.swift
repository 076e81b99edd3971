import Foundation
import Hook
import HookBind
import Testing

/// Fisticuffs' LoginViewController, with plain objects for its controls.
final class LoginForm {
    let username = Observable("")
    let password = Observable("")
    lazy var inputIsValid: Computed<Bool> = Computed { [weak self] in
        let user = self?.username.value
        let pass = self?.password.value
        return user?.isEmpty == false && pass?.isEmpty == false
    }
}

@Suite("Observable, Computed, Event (Fisticuffs)")
struct ObservableTests {
    // MARK: The seed's examples

    @Test func observablePrintsHelloWorld() {
        let observable = Observable<String>("")
        let printed = Shared<[String]>([])
        observable.subscribe { _, newValue in printed.mutate { $0.append(newValue) } }
        observable.value = "Hello, world"
        #expect(printed.value == ["Hello, world"])
    }

    @Test func computedGreetingFollowsItsObservable() {
        let name = Observable<String>("")
        let greeting: Computed<String> = Computed { "Hello, " + name.value }
        let printed = Shared<[String]>([])
        greeting.subscribe { _, newValue in printed.mutate { $0.append(newValue) } }
        name.value = "world"
        #expect(printed.value == ["Hello, world"])
        #expect(greeting.value == "Hello, world")
    }

    @Test func eventPrintsWhatIsFired() {
        let event = Event<String>()
        let printed = Shared<[String]>([])
        event.subscribe { old, str in
            #expect(old == nil)
            printed.mutate { $0.append(str) }
        }
        event.fire("Hello, world")
        #expect(printed.value == ["Hello, world"])
    }

    @Test func loginButtonIsEnabledOnlyWithUsernameAndPassword() {
        let form = LoginForm()
        let enabled = Shared<[Bool]>([])
        form.inputIsValid.subscribe(SubscriptionOptions(notifyOnSubscription: true)) { _, valid in
            enabled.mutate { $0.append(valid) }
        }
        form.username.value = "ada"
        form.password.value = "secret"
        form.username.value = ""
        #expect(enabled.value == [false, true, false])  // equal results (false -> false) are no change
    }

    // MARK: Subscriptions

    @Test func subscribersGetOldAndNewValuesInOrder() {
        let count = Observable(0)
        let heard = Shared<[String]>([])
        count.subscribe { old, new in heard.mutate { $0.append("a \(old!)->\(new)") } }
        count.subscribe { old, new in heard.mutate { $0.append("b \(old!)->\(new)") } }
        count.value = 1
        count.value = 1  // every write counts
        #expect(heard.value == ["a 0->1", "b 0->1", "a 1->1", "b 1->1"])
    }

    @Test func notifyOnSubscriptionDeliversTheCurrentValueWithNoOldValue() {
        let count = Observable(5)
        var heard: [String] = []
        count.subscribe(SubscriptionOptions(notifyOnSubscription: true)) { old, new in
            heard.append("\(old.map(String.init) ?? "nil")->\(new)")
        }
        count.value = 6
        #expect(heard == ["nil->5", "5->6"])
    }

    @Test func beforeChangeSubscribersRunWhileTheValueIsOld() {
        let count = Observable(1)
        let doubled = Computed { count.value * 2 }
        var seen: [String] = []
        count.subscribe(SubscriptionOptions(when: .beforeChange)) { [unowned count] old, new in
            seen.append("before \(old!)->\(new), stored \(count.value)")
        }
        count.subscribe { [unowned count] old, new in seen.append("after \(old!)->\(new), stored \(count.value)") }
        doubled.subscribe(SubscriptionOptions(when: .beforeChange)) { old, new in
            seen.append("computed before \(old!)->\(new)")
        }
        count.value = 2
        #expect(seen == ["before 1->2, stored 1", "after 1->2, stored 2", "computed before 2->4"])
    }

    /// A set that an instead hook swallows (it stores nothing) is no change:
    /// after-change subscribers do not hear it; the next stored set they do,
    /// from the value that stayed.
    @Test func aSetThatStoresNothingIsNoChangeToSubscribers() {
        let count = Observable(1)
        var heard: [String] = []
        count.subscribe { old, new in heard.append("\(old!)->\(new)") }
        let swallow = count.hookPoint.instead { _ in }
        count.value = 2
        #expect(count.value == 1)
        #expect(heard.isEmpty)
        swallow.remove()
        count.value = 3
        #expect(heard == ["1->3"])
    }

    /// Nor to the computeds that read it: they do not evaluate again (a
    /// computed of a value that is not `Equatable` would publish its
    /// unchanged value to its subscribers).
    @Test func aSetThatStoresNothingIsNoChangeToComputeds() {
        struct Box { var value: Int }
        let count = Observable(1)
        let boxed = Computed { Box(value: count.value) }
        var heard: [Int] = []
        let subscription = boxed.subscribe { _, new in heard.append(new.value) }
        let swallow = count.hookPoint.instead { _ in }
        count.value = 2
        #expect(boxed.value.value == 1)
        #expect(boxed.evaluationCount == 1)
        #expect(heard.isEmpty)
        swallow.remove()
        count.value = 3
        #expect(heard == [3])
        #expect(boxed.evaluationCount == 2)
        subscription.dispose()
    }

    /// An observable bound to a property: a write at either end that
    /// stores nothing (an `instead` hook that does not run the original)
    /// does not reach the other end.
    @Test func aSetThatStoresNothingIsNotDeliveredByABind() throws {
        let number = Observable(0), holder = Holder()
        let subscription = try number.bind(holder, \.value)
        var token = holder.$value.instead { _ in }
        holder.value = 7
        token.remove()
        #expect(holder.value == 0 && number.value == 0)
        token = number.hookPoint.instead { _ in }
        number.value = 8
        token.remove()
        #expect(holder.value == 0 && number.value == 0)
        holder.value = 5
        #expect(number.value == 5)
        subscription.dispose()
    }

    /// Subscribers of a computed are typed after hooks: alone (a set without
    /// a call record) or among others, each hears each change once, in the
    /// order subscribed, and one disposed of hears no more.
    @Test func computedSubscribersHearEachChangeAloneOrTogether() {
        let count = Observable(1)
        let doubled = Computed { count.value * 2 }
        var heard: [String] = []
        let first = doubled.subscribe { old, new in heard.append("first \(old!)->\(new)") }
        count.value = 2
        let second = doubled.subscribe { old, new in heard.append("second \(old!)->\(new)") }
        count.value = 3
        first.dispose()
        count.value = 4
        second.dispose()
        count.value = 5
        #expect(heard == ["first 2->4", "first 4->6", "second 4->6", "second 6->8"])
        #expect(doubled.value == 10)
    }

    /// A computed made and first read after the observable has subscribers:
    /// a subscriber that reads it during a write sees it up to date (the
    /// graph's own hook, added when the value is first read, runs before the
    /// subscribers already there), and the subscriber count leaves it out.
    @Test func aComputedReadLaterIsFreshInSubscribersThatCameFirst() {
        let count = Observable(1)
        var seen: [String] = []
        var doubled: Computed<Int>?
        count.subscribe { old, new in
            if let doubled { seen.append("\(old!)->\(new), doubled \(doubled.value)") }
        }
        #expect(count.subscriberCount == 1)
        count.value = 2
        doubled = Computed { count.value * 2 }
        #expect(doubled?.value == 4)
        #expect(count.subscriberCount == 1)
        count.value = 3
        count.value = 5
        #expect(seen == ["2->3, doubled 6", "3->5, doubled 10"])
        doubled = nil  // the subscriber holds it, and it holds `count`: no cycle left behind
    }

    /// `removeAllHooks()` on an observable's hook point removes the
    /// subscribers and the user's hooks, not the graph's own hook: computeds
    /// that read the observable stay current, and an array keeps its changes.
    @Test func removingAllHooksKeepsComputedsCurrent() {
        let count = Observable(1)
        let doubled = Computed { count.value * 2 }
        #expect(doubled.value == 2)
        var heard = 0
        count.subscribe { _, _ in heard += 1 }
        count.hookPoint.after { _ in heard += 10 }
        #expect(count.subscriberCount == 2 && count.hookPoint.hookCount == 2)
        count.value = 2
        #expect(heard == 11 && doubled.value == 4)
        count.hookPoint.removeAllHooks()
        #expect(count.subscriberCount == 0 && count.hookPoint.hookCount == 0)
        count.value = 3
        #expect(heard == 11)
        #expect(doubled.value == 6)

        let list = ObservableArray([1, 2])
        var changes: [ArrayChange<Int>] = []
        list.subscribeChanges { change in changes.append(change) }
        list.hookPoint.removeAllHooks()
        list.subscribeChanges { change in changes.append(change) }
        list.append(3)
        #expect(list.value == [1, 2, 3])
        #expect(changes.count == 1 && changes.first?.insertions == [2])
    }

    @Test func disposedSubscriptionsHearNothing() {
        let count = Observable(0)
        var heard = 0
        let subscription = count.subscribe { _, _ in heard += 1 }
        count.value = 1
        subscription.dispose()
        subscription.dispose()
        count.value = 2
        #expect(heard == 1)
        #expect(subscription.isDisposed)
        #expect(count.subscriberCount == 0)
    }

    @Test func subscriptionsInABagEndWithTheirOwner() {
        let count = Observable(0)
        var heard = 0
        var owner: OwningListener? = OwningListener()
        count.subscribe { _, _ in heard += 1 }.store(in: owner!.hookBag)
        count.value = 1
        owner = nil
        count.value = 2
        #expect(heard == 1)
    }

    @Test func aSubscriberCanDisposeItselfWhileBeingCalled() {
        let count = Observable(0)
        var heard = 0
        var subscription: Subscription?
        subscription = count.subscribe { _, _ in
            heard += 1
            subscription?.dispose()
        }
        count.value = 1
        count.value = 2
        #expect(heard == 1)
        subscription = nil  // the block holds the variable that holds its subscription: break the cycle
    }

    // MARK: Writes are calls at a hook point

    @Test func writesAreCallsAtTheObservablesHookPoint() throws {
        let price = Observable(10.0, name: "price")
        let total = Computed { price.value * 2 }
        var seen: [String] = []
        price.hookPoint.before { call in
            if try call.argument(0, as: Double.self) < 0 { try call.veto() }
        }
        price.hookPoint.add(.after, owner: price) { price, call in
            seen.append("\(call.selector) \(try call.oldValue(as: Double.self)) -> \(call.args[0]), target is price: \(call.target === price)")
        }
        price.value = 12
        price.value = -1  // vetoed: stays 12; computeds, subscribers and after hooks see nothing
        #expect(price.value == 12)
        #expect(total.value == 24)
        #expect(seen == ["price 10.0 -> 12.0, target is price: true"])
    }

    @Test func aComputedsNameIsTheSelectorOfItsCalls() throws {
        let price = Observable(10.0)
        let total = Computed(name: "total") { price.value * 2 }
        let unnamed = Computed { price.value + 1 }
        #expect(total.name == "total")
        #expect(unnamed.name == "computed")
        var seen: [String] = []
        total.hookPoint.add(.after, owner: total) { _, call in seen.append("\(call.selector) \(call.args[0])") }
        unnamed.hookPoint.add(.after, owner: unnamed) { _, call in seen.append("\(call.selector) \(call.args[0])") }
        #expect(total.hookPoint.name == "total")
        price.value = 12
        #expect(seen == ["total 24.0", "computed 13.0"])
    }

    @Test func aWriteWithoutHooksStillUpdatesComputeds() {
        let count = Observable(1)
        let doubled = Computed { count.value * 2 }
        var heard = 0
        count.subscribe { _, _ in heard += 1 }
        withoutHooks { count.value = 5 }
        #expect(heard == 0)
        #expect(doubled.value == 10)
    }

    // MARK: Dependency tracking

    @Test func dependenciesAreFoundWhileEvaluating() {
        let first = Observable("Ada"), last = Observable("Lovelace")
        let full = Computed { first.value + " " + last.value }
        #expect(full.dependencyCount == 2)
        last.value = "Byron"
        #expect(full.value == "Ada Byron")
    }

    @Test func dependenciesNoLongerReadAreDropped() {
        let useMetric = Observable(true)
        let meters = Observable(1.0), feet = Observable(3.0)
        let shown = Computed { useMetric.value ? "\(meters.value) m" : "\(feet.value) ft" }
        #expect(shown.dependencyCount == 2)
        useMetric.value = false
        #expect(shown.value == "3.0 ft")
        #expect(shown.dependencyCount == 2)  // useMetric and feet; meters dropped
        let before = shown.evaluationCount
        meters.value = 2  // no longer read: nothing runs
        meters.value = 3
        #expect(shown.value == "3.0 ft")
        #expect(shown.evaluationCount == before)
        feet.value = 6
        #expect(shown.value == "6.0 ft")
        #expect(shown.evaluationCount == before + 1)
    }

    /// A re-evaluation is checked against the last one's reads in order
    /// (kept in place while they match): every way the reads can differ
    /// (fewer, more, in another order, one read twice, one swapped in the
    /// middle) leaves exactly what it read as the dependencies, each
    /// followed from then on and the others not.
    @Test func dependenciesFollowEveryEvaluationHoweverItsReadsChange() {
        let mode = Observable(0)
        let a = Observable(1), b = Observable(10), c = Observable(100)
        let sum = Computed { () -> Int in
            switch mode.value {
            case 0: return a.value + b.value            // mode, a, b
            case 1: return a.value                      // mode, a: fewer
            case 2: return a.value + b.value + c.value  // mode, a, b, c: more
            case 3: return b.value + a.value            // mode, b, a: another order
            case 4: return a.value + a.value + b.value  // a read twice
            default: return a.value + c.value           // c in b's place
            }
        }
        let heard = Shared<[Int]>([])
        sum.subscribe { _, new in heard.mutate { $0.append(new) } }
        func evaluations(after change: () -> Void) -> Int {
            let before = sum.evaluationCount
            change()
            _ = sum.value
            return sum.evaluationCount - before
        }
        let expected: [(mode: Int, count: Int, follows: [Observable<Int>], ignores: [Observable<Int>])] = [
            (1, 2, [a], [b, c]), (2, 4, [a, b, c], []), (3, 3, [a, b], [c]),
            (4, 3, [a, b], [c]), (5, 3, [a, c], [b]), (0, 3, [a, b], [c]),
        ]
        for step in expected {
            mode.value = step.mode
            #expect(sum.dependencyCount == step.count, "mode \(step.mode)")
            for source in step.follows { #expect(evaluations { source.value += 1 } == 1, "mode \(step.mode)") }
            for source in step.ignores { #expect(evaluations { source.value += 1 } == 0, "mode \(step.mode)") }
        }
        // Unchanged reads, in place: a change of a source re-evaluates once and keeps the count.
        #expect(evaluations { a.value = 50 } == 1)
        #expect(sum.dependencyCount == 3)
        #expect(sum.value == 50 + b.value)
        #expect(heard.value.last == sum.value)
    }

    /// Dependencies that change on every update, and that shrink: the
    /// storage of the list given up is kept for the next change (that an
    /// update then allocates nothing is checked on the release build, by
    /// the kairo-unstable benchmark's allocation count in CI; a debug build
    /// allocates on every update).
    @Test func dependenciesThatChangeOnEveryUpdateStayRight() throws {
        let head = Observable(0)
        let double = Computed { head.value &* 2 }, inverse = Computed { 0 &- head.value }
        let unstable = Computed { () -> Int in
            var result = 0
            for _ in 0..<4 { result &+= head.value & 1 == 1 ? double.value : inverse.value }
            return result
        }
        let shrinking = Computed { head.value % 3 == 0 ? head.value &+ double.value &+ inverse.value : head.value }
        let sum = Shared(0)
        unstable.subscribe { _, new in sum.mutate { $0 &+= new } }
        shrinking.subscribe { _, new in sum.mutate { $0 &+= new } }
        var heard = 0
        for i in 0..<1_008 {
            head.value = i
            let value = i & 1 == 1 ? 4 * (i &* 2) : 4 * (0 &- i)
            #expect(unstable.value == value)
            #expect(unstable.dependencyCount == 2)   // head, and double or inverse
            #expect(shrinking.dependencyCount == (i % 3 == 0 ? 3 : 1))
            heard &+= value &+ (i % 3 == 0 ? i &+ i &* 2 &- i : i)
        }
        // The subscribers heard every update's value (each is a change).
        #expect(sum.value == heard)
    }

    /// An evaluation whose reads differ from its last one's (it diverged)
    /// that brings up to date, in the middle, a computed whose reads
    /// differ too: each keeps exactly its own reads (the inner one's do
    /// not end up in the outer's, nor the outer's earlier ones lost), and
    /// a value the outer read before the inner evaluation is known as
    /// read again after it.
    @Test func nestedEvaluationsThatBothChangeTheirReadsKeepTheirOwn() {
        let flag = Observable(false)
        let x = Observable(1), y = Observable(20), z = Observable(300)
        // Diverges at z (x before), then reads y, which the outer read before it.
        let inner = Computed { flag.value ? z.value &+ y.value : x.value }
        let outer = Computed { () -> Int in
            guard flag.value else { return x.value &+ inner.value }
            // Diverges at y (x before), then inner evaluates, then y again and x.
            return y.value &+ inner.value &+ y.value &+ x.value
        }
        let heard = Shared<[Int]>([])
        outer.subscribe { _, new in heard.mutate { $0.append(new) } }
        #expect(outer.value == 2)
        #expect(outer.dependencyCount == 3 && inner.dependencyCount == 2)   // flag, x, inner; flag, x
        for round in 0..<3 {
            flag.value = true
            #expect(outer.value == 361, "round \(round)")   // 20 + 320 + 20 + 1
            #expect(outer.dependencyCount == 4, "round \(round)")   // flag, y, inner, x
            #expect(inner.dependencyCount == 3, "round \(round)")   // flag, z, y
            z.value += 1   // only through inner
            #expect(heard.value.last == 362, "round \(round)")   // 20 + 321 + 20 + 1
            #expect(inner.value == 321, "round \(round)")
            x.value = 2    // outer's own read after the inner evaluation
            #expect(heard.value.last == 363, "round \(round)")   // 20 + 321 + 20 + 2
            flag.value = false
            #expect(outer.value == 4, "round \(round)")
            #expect(outer.dependencyCount == 3 && inner.dependencyCount == 2, "round \(round)")
            let evaluations = inner.evaluationCount
            z.value -= 1   // no longer read by either
            y.value += 0
            #expect(inner.evaluationCount == evaluations, "round \(round)")
            x.value = 1
        }
        #expect(heard.value.count == 3 * 5)
    }

    /// A value read last by an evaluation nested in another (a dirty
    /// computed brought up to date as it is read) is a read of the outer
    /// evaluation's own when the outer then reads it, and the nested one
    /// records a value the outer read just before it: each computed keeps
    /// every value it read, in its first evaluation and after. (A read of
    /// the value the thread's evaluation read last is known at once: that
    /// word must be the innermost evaluation's alone.)
    @Test func aValueReadLastByANestedEvaluationIsStillADependencyOfEach() {
        let source = Observable(1), other = Observable(0)
        // Read by the outer one after the nested evaluation.
        let big = Computed { source.value > 100 }
        source.value = 2   // big dirty
        let after = Computed { () -> Int in
            _ = other.value
            _ = big.value   // evaluates big while it is dirty, which reads source last
            return source.value
        }
        #expect(after.dependencyCount == 3)
        source.value = 3   // big and after dirty, nobody reads them
        other.value = 1    // after's first read changed: it evaluates before big is brought up to date
        #expect(after.value == 3 && after.dependencyCount == 3)
        // Read by the nested evaluation after the outer one read it.
        let doubled = Computed { source.value &* 2 }
        source.value = 4   // doubled and after dirty
        let before = Computed { () -> Int in
            let read = source.value
            return read &+ doubled.value   // evaluates doubled, whose first read is source
        }
        #expect(doubled.dependencyCount == 1 && before.dependencyCount == 2)
        var heard: [Int] = []
        let subscription = after.subscribe { _, new in heard.append(new) }
        for value in 5...7 {
            source.value = value   // big stays false: only after's own read tells it
            #expect(after.value == value && doubled.value == 2 * value && before.value == 3 * value)
        }
        #expect(heard == [5, 6, 7])
        subscription.dispose()
    }

    /// Evaluations of hundreds of reads whose order changes on every
    /// update (each a long segment of the thread's reads, looked up in an
    /// index past 32): each value read twice is one dependency; two inner
    /// evaluations, one after the other inside the outer one, begin their
    /// segments at the same place and keep their own; the outer knows its
    /// earlier reads after them. Once warm, an update allocates nothing.
    @Test func evaluationsOfHundredsOfReadsThatChangeOrderKeepEachReadOnce() throws {
        let flag = Observable(false)
        let xs = (0..<100).map { Observable($0) }, ys = (0..<100).map { Observable(1_000 + $0) }
        /// Each of `values` twice, backwards while the flag is set (every
        /// read but the flag's then differs from the last evaluation's).
        func twice(_ values: [Observable<Int>]) -> Int {
            let backwards = flag.value
            var total = 0
            for _ in 0..<2 {
                for k in 0..<values.count { total &+= values[backwards ? values.count - 1 - k : k].value }
            }
            return total
        }
        let first = Computed { twice(xs) }, second = Computed { twice(ys) }
        let outer = Computed { twice(xs) &+ first.value &+ second.value &+ twice(xs) }
        let heard = Shared(0)
        // (The flag changes the order, not the sum: subscribers hear the writes to xs and ys.)
        let subscription = outer.subscribe(SubscriptionOptions(notifyOnSubscription: true)) { _, new in heard.mutate { $0 = new } }
        func check(_ round: Int) {
            let sx = 2 * xs.reduce(0) { $0 + $1.value }, sy = 2 * ys.reduce(0) { $0 + $1.value }
            #expect(outer.dependencyCount == 103, "round \(round)")   // flag, 100 xs, first, second
            #expect(first.dependencyCount == 101 && second.dependencyCount == 101, "round \(round)")
            #expect(heard.value == 3 * sx + sy && outer.value == 3 * sx + sy, "round \(round)")
        }
        for round in 0..<4 {
            flag.value.toggle()
            check(round)
            // A value of the outer's own, read before and after the inner evaluations.
            let evaluations = (outer.evaluationCount, first.evaluationCount, second.evaluationCount)
            xs[round * 7].value += 1
            ys[round * 9].value += 1
            check(round)
            #expect(outer.evaluationCount == evaluations.0 + 2 && first.evaluationCount == evaluations.1 + 1
                    && second.evaluationCount == evaluations.2 + 1, "round \(round)")
        }
        let allocations = mallocCount { for _ in 0..<4 { flag.value.toggle() } }
        #expect(allocations ?? 0 == 0)
        check(4)
        withExtendedLifetime(subscription) {}
    }

    @Test func aComputedEvaluatesLazilyWithoutSubscribers() {
        let count = Observable(0)
        let doubled = Computed { count.value * 2 }
        #expect(doubled.evaluationCount == 1)
        for i in 1...10 { count.value = i }
        #expect(doubled.evaluationCount == 1)
        #expect(doubled.value == 20)
        #expect(doubled.evaluationCount == 2)
    }

    @Test func equalResultsAreNoChange() {
        let count = Observable(1)
        let isEven = Computed { count.value % 2 == 0 }
        let label = Computed { isEven.value ? "even" : "odd" }
        var heard: [Bool] = []
        isEven.subscribe { _, new in heard.append(new) }
        count.value = 3  // still odd
        #expect(heard.isEmpty)
        #expect(label.value == "odd")
        #expect(label.evaluationCount == 1)  // isEven did not change: label did not run
        count.value = 4
        #expect(heard == [true])
        #expect(label.value == "even")
    }

    @Test func computedsOfComputedsChain() {
        let a = Observable(1)
        let b = Computed { a.value + 1 }
        let c = Computed { b.value * 10 }
        var heard: [Int] = []
        c.subscribe { _, new in heard.append(new) }
        a.value = 2
        a.value = 3
        #expect(heard == [30, 40])
    }

    // MARK: The diamond

    @Test func aDiamondEvaluatesOncePerChangeAndIsNeverInconsistent() {
        let a = Observable(1)
        let b = Computed { a.value * 2 }
        let c = Computed { a.value * 3 }
        var inconsistent: [String] = []
        let d = Computed { () -> String in
            let (x, y) = (b.value, c.value)
            if x / 2 != y / 3 { inconsistent.append("b=\(x) c=\(y)") }
            return "\(x)+\(y)"
        }
        var heard: [String] = []
        d.subscribe { old, new in heard.append("\(old!) -> \(new)") }
        let evaluations = d.evaluationCount
        for i in 2...5 { a.value = i }
        #expect(d.evaluationCount == evaluations + 4)
        #expect(b.evaluationCount == 5 && c.evaluationCount == 5)
        #expect(inconsistent.isEmpty)
        #expect(heard == ["2+3 -> 4+6", "4+6 -> 6+9", "6+9 -> 8+12", "8+12 -> 10+15"])
    }

    @Test func subscribersOfTheSourceSeeTheDiamondUpToDate() {
        let a = Observable(1)
        let b = Computed { a.value * 2 }
        let c = Computed { a.value * 3 }
        let d = Computed { b.value + c.value }
        d.subscribe { _, _ in }
        var seen: [Int] = []
        a.subscribe { [unowned d] _, new in seen.append(d.value - new * 5) }  // 0 when d is up to date
        withExtendedLifetime(d) { a.value = 7 }
        #expect(seen == [0])
    }

    // MARK: Batches

    @Test func aBatchIsOnePropagation() {
        let first = Observable("Ada"), last = Observable("Lovelace")
        let full = Computed { first.value + " " + last.value }
        var heardFull: [String] = []
        var heardFirst: [String] = []
        full.subscribe { _, new in heardFull.append(new) }
        first.subscribe { old, new in heardFirst.append("\(old!)->\(new)") }
        let evaluations = full.evaluationCount
        batch {
            first.value = "Augusta"
            first.value = "Grace"
            last.value = "Hopper"
            #expect(first.value == "Grace")  // reads inside see the writes
            #expect(heardFull.isEmpty && heardFirst.isEmpty)
        }
        #expect(heardFull == ["Grace Hopper"])
        #expect(heardFirst == ["Ada->Grace"])  // one call, from before the batch to the last value
        #expect(full.evaluationCount == evaluations + 1)
    }

    @Test func batchesNestAndTheOutermostPublishes() throws {
        let count = Observable(0)
        var heard: [Int] = []
        count.subscribe { _, new in heard.append(new) }
        let result = batch { () -> Int in
            count.value = 1
            batch { count.value = 2 }
            #expect(heard.isEmpty)
            return count.value
        }
        #expect(result == 2)
        #expect(heard == [2])
    }

    @Test func aVetoAtTheEndOfABatchRestoresTheValueBeforeIt() throws {
        let count = Observable(0)
        let doubled = Computed { count.value * 2 }
        count.hookPoint.before { call in if try call.argument(0, as: Int.self) > 100 { try call.veto() } }
        batch {
            count.value = 500
            #expect(doubled.value == 1000)
        }
        #expect(count.value == 0)
        #expect(doubled.value == 0)
    }

    /// The end of a batch is one write of each observable it wrote: a
    /// subscriber of the observable that reads a computed over it brings it
    /// up to date, and the computed's own publication after does not
    /// evaluate it again. (The batch's end told the computeds twice, once
    /// after the subscribers ran: evaluated twice.)
    @Test func aComputedReadByAnObservablesSubscriberAtABatchsEndEvaluatesOnce() {
        let count = Observable(0)
        let doubled = Computed { count.value * 2 }
        var heard: [Int] = []
        var seenBySubscriber: [Int] = []
        doubled.subscribe { _, new in heard.append(new) }
        // (Weakly: doubled holds count, whose hook point holds this subscriber.)
        count.subscribe { [weak doubled] _, _ in seenBySubscriber.append(doubled?.value ?? -1) }
        let evaluations = doubled.evaluationCount
        batch {
            count.value = 1
            count.value = 2
        }
        #expect(seenBySubscriber == [4])
        #expect(heard == [4])
        #expect(doubled.evaluationCount == evaluations + 1)
    }

    /// A value that changes and changes back before subscribers hear of it
    /// (a batch read the computed in between) is no change to an `Equatable`
    /// computed's subscribers. (They heard 0 -> 0.)
    @Test func aComputedThatChangedAndChangedBackInABatchIsNoChange() {
        let count = Observable(0)
        let doubled = Computed { count.value * 2 }
        var heard: [String] = []
        doubled.subscribe { old, new in heard.append("\(old!)->\(new)") }
        batch {
            count.value = 1
            #expect(doubled.value == 2)
            count.value = 0
        }
        #expect(heard.isEmpty)
        #expect(doubled.value == 0)
        count.value = 3
        #expect(heard == ["0->6"])
    }

    @Test func aThrowingBatchStillPublishesWhatItWrote() {
        struct Stop: Error {}
        let count = Observable(0)
        var heard: [Int] = []
        count.subscribe { _, new in heard.append(new) }
        #expect(throws: Stop.self) {
            try batch { () throws(Stop) in
                count.value = 3
                throw Stop()
            }
        }
        #expect(heard == [3])
    }

    // MARK: Recursion

    @Test func readingAComputedInItsOwnSubscriberDoesNotRecurse() {
        let a = Observable(1)
        let doubled = Computed { a.value * 2 }
        var read: [Int] = []
        doubled.subscribe { [unowned doubled] _, _ in read.append(doubled.value) }
        let evaluations = doubled.evaluationCount
        a.value = 5
        #expect(read == [10])
        #expect(doubled.evaluationCount == evaluations + 1)
    }

    @Test func aSubscriberWritingWhatItObservesDoesNotRecurse() {
        let count = Observable(0)
        let doubled = Computed { count.value * 2 }
        var calls = 0
        count.subscribe { [unowned count] _, new in
            calls += 1
            if new % 2 != 0 { count.value = new + 1 }  // round up to even, without being called again
        }
        count.value = 3
        #expect(calls == 1)
        #expect(count.value == 4)
        #expect(doubled.value == 8)
    }

    @Test func aComputedThatReadsItselfGetsItsPreviousValue() {
        let a = Observable(1)
        weak var weakTotal: Computed<Int>?  // a strong capture would make the computed hold itself
        let total = Computed { (weakTotal?.value ?? 0) + a.value }  // a running total
        weakTotal = total
        #expect(total.value == 1)
        a.value = 2
        #expect(total.value == 3)
        a.value = 10
        #expect(total.value == 13)
    }

    /// A computed read again in one evaluation after a write made it stale
    /// gives its new value: a read the evaluation knows (the one just read
    /// again, or the next of its last reads) is taken from the cache only
    /// while that computed is clean.
    @Test func aComputedReadAgainAfterAWriteInTheSameEvaluationIsFresh() {
        let a = Observable(1)
        let tens = Computed { a.value * 10 }
        let step = Observable(false)
        let pairs = Computed { () -> [Int] in
            let writes = step.value
            let first = tens.value
            // (A write that reads nothing: `+=` would make `a` a read too.)
            if writes { a.value = 2 }  // tens is stale from here
            return [first, tens.value]  // the read just made, again
        }
        #expect(pairs.value == [10, 10])
        step.value = true
        #expect(pairs.value == [10, 20])
        // The same evaluation again, its reads known in order now.
        a.value = 5
        #expect(pairs.value == [50, 20])
        #expect(tens.value == 20)
    }

    /// A graph deeper than a refresh goes by recursion (it goes on without,
    /// keeping the computeds that wait on a dirty dependency on the
    /// thread's stack): a chain of 40 where every fifth node also reads the
    /// head (a diamond down the chain), the 20th stops changing once it
    /// reaches 30 (what follows it does not evaluate), the 33rd reads the
    /// previous node or the head by the head's parity (its dependencies
    /// change), and the subscribed top reads nodes 39 and 33 and checks
    /// them against the head it reads: up to date, never inconsistent.
    @Test func aGraphDeeperThanTheRecursionIsBroughtUpToDateInOrder() {
        func model(_ head: Int) -> [Int] {
            var values: [Int] = []
            for i in 0..<40 {
                let previous = values.last ?? head
                switch i {
                case 20: values.append(min(previous + 1, 30))
                case 33: values.append(head % 2 == 0 ? previous + 1 : head)
                case _ where i % 5 == 0 && i > 0: values.append(previous + head)
                default: values.append(previous + 1)
                }
            }
            return values
        }
        let head = Observable(0)
        var chain: [Computed<Int>] = []
        for i in 0..<40 {
            let previous = chain.last
            chain.append(Computed {
                let base = previous?.value ?? head.value
                switch i {
                case 20: return min(base + 1, 30)
                case 33: return head.value % 2 == 0 ? base + 1 : head.value
                case _ where i % 5 == 0 && i > 0: return base + head.value
                default: return base + 1
                }
            })
        }
        let (last, odd) = (chain[39], chain[33])
        var inconsistent: [Int] = []
        let top = Computed { () -> Int in
            let (h, a, b) = (head.value, last.value, odd.value)
            let expected = model(h)
            if a != expected[39] || b != expected[33] { inconsistent.append(h) }
            return a + b
        }
        var heard: [Int] = []
        let subscription = top.subscribe { _, new in heard.append(new) }
        let heads = [1, 2, 3, 4, 40, 41, 42, 43]
        var evaluationsAfterTheCap: [Int] = []
        for h in heads {
            head.value = h
            evaluationsAfterTheCap.append(chain[21].evaluationCount)
        }
        #expect(heard == heads.map { model($0)[39] + model($0)[33] })
        #expect(inconsistent.isEmpty, "top saw \(inconsistent)")
        #expect(chain.map(\.value) == model(43))
        // Node 20 reaches 30 at the head 3 and stays: node 21 (which reads
        // only it) evaluated at each write until then, and not after.
        #expect(model(2)[20] == 26 && model(3)[20] == 30)
        #expect(evaluationsAfterTheCap == [2, 3, 4, 4, 4, 4, 4, 4])
        withExtendedLifetime(subscription) {}
    }

    /// A chain far deeper than a small stack could recurse through: 20,000
    /// computeds brought up to date, then released at once, on a thread with
    /// a 256 KiB stack; each captures and reads the one before. (By
    /// recursion alone, a refresh took a frame of 64 bytes a level, 1.3 MB
    /// here; released at once, the chain went through 20,000 nested
    /// deinitializers, each computed's releasing the one it read: both a
    /// crash, signal 11.)
    @Test func aChainOfTwentyThousandIsBroughtUpToDateAndReleasedOnASmallStack() {
        final class Outcome: @unchecked Sendable {
            var values: [Int] = []
            var firstGone = false
        }
        let outcome = Outcome()
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            let head = Observable(0)
            var chain = [Computed { head.value }]
            chain.reserveCapacity(20_000)
            for _ in 1..<20_000 {
                let previous = chain[chain.count - 1]
                chain.append(Computed { previous.value &+ 1 })
            }
            var heard: [Int] = []
            let subscription = chain[chain.count - 1].subscribe { _, new in heard.append(new) }
            head.value = 1
            head.value = 2
            let last = chain[chain.count - 1].value
            subscription.dispose()
            weak let first = chain[0]
            chain = []  // released at once, from its last computed
            outcome.firstGone = first == nil
            outcome.values = heard + [last]
            done.signal()
        }
        thread.stackSize = 256 * 1024
        thread.start()
        #expect(done.wait(timeout: .now() + 60) == .success)
        #expect(outcome.values == [20_000, 20_001, 20_001])
        #expect(outcome.firstGone)
    }

    /// A write that marks a deep graph whose computeds each have two
    /// dependents, on a thread with a 256 KiB stack: a chain of 5,000, each
    /// link also read by a computed of its own, subscribed at the end.
    /// (Marking walked each link's dependents by recursion, two frames a
    /// link: 1,000 links overflowed a 512 KiB stack in the debug build,
    /// signal 11.) Every computed of the graph is marked: the chain's end
    /// is heard and each side computed reads the new value.
    @Test func aDeepGraphOfNodesWithTwoDependentsIsMarkedOnASmallStack() {
        final class Outcome: @unchecked Sendable {
            var heard: [Int] = []
            var sides: [Int] = []
        }
        let outcome = Outcome()
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            let head = Observable(0)
            var chain = [Computed { head.value }]
            var sides: [Computed<Int>] = []
            for _ in 1..<5_000 {
                let previous = chain[chain.count - 1]
                chain.append(Computed { previous.value &+ 1 })
                sides.append(Computed { previous.value &* 2 })
            }
            for side in sides { _ = side.value }  // each read once: a dependent of its link
            var heard: [Int] = []
            let subscription = chain[chain.count - 1].subscribe { _, new in heard.append(new) }
            head.value = 1
            head.value = 2
            outcome.heard = heard
            outcome.sides = [sides[0].value, sides[2_500].value, sides[sides.count - 1].value]
            subscription.dispose()
            done.signal()
        }
        thread.stackSize = 256 * 1024
        thread.start()
        #expect(done.wait(timeout: .now() + 60) == .success)
        #expect(outcome.heard == [5_000, 5_001])
        #expect(outcome.sides == [4, 2 * 2_502, 2 * 5_000])
    }

    /// Writes 7 to the first of `length` observables whose subscribers each
    /// write the next, on a thread with a stack of `stackSize` bytes: how
    /// many of them got it, counted from the first (nil if the thread did
    /// not end within a minute).
    private func writeThroughAChainOfSubscribers(length: Int, stackSize: Int) -> Int? {
        final class Outcome: @unchecked Sendable { var reached = 0 }
        let outcome = Outcome()
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            let chain = (0..<length).map { _ in Observable(0) }
            let subscriptions = (0..<length - 1).map { i in
                let next = chain[i + 1]
                return chain[i].subscribe { _, new in next.value = new }
            }
            chain[0].value = 7
            outcome.reached = chain.firstIndex { $0.value != 7 } ?? length
            withExtendedLifetime(subscriptions) {}
            done.signal()
        }
        thread.stackSize = stackSize
        thread.start()
        return done.wait(timeout: .now() + 60) == .success ? outcome.reached : nil
    }

    /// Subscribers that each write the next observable of a chain: a write
    /// reaches the 300th. (Each subscriber runs inside the previous one's
    /// delivery, a hook point's frame each: the thread's frames were 64, and
    /// the write stopped at the 65th observable with no word of it.)
    @Test func aChainOfSubscribersWritingTheNextReaches300Observables() {
        #expect(writeThroughAChainOfSubscribers(length: 300, stackSize: 32 << 20) == 300)
    }

    /// A chain of such subscribers longer than the thread's stack could hold
    /// (3,000 on a 1 MiB stack, about 2 KiB a level in a debug build): the
    /// write goes on while the stack is not near its end, then the calls run
    /// their originals only; no overflow. (Frames past 64 were refused: the
    /// write stopped at the 65th.)
    @Test func aChainLongerThanTheStackHoldsStopsShortOfItsEnd() throws {
        let reached = try #require(writeThroughAChainOfSubscribers(length: 3_000, stackSize: 1 << 20))
        #expect(reached > 100)
        #expect(reached < 3_000)
    }

    @Test func aSubscriberThatAlwaysWritesIsStoppedNotLooping() {
        let a = Observable(0)
        let b = Computed { a.value + 1 }
        let looping = b.subscribe { _, new in a.value = new }  // each change of b changes a again
        a.value = 1
        #expect(a.value >= 1000)  // rounds were cut, the call returned
        looping.dispose()
        var heard: [Int] = []
        b.subscribe { _, new in heard.append(new) }
        a.value = 5
        #expect(heard == [6])  // what was cut is not stuck: later changes publish
    }

    /// A subscriber's write, at a batch's end, of an observable the batch
    /// also wrote whose call has not run yet: one call, from its value
    /// before the batch to the last written (not one from a value of the
    /// batch nobody heard, then the batch's from the value before it).
    @Test func aWriteAtTheBatchsEndJoinsIt() {
        let a = Observable(0), b = Observable(0)
        var heard: [String] = []
        b.subscribe { old, new in heard.append("\(old ?? -1)->\(new)") }
        a.subscribe { _, new in b.value = new * 10 }
        batch {
            a.value = 1
            b.value = 2
        }
        #expect(b.value == 10)
        #expect(heard == ["0->10"])
        // Once its call ran, a write is a call of its own.
        heard.removeAll()
        batch {
            b.value = 3
            a.value = 2
        }
        #expect(b.value == 20)
        #expect(heard == ["10->3", "3->20"])
    }

    /// A subscriber there before the rounds were cut keeps hearing later
    /// changes (the computed cut was left dirty and off the queue, and a
    /// write does not queue a computed already dirty).
    @Test func aSubscriberFromBeforeTheRoundsWereCutHearsLaterChanges() {
        let a = Observable(0)
        let b = Computed { a.value + 1 }
        var heard: [Int] = []
        b.subscribe { _, new in heard.append(new) }
        let looping = b.subscribe { _, new in a.value = new }
        a.value = 1
        looping.dispose()
        heard.removeAll()
        a.value = 5
        #expect(heard == [6])
    }

    /// A graph released at once from inside another computed's release
    /// (the graph held only by what that computed's closure captured):
    /// every computed goes (the thread's release list is emptied whichever
    /// release begins it).
    @Test func aGraphReleasedAtOnceLetsGoOfEveryComputed() {
        final class Holder { var computeds: [Computed<Int>] = [] }
        final class Box {
            weak var object: Computed<Int>?
            init(_ object: Computed<Int>) { self.object = object }
        }
        let a = Observable(1)
        var outer: Computed<Int>?
        var subscription: Subscription?
        var boxes: [Box] = []
        do {
            var graph: [Computed<Int>] = [Computed { a.value }]
            for i in 1..<300 {
                let previous = graph[i - 1], half = graph[i / 2]
                graph.append(Computed { previous.value &+ half.value })
            }
            boxes = graph.map(Box.init)
            let holder = Holder()
            holder.computeds = graph
            let top = graph[graph.count - 1]
            var once = true
            // Reads the graph's top once, then only `a`; keeps the holder.
            outer = Computed {
                _ = holder
                if once {
                    once = false
                    return top.value
                }
                return a.value
            }
            subscription = outer!.subscribe { _, _ in }
        }
        a.value = 2
        #expect(outer!.dependencyCount == 1)
        #expect(boxes.allSatisfy { $0.object != nil })  // kept by the holder
        subscription?.dispose()
        subscription = nil
        outer = nil  // its closure lets go of the holder, and so of the graph
        #expect(boxes.allSatisfy { $0.object == nil })
        a.value = 3  // nobody left to hear it
    }

    @Test func aComputedReleasedWhileQueuedIsSkipped() {
        let a = Observable(0)
        var y: Computed<Int>? = Computed { a.value + 1 }
        var yHeard = 0
        y!.subscribe { _, _ in yHeard += 1 }
        let b = Computed { a.value * 2 }
        let x = Computed { b.value + 1 }  // deeper than y: published after it
        var xHeard: [Int] = []
        var once = true
        x.subscribe { _, new in
            xHeard.append(new)
            if once {
                once = false
                a.value = 10  // queues y and x again
                y = nil  // y goes while queued
            }
        }
        a.value = 1
        #expect(yHeard == 1)
        #expect(xHeard == [3, 21])
    }

    /// A publishing round of several computeds: in order of height, each
    /// once, and those of another group (queued by a subscriber that writes
    /// there) under that group's lock, taken by the round.
    @Test func aRoundPublishesEveryQueuedComputedOnceInOrderOfHeight() {
        let a = Observable(0), b = Observable(0)
        let low = (0..<3).map { i in Computed { a.value &+ i } }
        let high = Computed { low.reduce(0) { $0 &+ $1.value } }
        let other = (0..<3).map { i in Computed { b.value &* (i + 1) } }
        var heard: [String] = []
        var subscriptions = low.enumerated().map { i, computed in
            computed.subscribe { _, new in heard.append("low\(i)=\(new)") }
        }
        // Subscribed before the lows: heard after them all the same (higher).
        subscriptions.insert(high.subscribe { _, new in
            heard.append("high=\(new) of \(low.map(\.value))")
            b.value = new   // another group: its computeds are queued from here
        }, at: 0)
        subscriptions += other.enumerated().map { i, computed in
            computed.subscribe { _, new in heard.append("other\(i)=\(new)") }
        }
        a.value = 10
        #expect(heard == ["low0=10", "low1=11", "low2=12", "high=33 of [10, 11, 12]",
                          "other0=33", "other1=66", "other2=99"])
        #expect(high.evaluationCount == 2)
        #expect(other.map(\.evaluationCount) == [2, 2, 2])
        withExtendedLifetime(subscriptions) {}
    }

    // MARK: Events

    @Test func eventSubscribersRunInOrderAndFiringInsideDoesNotRecurse() {
        let event = Event<Int>()
        var heard: [String] = []
        event.subscribe(SubscriptionOptions(when: .beforeChange)) { _, v in heard.append("before \(v)") }
        event.subscribe { [unowned event] _, v in
            heard.append("first \(v)")
            event.fire(v + 1)  // delivers nothing: no recursion
        }
        event.subscribe { _, v in heard.append("second \(v)") }
        event.fire(1)
        #expect(heard == ["before 1", "first 1", "second 1"])
        #expect(event.subscriberCount == 3)
    }

    @Test func subscribableIsOneInterface() {
        func collect<S: Subscribable>(_ source: S) -> Shared<[String]> where S.Value == Int {
            let heard = Shared<[String]>([])
            source.subscribe { _, new in heard.mutate { $0.append("\(new)") } }
            return heard
        }
        let observable = Observable(0)
        let computed = Computed { observable.value + 100 }
        let event = Event<Int>()
        let (o, c, e) = (collect(observable), collect(computed), collect(event))
        observable.value = 1
        event.fire(7)
        #expect(o.value == ["1"] && c.value == ["101"] && e.value == ["7"])
    }

    // MARK: Lifetimes

    @Test func aComputedNobodyKeepsIsReleasedAndItsSourcesForgetIt() {
        let a = Observable(1)
        weak var weakComputed: Computed<Int>?
        do {
            let doubled = Computed { a.value * 2 }
            doubled.subscribe { _, _ in }
            weakComputed = doubled
            a.value = 2
        }
        #expect(weakComputed == nil)
        a.value = 3  // nothing to mark: no crash, nothing runs
        #expect(a.value == 3)
    }

    /// A computed's group lock lives on in the observables whose groups were
    /// merged into its own, after the computed is gone; nothing it captured
    /// or read lives on with it, and the observables keep working.
    @Test func aGoneComputedLeavesItsLockAndNothingItCaptured() {
        final class Captured {}
        let a = Observable(1)
        weak var weakCaptured: Captured?
        weak var weakComputed: Computed<Int>?
        weak var weakSecond: Observable<Int>?
        do {
            let captured = Captured(), second = Observable(10)
            weakCaptured = captured
            weakSecond = second
            let sum = Computed { withExtendedLifetime(captured) { a.value + second.value } }
            weakComputed = sum
            sum.subscribe { _, _ in }
            a.value = 2
            #expect(sum.value == 12)
        }
        #expect(weakComputed == nil)
        #expect(weakCaptured == nil)
        #expect(weakSecond == nil)
        // `a` still locks the group it was merged into, and is read anew.
        let tripled = Computed { a.value * 3 }
        var heard: [Int] = []
        let subscription = tripled.subscribe { _, new in heard.append(new) }
        a.value = 5
        #expect(heard == [15])
        #expect(tripled.evaluationCount == 2)
        subscription.dispose()
    }

    @Test func subscriptionsDoNotKeepTheirObservableAlive() {
        weak var weakObservable: Observable<Int>?
        var subscription: Subscription?
        do {
            let observable = Observable(1)
            subscription = observable.subscribe { _, _ in }
            weakObservable = observable
        }
        #expect(weakObservable == nil)
        subscription?.dispose()
    }
}

/// Plain objects standing in for Fisticuffs' UIKit controls.
final class TextField: HookOwner {
    let hookBag = HookBag()
    @Hooked var text = ""
    var plain = ""
}

final class Button {
    var isEnabled = true
    var title = ""
}

@Suite("Binding observables to properties (Fisticuffs' b_text.bind)")
struct ObservablePropertyBindingTests {
    @Test func theSeedsLoginScreen() throws {
        let form = LoginForm()
        let usernameField = TextField(), passwordField = TextField(), loginButton = Button()
        try form.username.bind(usernameField, \.text)
        try form.password.bind(passwordField, \.text)
        form.inputIsValid.bind(loginButton, \.isEnabled)
        #expect(loginButton.isEnabled == false)
        usernameField.text = "ada"  // typing reaches the model
        #expect(form.username.value == "ada")
        passwordField.text = "secret"
        #expect(loginButton.isEnabled == true)
        form.username.value = ""  // the model reaches the field
        #expect(usernameField.text == "")
        #expect(loginButton.isEnabled == false)
    }

    @Test func aBindingSetsThePropertyAtOnceAndEchoesNothing() throws {
        let name = Observable("Ada")
        let field = TextField()
        var writes = 0
        field.$text.after { _ in writes += 1 }
        try name.bind(field, \.text)
        #expect(field.text == "Ada")
        #expect(writes == 1)
        var heard = 0
        name.subscribe { _, _ in heard += 1 }
        field.text = "Grace"
        #expect(name.value == "Grace" && writes == 2 && heard == 1)
        name.value = "Hopper"
        #expect(field.text == "Hopper" && writes == 3 && heard == 2)
    }

    @Test func aPropertyWrittenInABatchIsNotEchoedBackToIt() throws {
        // The observable's call is made when the batch ends: the binding that
        // wrote it there delivered it already, and the property is set once.
        let name = Observable("Ada")
        let field = TextField(), other = TextField()
        try name.bind(field, \.text)
        try name.bind(other, \.text)
        var writes: [String] = []
        field.$text.after { [unowned field] _ in writes.append(field.text) }
        var heard: [String] = []
        name.subscribe { _, new in heard.append(new) }
        batch { field.text = "Grace" }
        #expect(name.value == "Grace" && other.text == "Grace")
        #expect(writes == ["Grace"])
        #expect(heard == ["Grace"])
        // A later write of the observable in the batch reaches the property.
        batch {
            field.text = "Hopper"
            name.value = "Lovelace"
        }
        #expect(field.text == "Lovelace" && other.text == "Lovelace")
        #expect(writes == ["Grace", "Hopper", "Lovelace"])
        // And one the property makes after the observable's own: not echoed.
        batch {
            name.value = "Turing"
            field.text = "Noether"
        }
        #expect(field.text == "Noether" && other.text == "Noether" && name.value == "Noether")
        #expect(writes == ["Grace", "Hopper", "Lovelace", "Noether"])
    }

    /// Six observables each bound to the same six properties: a write
    /// reaches all twelve, each binding delivering it once (36 sets of the
    /// properties at most, 196,956 when each write went along every path
    /// of bindings), and everything connected holds it.
    @Test func observablesAndPropertiesBoundInAMeshGetAWriteOncePerBinding() throws {
        let observables = (0..<6).map { Observable("start \($0)") }
        let fields = (0..<6).map { _ in TextField() }
        var subscriptions: [Subscription] = []
        for observable in observables {
            for field in fields { subscriptions.append(try observable.bind(field, \.text)) }
        }
        var sets = 0, heard = 0
        for field in fields { field.$text.didSet { _, _ in sets += 1 } }
        for observable in observables { observable.subscribe { _, _ in heard += 1 } }
        observables[2].value = "mesh"
        #expect(fields.allSatisfy { $0.text == "mesh" } && observables.allSatisfy { $0.value == "mesh" })
        #expect(sets <= 36 && heard <= 36)
        fields[4].text = "again"
        #expect(fields.allSatisfy { $0.text == "again" } && observables.allSatisfy { $0.value == "again" })
        #expect(sets <= 72 && heard <= 72)
        withExtendedLifetime(subscriptions) {}
    }

    @Test func bindingHandlersConvertValues() {
        // (See aComputedBoundToAPlainObjectLetsGoOfItWhenItGoes.)
        let salary = Observable(120_000)
        let formatted = Computed { salary.value }
        let label = Button()
        formatted.bind(label, \.title) { "\($0 / 1000)k" }
        #expect(label.title == "120k")
        salary.value = 95_000
        #expect(label.title == "95k")
    }

    /// A computed bound to an object that is not a `HookOwner` lets go of
    /// it when it goes: the subscriber is detached at the next change (it
    /// stayed for the computed's life, keeping it subscribed: evaluated on
    /// every change, for nobody).
    @Test func aComputedBoundToAPlainObjectLetsGoOfItWhenItGoes() {
        let salary = Observable(1)
        let formatted = Computed { salary.value * 2 }
        do {
            let label = Button()
            formatted.bind(label, \.title) { "\($0)" }
            #expect(label.title == "2")
            salary.value = 2
            #expect(label.title == "4")
            #expect(formatted.hookPoint.hookCount == 1)
        }
        salary.value = 3
        #expect(formatted.hookPoint.hookCount == 0)
        let evaluations = formatted.evaluationCount
        salary.value = 4
        salary.value = 5
        #expect(formatted.evaluationCount == evaluations)
        #expect(formatted.value == 10)
    }

    @Test func aPlainPropertyCannotBeBoundBothWays() {
        let name = Observable("")
        let field = TextField()
        #expect {
            try name.bind(field, \.plain)
        } throws: { error in
            let error = error as! BindError
            return error.kind == .notHookable && error.message.contains("TextField")
        }
    }

    @Test func bindingsEndWithTheirObject() throws {
        let name = Observable("a")
        weak var weakField: TextField?
        do {
            let field = TextField()
            try name.bind(field, \.text)
            weakField = field
        }
        #expect(weakField == nil)
        #expect(name.subscriberCount == 0)  // removed at once: the field is a HookOwner
        name.value = "b"
    }
}
