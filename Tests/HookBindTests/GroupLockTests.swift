import Foundation
import Hook
@testable import HookBind
import Synchronization
import Testing

/// Runs `body` on a thread of its own; the returned group is left when it ends.
private func spawn(_ body: @escaping @Sendable () -> Void) -> DispatchGroup {
    let done = DispatchGroup()
    done.enter()
    let thread = Thread {
        body()
        done.leave()
    }
    thread.start()
    return done
}

/// Waits until `condition` holds (checked every millisecond), at most 10 s.
private func eventually(_ condition: () -> Bool) -> Bool {
    for _ in 0..<10_000 {
        if condition() { return true }
        usleep(1_000)
    }
    return condition()
}

/// The threads parked on `lock` now.
private func parked(on lock: _Group) -> Int {
    _Groups.arbiter.lock()
    defer { _Groups.arbiter.unlock() }
    return _Groups.arbiter.parkedCount(on: lock)
}

/// How many times `thread` was woken (read under the arbiter).
private func wakeups(of thread: _LockThread) -> Int {
    _Groups.arbiter.lock()
    defer { _Groups.arbiter.unlock() }
    return thread.wakeups
}

/// The calling thread's record, handed to the test's thread.
private final class RecordSlot: @unchecked Sendable {
    private let value = Mutex<_LockThread?>(nil)
    func set() { value.withLock { $0 = _LockThread.current } }
    var record: _LockThread? { value.withLock { $0 } }
}

/// HookBind's group lock on its own (_GroupLock.swift): its states, parking,
/// hand-over, borrowing. Serialized: the wake-up counts are process-wide.
@Suite("The group lock", .serialized)
struct GroupLockTests {
    @Test func uncontendedLockAndUnlockLeaveTheWordFree() {
        let group = _Group()
        let me = _LockThread.current.bits
        let lease = _Groups.lock(group)
        #expect(lease.root != nil)
        #expect(group.word.holder == me)
        let contended = group.word.isContended
        #expect(!contended)
        _Groups.unlock(lease)
        #expect(group.word.holder == 0)
    }

    @Test func aThreadTakesALockItHoldsAgainWithoutWaiting() {
        let group = _Group()
        let outer = _Groups.lock(group)
        let inner = _Groups.lock(group)
        #expect(inner.root == nil, "held already: nothing to release")
        _Groups.unlock(inner)
        #expect(group.word.holder == _LockThread.current.bits)
        _Groups.unlock(outer)
        #expect(group.word.holder == 0)
    }

    @Test func aContendedLockParksTheWaiterAndHandsItOverOnRelease() {
        let group = _Group()
        let shared = group
        let lease = _Groups.lock(group)
        let entered = Atomic<Bool>(false)
        let done = spawn {
            _Groups.locked(shared) { entered.store(true, ordering: .relaxed) }
        }
        #expect(eventually { parked(on: group) == 1 })
        let contended = group.word.isContended
        #expect(contended, "a parked thread marks the word before it sleeps")
        #expect(entered.load(ordering: .relaxed) == false)
        _Groups.unlock(lease)
        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(entered.load(ordering: .relaxed) == true)
        #expect(group.word.holder == 0)
        #expect(parked(on: group) == 0)
    }

    @Test func aReleaseWakesOnlyTheThreadsParkedOnThatLock() throws {
        let first = _Group(), second = _Group()
        let groups = (first, second)
        let leaseFirst = _Groups.lock(first)
        let leaseSecond = _Groups.lock(second)
        let onFirstRecord = RecordSlot(), onSecondRecord = RecordSlot()
        let onFirst = spawn { onFirstRecord.set(); _Groups.locked(groups.0) {} }
        let onSecond = spawn { onSecondRecord.set(); _Groups.locked(groups.1) {} }
        #expect(eventually { parked(on: first) == 1 && parked(on: second) == 1 })
        let waitingForFirst = try #require(onFirstRecord.record), waitingForSecond = try #require(onSecondRecord.record)
        // Locks are released in the reverse order they were taken: the second first.
        _Groups.unlock(leaseSecond)
        #expect(onSecond.wait(timeout: .now() + 10) == .success)
        #expect(wakeups(of: waitingForSecond) == 1)
        #expect(wakeups(of: waitingForFirst) == 0, "the thread parked on the other lock is not woken")
        #expect(parked(on: first) == 1)
        _Groups.unlock(leaseFirst)
        #expect(onFirst.wait(timeout: .now() + 10) == .success)
        #expect(wakeups(of: waitingForFirst) == 1)
    }

    @Test func twoThreadsThatEachWantTheOthersLockDoNotDeadlock() {
        // A holds g1 and wants g2; B holds g2 and wants g1: the second to ask
        // finds the chain of waits ending at itself and borrows.
        let g1 = _Group(), g2 = _Group()
        let groups = (g1, g2)
        let holding = Atomic<Int>(0)
        let borrowed = Atomic<Int>(0)
        func cross(_ mine: _Group, _ theirs: _Group) -> @Sendable () -> Void {
            let pair = (mine, theirs)
            return {
                _Groups.locked(pair.0) {
                    holding.add(1, ordering: .sequentiallyConsistent)
                    while holding.load(ordering: .sequentiallyConsistent) < 2 { sched_yield() }
                    _Groups.locked(pair.1) {
                        if _LockThread.current.held.last?.kind == .borrowed { borrowed.add(1, ordering: .relaxed) }
                    }
                }
            }
        }
        let a = spawn(cross(groups.0, groups.1))
        let b = spawn(cross(groups.1, groups.0))
        #expect(a.wait(timeout: .now() + 10) == .success)
        #expect(b.wait(timeout: .now() + 10) == .success)
        #expect(borrowed.load(ordering: .relaxed) == 1, "exactly one of the two borrows")
        #expect(g1.word.holder == 0 && g2.word.holder == 0)
    }

    @Test func aParkedThreadIsNotPassedOverByOneThatRetakesTheLockInALoop() {
        // The looper retakes the lock as soon as it released it. It counts
        // the holds of its that find this thread parked on the lock, not
        // having got it since the looper's previous hold that found it parked:
        // with the hand-over, never (a release hands the lock to the parked
        // thread); without it, the looper wins the race to the free lock
        // again and again.
        let group = _Group()
        let shared = group
        let stop = Atomic<Bool>(false)
        let acquisitions = Atomic<Int>(0)
        let passedOver = Atomic<Int>(0)
        let looperHolds = Atomic<Int>(0)
        let looper = spawn {
            var lastSawWaiter = false
            var lastAcquisitions = -1
            while !stop.load(ordering: .relaxed) {
                _Groups.locked(shared) {
                    looperHolds.add(1, ordering: .relaxed)
                    let waiting = parked(on: shared) > 0
                    let acquired = acquisitions.load(ordering: .sequentiallyConsistent)
                    if waiting, lastSawWaiter, acquired == lastAcquisitions { passedOver.add(1, ordering: .relaxed) }
                    (lastSawWaiter, lastAcquisitions) = (waiting, acquired)
                }
            }
        }
        #expect(eventually { looperHolds.load(ordering: .relaxed) > 100 })
        for _ in 0..<200 {
            _Groups.locked(group) { _ = acquisitions.add(1, ordering: .sequentiallyConsistent) }
        }
        stop.store(true, ordering: .relaxed)
        #expect(looper.wait(timeout: .now() + 10) == .success)
        #expect(passedOver.load(ordering: .relaxed) == 0)
    }

    /// Groups merge by rank: a chain of computeds made one after another
    /// (each merging the chain's group into its new one) keeps every path
    /// to the root short, instead of as long as the chain (walked by every
    /// lock of the group and every read inside an evaluation).
    @Test func aLongChainOfComputedsKeepsItsPathsToTheRootShort() {
        let head = Observable(0)
        var chain = [Computed { head.value }]
        for _ in 1..<64 { let previous = chain[chain.count - 1]; chain.append(Computed { previous.value &+ 1 }) }
        let paths = [head._node.pathToRoot] + chain.map { $0._node.pathToRoot }
        // log2(65) rounded up: the bound union by rank guarantees.
        #expect(paths.max()! <= 7, "paths to the root: \(paths)")
        #expect(Set(chain.map { ObjectIdentifier($0._node.root) }).count == 1)
        var heard: [Int] = []
        let subscription = chain[63].subscribe { _, new in heard.append(new) }
        head.value = 100
        #expect(heard == [163])
        withExtendedLifetime(subscription) {}
    }

    @Test func eightThreadsIncrementUnderOneLockExactly() {
        final class Counter: @unchecked Sendable { var value = 0 }
        let group = _Group()
        let shared = group
        let counter = Counter()
        let threads = (0..<8).map { _ in
            spawn { for _ in 0..<5_000 { _Groups.locked(shared) { counter.value += 1 } } }
        }
        for thread in threads { #expect(thread.wait(timeout: .now() + 30) == .success) }
        #expect(counter.value == 40_000)
        #expect(group.word.holder == 0)
    }
}
