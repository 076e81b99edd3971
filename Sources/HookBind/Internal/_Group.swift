import Hook
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

// HookBind's locking: one lock per connected group of endpoints.
//
// A group is a node of a union-find forest; the root's lock stands for the
// whole group. Binding.bind, Observable.bind and a computed's dependencies
// merge groups, never split them. A thread locks the root of the group it
// touches, and checks after locking that it is still the root.
//
// A thread may need a second group while it holds one (a callback that
// writes or reads an endpoint it is not connected to). It never waits in a
// cycle: before it parks on a lock, it follows the chain "lock -> thread
// using it -> lock that thread is parked on -> ..." under the arbiter. If the
// chain ends at itself, every thread in it waits, directly or not, for a lock
// it holds, and none of them can move before it releases that lock: it
// borrows the lock instead of waiting (as a recursive lock lets a callback
// use its own group), and ends the borrow before it releases what they wait
// for (locks are released in the reverse order they were taken). Otherwise
// the chain ends at a running thread, and waiting cannot close a cycle:
// a running thread that later needs a lock of a parked one finds itself at
// the end of the chain and borrows. So every lock is held, or borrowed, by a
// thread that runs, and no set of threads can all wait for each other.

/// A connected group's lock, and a node of the forest of groups.
@usableFromInline
class _Group: @unchecked Sendable {
    /// The group this one was merged into (+1, never cleared), or 0 for a root.
    @usableFromInline let parentBits = Atomic<Int>(0)
    /// The lock: free, held by a `_LockThread` (unretained), or held with
    /// threads parked on it (see _GroupLock.swift).
    let word = _LockWord()
    /// An upper bound of the tree's height below this root (union by rank:
    /// a merge hangs the lower tree under the higher one, so a group's path
    /// to its root stays short; a chain of computeds made one after another
    /// would otherwise make a path as long as the chain, walked by every
    /// lock and every read inside an evaluation). Only touched by a thread
    /// holding this root.
    @exclusivity(unchecked) final var rank: UInt8 = 0

    @usableFromInline
    init() {}

    deinit {
        let bits = parentBits.load(ordering: .relaxed)
        if bits != 0 { Unmanaged<_Group>.fromOpaque(UnsafeRawPointer(bitPattern: bits)!).release() }
    }

    /// The root of this group's tree: the lock that stands for it now.
    final var root: _Group { unmanagedRoot.takeUnretainedValue() }

    /// The root, without reference counting (valid while this group is:
    /// each group keeps its parent).
    @inlinable @inline(__always)
    final var unmanagedRoot: Unmanaged<_Group> {
        var bits = parentBits.load(ordering: .acquiring)
        guard bits != 0 else { return Unmanaged.passUnretained(self) }
        while true {
            let parent = Unmanaged<_Group>.fromOpaque(UnsafeRawPointer(bitPattern: bits)!)
            bits = parent._withUnsafeGuaranteedRef { $0.parentBits.load(ordering: .acquiring) }
            if bits == 0 { return parent }
        }
    }

    final var isRoot: Bool { parentBits.load(ordering: .acquiring) == 0 }

    /// How many parents lead from this group to its root (tests).
    final var pathToRoot: Int {
        var steps = 0
        var bits = parentBits.load(ordering: .acquiring)
        while bits != 0 {
            steps += 1
            bits = Unmanaged<_Group>.fromOpaque(UnsafeRawPointer(bitPattern: bits)!)._withUnsafeGuaranteedRef {
                $0.parentBits.load(ordering: .acquiring)
            }
        }
        return steps
    }

    /// Makes `root` this root's parent. Only by a thread holding (or borrowing) both.
    fileprivate final func attach(to root: _Group) {
        parentBits.store(Int(bitPattern: Unmanaged.passRetained(root).toOpaque()), ordering: .releasing)
    }
}

/// What `_Groups.lock` took: the lock to release, if any, and the thread.
@usableFromInline
struct _Lease {
    @usableFromInline let root: Unmanaged<_Group>?
    @usableFromInline let thread: Unmanaged<_LockThread>
    /// Whether the thread was in a batch when it took the lock (a write
    /// asks; learnt with the lock, it costs the write no call of its own).
    @usableFromInline let inBatch: Bool
}

/// One lock a thread took (a stack, in the order taken).
///
/// Its states, in one byte: how it was taken (`kind`), whether its scope has
/// ended (`closed`) and whether a `retaining` scope keeps it (`retained`).
/// The common entry, taken for real, open and not retained, is the byte 0:
/// a plain unlock tests it with one comparison (`isPlainReal`).
@usableFromInline
struct _Held {
    enum Kind: UInt8 { case real = 0, borrowed = 1, again = 2 }
    /// Not retained while its scope is open (the caller keeps the group);
    /// retained once kept by a `retaining` scope (`retained`). Unmanaged:
    /// an `unowned(unsafe)` reference passed on would be retained for it.
    @usableFromInline let lockRef: Unmanaged<_Group>
    var lock: _Group { lockRef.takeUnretainedValue() }
    /// Bits 0-1 the kind, bit 2 closed, bit 3 retained.
    private var bits: UInt8

    private static var kindMask: UInt8 { 3 }
    private static var closedBit: UInt8 { 4 }
    private static var retainedBit: UInt8 { 8 }

    init(lockRef: Unmanaged<_Group>, kind: Kind) {
        self.lockRef = lockRef
        bits = kind.rawValue
    }

    /// `.real`: this entry releases it; `.borrowed`: it ends the borrow; `.again`: held by an entry below.
    var kind: Kind {
        get { Kind(rawValue: bits & Self.kindMask).unsafelyUnwrapped }
        set { bits = bits & ~Self.kindMask | newValue.rawValue }
    }
    /// Its scope ended, but a `retaining` scope keeps it until that ends.
    var closed: Bool {
        get { bits & Self.closedBit != 0 }
        set { bits = newValue ? bits | Self.closedBit : bits & ~Self.closedBit }
    }
    /// `lock` is retained (+1, released with the entry).
    var retained: Bool {
        get { bits & Self.retainedBit != 0 }
        set { bits = newValue ? bits | Self.retainedBit : bits & ~Self.retainedBit }
    }
    /// Taken for real, its scope open, not retained.
    @inline(__always)
    var isPlainReal: Bool { bits == 0 }
}

/// A root held in place of a lower entry (see `_Groups.mergeHeld`): released
/// with that entry. Rare (merges), so kept apart and `_Held` stays trivial.
struct _Pin {
    let entry: Int
    let lock: _Group
    let kind: _Held.Kind
}

/// The stack of locks a thread holds: a buffer of trivial entries owned by
/// its `_LockThread`, with none of an array's copy-on-write checks (taking
/// and releasing a lock is one append and one removal of this stack).
/// Noncopyable: one owner, which frees the buffer with it (`deinit`).
@usableFromInline
struct _HeldStack: ~Copyable {
    @usableFromInline var base: UnsafeMutablePointer<_Held>
    private var capacity: Int
    @usableFromInline private(set) var count = 0

    init(capacity: Int) {
        self.capacity = capacity
        base = .allocate(capacity: capacity)
    }

    // (Inlinable: `_LockThread.held` is `@usableFromInline` for the read
    // path's inlinable held-lock check, and Swift 6.3's optimizer crashes
    // inlining a non-inlinable deinit into its setter.)
    @inlinable deinit { base.deallocate() }

    var indices: Range<Int> { 0..<count }
    var last: _Held? { count == 0 ? nil : base[count - 1] }

    @usableFromInline
    subscript(index: Int) -> _Held {
        @inlinable get {
            precondition(index >= 0 && index < count, "HookBind: held lock \(index) of \(count)")
            return base[index]
        }
        set {
            precondition(index >= 0 && index < count, "HookBind: held lock \(index) of \(count)")
            base[index] = newValue
        }
    }

    @inline(__always)
    mutating func append(_ entry: _Held) {
        if count == capacity { grow() }
        (base + count).initialize(to: entry)
        count += 1
    }

    @inline(never)
    private mutating func grow() {
        let grown = UnsafeMutablePointer<_Held>.allocate(capacity: capacity * 2)
        grown.moveInitialize(from: base, count: count)
        base.deallocate()
        base = grown
        capacity *= 2
    }

    mutating func removeLast() -> _Held {
        precondition(count > 0, "HookBind: no held lock to release")
        count -= 1
        return (base + count).move()
    }

}

/// What HookBind keeps per thread: the locks it holds and the graph's state.
@usableFromInline
final class _LockThread: @unchecked Sendable {
    // Only touched by its own thread (unchecked exclusivity: the hot path).
    @exclusivity(unchecked) @usableFromInline var held = _HeldStack(capacity: _LockThread.heldCapacity)
    /// The held-lock stack's first capacity: a delivery nests a few locks
    /// (its group, a callback's other group, a batch's), so 16 entries (256
    /// bytes) grow only in unusual nesting, and then double.
    static let heldCapacity = 16
    @exclusivity(unchecked) var pins: [_Pin] = []
    /// Where `owning` last found its entries: the latest, and the one
    /// before it (see `owning`).
    @exclusivity(unchecked) private var owningHints = (latest: 0, previous: 0)
    /// Nested `retaining` scopes, and where the outermost one began in `held`.
    @exclusivity(unchecked) var retainDepth = 0
    @exclusivity(unchecked) var retainMark = 0
    /// The lock this thread is parked on (under the arbiter).
    var parkedOn: _Group?
    /// A lock a releaser handed to this parked thread (under the arbiter).
    var handedOff: _Group?
    /// How many times a release or a borrow's end woke this thread (under the arbiter; tests).
    var wakeups = 0
    /// How many times another thread borrowed a lock this one held or
    /// borrowed while it was parked (under the arbiter): a computed it was
    /// evaluating may have had a value it read written meanwhile.
    var lent = 0
    /// Whether this thread was lent (see `lent`) since its outermost
    /// `retaining` scope began: a refresh's walk that finds no read changed
    /// looks at them again before it calls its computed clean
    /// (`_ComputedCore.walkAgainAfterLending`). Only its own thread.
    @exclusivity(unchecked) var walksLent = false
    /// What the thread sleeps on while parked (with the arbiter's mutex).
    let wakeup: UnsafeMutablePointer<pthread_cond_t>
    /// Evaluations, batches and pending computeds of this thread (only its own).
    @usableFromInline let graph = _GraphState()

    init() {
        wakeup = .allocate(capacity: 1)
        pthread_cond_init(wakeup, nil)
    }

    deinit {
        pthread_cond_destroy(wakeup)
        wakeup.deallocate()
    }

    var bits: Int { Int(bitPattern: Unmanaged.passUnretained(self).toOpaque()) }

    static func of(bits: Int) -> _LockThread {
        Unmanaged<_LockThread>.fromOpaque(UnsafeRawPointer(bitPattern: bits)!).takeUnretainedValue()
    }

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        let made = pthread_key_create(&key) { raw in
            guard let raw else { return }
            // On the exiting thread: a later use there (another key's
            // destructor) makes a new record rather than reach this one.
            _BindingThread.lockThread = nil
            // Under the arbiter: a thread walking a chain never reads a record being freed.
            _Groups.arbiter.lock()
            Unmanaged<_LockThread>.fromOpaque(raw).release()
            _Groups.arbiter.unlock()
        }
        precondition(made == 0, "HookBind: no thread-specific key")
        return key
    }()

    /// The calling thread's record (made on first use, released when the thread exits).
    static var current: _LockThread { unmanagedCurrent.takeUnretainedValue() }

    /// The calling thread's record without reference counting (the thread keeps it).
    @inlinable @inline(__always)
    static var unmanagedCurrent: Unmanaged<_LockThread> {
        if let raw = _BindingThread.lockThread { return Unmanaged<_LockThread>.fromOpaque(raw) }
        return make()
    }

    /// Makes the calling thread's record: kept in a thread-local word for
    /// the hot path, and under a pthread key whose destructor releases it.
    @inline(never)
    @usableFromInline
    static func make() -> Unmanaged<_LockThread> {
        let made = Unmanaged.passRetained(_LockThread())
        pthread_setspecific(key, made.toOpaque())
        _BindingThread.lockThread = made.toOpaque()
        _BindingThread.setStackFloor()
        return made
    }

    /// Whether this thread holds or borrows `lock` (any entry or pin).
    func holds(_ lock: _Group) -> Bool {
        // A free lock is held by no entry or pin of any thread (a real hold
        // has its thread as holder, a borrow the parked holder it borrows
        // from): no scan. (A computed's first evaluation asks this of each
        // value it reads of a group of its own.)
        if lock.word.holder == 0 { return false }
        var i = held.count - 1
        while i >= 0 {
            if held[i].lockRef.toOpaque() == Unmanaged.passUnretained(lock).toOpaque() { return true }
            i -= 1
        }
        return !pins.isEmpty && pins.contains { $0.lock === lock }
    }

    /// Where this thread's hold of `lock` that releases it is: an entry, or a pin of one.
    ///
    /// A lock has at most one entry or pin that releases it, so where the
    /// search begins does not change what it finds: first where the last
    /// two searches found theirs, then the pins, then the entries from past
    /// the later of those two on, then the rest. (The end of an evaluation
    /// merges each value it read, held in the order read, into its
    /// computed's group, held before them, one after another: a search from
    /// the first entry for each made a first evaluation over 30,000 values
    /// of groups of their own take 0.25 s.)
    func owning(_ lock: _Group) -> (entry: Int, pin: Int?, kind: _Held.Kind)? {
        let count = held.count
        let (latest, previous) = owningHints
        @inline(__always) func releases(_ i: Int) -> Bool { held[i].lock === lock && held[i].kind != .again }
        if latest < count, releases(latest) { return (latest, nil, held[latest].kind) }
        if previous < count, releases(previous) {
            owningHints = (previous, latest)
            return (previous, nil, held[previous].kind)
        }
        // A pinned lock has no entry that releases it: the pins (few) before
        // the entries. (A group that absorbed one taken before it is pinned
        // there, and an evaluation's end merges into it again and again.)
        for p in pins.indices where pins[p].lock === lock { return (pins[p].entry, p, pins[p].kind) }
        let onwards = Swift.min(Swift.max(latest, previous) + 1, count)
        func search(_ range: Range<Int>) -> Int? {
            for i in range where releases(i) { return i }
            return nil
        }
        guard let i = search(onwards..<count) ?? search(0..<onwards) else { return nil }
        owningHints = (i, latest)
        return (i, nil, held[i].kind)
    }
}

/// Locking groups: see the comment at the top of this file.
@usableFromInline
enum _Groups {
    /// Serializes the slow path: parking, borrowing, waking (_GroupLock.swift).
    static let arbiter = _Arbiter()
    /// The threads borrowing each lock from its parked holder, latest last
    /// (under the arbiter; kept apart so that a lock is two words).
    nonisolated(unsafe) private static var borrowers: [ObjectIdentifier: [_LockThread]] = [:]

    /// Locks the root of `group`'s tree (waiting or borrowing as needed).
    /// The lease names the lock to release (unretained: `group` keeps it
    /// alive), or none if this thread held it already.
    @usableFromInline
    static func lock(_ group: _Group) -> _Lease {
        let me = _LockThread.unmanagedCurrent
        return me._withUnsafeGuaranteedRef { thread in
            _Lease(root: lock(group, thread), thread: me, inBatch: thread.graph.batchDepth > 0)
        }
    }

    @inline(__always)
    static func lock(_ group: _Group, _ me: _LockThread) -> Unmanaged<_Group>? {
        // The common case first, inlined: a thread that holds no lock takes
        // the free lock of the group's root (no scan of what it holds, no
        // loop; a group merged into another, as an observable a computed
        // reads, is usually one step from its root: see `_Group.rank`).
        if me.held.count == 0, me.pins.isEmpty {
            let root = group.unmanagedRoot
            if root._withUnsafeGuaranteedRef({ $0.word.tryAcquire(by: me.bits) }) {
                me.held.append(_Held(lockRef: root, kind: .real))
                if root._withUnsafeGuaranteedRef({ $0.isRoot }) { return root }
                // Merged into another group meanwhile: the loop locks its root.
                close(me, at: me.held.count - 1)
            }
        }
        return lockRoot(group, me)
    }

    /// The general case of `lock`: the root of `group`'s tree, whatever this thread holds.
    @inline(never)
    static func lockRoot(_ group: _Group, _ me: _LockThread) -> Unmanaged<_Group>? {
        while true {
            let root = group.unmanagedRoot
            let locked = root._withUnsafeGuaranteedRef { root -> Bool? in
                // Held already (by an entry below, which outlasts this scope).
                if me.holds(root) { return nil }
                let kind: _Held.Kind
                if root.word.tryAcquire(by: me.bits) {
                    kind = .real
                } else {
                    kind = slowAcquire(root, me)
                }
                me.held.append(_Held(lockRef: Unmanaged.passUnretained(root), kind: kind))
                if root.isRoot { return true }
                // Merged into another group meanwhile: lock that one's root instead.
                close(me, at: me.held.count - 1)
                return false
            }
            switch locked {
            case nil: return nil
            case true?: return root
            case false?: continue
            }
        }
    }

    /// Whether the calling thread's last lock is the root of `group`'s
    /// tree: it holds the group, and the root cannot change meanwhile (a
    /// merge needs that lock). A read inside an evaluation (the group held
    /// by the evaluating computed's scope) then takes no lock. Not inlined:
    /// a read outside one pays a call, not the code at every read site.
    @usableFromInline @inline(never)
    static func holdsAsLast(_ group: _Group) -> Bool {
        _LockThread.unmanagedCurrent._withUnsafeGuaranteedRef { holdsAsLast(group, $0) }
    }

    /// `holdsAsLast(_:)` for `me`, the calling thread's record.
    @inlinable @inline(__always)
    static func holdsAsLast(_ group: _Group, _ me: _LockThread) -> Bool {
        let count = me.held.count
        return count > 0 && me.held[count - 1].lockRef.toOpaque() == group.unmanagedRoot.toOpaque()
    }

    /// Ends the scope of a `lock`.
    @usableFromInline
    static func unlock(_ lease: _Lease) {
        guard let root = lease.root else { return }
        lease.thread._withUnsafeGuaranteedRef { unlock(root, $0) }
    }

    static func unlock(_ root: Unmanaged<_Group>, _ me: _LockThread) {
        // The common case first: the lock is the top entry, taken for real,
        // and nothing keeps it past its scope (what `close` and `release`
        // do then, without their checks).
        let top = me.held.count - 1
        if top >= 0, me.retainDepth == 0, me.pins.isEmpty {
            let entry = me.held[top]
            if entry.isPlainReal, entry.lockRef.toOpaque() == root.toOpaque() {
                _ = me.held.removeLast()
                if !root._withUnsafeGuaranteedRef({ $0.word.release(by: me.bits) }) { handOff(root.takeUnretainedValue()) }
                return
            }
        }
        var i = me.held.count - 1
        while me.held[i].closed { i -= 1 }
        assert(me.held[i].lock === root.takeUnretainedValue(), "HookBind: locks released out of order")
        close(me, at: i)
    }

    @inlinable
    static func locked<R, E: Error>(_ group: _Group, _ body: () throws(E) -> R) throws(E) -> R {
        let root = lock(group)
        defer { unlock(root) }
        return try body()
    }

    /// Runs `body`, keeping every lock taken inside it until the outermost
    /// such scope ends (a batch, an evaluation and its registration).
    static func retaining<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        let me = _LockThread.unmanagedCurrent
        me._withUnsafeGuaranteedRef { beginRetaining($0) }
        defer { me._withUnsafeGuaranteedRef { endRetaining($0) } }
        return try body()
    }

    /// `retaining` as two calls, for `me`, the calling thread's record (an
    /// evaluation, which looks the thread up once for this and more).
    @inline(__always)
    static func beginRetaining(_ me: _LockThread) {
        if me.retainDepth == 0 { me.retainMark = me.held.count }
        me.retainDepth &+= 1
    }

    @inline(__always)
    static func endRetaining(_ me: _LockThread) {
        me.retainDepth &-= 1
        if me.retainDepth == 0, me.held.count > me.retainMark { releaseRetained(me) }
    }

    /// The end of the outermost `retaining` scope that kept locks: releases
    /// them. (Out of line: inlined, its loop made the optimizer outline the
    /// scope's end where it is used, a call more a refresh.)
    @inline(never)
    private static func releaseRetained(_ me: _LockThread) {
        while me.held.count > me.retainMark {
            assert(me.held[me.held.count - 1].closed)
            release(me.held.removeLast(), me)
        }
        // (A thread parks only for a lock it takes, which such a scope keeps:
        // its walks are over.)
        me.walksLent = false
    }

    private static func close(_ me: _LockThread, at i: Int) {
        me.held[i].closed = true
        if me.retainDepth > 0, i >= me.retainMark {
            // Kept past its scope: the caller no longer keeps the group alive.
            if !me.held[i].retained {
                _ = me.held[i].lockRef.retain()
                me.held[i].retained = true
            }
            return
        }
        assert(i == me.held.count - 1, "HookBind: locks released out of order")
        release(me.held.removeLast(), me)
    }

    /// Releases `entry`, just removed from the top of `held`, and its pins.
    private static func release(_ entry: _Held, _ me: _LockThread) {
        if !me.pins.isEmpty {
            let index = me.held.count
            while let last = me.pins.last, last.entry >= index {
                me.pins.removeLast()
                release(last.lock, last.kind, me)
            }
        }
        entry.lockRef._withUnsafeGuaranteedRef { release($0, entry.kind, me) }
        if entry.retained { entry.lockRef.release() }
    }

    private static func release(_ lock: _Group, _ kind: _Held.Kind, _ me: _LockThread) {
        switch kind {
        case .again:
            break
        case .real:
            if !lock.word.release(by: me.bits) { handOff(lock) }
        case .borrowed:
            arbiter.lock()
            let id = ObjectIdentifier(lock)
            if var list = borrowers[id], let last = list.lastIndex(where: { $0 === me }) {
                list.remove(at: last)
                borrowers[id] = list.isEmpty ? nil : list
            }
            // Its holder may wait for its borrowers: wake what is parked on it.
            arbiter.wake(parkedOn: lock)
            arbiter.unlock()
        }
    }

    /// Releases `lock`, contended: hands it to the thread parked on it
    /// longest (and wakes only that one), or frees it.
    private static func handOff(_ lock: _Group) {
        arbiter.lock()
        arbiter.handOff(lock)
        arbiter.unlock()
    }

    /// How many links `runningOwner` follows at most. A chain has at most
    /// one link per parked thread, and a longer one would be a cycle, which
    /// parking never makes (a thread borrows instead); the bound turns a
    /// broken invariant into an assertion in debug builds (and a wait in
    /// release ones) rather than a hang of the arbiter. 100,000: far above
    /// any number of threads a process parks at once.
    static let maximumChain = 100_000

    /// The running thread that `lock` waits for: its latest borrower or
    /// holder, or, if that one is parked, the same for the lock it is parked
    /// on, and so on. Nil if the chain ends at a free lock. Under the arbiter.
    private static func runningOwner(of lock: _Group) -> _LockThread? {
        var lock = lock
        for _ in 0..<maximumChain {
            let user: _LockThread
            if let borrower = borrowers[ObjectIdentifier(lock)]?.last {
                user = borrower
            } else {
                let bits = lock.word.holder
                guard bits != 0 else { return nil }
                user = _LockThread.of(bits: bits)
            }
            guard let next = user.parkedOn else { return user }
            lock = next
        }
        assertionFailure("HookBind: a cycle of parked threads")
        return nil
    }

    /// Takes `root`, held by another thread: waits, or borrows it if its
    /// holder waits (through a chain) for this thread.
    private static func slowAcquire(_ root: _Group, _ me: _LockThread) -> _Held.Kind {
        arbiter.lock()
        let lentBefore = me.lent
        var kind: _Held.Kind?
        var parked = false
        while true {
            if kind == nil, me.handedOff === root {
                // Its releaser handed it over while this thread was parked.
                me.handedOff = nil
                kind = .real
            }
            if kind == nil {
                if root.word.tryAcquireContended(by: me.bits) {
                    // Taken as contended: other threads may still be parked on it.
                    kind = .real
                } else if runningOwner(of: root) === me {
                    lend(root, to: me)
                    kind = .borrowed
                } else if !root.word.markContended() {
                    // Released meanwhile: try to take it again.
                    continue
                }
            }
            // Taken or borrowed, resume only once no other thread borrows a
            // lock of this one; otherwise wait for the lock (marked contended:
            // its release wakes this thread).
            let waitOn: _Group
            if kind != nil {
                guard let lent = lentLock(of: me) else { break }
                waitOn = lent
            } else {
                waitOn = root
            }
            parked = true
            arbiter.park(me, on: waitOn)
        }
        let wasLent = me.lent != lentBefore
        arbiter.unlock()
        if parked { revalidate(me) }
        // What it was evaluating looks again at what it read, at its end,
        // and so do the walks of refreshes under way.
        if wasLent {
            me.walksLent = true
            if let evaluating = _BindingThread.evaluating {
                evaluating._withUnsafeGuaranteedRef { $0.flags.insert(.lent) }
            }
        }
        return kind!
    }

    /// `me` borrows `root` from the parked threads that hold or borrow it,
    /// each counted as lent. Under the arbiter.
    private static func lend(_ root: _Group, to me: _LockThread) {
        let id = ObjectIdentifier(root)
        let holder = root.word.holder
        if holder != 0, holder != me.bits { _LockThread.of(bits: holder).lent &+= 1 }
        for borrower in borrowers[id] ?? [] where borrower !== me { borrower.lent &+= 1 }
        borrowers[id, default: []].append(me)
    }

    /// A lock this thread holds that another thread borrows. Under the arbiter.
    /// (Its own borrow does not count: a thread that borrowed a lock and
    /// later came to hold it for real, through a merge or a hand-off, would
    /// otherwise wait for itself.)
    private static func lentLock(of me: _LockThread) -> _Group? {
        guard !borrowers.isEmpty else { return nil }
        func lentToOthers(_ lock: _Group) -> Bool {
            borrowers[ObjectIdentifier(lock)]?.contains { $0 !== me } ?? false
        }
        for i in me.held.indices where me.held[i].kind == .real && lentToOthers(me.held[i].lock) { return me.held[i].lock }
        for pin in me.pins where pin.kind == .real && lentToOthers(pin.lock) { return pin.lock }
        return nil
    }

    /// After parking: a lock this thread holds may have been merged into
    /// another group by the thread that borrowed it. Takes that group's root
    /// too, released with the entry.
    private static func revalidate(_ me: _LockThread) {
        var i = 0
        while i < me.held.count {
            var owned: [_Group] = []
            if me.held[i].kind != .again { owned.append(me.held[i].lock) }
            owned += me.pins.filter { $0.entry == i }.map(\.lock)
            for lock in owned where !lock.isRoot {
                while true {
                    let root = lock.root
                    if let at = me.owning(root) {
                        if at.entry > i { move(root, from: at, to: i, me) }
                        break
                    }
                    let kind: _Held.Kind
                    if root.word.tryAcquire(by: me.bits) {
                        kind = .real
                    } else {
                        kind = slowAcquire(root, me)
                    }
                    pin(root, kind, to: i, me)
                    if root.isRoot { break }
                }
            }
            i += 1
        }
    }

    /// Moves the hold that releases `lock` down to entry `target`, so that
    /// it lasts as long as that entry.
    private static func move(_ lock: _Group, from at: (entry: Int, pin: Int?, kind: _Held.Kind), to target: Int, _ me: _LockThread) {
        if let pin = at.pin {
            me.pins.remove(at: pin)
        } else {
            me.held[at.entry].kind = .again
        }
        pin(lock, at.kind, to: target, me)
    }

    /// Adds a pin to entry `entry`, keeping `pins` sorted by entry (a pin is
    /// released when its entry is, from the top).
    private static func pin(_ lock: _Group, _ kind: _Held.Kind, to entry: Int, _ me: _LockThread) {
        let at = me.pins.firstIndex { $0.entry > entry } ?? me.pins.count
        me.pins.insert(_Pin(entry: entry, lock: lock, kind: kind), at: at)
    }

    /// The arbiter's view (debugging): parked threads, what they hold, who holds what.
    static func dump() -> String {
        arbiter.lock()
        defer { arbiter.unlock() }
        func name(_ o: AnyObject?) -> String { o.map { String(UInt(bitPattern: ObjectIdentifier($0).hashValue) & 0xffffff, radix: 16) } ?? "nil" }
        func lockInfo(_ g: _Group) -> String {
            let holder = g.word.holder
            let b = borrowers[ObjectIdentifier(g)]?.map { name($0) } ?? []
            return "\(name(g))[root=\(g.isRoot ? "self" : name(g.root)) holder=\(holder == 0 ? "free" : name(_LockThread.of(bits: holder))) contended=\(g.word.isContended) borrowers=\(b)]"
        }
        var lines: [String] = []
        for (id, threads) in arbiter.allParked() {
            for t in threads {
                var held: [String] = []
                for i in t.held.indices { held.append("\(i):\(lockInfo(t.held[i].lock)) \(t.held[i].kind) closed=\(t.held[i].closed)") }
                let pins = t.pins.map { "pin@\($0.entry):\(lockInfo($0.lock)) \($0.kind)" }
                lines.append("thread \(name(t)) listed under \(String(UInt(bitPattern: id.hashValue) & 0xffffff, radix: 16)) parkedOn=\(t.parkedOn.map(lockInfo) ?? "nil") handedOff=\(name(t.handedOff)) retainDepth=\(t.retainDepth) mark=\(t.retainMark)\n   held: \(held)\n   pins: \(pins)")
            }
        }
        return lines.joined(separator: "\n")
    }

    /// Merges the groups of `a` and `b`, both held (or borrowed) by this thread.
    static func mergeHeld(_ a: _Group, _ b: _Group) {
        let me = _LockThread.current
        let rootA = a.root, rootB = b.root
        guard rootA !== rootB else { return }
        guard let atA = me.owning(rootA), let atB = me.owning(rootB) else {
            preconditionFailure("HookBind: merging groups this thread does not hold")
        }
        // The survivor: a lock this thread holds for real (a borrowed one's
        // holder revalidates when it resumes), else the one taken first.
        // Between two of a kind, the higher tree (union by rank), else the
        // one taken first.
        let keepA: Bool
        if (atA.kind == .real) != (atB.kind == .real) {
            keepA = atA.kind == .real
        } else if rootA.rank != rootB.rank {
            keepA = rootA.rank > rootB.rank
        } else {
            keepA = atA.entry <= atB.entry
        }
        let (survivor, absorbed) = keepA ? (rootA, rootB) : (rootB, rootA)
        if survivor.rank <= absorbed.rank { survivor.rank = absorbed.rank &+ 1 }
        let (atSurvivor, atAbsorbed) = keepA ? (atA, atB) : (atB, atA)
        absorbed.attach(to: survivor)
        // The survivor must stay held while the absorbed group is.
        if atAbsorbed.entry < atSurvivor.entry { move(survivor, from: atSurvivor, to: atAbsorbed.entry, me) }
    }

    /// Merges the groups of all of `groups` into one (locking them first).
    static func merge(_ groups: [_Group]) {
        guard groups.count > 1 else { return }
        var leases: [_Lease] = []
        for group in groups { leases.append(lock(group)) }
        for group in groups.dropFirst() { mergeHeld(groups[0], group) }
        for lease in leases.reversed() { unlock(lease) }
    }
}
