import Synchronization
#if canImport(Glibc)
import Glibc
#endif

// The group lock: its word, its states and the arbiter that parks and wakes
// threads. What a thread holds and how groups merge are in _Group.swift.
//
// States of a lock word (`_LockWord`), and the transitions between them:
//
//   free                 0
//   held                 the holder's `_LockThread` address (16-byte aligned), bit 0 clear
//   held, contended      the holder's address | 1: threads may be parked on the lock
//
//   free -> held                 `tryAcquire`: one compare-and-exchange, no arbiter (the fast path)
//   free -> held, contended      `tryAcquireContended`, under the arbiter: a thread about to
//                                park takes the lock instead; others may be parked on it
//   held -> held, contended      `markContended`, under the arbiter, before a thread parks:
//                                the holder's release is then sure to wake it
//   held -> free                 `release(by:)`: one compare-and-exchange, no arbiter
//   held, contended -> held by the thread parked longest on the lock (contended if
//                                more are parked), or free if none is: `handOff`, under the
//                                arbiter; the new holder is woken, and no other thread
//
// Handing the lock over, rather than freeing it and waking the parked threads
// to race for it, bounds how long a parked thread waits: it gets the lock
// after at most as many releases as threads parked before it (a thread that
// never parks, retaking the lock in a loop, cannot keep it from them).
// Borrowing is not a state of the word: a thread whose chain of waits ends at
// itself borrows the lock (see _Group.swift); borrowers are listed under the
// arbiter, and the end of a borrow wakes the threads parked on the lock (its
// holder among them, which waits for its borrowers before it resumes).
//
// A thread is running or parked. Parked, its `parkedOn` names the lock it
// waits for (under the arbiter), it is listed among that lock's parked
// threads, and it sleeps on a condition of its own, so that a release wakes
// the threads parked on that lock and no other.

/// A group lock's word (see the states above).
struct _LockWord: ~Copyable {
    /// The word: 0, or a holder's address with bit 0 as the contended flag.
    private let bits = Atomic<Int>(0)

    /// Bit 0 of the word: threads may be parked on the lock.
    static var contendedBit: Int { 1 }

    init() {}

    /// free -> held by `me` (`me`'s address, 16-byte aligned). False if the lock is not free.
    @inline(__always)
    func tryAcquire(by me: Int) -> Bool {
        bits.compareExchange(expected: 0, desired: me, ordering: .sequentiallyConsistent).exchanged
    }

    /// free -> held, contended (a thread that parked: others may still be). Under the arbiter.
    func tryAcquireContended(by me: Int) -> Bool {
        bits.compareExchange(expected: 0, desired: me | Self.contendedBit, ordering: .sequentiallyConsistent).exchanged
    }

    /// held -> held, contended, so that the holder's release wakes the
    /// threads parked on the lock. Under the arbiter. False if the lock was
    /// released meanwhile (the caller tries to take it instead).
    func markContended() -> Bool {
        let word = bits.load(ordering: .sequentiallyConsistent)
        if word == 0 { return false }
        if word & Self.contendedBit != 0 { return true }
        return bits.compareExchange(expected: word, desired: word | Self.contendedBit, ordering: .sequentiallyConsistent).exchanged
    }

    /// held by `me` -> free. False if the lock is contended: then the
    /// caller hands it over under the arbiter (`_Arbiter.handOff`). A
    /// compare-and-exchange: a parker marks the word with one too, so one of
    /// the two sees the other.
    @inline(__always)
    func release(by me: Int) -> Bool {
        bits.compareExchange(expected: me, desired: 0, ordering: .sequentiallyConsistent).exchanged
    }

    /// Sets the word to `holder` (contended if more threads are parked), or 0. Under the arbiter.
    func store(holder: Int, contended: Bool) {
        bits.store(holder == 0 ? 0 : holder | (contended ? Self.contendedBit : 0), ordering: .sequentiallyConsistent)
    }

    /// The holder's address, or 0 when free.
    var holder: Int { bits.load(ordering: .sequentiallyConsistent) & ~Self.contendedBit }

    /// Whether threads may be parked on the lock (tests).
    var isContended: Bool { bits.load(ordering: .sequentiallyConsistent) & Self.contendedBit != 0 }
}

/// Serializes the slow path of the group locks (parking, borrowing, waking,
/// walking chains of waits) and parks threads: a mutex, and a condition per
/// thread (`_LockThread.wakeup`), so that waking the threads parked on one
/// lock wakes no other.
final class _Arbiter: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    /// The threads parked on each lock (by the lock's identity). Under the mutex.
    private var parked: [ObjectIdentifier: [_LockThread]] = [:]

    init() {
        mutex = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
    }

    // Never deinitialized (a static of `_Groups`).

    func lock() { pthread_mutex_lock(mutex) }
    func unlock() { pthread_mutex_unlock(mutex) }

    /// Parks the calling thread `me` on `lock` until a release or the end
    /// of a borrow of that lock wakes it (or a spurious wake-up: the caller
    /// tests its condition again). Under the mutex, which it releases while
    /// the thread sleeps.
    func park(_ me: _LockThread, on lock: _Group) {
        let id = ObjectIdentifier(lock)
        me.parkedOn = lock
        parked[id, default: []].append(me)
        pthread_cond_wait(me.wakeup, mutex)
        if var list = parked[id], let at = list.firstIndex(where: { $0 === me }) {
            list.remove(at: at)
            parked[id] = list.isEmpty ? nil : list
        }
        me.parkedOn = nil
    }

    /// Passes `lock`, contended, from its holder to the thread parked on it
    /// longest, and wakes that thread alone (it finds the lock its own); or
    /// frees it if none is parked. Under the mutex: no other thread writes a
    /// held word meanwhile (a free word is taken without the arbiter, a held
    /// one is only marked under it).
    func handOff(_ lock: _Group) {
        let id = ObjectIdentifier(lock)
        guard var list = parked[id], !list.isEmpty else {
            return lock.word.store(holder: 0, contended: false)
        }
        let next = list.removeFirst()
        parked[id] = list.isEmpty ? nil : list
        lock.word.store(holder: next.bits, contended: !list.isEmpty)
        // Running from now on, as far as chains of waits go: a thread that
        // follows one through this lock must find its holder not parked.
        next.parkedOn = nil
        next.handedOff = lock
        next.wakeups += 1
        pthread_cond_signal(next.wakeup)
    }

    /// Wakes the threads parked on `lock`. Under the mutex.
    func wake(parkedOn lock: _Group) {
        guard let list = parked[ObjectIdentifier(lock)] else { return }
        for thread in list {
            // Running from now on, as far as chains of waits go (as in
            // `handOff`): until it takes the arbiter again it still names
            // the lock it slept on, and a chain followed meanwhile through
            // that lock, free of borrowers now and held by the thread
            // itself (one parked on a lock it lent), would loop.
            thread.parkedOn = nil
            thread.wakeups += 1
            pthread_cond_signal(thread.wakeup)
        }
    }

    /// Every parked thread and the lock it is listed under (debugging). Under the mutex.
    func allParked() -> [(ObjectIdentifier, [_LockThread])] { parked.map { ($0.key, $0.value) } }

    /// The threads parked on `lock` now (tests). Under the mutex.
    func parkedCount(on lock: _Group) -> Int { parked[ObjectIdentifier(lock)]?.count ?? 0 }
}
