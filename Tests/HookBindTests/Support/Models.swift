import CHookTestSupport
import Foundation
import Hook
import Testing

// The FishBind seed's objects.

final class TestA {
    /// FishBind's TestA declares `name` with `setter=setUserName:, getter=userName`.
    @Hooked var name = ""
    var userName: String {
        get { name }
        set { name = newValue }
    }
}

final class TestB {
    @Hooked var bName = ""
}

final class TestD {
    private(set) var DK_Name = ""
    /// FishBind binds TestD by its setter selector, `setDK_Name:`.
    @HookableMethod(TestD.storeDKName) var setDK_Name
    private func storeDKName(_ name: String) { DK_Name = name }
}

/// The seed's view controller: its appearance methods log "1" and "3".
final class SeedViewController {
    var log: [String] = []
    @HookableMethod(SeedViewController.willAppear) var viewWillAppear
    @HookableMethod(SeedViewController.didAppear) var viewDidAppear
    private func willAppear(_ animated: Bool) { log.append("1") }
    private func didAppear(_ animated: Bool) { log.append("3") }
}

// Other models.

final class Holder {
    @Hooked var value = 0
    var plain = 0
}

final class Label {
    @Hooked var text = ""
}

final class Model {
    @Hooked var price = 0.0
}

final class Wallet {
    private(set) var balance = 0
    @HookableMethod(Wallet.depositBody) var deposit
    @HookableMethod(Wallet.moveBody) var move
    private func depositBody(_ amount: Int) -> Int { balance += amount; return balance }
    private func moveBody(_ from: Int, _ to: Int) {}
}

/// A value shared by closures that may run on several threads.
final class Shared<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value
    init(_ value: Value) { stored = value }
    var value: Value {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
    func mutate(_ body: (inout Value) -> Void) { lock.withLock { body(&stored) } }
}

/// Runs `body(i)` on `count` threads at once and waits for them.
func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    _ = onThreads(count, timeout: nil, body)
}

/// Runs `body(i)` on `count` threads at once and waits for them, at most
/// `timeout` seconds if given: false if they had not all finished by then.
func onThreads(_ count: Int, timeout: Double?, _ body: @escaping @Sendable (Int) -> Void) -> Bool {
    let group = DispatchGroup()
    for i in 0..<count {
        group.enter()
        let thread = Thread {
            body(i)
            group.leave()
        }
        thread.start()
    }
    guard let timeout else {
        group.wait()
        return true
    }
    return group.wait(timeout: .now() + timeout) == .success
}

/// The mallocs `body` makes on this thread; nil where a sanitizer owns malloc.
func mallocCount(_ body: () throws -> Void) rethrows -> UInt64? {
    guard hk_test_malloc_counting_available() else { return nil }
    let before = hk_test_malloc_count()
    try body()
    return hk_test_malloc_count() - before
}

/// The allocations `body` makes on this thread and does not free (mallocs
/// minus frees); nil where a sanitizer owns malloc.
func keptAllocations(_ body: () throws -> Void) rethrows -> Int? {
    guard hk_test_malloc_counting_available() else { return nil }
    let mallocs = hk_test_malloc_count(), frees = hk_test_free_count()
    try body()
    return Int(hk_test_malloc_count() - mallocs) - Int(hk_test_free_count() - frees)
}

/// SplitMix64: a small seeded generator, the same sequence on every machine
/// (the random graphs and bindings of the model tests).
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Ten seeded runs of a model test, seeds `first + batch * 10` on (`run`
/// makes one and returns what went wrong), up to the first that fails:
/// none may.
func expectSeededRunsPass(batch: Int, first: UInt64 = 0, sourceLocation: SourceLocation = #_sourceLocation,
                          _ run: (UInt64) -> [String]) {
    let start = first + UInt64(batch * 10)
    for seed in start..<start + 10 {
        let failures = run(seed)
        #expect(failures.isEmpty, "\(failures.prefix(3).joined(separator: "\n"))", sourceLocation: sourceLocation)
        if !failures.isEmpty { return }
    }
}

/// Whether `condition` holds within two seconds (polled each millisecond):
/// hooks removed or detached are released by whichever thread reclaims their
/// batch of retired snapshots, and a test running beside this one (any hook
/// change may reclaim) may have taken them and still be releasing them a
/// moment after this test's own change or reclaim returned. (As HookTests'.)
func releasedSoon(_ condition: () -> Bool) -> Bool {
    var waited = 0
    while !condition() && waited < 2_000 {
        usleep(1_000)
        waited += 1
    }
    return condition()
}
