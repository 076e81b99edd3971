import Foundation
import Hook
import HookBind
import Testing

final class Listener {}
final class OwningListener: HookOwner { let hookBag = HookBag() }
final class Canary {}

/// XKVO's ViewController, with its `testCount` property.
final class CountingController {
    @Hooked var testCount = 0
}

@Suite("Signal (XKVO)")
struct SignalTests {
    /// A subscription or monitor that is kept lets go of its block once
    /// disposed or closed: a model holding its own subscription, whose
    /// block captures the model, is freed. (They held the hook, which is
    /// the block, for as long as they lived: the model was never freed.)
    @Test func aKeptSubscriptionOrMonitorLetsGoOfItsBlockOnceEnded() {
        final class Model {
            let name = Observable("")
            let signal = Signal<Int>()
            var subscription: Subscription?
            var monitor: SignalMonitor?
        }
        weak var weakModel: Model?
        do {
            let model = Model()
            weakModel = model
            model.subscription = model.name.subscribe { [model] _, _ in _ = model }
            model.monitor = model.signal.subscribe { [model] _ in _ = model }
            model.name.value = "a"
            #expect(model.subscription?.isDisposed == false)
            #expect(model.signal.subscriberCount == 1)
            model.subscription?.dispose()
            model.monitor?.close()
            #expect(model.subscription?.isDisposed == true)
        }
        // (A batch that another test's hook change runs may hold the removed
        // hooks a moment after this reclaim returns: looked at again.)
        let deadline = Date().addingTimeInterval(10)
        while weakModel != nil, Date() < deadline {
            HookPoint.reclaimRetiredHooks()
            if weakModel != nil { usleep(1_000) }
        }
        #expect(weakModel == nil)
    }

    /// With `initial`, the hook is on before the current value is read: a
    /// set made by the initial block itself (or by another thread
    /// meanwhile) is heard. (The value was read and delivered first, and
    /// such a set was lost.)
    @Test func aSetMadeDuringTheInitialNotificationIsObserved() throws {
        let holder = Holder()
        var heard: [String] = []
        let monitor = try KVO.observe(holder, \.value, initial: true) { change in
            heard.append(change.isInitial ? "initial \(change.newValue)" : "\(change.oldValue)->\(change.newValue)")
            if change.isInitial { holder.value = 5 }
        }
        defer { monitor.close() }
        #expect(heard == ["initial 0", "0->5"])
        holder.value = 6
        #expect(heard == ["initial 0", "0->5", "5->6"])
    }

    @Test func aSubscriberCountCountsTheHooksOnItsPoint() {
        let event = Event<Int>()
        let subscription = event.subscribe { _, _ in }
        let other = event.hookPoint.before { _ in }
        #expect(event.subscriberCount == 2, "the doc says it counts every hook")
        other.remove()
        subscription.dispose()
        #expect(event.subscriberCount == 0)
    }

    /// A vetoed emit reaches no subscriber and no `values` stream (a
    /// closure's after hooks run for a vetoed call: every subscriber heard
    /// it, as `Event`'s did not).
    @Test func aVetoedEmitIsNotDelivered() async {
        let signal = Signal<Int>()
        let heard = Shared<[String]>([])
        let me = Listener()
        signal.subscribe { x in heard.mutate { $0.append("plain \(x)") } }
        signal.subscribe(observer: me) { _, x in heard.mutate { $0.append("observer \(x)") } }
        var values = signal.values.makeAsyncIterator()
        signal.hookPoint.before { call in if try call.argument(0, as: Int.self) < 0 { try call.veto() } }
        signal.emit(-1)
        signal.emit(2)
        #expect(heard.value == ["plain 2", "observer 2"])
        #expect(await values.next() == 2)
    }

    /// The seed's example: listeners 1, 2 and 3; 2 is closed before the emit.
    @Test func closedListenerHearsNothingOthersHearInOrder() {
        let loginSignal = Signal<String>()
        let heard = Shared<[String]>([])
        let me = Listener()
        loginSignal.subscribe(observer: me) { _, x in heard.mutate { $0.append("1 \(x)") } }
        let monitor = loginSignal.subscribe(observer: me) { _, x in heard.mutate { $0.append("2 \(x)") } }
        monitor.close()
        loginSignal.subscribe(observer: me) { _, x in heard.mutate { $0.append("3 \(x)") } }
        loginSignal.emit("小白菜")
        #expect(heard.value == ["1 小白菜", "3 小白菜"])
        #expect(monitor.isClosed)
    }

    @Test func subscribersHearInTheOrderTheySubscribed() {
        let signal = Signal<Int>()
        let heard = Shared<[Int]>([])
        for i in 0..<20 { signal.subscribe { value in heard.mutate { $0.append(i * 1000 + value) } } }
        signal.emit(7)
        #expect(heard.value == (0..<20).map { $0 * 1000 + 7 })
    }

    @Test func closingDuringAnEmitStopsAtOnce() {
        let signal = Signal<Int>()
        let heard = Shared<[String]>([])
        var second: SignalMonitor?
        signal.subscribe { _ in heard.mutate { $0.append("first") }; second?.close() }
        second = signal.subscribe { _ in heard.mutate { $0.append("second") } }
        signal.subscribe { _ in heard.mutate { $0.append("third") } }
        signal.emit(1)
        signal.emit(2)
        #expect(heard.value == ["first", "third", "first", "third"])
    }

    @Test func subscribingDuringAnEmitHearsTheNextOne() {
        let signal = Signal<Int>()
        let heard = Shared<[String]>([])
        var added = false
        signal.subscribe { [unowned signal] value in
            heard.mutate { $0.append("first \(value)") }
            if !added {
                added = true
                signal.subscribe { value in heard.mutate { $0.append("late \(value)") } }
            }
        }
        signal.emit(1)
        signal.emit(2)
        #expect(heard.value == ["first 1", "first 2", "late 2"])
    }

    @Test func emittingFromASubscriberDoesNotRecurse() {
        let signal = Signal<Int>()
        let heard = Shared<[Int]>([])
        signal.subscribe { [unowned signal] value in
            heard.mutate { $0.append(value) }
            signal.emit(value + 1)
        }
        signal.emit(1)
        #expect(heard.value == [1])
    }

    @Test func aDeadObserverIsNeverCalledAndItsBlockIsReleased() {
        let signal = Signal<Int>()
        let calls = Shared(0)
        weak var weakCanary: Canary?
        var observer: Listener? = Listener()
        do {
            let canary = Canary()
            weakCanary = canary
            signal.subscribe(observer: observer!) { _, _ in withExtendedLifetime(canary) { calls.mutate { $0 += 1 } } }
        }
        signal.emit(1)
        #expect(calls.value == 1)
        observer = nil
        signal.emit(2)                 // not called; detached
        #expect(calls.value == 1)
        signal.subscribe { _ in }      // the next change of subscribers frees it
        #expect(releasedSoon { weakCanary == nil })
    }

    @Test func aHookOwnerObserverReleasesItsBlockTheMomentItDies() {
        let signal = Signal<Int>()
        weak var weakCanary: Canary?
        var observer: OwningListener? = OwningListener()
        do {
            let canary = Canary()
            weakCanary = canary
            signal.subscribe(observer: observer!) { _, _ in withExtendedLifetime(canary) {} }
        }
        #expect(weakCanary != nil)
        observer = nil
        #expect(releasedSoon { weakCanary == nil })     // no emit needed
        #expect(signal.subscriberCount == 0)
    }

    @Test func neitherSignalNorMonitorLeaks() {
        weak var weakPoint: ClosureHook<Int, Void>?
        weak var weakMonitor: SignalMonitor?
        do {
            let signal = Signal<Int>()
            weakPoint = signal.hookPoint
            let monitor = signal.subscribe { _ in }
            weakMonitor = monitor
            signal.emit(1)
        }
        #expect(weakPoint == nil && weakMonitor == nil)
    }

    @Test func subscribersComeAndGoWhileThreadsEmit() {
        let signal = Signal<Int>()
        let total = Shared(0)
        signal.subscribe { value in total.mutate { $0 += value } }
        onThreads(6) { thread in
            if thread >= 4 {
                for _ in 0..<300 {
                    let monitor = signal.subscribe { _ in }
                    monitor.close()
                }
            } else {
                for _ in 0..<2_000 { signal.emit(1) }
            }
        }
        #expect(total.value == 8_000)
        #expect(signal.subscriberCount == 1)
    }
}

@Suite("Property observation (XKVO)")
struct PropertyObservationTests {
    /// The seed: `testCount++` reports `0 ==> 1`; with initialNotify, `0 ==> 0` first, marked initial.
    @Test func oldAndNewValuesWithAnInitialNotification() throws {
        let controller = CountingController()
        let lines = Shared<[String]>([])
        try KVO.observe(controller, \.testCount, observer: controller) { change in
            lines.mutate { $0.append("\(change.oldValue) ==> \(change.newValue)") }
        }
        try KVO.observe(controller, \.testCount, observer: controller, initial: true) { change in
            lines.mutate { $0.append("\(change.isInitial ? "initial " : "")\(change.oldValue) ==> \(change.newValue)") }
        }
        controller.testCount += 1
        #expect(lines.value == ["initial 0 ==> 0", "0 ==> 1", "0 ==> 1"])
    }

    @Test func everySetCountsAndVetoedSetsDoNot() throws {
        let controller = CountingController()
        controller.$testCount.before { call in if try call.argument(0, as: Int.self) < 0 { try call.veto() } }
        let lines = Shared<[String]>([])
        let monitor = try KVO.observe(controller, \.testCount) { change in
            lines.mutate { $0.append("\(change.oldValue) ==> \(change.newValue)") }
        }
        controller.testCount = 0
        controller.testCount = -5
        controller.testCount = 2
        monitor.close()
        controller.testCount = 3
        #expect(lines.value == ["0 ==> 0", "0 ==> 2"])
    }

    /// A set an `instead` hook took over without running the original
    /// stored nothing: no change, as a vetoed one.
    @Test func aSetThatStoresNothingIsNoChange() throws {
        let controller = CountingController()
        let lines = Shared<[String]>([])
        let monitor = try KVO.observe(controller, \.testCount) { change in
            lines.mutate { $0.append("\(change.oldValue) ==> \(change.newValue)") }
        }
        let token = controller.$testCount.instead { _ in }
        controller.testCount = 7
        token.remove()
        controller.testCount = 2
        #expect(lines.value == ["0 ==> 2"])
        monitor.close()
    }

    @Test func aPlainPropertyIsRefused() throws {
        let holder = Holder()
        #expect(throws: BindError.self) { try KVO.observe(holder, \.plain) { _ in } }
    }
}

/// Random subscriptions, closes, observers that go, and emits, some of them
/// made by subscribers while a value is emitted, against a model of what
/// `Signal`'s documentation promises: an emit calls the subscribers there
/// when it began, in the order they subscribed, except one closed before its
/// turn (by an earlier subscriber of this emit, too) and one whose observer
/// is gone; a subscriber added during an emit hears the next; an emit from a
/// subscriber delivers nothing. Seeded; a failure names its seed and step.
@Suite("Random signals against a model")
struct SignalModelTests {
    private final class Observer {}

    private final class Run {
        var random: SeededGenerator
        let seed: UInt64
        let signal = Signal<Int>()
        /// The model: subscribers in the order they subscribed.
        var subscribers: [(id: Int, monitor: SignalMonitor, observer: Observer?, hasObserver: Bool, closed: Bool)] = []
        var heard: [Int] = []
        var failures: [String] = []
        var step = 0
        var nextID = 0
        var emitting = false
        /// During an emit: how many had heard it when each was closed or
        /// its observer went.
        var stoppedAt: [Int: Int] = [:]

        init(seed: UInt64) {
            self.seed = seed
            random = SeededGenerator(state: seed)
        }

        func fail(_ message: String) { failures.append("seed \(seed), step \(step): \(message)") }

        func subscribe() {
            let id = nextID
            nextID += 1
            let withObserver = Bool.random(using: &random)
            let observer = withObserver ? Observer() : nil
            let monitor: SignalMonitor
            if let observer {
                monitor = signal.subscribe(observer: observer) { [unowned self] _, value in self.called(id, value) }
            } else {
                monitor = signal.subscribe { [unowned self] value in self.called(id, value) }
            }
            subscribers.append((id, monitor, observer, withObserver, false))
        }

        /// What a subscriber does when called: now and then closes another,
        /// subscribes, lets an observer go, or emits again.
        func called(_ id: Int, _ value: Int) {
            heard.append(id)
            guard Int.random(in: 0..<4, using: &random) == 0 else { return }
            act()
        }

        func act() {
            switch Int.random(in: 0..<4, using: &random) {
            case 0: closeOne()
            case 1: subscribe()
            case 2: dropObserver()
            default:
                // From inside a subscriber: delivers nothing.
                let before = heard.count
                signal.emit(-1)
                if heard.count != before { fail("an emit from a subscriber delivered to \(heard[before...])") }
            }
        }

        func closeOne() {
            guard let i = subscribers.indices.filter({ !subscribers[$0].closed }).randomElement(using: &random) else { return }
            subscribers[i].monitor.close()
            subscribers[i].closed = true
            if emitting, stoppedAt[subscribers[i].id] == nil { stoppedAt[subscribers[i].id] = heard.count }
        }

        func dropObserver() {
            guard let i = subscribers.indices.filter({ subscribers[$0].observer != nil }).randomElement(using: &random) else { return }
            subscribers[i].observer = nil
            if emitting, stoppedAt[subscribers[i].id] == nil { stoppedAt[subscribers[i].id] = heard.count }
        }

        /// An emit: those there when it began hear it, in the order they
        /// subscribed, but not one closed (or whose observer went) before its
        /// turn.
        func emit() {
            let there = subscribers.map(\.id)
            heard = []
            stoppedAt = [:]
            emitting = true
            signal.emit(step)
            emitting = false
            let order = there.filter { heard.contains($0) }
            if heard != order { fail("heard \(heard), not in the order subscribed, or not there when the emit began (\(there))") }
            for (position, id) in heard.enumerated() {
                if let stopped = stoppedAt[id], stopped <= position { fail("subscriber \(id) heard after it was closed or its observer went, in this emit") }
            }
            // Each there, open and alive, whose turn came before it was stopped, heard.
            for id in there where !heard.contains(id) {
                guard let s = subscribers.first(where: { $0.id == id }) else { continue }
                let openAndAlive = !s.closed && !(s.hasObserver && s.observer == nil)
                if openAndAlive { fail("subscriber \(id), open and alive, did not hear the emit") }
            }
        }

        func run(steps: Int) {
            while step < steps, failures.isEmpty {
                step += 1
                let closedBefore = Set(subscribers.filter(\.closed).map(\.id))
                let goneBefore = Set(subscribers.filter { $0.hasObserver && $0.observer == nil }.map(\.id))
                switch Int.random(in: 0..<10, using: &random) {
                case 0..<3: subscribe()
                case 3: closeOne()
                case 4: dropObserver()
                default:
                    emit()
                    for id in heard where closedBefore.contains(id) || goneBefore.contains(id) {
                        fail("subscriber \(id) heard, closed or gone before the emit")
                    }
                }
            }
        }
    }

    @Test(arguments: 0..<10)
    func randomSignalsDoWhatTheModelSays(batchOfSeeds: Int) {
        expectSeededRunsPass(batch: batchOfSeeds) { seed in
            let run = Run(seed: seed)
            run.run(steps: 150)
            return run.failures
        }
    }
}
