import HookBind
import HookMacros
import Testing

@Suite("Changes as AsyncSequence")
struct AsyncSequenceTests {
    @Test func methodCallsArriveInOrderAndEndWithTheObject() async throws {
        var account: Account? = Account(owner: "Ada")
        let calls = account!.$deposit.calls()
        let reader = Task {
            var seen: [String] = []
            for await call in calls { seen.append(call.description) }
            return seen                      // reached only when the sequence ends
        }
        for amount in 1...3 { _ = account!.deposit(amount) }
        account = nil                        // the hook point goes with its object: the loop ends
        #expect(await reader.value == ["deposit(1) -> 1", "deposit(2) -> 3", "deposit(3) -> 6"])
    }

    @Test func recordsCarryArgumentsResultsAndErrors() async throws {
        let account = Account(owner: "Ada")
        var iterator = account.$withdraw.calls().makeAsyncIterator()
        _ = try? account.withdraw(5)
        _ = account.deposit(10)
        _ = try account.withdraw(4)
        let failed = try #require(await iterator.next())
        #expect(failed.error as? Refusal == .insufficient)
        #expect(failed.result == nil)
        let ok = try #require(await iterator.next())
        #expect(ok.arguments as? [Int] == [4])
        #expect(ok.result as? Int == 6)
        #expect(ok.selector == "withdraw")
    }

    @Test func bufferingPolicyBoundsWhatWaits() async throws {
        let account = Account(owner: "Ada")
        let newest = account.$scale_Int.calls(bufferingPolicy: .bufferingNewest(2))
        let oldest = account.$scale_Int.calls(bufferingPolicy: .bufferingOldest(2))
        for i in 1...5 { _ = account.scale(i) }
        var a = newest.makeAsyncIterator(), b = oldest.makeAsyncIterator()
        #expect(await a.next()?.arguments as? [Int] == [4])
        #expect(await a.next()?.arguments as? [Int] == [5])
        #expect(await b.next()?.arguments as? [Int] == [1])
        #expect(await b.next()?.arguments as? [Int] == [2])
        _ = account.scale(6)
        #expect(await a.next()?.arguments as? [Int] == [6])
        #expect(await b.next()?.arguments as? [Int] == [6])
    }

    @Test func aConsumerThatStopsDetachesItsHook() async throws {
        let account = Account(owner: "Ada")
        do {
            var iterator = account.$deposit.calls().makeAsyncIterator()
            _ = account.deposit(1)
            #expect(await iterator.next()?.result as? Int == 1)
        }
        // The stream is gone: it ended, and removed its hook (no call needed:
        // it stayed until the next call or change of the point).
        #expect(account.$deposit.hookCount == 0)
        _ = account.deposit(1)
        #expect(account.$deposit.hookCount == 0)
        // An async point's stream too.
        let point = AsyncClosureHook(name: "twice") { (x: Int) async throws -> Int in x * 2 }
        do {
            var iterator = point.calls().makeAsyncIterator()
            #expect(point.hookCount == 1)
            _ = try await point(1)
            #expect(await iterator.next()?.result as? Int == 2)
        }
        #expect(point.hookCount == 0)
    }

    @Test func asyncPointCalls() async throws {
        let point = AsyncClosureHook(name: "twice") { (x: Int) async throws -> Int in x * 2 }
        var iterator = point.calls().makeAsyncIterator()
        _ = try await point(2)
        let record = try #require(await iterator.next())
        #expect(record.description == "twice(2) -> 4")
    }

    /// A vetoed write, or one an `instead` hook took over without storing,
    /// is no value set: the sequence skips it.
    @Test func aWriteThatStoresNothingIsNotAValue() async throws {
        let number = Observable(0)
        var iterator = number.values.makeAsyncIterator()
        var token = number.hookPoint.instead { _ in }
        number.value = 1
        token.remove()
        token = number.hookPoint.before { call in try call.veto() }
        number.value = 2
        token.remove()
        number.value = 3
        #expect(number.value == 3)
        #expect(await iterator.next() == 3)
    }

    @Test func observableAndSignalValues() async throws {
        var name: Observable<String>? = Observable("a")
        let names = name!.values
        let reader = Task { var all: [String] = []; for await n in names { all.append(n) }; return all }
        name!.value = "b"
        name!.value = "c"
        name = nil
        #expect(await reader.value == ["b", "c"])

        var signal: Signal<Int>? = Signal()
        let latest = signal!.values(bufferingPolicy: .bufferingNewest(1))
        for i in 1...3 { signal!.emit(i) }
        signal = nil
        var got: [Int] = []
        for await v in latest { got.append(v) }
        #expect(got == [3])
    }
}
