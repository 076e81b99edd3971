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
        #expect(weakCanary == nil)
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
        #expect(weakCanary == nil)     // no emit needed
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

    @Test func aPlainPropertyIsRefused() throws {
        let holder = Holder()
        #expect(throws: BindError.self) { try KVO.observe(holder, \.plain) { _ in } }
    }
}
