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
/// group (a node is a group: one object for both).
@usableFromInline
final class _Node: _Group, @unchecked Sendable {
    /// Bumped on every change of the value.
    @exclusivity(unchecked) var version: UInt64 = 0
    /// Computeds that read this value in their last evaluation (their
    /// links, +1 each, in a buffer of the node's own: walking them takes no
    /// reference, as an array's buffer would be retained for the walk).
    @exclusivity(unchecked) private var dependents: UnsafeMutablePointer<Unmanaged<_Link>>?
    @exclusivity(unchecked) private var dependentCount: Int32 = 0
    @exclusivity(unchecked) private var dependentCapacity: Int32 = 0
    /// 0 for sources; 1 + the highest dependency for computeds.
    @exclusivity(unchecked) var height = 0
    /// Set by an observable's own hook when a call at its point stored a value.
    @exclusivity(unchecked) @usableFromInline var storedByHook = false
    /// Whether a computed has read the value (until then its changes need
    /// no bookkeeping: the node may exist only as the group's lock).
    @exclusivity(unchecked) @usableFromInline var isRead = false

    @usableFromInline
    override init() {}

    deinit {
        for i in 0..<Int(dependentCount) { dependents.unsafelyUnwrapped[i].release() }
        dependents?.deallocate()
    }

    func addDependent(_ link: _Link) {
        let bits = Unmanaged.passUnretained(link).toOpaque()
        for i in 0..<Int(dependentCount) where dependents.unsafelyUnwrapped[i].toOpaque() == bits { return }
        if dependentCount == dependentCapacity {
            let capacity = max(2, Int(dependentCapacity) * 2)
            let grown = UnsafeMutablePointer<Unmanaged<_Link>>.allocate(capacity: capacity)
            if let dependents {
                grown.moveInitialize(from: dependents, count: Int(dependentCount))
                dependents.deallocate()
            }
            dependents = grown
            dependentCapacity = Int32(capacity)
        }
        dependents.unsafelyUnwrapped[Int(dependentCount)] = .passRetained(link)
        dependentCount += 1
    }

    func removeDependent(_ link: _Link) {
        let bits = Unmanaged.passUnretained(link).toOpaque()
        guard let dependents, let i = (0..<Int(dependentCount)).first(where: { dependents[$0].toOpaque() == bits }) else { return }
        let removed = dependents[i]
        // In order: the first to mark stays first.
        (dependents + i).moveInitialize(from: dependents + i + 1, count: Int(dependentCount) - i - 1)
        dependentCount -= 1
        removed.release()
    }

    /// Calls `body` with each live dependent's link, without reference counting.
    @inline(__always)
    func forEachLiveDependent(_ body: (_Link) -> Void) {
        var i = 0
        while i < Int(dependentCount) {
            dependents.unsafelyUnwrapped[i]._withUnsafeGuaranteedRef { if $0.isAlive { body($0) } }
            i += 1
        }
    }
}

/// A computed as the values it reads know it. Not a weak reference: one
/// would give every computed a side table, and every retain and release of
/// it would take Swift's slow path (a third of a diamond's time). The
/// computed's `deinit` takes its group's lock, marks its link dead and
/// removes it from its dependencies, so under that lock a live link's
/// `target` is valid memory, even while its `deinit` waits for the lock.
final class _Link {
    /// The computed (its `deinit` marks the link dead under the group's lock,
    /// so a live link's target is valid memory there). Called through its
    /// type and address, without reference counting: a method called on
    /// the existential retains it for the call.
    unowned(unsafe) let target: any _Dependent
    /// The computed's group (its lock guards the fields below).
    let group: _Group
    @exclusivity(unchecked) var isAlive = true
    /// In a thread's pending list (so it is there once).
    @exclusivity(unchecked) var isQueued = false

    private var targetObject: UnsafeRawPointer { UnsafeRawPointer(Unmanaged.passUnretained(target as AnyObject).toOpaque()) }

    /// `_markDirty()` of the computed (alive: under its group's lock).
    @inline(__always) func markDirty() { type(of: target)._markDirty(targetObject) }
    /// `_publishIfChanged()` of the computed.
    @inline(__always) func publishIfChanged() { type(of: target)._publishIfChanged(targetObject) }
    /// `_height` of the computed.
    @inline(__always) var height: Int { type(of: target)._height(targetObject) }

    init(_ target: any _Dependent, group: _Group) {
        self.target = target
        self.group = group
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
    /// `_refresh()` then `_version` of the value at `object` (one of this
    /// type), without reference counting: the caller keeps it.
    static func _refreshed(_ object: UnsafeRawPointer) -> UInt64
}

/// A computed value: told when a dependency changed, asked to publish.
protocol _Dependent: AnyObject {
    /// The value at `object` (one of this type) is to be marked dirty,
    /// published, or asked its height; the caller keeps it.
    static func _markDirty(_ object: UnsafeRawPointer)
    static func _publishIfChanged(_ object: UnsafeRawPointer)
    static func _height(_ object: UnsafeRawPointer) -> Int
}

/// One dependency as recorded by an evaluation.
struct _Dependency {
    /// Kept: a computed holds what it reads.
    let source: any _Source
    var version: UInt64

    init(source: any _Source, version: UInt64) {
        self.source = source
        self.version = version
    }

    /// Brings the source up to date and returns its version, through its
    /// type and address: no reference counting (calling a method of the
    /// `any _Source` held in memory would retain it for the call; a
    /// metatype is not counted).
    @inline(__always)
    func refreshed() -> UInt64 {
        Swift.type(of: source)._refreshed(UnsafeRawPointer(Unmanaged.passUnretained(source as AnyObject).toOpaque()))
    }
}

/// A thread's part of the graph's state (each thread has its own, see
/// `_LockThread`); nodes and computeds are only touched under their group's
/// lock (which is why their properties skip dynamic exclusivity checks).
@usableFromInline
final class _GraphState: @unchecked Sendable {
    /// The evaluations running on this thread, innermost last.
    /// `evaluationDepth` of them run now, innermost last; the rest are
    /// spare, reused so that an evaluation allocates nothing (each +1,
    /// released with the state; a stack that only grows: no array
    /// operation on an evaluation's path).
    @exclusivity(unchecked) var evaluations: [Unmanaged<_Evaluation>] = []
    @exclusivity(unchecked) var evaluationDepth = 0

    deinit {
        for evaluation in evaluations { evaluation.release() }
    }

    /// Records that the running evaluation, if any, read `source`.
    @inline(__always)
    func record(_ source: any _Source, version: UInt64) {
        let depth = evaluationDepth
        if depth > 0 { evaluations[depth - 1]._withUnsafeGuaranteedRef { $0.record(source, version: version) } }
    }
    @exclusivity(unchecked) @usableFromInline var batchDepth = 0
    /// Deferred calls of observables written in the current batch, in the order first written.
    @exclusivity(unchecked) var commits: [() -> Void] = []
    @exclusivity(unchecked) var committed: Set<ObjectIdentifier> = []
    /// Computeds with subscribers that must be brought up to date and published.
    @exclusivity(unchecked) var pending: [_Link] = []
    @exclusivity(unchecked) var spare: [_Link] = []
    @exclusivity(unchecked) var flushing = false
    /// A dependency list's storage, from a computed whose reads changed, for the next that changes.
    @exclusivity(unchecked) var spareDependencies: [_Dependency] = []
    /// The locks a publishing round holds (and the groups, kept alive), reused.
    @exclusivity(unchecked) var spareRoots: [_Lease] = []
    @exclusivity(unchecked) var spareGroups: [_Group] = []
}

/// What one evaluation of a computed read, checked against what the last
/// one read: the computed's dependencies are kept in place while each read
/// matches the next of them in order (its version is brought up to date
/// there, nothing else is written); at the first read that does not, the
/// reads so far and the rest are collected afresh. A re-evaluation that
/// reads what the last one did, in the same order (the common case),
/// builds no array and registers nothing.
final class _Evaluation {
    /// The last evaluation's dependencies (the computed's, moved here), in order.
    @exclusivity(unchecked) var dependencies: [_Dependency] = []
    /// How many of `dependencies` this evaluation has read again, in order.
    @exclusivity(unchecked) var matched = 0
    /// A read differed from the last evaluation's: `fresh` holds what it read.
    @exclusivity(unchecked) var diverged = false
    @exclusivity(unchecked) var fresh: [_Dependency] = []

    /// Records `source` unless already read (a linear scan: computeds read few values).
    func record(_ source: any _Source, version: UInt64) {
        if !diverged {
            let done = dependencies.withUnsafeMutableBufferPointer { dependencies -> Bool in
                if matched < dependencies.count, dependencies[matched].source === source {
                    dependencies[matched].version = version
                    matched += 1
                    return true
                }
                for i in 0..<matched where dependencies[i].source === source { return true }
                return false
            }
            if done { return }
            diverged = true
            fresh.removeAll(keepingCapacity: true)
            fresh.append(contentsOf: dependencies[..<matched])
        } else {
            let known = fresh.withUnsafeBufferPointer { fresh -> Bool in
                for i in fresh.indices where fresh[i].source === source { return true }
                return false
            }
            if known { return }
        }
        let node = source._node
        if !node.isRead {
            node.isRead = true
            source._becameRead()
        }
        fresh.append(_Dependency(source: source, version: node.version))
    }
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

    /// Records that the running evaluation, if any, read `source`.
    @usableFromInline
    static func track(_ source: any _Source, version: UInt64) {
        _LockThread.unmanagedCurrent._withUnsafeGuaranteedRef { $0.graph.record(source, version: version) }
    }

    /// `_Groups.holdsAsLast(group)`, and if so `track(source, version:)`,
    /// with one look-up of the thread: an observable's read inside an
    /// evaluation of its group.
    @usableFromInline @inline(never)
    static func trackIfHeld(_ source: any _Source, _ group: _Group, version: UInt64) -> Bool {
        _LockThread.unmanagedCurrent._withUnsafeGuaranteedRef { me -> Bool in
            guard _Groups.holdsAsLast(group, me) else { return false }
            me.graph.record(source, version: version)
            return true
        }
    }

    /// Evaluates `compute` with what it reads recorded (a first evaluation).
    static func evaluate<Value>(_ compute: () -> Value) -> (Value, [_Dependency]) {
        var dependencies: [_Dependency] = []
        let evaluation = beginEvaluation(&dependencies)
        let value = compute()
        _ = endEvaluation(evaluation, &dependencies)
        return (value, dependencies)
    }

    // A re-evaluation (`Computed.recompute`) runs its closure between these
    // two: checked against `dependencies`, what the last evaluation read,
    // the same sources read in the same order only bring their versions up
    // to date in place (`endEvaluation` returns nil); otherwise
    // `dependencies` becomes what it read and `endEvaluation` returns what
    // they were (to register the change).

    /// The next evaluation of the thread's stack, holding `dependencies`.
    static func beginEvaluation(_ dependencies: inout [_Dependency]) -> Unmanaged<_Evaluation> {
        _LockThread.unmanagedCurrent._withUnsafeGuaranteedRef { me in
            let state = me.graph
            let depth = state.evaluationDepth
            if depth == state.evaluations.count { state.evaluations.append(.passRetained(_Evaluation())) }
            let unmanaged = state.evaluations[depth]
            state.evaluationDepth = depth + 1
            unmanaged._withUnsafeGuaranteedRef { evaluation in
                swap(&evaluation.dependencies, &dependencies)
                evaluation.matched = 0
                evaluation.diverged = false
                // Storage for reads that differ, from the thread's spare (no allocation once warm).
                if evaluation.fresh.capacity == 0 { swap(&evaluation.fresh, &state.spareDependencies) }
            }
            return unmanaged
        }
    }

    /// Ends the innermost evaluation: `dependencies` becomes what it read,
    /// and what they were is returned if they changed.
    static func endEvaluation(_ unmanaged: Unmanaged<_Evaluation>, _ dependencies: inout [_Dependency]) -> [_Dependency]? {
        _LockThread.unmanagedCurrent._withUnsafeGuaranteedRef { me in me.graph.evaluationDepth -= 1 }
        return unmanaged._withUnsafeGuaranteedRef { evaluation -> [_Dependency]? in
            guard evaluation.diverged || evaluation.matched < evaluation.dependencies.count else {
                swap(&dependencies, &evaluation.dependencies)
                return nil
            }
            var now: [_Dependency] = []
            swap(&now, &evaluation.fresh)
            if !evaluation.diverged {
                // Fewer reads, the same up to there.
                now.removeAll(keepingCapacity: true)
                now.append(contentsOf: evaluation.dependencies[..<evaluation.matched])
            }
            var old: [_Dependency] = []
            swap(&old, &evaluation.dependencies)
            dependencies = now
            return old
        }
    }

    /// Keeps the storage of `dependencies`, emptied, for the next
    /// evaluation whose reads change (so that one allocates nothing).
    static func recycle(_ dependencies: consuming [_Dependency]) {
        dependencies.removeAll(keepingCapacity: true)
        let state = self.state
        if state.spareDependencies.capacity < dependencies.capacity { state.spareDependencies = dependencies }
    }

    @usableFromInline
    static func changed(_ node: _Node) {
        node.version &+= 1
        markDependents(of: node)
    }

    static func markDependents(of node: _Node) {
        // Borrowed in place (iterating would retain each link).
        node.forEachLiveDependent { $0.markDirty() }
    }

    /// Schedules a computed with subscribers to be published.
    static func enqueue(_ link: Unmanaged<_Link>) {
        let queued = link._withUnsafeGuaranteedRef { link -> Bool in
            if link.isQueued { return true }
            link.isQueued = true
            return false
        }
        if !queued { withState { $0.pending.append(link.takeUnretainedValue()) } }
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
        state.flushing || state.batchDepth != 0 || (state.commits.isEmpty && state.pending.isEmpty)
    }

    /// The work of `flush`: the calling thread has something to publish.
    @inline(never)
    private static func publish() {
        withState { publish($0) }
    }

    private static func publish(_ state: _GraphState) {
        guard !state.flushing, state.batchDepth == 0 else { return }
        state.flushing = true
        defer { state.flushing = false }
        var rounds = 0
        while !state.commits.isEmpty || !state.pending.isEmpty {
            if !state.commits.isEmpty {
                // Observables written in a batch (also one a subscriber ran): one call each.
                let commits = state.commits
                state.commits = []
                state.committed = []
                for commit in commits { commit() }
                continue
            }
            rounds += 1
            if state.pending.count == 1, rounds <= maximumRounds {
                // One computed to publish (the common case): the same as
                // below, without the arrays.
                let link = state.pending.removeLast()  // (taken, not retained)
                link.isQueued = false
                if link.isAlive {
                    // The write that queued it holds its group (the common
                    // case): no lock to take again.
                    if _Groups.holdsAsLast(link.group) {
                        link.publishIfChanged()
                    } else {
                        let lease = _Groups.lock(link.group)
                        link.publishIfChanged()
                        _Groups.unlock(lease)
                    }
                }
                continue
            }
            var work = state.spare
            swap(&work, &state.pending)
            // The pending computeds' groups: held already, unless a write of
            // another group queued them from inside a delivery of this one.
            var roots = state.spareRoots, groups = state.spareGroups
            (state.spareRoots, state.spareGroups) = ([], [])
            defer {
                for lease in roots.reversed() { _Groups.unlock(lease) }
                roots.removeAll(keepingCapacity: true)
                groups.removeAll(keepingCapacity: true)
                (state.spareRoots, state.spareGroups) = (roots, groups)
            }
            for link in work {
                groups.append(link.group)
                roots.append(_Groups.lock(link.group))
            }
            for link in work { link.isQueued = false }
            if rounds > maximumRounds {
                FileHandle.standardError.write(Data("HookBind: changes kept causing changes for \(maximumRounds) rounds (a subscriber writes what it observes?); the rest were dropped\n".utf8))
                work.removeAll()
            }
            // A computed that deinitialized since it was queued: its link is dead, its target gone.
            work.removeAll { !$0.isAlive }
            if work.count > 1 { work.sort { $0.height < $1.height } }
            for link in work where link.isAlive { link.publishIfChanged() }
            work.removeAll(keepingCapacity: true)
            state.spare = work
            if rounds > maximumRounds { break }
        }
    }
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
/// Inside the batch, reads see the values written so far. Other threads see
/// the graph before or after the whole batch, never in between: the batch
/// takes the lock of each group it touches as it first touches it and keeps
/// them all until it ends. Batches nest; the outermost one publishes.
public func batch<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
    try _Groups.retaining { () throws(E) -> R in
        let state = _Graph.state
        state.batchDepth += 1
        defer {
            state.batchDepth -= 1
            _Graph.flush()
        }
        return try body()
    }
}
