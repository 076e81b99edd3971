import Foundation

// The dependency graph of Observable, Computed and ObservableArray.
//
// Every value lives in a hook point (a `PropertyHook`), and every change that
// subscribers hear is a call at that point. What this file adds is *when*
// those calls happen: a write marks the computeds that read the written value
// as dirty; once the write (or the outermost batch) ends, the computeds that
// have subscribers are brought up to date in order of their height in the
// graph and publish their new value with a call at their own hook point.
// A dirty computed recomputes only when one of its dependencies really
// changed (versions), and pulls its dependencies first, so in a diamond
// (A -> B, A -> C, B + C -> D) D runs once per change of A and never reads a
// stale B or C.
//
// All of it runs under the lock of the values' connected group (see
// _Group.swift): a computed's evaluation merges the groups of what it reads
// into its own, so a change and everything it causes in the graph is under
// one lock. A thread sees either none or all of a change (or of a batch).

/// One value of the graph, as its dependents know it, and the lock of its
/// group (a node is a group: one object for both). An observable's node is
/// one of its own; a computed's is its core (`_ComputedCore`, a subclass).
@usableFromInline
class _Node: _Group, @unchecked Sendable {
    // (The small fields first, beside the group's rank: 56 bytes, a 64-byte block.)
    /// Set by an observable's own hook when a call at its point stored a value.
    @exclusivity(unchecked) @usableFromInline final var storedByHook = false
    /// Whether a computed has read the value (until then its changes need
    /// no bookkeeping: the node may exist only as the group's lock).
    @exclusivity(unchecked) @usableFromInline final var isRead = false
    /// A computed's node (its core, `_ComputedCore`), which a dependent
    /// brings up to date before reading its version.
    final let isComputed: Bool
    /// 0 for sources; 1 + the highest dependency for computeds.
    @exclusivity(unchecked) private final var storedHeight: Int32 = 0
    /// Bumped on every change of the value.
    @exclusivity(unchecked) @usableFromInline final var version: UInt64 = 0
    /// Computeds that read this value in their last evaluation (their
    /// cores, +1 each, the only one in place, more in a buffer of the
    /// node's own: walking them takes no reference, as an array's buffer
    /// would be retained for the walk).
    @exclusivity(unchecked) private final var dependents = _Dependents()

    /// 0 for sources; 1 + the highest dependency for computeds.
    final var height: Int {
        get { Int(storedHeight) }
        set { storedHeight = Int32(truncatingIfNeeded: newValue) }
    }

    @usableFromInline
    override init() { isComputed = false }

    init(isComputed: Bool) { self.isComputed = isComputed }

    deinit {
        for i in 0..<dependents.count { dependents[i].release() }
        dependents.free()
    }

    final func addDependent(_ link: _ComputedCore) {
        let bits = Unmanaged.passUnretained(link).toOpaque()
        for i in 0..<dependents.count where dependents[i].toOpaque() == bits { return }
        dependents.append(.passRetained(link))
    }

    /// `addDependent` for a computed known not to be among the dependents.
    final func appendDependent(_ link: _ComputedCore) {
        dependents.append(.passRetained(link))
    }

    /// (A dependent is listed once, so it is looked for from both ends at
    /// once: computeds released in the reverse of the order they were made
    /// found theirs last, and 30,000 over one value took 0.36 s to go.)
    final func removeDependent(_ link: _ComputedCore) {
        let bits = Unmanaged.passUnretained(link).toOpaque()
        var low = 0, high = dependents.count - 1
        while low <= high {
            if dependents[high].toOpaque() == bits { return removeDependent(at: high) }
            if dependents[low].toOpaque() == bits { return removeDependent(at: low) }
            low += 1
            high -= 1
        }
    }

    private final func removeDependent(at i: Int) {
        // In order: the first to mark stays first.
        dependents.remove(at: i).release()
    }

    /// Whether a computed read this value in its last evaluation.
    final var hasDependents: Bool {
        @inline(__always) get { !dependents.isEmpty }
    }

    /// The only dependent, if it is the only one and kept in place.
    final var onlyDependentInPlace: Unmanaged<_ComputedCore>? {
        @inline(__always) get { dependents.onlyInPlace }
    }

    /// Calls `body` with each live dependent, without reference counting.
    @inline(__always)
    final func forEachLiveDependent(_ body: (_ComputedCore) -> Void) {
        dependents.forEach { link in link._withUnsafeGuaranteedRef { if $0.isAlive { body($0) } } }
    }
}

/// Something a computed can read: it refreshes itself before being read.
@usableFromInline
protocol _Source: AnyObject {
    var _node: _Node { get }
    /// `_node.version`, read without retaining the node.
    var _version: UInt64 { get }
    /// The connected group of the value (a computed merges its sources' into its own).
    var _group: _Group { get }
    /// Brings the value up to date (computeds); nothing for sources.
    func _refresh()
    /// A computed read the value for the first time (`_node.isRead` was just
    /// set), under the value's group lock.
    func _becameRead()
}

/// One dependency as recorded by an evaluation.
@usableFromInline
struct _Dependency {
    /// Kept: a computed holds what it reads.
    @usableFromInline let source: AnyObject
    /// The source's node (which the source keeps).
    @usableFromInline let node: Unmanaged<_Node>
    @usableFromInline var version: UInt64

    init(source: any _Source, version: UInt64) {
        self.source = source
        node = .passUnretained(source._node)
        self.version = version
    }

    /// The source's node.
    var sourceNode: _Node { node.takeUnretainedValue() }
}

/// A thread's part of the graph's state (each thread has its own, see
/// `_LockThread`); nodes and computeds are only touched under their group's
/// lock (which is why their properties skip dynamic exclusivity checks).
@usableFromInline
final class _GraphState: @unchecked Sendable {
    @exclusivity(unchecked) @usableFromInline var batchDepth = 0
    /// Deferred calls of observables written in the current batch, in the order first written.
    @exclusivity(unchecked) var commits: [() -> Void] = []
    /// The observables written in the batch, each with the bindings that
    /// delivered its last write there (a bound property written in the
    /// batch: the call at its end is theirs already, and the property is not
    /// set again), until its call begins.
    @exclusivity(unchecked) var committed: [ObjectIdentifier: [ObjectIdentifier]] = [:]
    /// Computeds with subscribers that must be brought up to date and published.
    /// (Not retained: see `_Graph.enqueue`. In a buffer of the thread's own,
    /// not an array: an append and a removal of an array held by a class
    /// each asked whether its storage was shared, 15 instructions a queued
    /// computed. `spare` is the other buffer a publishing round swaps in.)
    @exclusivity(unchecked) var pending = _Buffer<Unmanaged<_ComputedCore>>()
    @exclusivity(unchecked) var spare = _Buffer<Unmanaged<_ComputedCore>>()
    @exclusivity(unchecked) var flushing = false
    /// The reads of the evaluations running on this thread whose reads
    /// differ from their last one's (`_ComputedCore.diverged`), each in a
    /// segment from where it diverged (kept in its core, whose cursor it
    /// no longer needs) to the next one's, the innermost last; empty
    /// otherwise, its storage kept for the next. A segment is begun when
    /// its evaluation diverges and dropped when it ends, so no evaluation
    /// pays for it but those that diverge (in the core, it was 16 bytes a
    /// computed).
    @exclusivity(unchecked) @usableFromInline var fresh = _Dependencies()
    /// The computeds this thread's refreshes keep waiting on a dirty
    /// dependency, innermost last (see `_ComputedCore.refresh(waitingAt:on:_:)`);
    /// empty between refreshes, its storage kept.
    @exclusivity(unchecked) var refreshing = _Buffer<_Refreshing>()
    /// What gone computeds read, which the outermost release on this
    /// thread lets go (`_Graph.releaseListed`); `releasing` while it does.
    /// Empty between releases, its storage kept.
    @exclusivity(unchecked) var released = _Buffer<_Dependencies>()
    @exclusivity(unchecked) var releasing = false
    /// The nodes whose dependents are left to mark where the stack is near
    /// its end (`_Graph.markListed`); `markingListed` while they are marked. Empty
    /// between writes, its storage kept.
    @exclusivity(unchecked) var marking = _Buffer<Unmanaged<_Node>>()
    @exclusivity(unchecked) var markingListed = false

    deinit {
        freshIndex.free()
        marking.free()
        fresh.free()
        refreshing.free()
        released.free()
        pending.free()
        spare.free()
    }

    /// Whether the innermost evaluation's segment, from `start`, has
    /// `source`: a linear scan, latest first, while the segment is short
    /// (`freshScanned` reads or fewer: the kairo shapes' are), else asked of
    /// an index of the segment (`freshIndexed`). (Scanned at any length, an
    /// evaluation that changed which of 10,000 values it read asked it for
    /// each read, and again for each earlier read: 29 ms a write.)
    @inlinable @inline(__always)
    func freshContains(_ source: AnyObject, from start: Int) -> Bool {
        if freshIsLong(from: start) { return freshIndexed(source, from: start) }
        return fresh.contains(source, from: start)
    }

    /// Whether the segment from `start` is too long to scan.
    @inlinable @inline(__always)
    func freshIsLong(from start: Int) -> Bool { fresh.count - start > _GraphState.freshScanned }

    /// The longest segment `freshContains` scans.
    @inlinable static var freshScanned: Int { 32 }

    /// Where each value of one long segment of `fresh` is (by the value's
    /// address), for `freshIndexed`; of the segment from `freshIndexStart`,
    /// its reads up to `freshIndexEnd` (the rest indexed when next asked);
    /// `freshIndexStart` -1: none. Its storage kept (no allocation once as
    /// large as the thread's longest segment).
    @exclusivity(unchecked) var freshIndex = _ReadIndex()
    @exclusivity(unchecked) var freshIndexStart = -1
    @exclusivity(unchecked) var freshIndexEnd = 0

    /// `freshContains` for a long segment: the reads appended since the
    /// last ask indexed, then one lookup. The index is of one segment at a
    /// time (the innermost evaluation's: only it reads): asked of another,
    /// it is made again.
    @usableFromInline @inline(never)
    func freshIndexed(_ source: AnyObject, from start: Int) -> Bool {
        if freshIndexStart != start {
            freshIndex.removeAll()
            freshIndexStart = start
            freshIndexEnd = start
        }
        let reads = fresh.base.unsafelyUnwrapped
        while freshIndexEnd < fresh.count {
            freshIndex.insert(UInt(bitPattern: ObjectIdentifier(reads[freshIndexEnd].source)), at: freshIndexEnd)
            freshIndexEnd += 1
        }
        guard let at = freshIndex.index(of: UInt(bitPattern: ObjectIdentifier(source))) else { return false }
        return at >= start && at < fresh.count && reads[at].source === source
    }

    /// Drops the reads of `fresh` from `count` on (an evaluation's segment
    /// ends), and the index of a segment they were part of: a segment begun
    /// later at the same place is another evaluation's.
    @inline(__always)
    func dropFresh(from count: Int) {
        fresh.removeLast(fresh.count - count)
        if freshIndexEnd > count { freshIndexStart = -1 }
    }

    /// The locks a publishing round takes, reused (the groups are kept
    /// alive by the queued computeds' nodes meanwhile).
    @exclusivity(unchecked) var spareRoots: [_Lease] = []
}

@usableFromInline
enum _Graph {
    /// The calling thread's state.
    @usableFromInline
    static var state: _GraphState { _LockThread.current.graph }

    /// Runs `body` with the calling thread's state, without reference counting.
    @inline(__always)
    static func withState<R>(_ body: (_GraphState) throws -> R) rethrows -> R {
        try _LockThread.unmanagedCurrent._withUnsafeGuaranteedRef { try body($0.graph) }
    }

    /// Lists what a computed that goes read (`dependencies`, now the
    /// list's) for `releaseListed()`.
    static func listForRelease(_ dependencies: _Dependencies) {
        withState { $0.released.append(dependencies) }
    }

    /// Lets go of what gone computeds listed, without recursion: that may
    /// end another computed (one they read), whose `deinit` lists what it
    /// read and calls this again, which then returns at once: the outermost
    /// call on this thread empties the list. (A chain released at once
    /// went through a nested `deinit` a computed: 20,000 of them overflowed
    /// a 256 KiB stack.) Called after the computed's closure has gone (see
    /// `_ReleaseListed`), outside the computed's lock, on the thread where
    /// its last reference went. The list stays short: one entry a computed
    /// gone and not yet let go of (a chain's release keeps one).
    static func releaseListed() {
        withState { state in
            if state.releasing { return }
            state.releasing = true
            while state.released.count > 0 {
                var next = state.released.removeLast()
                // May list more (nested `deinit`s), behind `next`, now out of the list.
                next.free()
            }
            state.releasing = false
        }
    }

    /// How many rounds of publishing one change may cause (subscribers that
    /// write what they observe start new rounds) before the rest is dropped.
    static let maximumRounds = 1_000

    /// Runs `body` holding the lock of `group` (reentrant: subscribers and
    /// computeds read and write the graph from inside its delivery).
    @inlinable @inline(__always)
    static func locked<R, E: Error>(_ group: _Group, _ body: () throws(E) -> R) throws(E) -> R {
        let root = _Groups.lock(group)
        defer { _Groups.unlock(root) }
        return try body()
    }

    /// `locked`, for what brings computeds up to date outside any write (a
    /// read, a subscription): where the thread held no lock before it (no
    /// write, batch, publishing or evaluation of this thread is under way to
    /// publish later), it ends as a write does, publishing what it queued.
    /// (Asked of any read, it published a write's queue from inside an
    /// observable's subscriber, before the write's end: the graph's model
    /// tests failed.) A refresh queues a computed only where its thread
    /// parked in an evaluation and was lent (the evaluation's end marks its
    /// dependents, which the borrower may have brought up to date over the
    /// previous value): left queued, its subscribers did not hear until the
    /// thread's next write, and never once the thread exited (its queue went
    /// with it, the computed still marked queued, so no later change queued
    /// it again).
    @usableFromInline
    static func lockedPublishing<R>(_ group: _Group, _ body: () -> R) -> R {
        // (The thread looked up once, for both.)
        let me = _LockThread.unmanagedCurrent
        let (outermost, lease) = me._withUnsafeGuaranteedRef { thread in
            (thread.held.count == 0 && thread.pins.isEmpty,
             _Lease(root: _Groups.lock(group, thread), thread: me, inBatch: thread.graph.batchDepth > 0))
        }
        let result = body()
        if outermost {
            flushAndUnlock(lease)
        } else {
            _Groups.unlock(lease)
        }
        return result
    }

    /// Records that the running evaluation, if any, read `source`.
    @usableFromInline
    static func track(_ source: any _Source, version: UInt64) {
        record(source, version: version, by: _LockThread.unmanagedCurrent)
    }

    /// Records that `me`'s running evaluation, if any, read `source` (`me`:
    /// the calling thread's record).
    @inlinable @inline(__always)
    static func record(_ source: any _Source, version: UInt64, by me: Unmanaged<_LockThread>) {
        // (The state unmanaged, as the thread: a strong copy of it is a
        // retain and a release of the thread's state.)
        guard let evaluating = _BindingThread.evaluating else { return }
        let graph = me._withUnsafeGuaranteedRef { Unmanaged.passUnretained($0.graph) }
        graph._withUnsafeGuaranteedRef { _ComputedCore.record(into: evaluating, source, version: version, $0) }
    }

    /// `_Groups.holdsAsLast(group)`, and if so `track(source, version:)`,
    /// with one look-up of the thread: an observable's read inside an
    /// evaluation of its group.
    /// (The version is read once the lock is known to be held.)
    ///
    /// Inline, where the value is read, is only the common read: the next
    /// of the running evaluation's last reads, or the one just read again,
    /// before it diverged (`_ComputedCore.knownInOrder`); anything else is
    /// `trackIfHeldElsewhere`, out of line. (The whole of it in one
    /// function was not inlined, and its prologue and epilogue, saving the
    /// registers its rarer paths need, were half of its 34 instructions a
    /// read, beside a closure of 15 the optimizer outlined.)
    @inlinable @inline(__always)
    static func trackIfHeld<Source: _Source>(_ source: Source, _ node: @autoclosure () -> Unmanaged<_Node>) -> Bool {
        // Known to the running evaluation (the common read): held (see
        // `_ComputedCore.knownRead`), no look at the thread's locks.
        // Outside an evaluation: the read under the lock (`_lockedValue`,
        // reentrant where the thread holds it already).
        // (The node asked for only where it is needed: a read again
        // needs none, 3 instructions a read less.)
        guard let evaluating = _BindingThread.evaluating else { return false }
        if evaluating._withUnsafeGuaranteedRef({ $0.knownInOrder(source, node) }) { return true }
        return node()._withUnsafeGuaranteedRef { trackIfHeldElsewhere(source, $0, evaluating) }
    }

    /// The rest of `trackIfHeld`: a read the running evaluation knows from
    /// its segment of reads once it diverged, or one of a group the thread
    /// holds last (recorded then), or false.
    /// (Generic, specialized for the source's type in the caller's module:
    /// with an `any _Source` every call went through a thunk opening it.)
    @inlinable @inline(never)
    static func trackIfHeldElsewhere<Source: _Source>(_ source: Source, _ node: _Node, _ evaluating: Unmanaged<_ComputedCore>) -> Bool {
        // (The state unmanaged: a strong copy of it is a retain and a
        // release of the thread's state.)
        let me = _LockThread.unmanagedCurrent
        let graph = me._withUnsafeGuaranteedRef { Unmanaged.passUnretained($0.graph) }
        // (`trackIfHeld` asked the reads in order already: what is left to
        // know is a diverged evaluation's segment.)
        if evaluating._withUnsafeGuaranteedRef({ $0.diverged }) {
            let start = evaluating._withUnsafeGuaranteedRef { $0.matched }
            // (`freshContains` in parts, each in a closure of its own: in one
            // closure, with the index's call in it, it was not inlined.)
            if graph._withUnsafeGuaranteedRef({ $0.freshIsLong(from: start) }) {
                if graph._withUnsafeGuaranteedRef({ $0.freshIndexed(source, from: start) }) { return true }
            } else if graph._withUnsafeGuaranteedRef({ $0.fresh.contains(source, from: start) }) {
                return true
            }
        }
        guard me._withUnsafeGuaranteedRef({ _Groups.holdsAsLast(node, $0) }) else { return false }
        // Unknown to the running evaluation (asked above, in order and in
        // its segment): recorded as a new read, with no second ask.
        graph._withUnsafeGuaranteedRef { graph in evaluating._withUnsafeGuaranteedRef { $0.recordRead(source, version: node.version, graph) } }
        return true
    }

    @usableFromInline
    static func changed(_ node: _Node) {
        node.version &+= 1
        markDependents(of: node)
    }

    /// Marks the computeds that read `node` dirty, and theirs. (Whether
    /// there are any asked inline: most marks end at a computed nothing
    /// reads, and the walk's prologue came before its test.)
    @inline(__always)
    static func markDependents(of node: _Node) {
        if node.hasDependents { markEachDependent(of: node) }
    }

    /// (By recursion while the thread's stack is not near its end, then by
    /// `markListed`: a chain whose nodes each have a second dependent
    /// nested a walk a node, and 10,000 of them overflowed the main
    /// thread's 8 MiB stack in a debug build, 1,000 a 512 KiB thread's.
    /// The stack's end asked, not a count of walks: a count kept in a
    /// thread-local word cost the triangle 122 instructions a write, and
    /// passed down `markDirty`'s loop cost the deep chain a register, 54.)
    @inline(never)
    private static func markEachDependent(of node: _Node) {
        if _BindingThread.stackIsLow { return markListed(node) }
        // Borrowed in place (iterating would retain each link).
        node.forEachLiveDependent { $0.markDirty() }
    }

    /// Lists `node`, whose dependents are left to mark, and marks them,
    /// and the nodes listed meanwhile, unless a call further up the stack
    /// does (as `releaseListed()`). Not retained: marking runs no code of
    /// the user's, so no computed goes meanwhile.
    @inline(never)
    private static func markListed(_ node: _Node) {
        withState { state in
            state.marking.push(Unmanaged.passUnretained(node))
            if state.markingListed { return }
            state.markingListed = true
            while state.marking.count > 0 {
                let next = state.marking.removeLast()
                next._withUnsafeGuaranteedRef { $0.forEachLiveDependent { $0.markDirty() } }
            }
            state.markingListed = false
        }
    }

    /// Schedules a computed with subscribers to be published (under its
    /// group's lock). Not retained: a core is queued only while its
    /// computed lives (marked through its dependencies' nodes, which drop
    /// it when the computed deinitializes), and a computed that
    /// deinitializes while its core is queued or being published hands
    /// its own reference to the queue (`_ComputedCore.handOver()`), which
    /// releases it once published.
    static func enqueue(_ link: Unmanaged<_ComputedCore>) {
        let queued = link._withUnsafeGuaranteedRef { link -> Bool in
            if link.publishing.contains(.queued) { return true }
            link.publishing.insert(.queued)
            return false
        }
        if !queued { withState { $0.pending.push(link) } }
    }

    /// Publishes what changed, unless a batch or another flush is running.
    @usableFromInline
    static func flush() { flush(_LockThread.unmanagedCurrent) }

    /// `flush()` for `thread`, the calling thread's record.
    @usableFromInline
    static func flush(_ thread: Unmanaged<_LockThread>) {
        // Most writes have nothing to publish: ask without reference counting.
        if thread._withUnsafeGuaranteedRef({ isIdle($0.graph) }) { return }
        publish()
    }

    /// Ends a write outside a batch: `flush(_:)`, then `_Groups.unlock(_:)`,
    /// in one call (a write's epilogue).
    @usableFromInline
    static func flushAndUnlock(_ lease: _Lease) {
        let idle = lease.thread._withUnsafeGuaranteedRef { isIdle($0.graph) }
        if !idle { publish() }
        _Groups.unlock(lease)
    }

    /// Whether there is nothing to publish, or a batch or a flush will.
    @inline(__always)
    private static func isIdle(_ state: _GraphState) -> Bool {
        state.flushing || state.batchDepth != 0 || (state.commits.isEmpty && state.pending.count == 0)
    }

    /// The work of `flush`: the calling thread has something to publish.
    @inline(never)
    private static func publish() {
        let me = _LockThread.unmanagedCurrent
        me._withUnsafeGuaranteedRef { publish($0.graph, me) }
    }

    /// (`me`: the calling thread's record, whose graph state `state` is.)
    private static func publish(_ state: _GraphState, _ me: Unmanaged<_LockThread>) {
        guard !state.flushing, state.batchDepth == 0 else { return }
        state.flushing = true
        defer { state.flushing = false }
        var rounds = 0
        while !state.commits.isEmpty || state.pending.count != 0 {
            if !state.commits.isEmpty {
                // Observables written in a batch (also one a subscriber ran): one call each.
                // Writes their calls cause (a subscriber's) join the batch's
                // end: an observable whose call has not run yet is then
                // called once, from its value before the batch to the last
                // written. (Written at once, its subscribers heard a call
                // from a value of the batch they never heard, then the
                // batch's from the value before it.) Each call takes its
                // observable out of `committed` as it runs: a write after
                // it is a call of its own, next.
                commit(state, me)
                continue
            }
            rounds += 1
            if state.pending.count == 1, rounds <= maximumRounds {
                // One computed to publish (the common case): the same as
                // below, without the arrays.
                let link = state.pending.removeLast()
                let release = link._withUnsafeGuaranteedRef { link in
                    // The write that queued it holds its group (the common
                    // case): no lock to take again.
                    if me._withUnsafeGuaranteedRef({ _Groups.holdsAsLast(link, $0) }) { return link.dequeueAndPublish(me) }
                    let lease = _Groups.lock(link)
                    let release = link.dequeueAndPublish(me)
                    _Groups.unlock(lease)
                    return release
                }
                if release { link.release() }
                continue
            }
            publishRound(state, me, dropping: rounds > maximumRounds)
            if rounds > maximumRounds { break }
        }
    }

    /// Makes the deferred calls of the observables written in a batch.
    /// All in one retaining scope (as a batch's body and end are), the
    /// deferred calls too: no other thread sees a value stored whose call
    /// has not been made.
    private static func commit(_ state: _GraphState, _ me: Unmanaged<_LockThread>) {
        me._withUnsafeGuaranteedRef { _Groups.beginRetaining($0) }
        state.batchDepth += 1
        while !state.commits.isEmpty {
            let commits = state.commits
            state.commits = []
            for commit in commits { commit() }
        }
        state.batchDepth -= 1
        me._withUnsafeGuaranteedRef { _Groups.endRetaining($0) }
    }

    /// The end of an outermost batch: its calls made, and the computeds it
    /// changed published, unless a publishing up the stack publishes them
    /// (the batch ran in a subscriber of a computed). The calls are made
    /// here even then, while the batch keeps its locks: left to that
    /// publishing, they came after the locks were released, and another
    /// thread could read and write the batch's values before any
    /// subscriber heard of them (its write was heard first, then the
    /// batch's call, from the value before the batch).
    static func endBatch(_ state: _GraphState) {
        if state.flushing, state.batchDepth == 0, !state.commits.isEmpty {
            commit(state, _LockThread.unmanagedCurrent)
        }
        flush()
    }

    /// Publishes the computeds queued now, in order of height, under their
    /// groups' locks (held already, unless a write of another group queued
    /// them from inside a delivery of this one).
    private static func publishRound(_ state: _GraphState, _ me: Unmanaged<_LockThread>, dropping: Bool) {
        // The queue taken; what a delivery queues goes to the spare buffer,
        // for the next round. (Buffers, not values: each is held in one
        // place at a time. No round runs inside another: `flushing`.)
        var work = state.pending
        state.pending = state.spare
        state.spare = _Buffer()
        var roots = state.spareRoots
        state.spareRoots = []
        let links = work.elements
        me._withUnsafeGuaranteedRef { me in
            for link in links {
                link._withUnsafeGuaranteedRef { link in
                    // Most share the group of the write that queued them, held last.
                    if !_Groups.holdsAsLast(link, me) {
                        let lease = _Groups.lock(link)
                        if lease.root != nil { roots.append(lease) }
                    }
                }
            }
        }
        if dropping {
            FileHandle.standardError.write(Data("HookBind: changes kept causing changes for \(maximumRounds) rounds (a subscriber writes what it observes?); the rest were dropped\n".utf8))
        } else if links.count > 1 {
            var sorted = true
            for i in 1..<links.count where links[i - 1].height > links[i].height {
                sorted = false
                break
            }
            if !sorted { sortByHeight(links) }
        }
        // Each taken off the queue as it is published (one whose computed
        // deinitialized is dead: skipped); those whose computed handed its
        // reference to the queue kept at the front, released once unlocked.
        var released = 0
        for i in 0..<links.count {
            if links[i]._withUnsafeGuaranteedRef({ $0.dequeueAndPublish(me, dropping: dropping) }) {
                links[released] = links[i]
                released += 1
            }
        }
        var i = roots.count
        while i > 0 {
            i -= 1
            _Groups.unlock(roots[i])
        }
        roots.removeAll(keepingCapacity: true)
        state.spareRoots = roots
        for i in 0..<released { links[i].release() }
        work.removeAll()
        state.spare = work
    }

    /// Sorts `work` by height, stably: by insertion where few (the sort
    /// of the standard library allocates in unoptimized builds, where tests
    /// count allocations), else the standard library's.
    private static func sortByHeight(_ work: UnsafeMutableBufferPointer<Unmanaged<_ComputedCore>>) {
        guard work.count <= 32 else {
            var work = work
            return work.sort { $0.height < $1.height }
        }
        for i in 1..<work.count {
            let link = work[i], height = link.height
            var j = i
            while j > 0, work[j - 1].height > height {
                work[j] = work[j - 1]
                j -= 1
            }
            work[j] = link
        }
    }
}

extension Unmanaged where Instance == _ComputedCore {
    /// The computed's height, without reference counting.
    fileprivate var height: Int { _withUnsafeGuaranteedRef { $0.height } }
}

/// Groups the writes of `body` into one change: observables written in it
/// are called at their hook points once, from their value before the batch
/// to the last one written, and computeds are brought up to date once, after
/// `body` returns.
///
/// ```swift
/// batch {
///     firstName.value = "Ada"
///     lastName.value = "Lovelace"
/// }   // fullName's subscribers hear "Ada Lovelace" once
/// ```
///
/// Inside the batch, reads see the values written so far (a computed read
/// there evaluates then, and once more after the batch: its end is a write
/// of each observable at its hook point, whose hooks may change the value).
/// Other threads see the graph before or after the whole batch, never in
/// between: the batch takes the lock of each group it touches as it first
/// touches it and keeps them all until it ends. (One exception: a thread
/// that needs a lock this batch's thread holds while that thread waits for
/// one it holds, which would be a deadlock, borrows the lock and sees the
/// batch's writes so far, as a callback of the batch's own thread would.)
/// Batches nest; the outermost one publishes. A write that a call at the batch's end causes (a
/// subscriber of one observable writes another) joins it: an observable the
/// batch wrote whose call has not run yet is called once, to the last value;
/// one whose call ran gets a call of its own, next.
public func batch<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
    try _Groups.retaining { () throws(E) -> R in
        let state = _Graph.state
        state.batchDepth += 1
        defer {
            state.batchDepth -= 1
            _Graph.endBatch(state)
        }
        return try body()
    }
}
