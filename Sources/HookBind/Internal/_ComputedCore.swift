import Hook
import Synchronization

/// What the graph knows of a `Computed`, in code that is not generic over
/// its value: its node (this object: its version, dependents, height and
/// group lock), its state, its dependencies, its place in the evaluations
/// of its thread. The object its dependencies' nodes list among their
/// dependents and a thread queues to publish.
///
/// A `Computed<Value>`'s own stored properties after its value would sit at
/// offsets read from its type's metadata, and its methods, reached through
/// the graph's protocols, run unspecialized; here every field is at a fixed
/// offset and every call direct. What needs the value type (running the
/// closure, comparing, storing, publishing) is one closure,
/// `specialized`, made where the computed is made; it captures nothing
/// (the computed's closure and value are the computed's, reached through
/// `target`), so a core that outlives its computed keeps nothing of it.
///
/// Lifetime: the computed keeps its core (+1) and so does every node that
/// lists it as a dependent and every group merged under it (a core is a
/// group: see `_Group`). A thread's queue of computeds to publish takes no
/// reference: the computed's own is handed to it if the computed goes
/// while its core is queued or being published (`handOver()`). The
/// computed's `deinit` takes its group's lock, marks the core dead, removes
/// it from its dependencies' nodes and releases what it read, so under
/// that lock a live core's `target` is valid memory, even while the
/// computed's `deinit` waits for the lock, and a dead core keeps nothing
/// but its place in the forest of groups. (Not a weak reference: one would
/// give every computed a side table, and every retain and release of it
/// would take Swift's slow path.)
///
/// Everything here is touched only under the computed's group lock (which
/// is why the fields skip dynamic exclusivity checks).
@usableFromInline
final class _ComputedCore: _Node, @unchecked Sendable {
    @usableFromInline enum State: UInt8 { case clean, dirty, evaluating }

    /// The computed's address (set once it exists), handed to `specialized`.
    @exclusivity(unchecked) @usableFromInline var target: UnsafeRawPointer?
    /// The computed's code specialized for its value type: `.evaluate` runs
    /// the closure and stores its result unless equal to the last one,
    /// returning whether it changed; `.publish` calls the hook point with
    /// the last result.
    /// (Handed the computed's address and this core, which `.evaluate`
    /// asks after the closure ran whether the computed is still there:
    /// see `keepUntilEvaluated(_:)`.)
    let specialized: (UnsafeRawPointer, Unmanaged<_ComputedCore>, _ComputedOperation) -> Bool
    /// The computed's hook point once made (+1, released when the computed
    /// goes: the computed's, kept here to be asked whether it has hooks
    /// when the computed is marked dirty).
    @exclusivity(unchecked) @usableFromInline var hookPoint: Unmanaged<HookPoint>?
    @exclusivity(unchecked) @usableFromInline var state = State.clean
    /// False once the computed began to deinitialize (see above).
    @exclusivity(unchecked) @usableFromInline var isAlive = true
    /// Its place in the publishing: queued in a thread's pending list (so
    /// it is there once), being published, whether the computed's
    /// reference was handed to the queue (see `handOver()`), and whether
    /// its value changed since subscribers last heard.
    @exclusivity(unchecked) var publishing: _Publishing = []
    /// While it evaluates: whether it diverged (a read differed from the
    /// last evaluation's, and its segment of the thread's
    /// `_GraphState.fresh` holds what it read) and whether it was lent (see
    /// `_EvaluationFlags`). One byte: the end of an evaluation asks whether
    /// it is zero, as it asked whether the evaluation diverged.
    @exclusivity(unchecked) @usableFromInline var flags: _EvaluationFlags = []
    @usableFromInline var diverged: Bool {
        @inlinable @inline(__always) get { flags.contains(.diverged) }
        @inlinable @inline(__always) set { if newValue { flags.insert(.diverged) } else { flags.remove(.diverged) } }
    }
    /// While it evaluates: how many of `dependencies` it has read again, in
    /// order (their versions brought up to date in place); once it
    /// diverged, where its segment of the thread's list begins.
    /// (The small fields together. The core is 120 bytes, a 128-byte block.)
    @exclusivity(unchecked) @usableFromInline var matchedCount: Int32 = 0
    @usableFromInline var matched: Int {
        @inlinable @inline(__always) get { Int(matchedCount) }
        @inlinable @inline(__always) set { matchedCount = Int32(truncatingIfNeeded: newValue) }
    }
    /// What the last evaluation read, in order.
    @exclusivity(unchecked) @usableFromInline var dependencies = _Dependencies()
    /// The thread of its latest evaluation (its `_LockThread`'s address):
    /// while it evaluates, a read of it on that thread is a read of itself
    /// (its previous value, not a dependency), and a read on another is by
    /// a thread that borrowed its group's lock from the parked evaluating
    /// one (a dependency: see `isEvaluating(on:)`).
    /// (In the word that kept the computed's name, now in `_CoreSideTable`
    /// with what else a core rarely has: a field more took the core from a
    /// 128-byte block to a 144-byte one. A list of each thread's
    /// evaluations instead cost the deep chain 14 instructions a node.)
    @exclusivity(unchecked) @usableFromInline var evaluatingThread: UnsafeMutableRawPointer?

    init(specialized: @escaping (UnsafeRawPointer, Unmanaged<_ComputedCore>, _ComputedOperation) -> Bool, name: String) {
        self.specialized = specialized
        super.init(isComputed: true)
        if name != _CoreSideTable.defaultName {
            publishing.insert(.named)
            _CoreSideTable.setName(name, of: self)
        }
    }


    deinit {
        dependencies.free()
        if !publishing.isDisjoint(with: [.named, .kept]) { _CoreSideTable.forget(self) }
    }

    // MARK: Evaluating

    /// Runs `body`, an evaluation, as the thread's innermost: what it reads
    /// is recorded here (`record(into:_:version:)`); then
    /// the dependencies become what it read, registered with their nodes
    /// (their groups merged into this one) if they changed. A re-evaluation
    /// that reads what the last one did, in the same order (the common
    /// case), only brings their versions up to date: no array, no
    /// registration. Under the group's lock, in a `retaining` scope the
    /// caller opened, which keeps the locks the evaluation takes (of the
    /// groups it reads) until the registration is done: one for a whole
    /// refresh (`refreshDirtyRetaining`), not one an evaluation (a chain
    /// brought up to date evaluates each node outside the others, and moved
    /// the thread's count for each, 15 instructions a node).
    /// (`me`: the calling thread's record.)
    ///
    /// Run again if the thread parked in it and another thread, borrowing a
    /// lock it held, changed what it had read (`lentEvaluationEnded`).
    @inline(__always)
    func evaluate<R>(_ me: Unmanaged<_LockThread>, _ body: () -> R) -> R {
        let outer = _BindingThread.evaluating
        _BindingThread.evaluating = Unmanaged.passUnretained(self)
        state = .evaluating
        evaluatingThread = me.toOpaque()
        matched = 0
        flags = []
        _BindingThread.lastRead = 0
        let result = body()
        _BindingThread.evaluating = outer
        _BindingThread.lastRead = 0
        state = .clean
        if !flags.isEmpty || matched < dependencies.count {
            evaluationEnded(me, outer)
        }
        return result
    }

    /// The end of an evaluation that diverged, read fewer values, or was
    /// lent: its dependencies replaced, and, if it was lent and a value it
    /// read changed meanwhile, its computed evaluated again (or, in its
    /// first evaluation, which its initializer runs, left dirty: the next
    /// read or subscription evaluates it).
    ///
    /// A lent evaluation also marks its dependents dirty: the thread that
    /// borrowed may have read this computed while it evaluated (its old
    /// value, `isEvaluating(on:)`) and brought a dependent up to date over
    /// it, clean now although this evaluation may change the value.
    @inline(never)
    private func evaluationEnded(_ me: Unmanaged<_LockThread>, _ outer: Unmanaged<_ComputedCore>?) {
        let lent = flags.contains(.lent)
        // The evaluation around this one spanned the same park: lent too,
        // whether or not this computed lives on. (Passed on only by
        // `lentEvaluationEnded`, the flag was lost where this computed went
        // meanwhile: the outer computed, which a borrower may have read and
        // now read back, kept a cycle of dependencies.)
        if lent { outer?._withUnsafeGuaranteedRef { $0.flags.insert(.lent) } }
        me._withUnsafeGuaranteedRef { replaceDependencies($0.graph) }
        guard lent, isAlive else { return }
        _Graph.markDependents(of: self)
        guard lentEvaluationEnded(outer) else { return }
        guard let target else {
            state = .dirty
            return
        }
        _ = evaluate(me) { specialized(target, Unmanaged.passUnretained(self), .evaluate) }
    }

    /// An evaluation during which the thread parked for a lock and another
    /// thread, whose chain of waits led back to this one, borrowed a lock
    /// this thread held (`_Groups.slowAcquire`): that thread may have
    /// written a value this evaluation had read before it parked, and a
    /// computed that was evaluating is not marked by a write. Its reads are
    /// all held now, so they are compared with what they are: true if one
    /// changed (a version moved, a computed marked dirty), and then its
    /// version moves (the value it stored was of two moments: what read it
    /// looks again) and the caller runs it again. The evaluation around it
    /// spanned the same park: lent too.
    private func lentEvaluationEnded(_ outer: Unmanaged<_ComputedCore>?) -> Bool {
        outer?._withUnsafeGuaranteedRef { $0.flags.insert(.lent) }
        for i in 0..<dependencies.count {
            let dependency = dependencies.base.unsafelyUnwrapped[i]
            let changed = dependency.node._withUnsafeGuaranteedRef { node in
                node.version != dependency.version
                    || (node.isComputed && Unmanaged<_ComputedCore>.fromOpaque(dependency.node.toOpaque())._withUnsafeGuaranteedRef { $0.state == .dirty })
            }
            if changed {
                version &+= 1
                publishing.insert(.unheard)
                return true
            }
        }
        return false
    }

    /// The computed deinitializes while this core evaluates (its closure
    /// let go of its last reference, say a subscribed computed's closure
    /// that clears the variable holding it, or a thread that borrowed the
    /// group's lock from the one evaluating did): under the group's lock,
    /// from `Computed.deinit`. The closure is still running, so it is kept
    /// here until the evaluation ends, and with it what it captured; the
    /// computed's object goes at once, so the evaluation touches it no more
    /// (`specialized` asks `isAlive` before storing the result) and is not
    /// published. Its reads from now on are not recorded (`recordRead`),
    /// and it is marked diverged, so that its end takes the path of an
    /// evaluation whose reads changed, which asks (`deadEvaluationEnded`):
    /// no check on the common path. The computed's reference to this core
    /// is handed over (the computed must not release it); the queue that
    /// publishes it, or the evaluation's end, queues it for
    /// `endAfterItsComputedWent()` and the release.
    func keepUntilEvaluated(_ closure: Any) {
        _CoreSideTable.keep(closure, for: self)
        publishing.insert([.handed, .kept])
        if !diverged {
            diverged = true
            matchedCount = Self.noSegment
        }
    }

    /// `matchedCount` of an evaluation whose computed went before it
    /// diverged: it has no segment in the thread's list.
    static let noSegment = Int32.max

    /// The end of an evaluation whose computed went meanwhile
    /// (`keepUntilEvaluated(_:)`), on the evaluating thread: its segment of
    /// the thread's list dropped, and the core queued (unless a publishing
    /// round up the stack has it) for `endAfterItsComputedWent()`.
    private func deadEvaluationEnded(_ graph: _GraphState) {
        if matchedCount != Self.noSegment { graph.dropFresh(from: matched) }
        if publishing.isDisjoint(with: [.queued, .publishing]) { _Graph.enqueue(Unmanaged.passUnretained(self)) }
    }

    /// An evaluation whose computed went meanwhile, once it ended and the
    /// core came off a queue (not on the stack any more): what
    /// `Computed.deinit` does for a computed that goes outside its
    /// evaluation (no longer a dependent of what it read, which is released
    /// after the closure).
    private func endAfterItsComputedWent() {
        unregisterAll()
        let read = dependencies
        dependencies = _Dependencies()
        publishing.remove(.kept)
        // (The closure first: then what it read, as `Computed` lets go of them.)
        _ = _CoreSideTable.takeKept(of: self)
        _Graph.listForRelease(read)
        _Graph.releaseListed()
    }

    /// Records that the evaluation `core` read `source` at `version`,
    /// unless it read it already, without reference counting. The common
    /// cases inline (`recordedInline`): the next of the last evaluation's
    /// reads, or the one just read again. (Its inline part and the rest in
    /// separate closures: one closure around both was not inlined, a call
    /// on every read.)
    @inlinable @inline(__always)
    static func record(into core: Unmanaged<_ComputedCore>, _ source: any _Source, version: UInt64, _ graph: _GraphState) {
        if core._withUnsafeGuaranteedRef({ $0.recordedInline(source, version: version, graph) }) { return }
        core._withUnsafeGuaranteedRef { $0.recordRead(source, version: version, graph) }
    }

    /// The common records: the next of the last evaluation's reads, or the
    /// one just read again; false if neither (nothing done then).
    @inlinable @inline(__always)
    func recordedInline(_ source: any _Source, version: UInt64, _ graph: _GraphState) -> Bool {
        switch knownRead(source, graph) {
        case .next:
            recordNext(version: version)
            return true
        case .again: return true
        case .unknown: return false
        }
    }

    /// Whether this evaluation (running on the calling thread, whose
    /// state is `graph`) knows a read of `source`: the next of the last
    /// evaluation's reads, or one it read already (the last one, or any
    /// once it diverged: in its segment of `graph.fresh`). Such a
    /// source's group is held by the calling thread: the last evaluation's
    /// sources were merged into this computed's group (groups never
    /// split), whose lock the evaluation holds, and a source read in this
    /// evaluation had its lock taken and kept until the evaluation ends
    /// (`_Groups.beginRetaining`). So a read of it needs no look at the
    /// locks the thread holds. (The thread's state passed in: looked up
    /// here, it made the optimizer outline the record of every read, 20
    /// instructions a read more.)
    @inlinable @inline(__always)
    func knownRead(_ source: AnyObject, _ graph: _GraphState) -> _KnownRead {
        if diverged {
            if _BindingThread.lastRead == UInt(bitPattern: Unmanaged.passUnretained(source).toOpaque()) { return .again }
            return graph.freshContains(source, from: matched) ? .again : .unknown
        }
        return knownInOrder(source)
    }

    /// Records a read of `source`, whose node is `node`, if it is known
    /// before the evaluation diverged: the next of the last evaluation's
    /// reads (its version read only then: held) or the one just read
    /// again; false, and nothing done, if not. No look at the thread's
    /// state (inlined where an observable is read; the rest is out of
    /// line, see `_Graph.trackIfHeld`).
    @inlinable @inline(__always)
    func knownInOrder(_ source: AnyObject, _ node: () -> Unmanaged<_Node>) -> Bool {
        switch knownInOrder(source) {
        case .next:
            recordNext(version: node()._withUnsafeGuaranteedRef { $0.version })
            return true
        case .again: return true
        case .unknown: return false
        }
    }

    /// `knownRead` before the evaluation diverged (after, only the last
    /// read is known here), with no look at the thread's graph state.
    /// The value read last first (`_BindingThread.lastRead`: one compare,
    /// where the rest was 19 instructions a read again). (Called on the
    /// thread's innermost evaluation only: the thread's last read is its.)
    @inlinable @inline(__always)
    func knownInOrder(_ source: AnyObject) -> _KnownRead {
        let address = UInt(bitPattern: Unmanaged.passUnretained(source).toOpaque())
        if _BindingThread.lastRead == address { return .again }
        if diverged { return .unknown }
        let i = matched
        if i < dependencies.count, dependencies.base.unsafelyUnwrapped[i].source === source {
            _BindingThread.lastRead = address
            return .next
        }
        // (Known by the last read when it was set, but an evaluation
        // nested since cleared it.)
        if i > 0, dependencies.base.unsafelyUnwrapped[i - 1].source === source { return .again }
        return .unknown
    }

    /// Records the read `knownRead` found `.next`, at `version`.
    @inlinable @inline(__always)
    func recordNext(version: UInt64) {
        let i = matched
        dependencies.base.unsafelyUnwrapped[i].version = version
        matched = i + 1
    }

    /// A read the evaluation does not know (`knownRead` said `.unknown`:
    /// `record(into:_:version:_:)`'s inline checks, or
    /// `_Graph.trackIfHeldElsewhere`'s): found among the earlier reads
    /// (a linear scan: computeds read few values) or recorded as new.
    @usableFromInline
    func recordRead(_ source: any _Source, version: UInt64, _ graph: _GraphState) {
        // (Its computed went: nothing more recorded. See `keepUntilEvaluated`.)
        guard isAlive else { return }
        if !diverged {
            // Read earlier in this evaluation (the last one was asked)?
            var i = 0
            while i < matched - 1 {
                if dependencies.base.unsafelyUnwrapped[i].source === source { return }
                i += 1
            }
            // The first read that differs from the last evaluation's:
            // collect afresh, in a segment of the thread's list (its storage
            // kept there: no allocation once warm, and none per computed).
            // (`matched` holds where its segment begins from now on.)
            diverged = true
            let same = matched
            matched = graph.fresh.count
            for i in 0..<same { graph.fresh.append(dependencies.base.unsafelyUnwrapped[i]) }
        }
        // (Diverged: `record` found it not among the reads so far.)
        let read = source._node
        if !read.isRead {
            read.isRead = true
            source._becameRead()
        }
        graph.fresh.append(_Dependency(source: source, version: version))
        _BindingThread.lastRead = UInt(bitPattern: Unmanaged.passUnretained(source as AnyObject).toOpaque())
    }

    /// After an evaluation that read other values than the last one: makes
    /// this computed a dependent of what it read and no longer of what it
    /// stopped reading, merges the groups of what it read into its own
    /// (all held: the evaluation's locks are kept), and takes its height.
    private func replaceDependencies(_ graph: _GraphState) {
        guard isAlive else { return deadEvaluationEnded(graph) }
        if !diverged {
            // Fewer reads, the same up to there.
            for i in matched..<dependencies.count {
                dependencies.base.unsafelyUnwrapped[i].sourceNode.removeDependent(self)
            }
            dependencies.removeLast(dependencies.count - matched)
        } else {
            let start = matched
            let fresh = UnsafeBufferPointer(start: graph.fresh.base.unsafelyUnwrapped + start, count: graph.fresh.count - start)
            // The segment begins with the reads the last evaluation made
            // too, in its order, up to where it diverged: of those this
            // computed is a dependent already, in their group. (Added again,
            // each asked its dependents whether it was among them: a value
            // that 10,000 computeds read made each one's change of reads
            // a scan of 10,000.)
            var kept = 0
            while kept < fresh.count, kept < dependencies.count,
                  fresh[kept].source === dependencies.base.unsafelyUnwrapped[kept].source {
                kept += 1
            }
            // Past them, where every earlier read was among them (a first
            // evaluation, or one that read more), each read is new: this
            // computed is not its dependent yet, and is added without asking.
            let allNew = kept == dependencies.count
            let root = unmanagedRoot.toOpaque()
            for i in kept..<fresh.count {
                let group = fresh[i].sourceNode
                // (Most often in this group already: no merge to ask for.)
                if group.unmanagedRoot.toOpaque() != root { _Groups.mergeHeld(self, group) }
                if allNew { group.appendDependent(self) } else { group.addDependent(self) }
            }
            for i in kept..<dependencies.count {
                let dependency = dependencies.base.unsafelyUnwrapped[i]
                if !graph.freshContains(dependency.source, from: start) { dependency.sourceNode.removeDependent(self) }
            }
            dependencies.replace(with: fresh)
            graph.dropFresh(from: start)
        }
        var height = 0
        for i in 0..<dependencies.count {
            height = max(height, dependencies.base.unsafelyUnwrapped[i].sourceNode.height + 1)
        }
        self.height = height
    }

    /// Evaluates again if a dependency really changed (after bringing it up
    /// to date), and bumps the version if the value changed.
    @inlinable @inline(__always)
    func refresh() {
        if state == .dirty { refreshDirtyRetaining(_LockThread.unmanagedCurrent) }
    }

    /// The work of `refresh` for a dirty computed, in a `retaining` scope
    /// (see `evaluate`): its dirty dependencies brought up to date in the
    /// same scope (`refreshDirty(_:)`).
    @usableFromInline
    func refreshDirtyRetaining(_ me: Unmanaged<_LockThread>) {
        // (Each use of the thread a closure of its own: one closure around
        // the whole was outlined, a call more a refresh.)
        me._withUnsafeGuaranteedRef { _Groups.beginRetaining($0) }
        refreshDirtyInScope(me, depth: 0)
        me._withUnsafeGuaranteedRef { _Groups.endRetaining($0) }
    }

    /// A dirty computed's refresh inside a `retaining` scope: one read
    /// inside an evaluation, in the evaluation's (every evaluation runs in
    /// one: see `evaluate`).
    @usableFromInline @inline(never)
    func refreshDirty(_ me: Unmanaged<_LockThread>) {
        refreshDirtyInScope(me, depth: 0)
    }

    /// How deep a refresh goes into dirty dependencies by recursion
    /// before it goes on without (`refresh(waitingAt:on:_:)`).
    static let recursionDepth = 8

    /// A dirty dependency's refresh, `depth` levels below the refresh that
    /// reached it (the recursion of `refreshDirtyInScope`).
    @inline(never)
    private func refreshDirty(_ me: Unmanaged<_LockThread>, depth: Int) {
        refreshDirtyInScope(me, depth: depth)
    }

    /// Brings this dirty computed up to date: its dependencies in order,
    /// each dirty one brought up to date first, until one's version differs
    /// from the one the last evaluation read (then it evaluates) or none
    /// does (then it is clean). By recursion for the first
    /// `recursionDepth` levels, then without (`refresh(waitingAt:on:_:)`):
    /// a chain of 50 refreshed by recursion took two fifths more time than
    /// without (1,200 ns and 845 a write in call-counts' deep case),
    /// although it ran a tenth fewer instructions; a shallow graph is
    /// faster by recursion (mux 3%).
    @inline(__always)
    private func refreshDirtyInScope(_ me: Unmanaged<_LockThread>, depth: Int) {
        var i = 0
        var resumed = false
        while let dirty = firstDirtyDependency(from: &i, resumed: resumed, me) {
            guard depth < Self.recursionDepth else {
                // This one, and what it waits on, without recursion.
                refresh(waitingAt: i, on: dirty, me)
                return
            }
            dirty._withUnsafeGuaranteedRef { $0.refreshDirty(me, depth: depth &+ 1) }
            resumed = true
        }
    }

    /// Evaluates again; the version bumped if the value changed.
    @inline(__always)
    private func reevaluate(_ me: Unmanaged<_LockThread>) {
        let target = self.target.unsafelyUnwrapped
        let changed = evaluate(me) { specialized(target, Unmanaged.passUnretained(self), .evaluate) }
        if changed {
            version &+= 1
            publishing.insert(.unheard)
        }
    }

    /// `refreshDirtyInScope` without recursion, for this computed, which
    /// waits on `dirty`, its dependency at `index`: a computed that waits
    /// on a dirty dependency is kept on the thread's stack
    /// (`_GraphState.refreshing`) with where it stopped, and resumed there
    /// once the dependency is clean. An evaluation here may refresh others
    /// as it reads them: they use the stack above this refresh's part, and
    /// leave it as they found it.
    @inline(never)
    private func refresh(waitingAt index: Int, on dirty: Unmanaged<_ComputedCore>, _ me: Unmanaged<_LockThread>) {
        let graph = me._withUnsafeGuaranteedRef { Unmanaged.passUnretained($0.graph) }
        let bottom = graph._withUnsafeGuaranteedRef { $0.refreshing.count }
        graph._withUnsafeGuaranteedRef { $0.refreshing.push(_Refreshing(core: Unmanaged.passUnretained(self), index: index)) }
        var core = dirty
        var i = 0
        var resumed = false
        while true {
            let dirty = core._withUnsafeGuaranteedRef { $0.firstDirtyDependency(from: &i, resumed: resumed, me) }
            if let dirty {
                graph._withUnsafeGuaranteedRef { $0.refreshing.push(_Refreshing(core: core, index: i)) }
                core = dirty
                i = 0
                resumed = false
                continue
            }
            // Up to date: resume the one that waited on it, if any.
            guard let resuming = graph._withUnsafeGuaranteedRef({ $0.refreshing.count > bottom ? $0.refreshing.removeLast() : nil }) else { return }
            core = resuming.core
            i = resuming.index
            resumed = true
        }
    }

    /// A refresh's walk of this computed's dependencies from `i`: the
    /// first dirty computed among them (`i` its index), or nil once this
    /// computed is up to date (evaluated, or clean).
    /// `resumed`: the one at `i` was brought up to date since the walk
    /// stopped there (no need to ask again whether it is dirty).
    @inline(__always)
    private func firstDirtyDependency(from i: inout Int, resumed: Bool, _ me: Unmanaged<_LockThread>) -> Unmanaged<_ComputedCore>? {
        var resumed = resumed
        while i < dependencies.count {
            // In place, through its node: no reference counting.
            let dependency = dependencies.base.unsafelyUnwrapped + i
            let node = dependency.pointee.node
            if !resumed, node._withUnsafeGuaranteedRef({ $0.isComputed }) {
                let core = Unmanaged<_ComputedCore>.fromOpaque(node.toOpaque())
                if core._withUnsafeGuaranteedRef({ $0.state == .dirty }) { return core }
            }
            resumed = false
            if node._withUnsafeGuaranteedRef({ $0.version }) != dependency.pointee.version {
                reevaluate(me)
                return nil
            }
            i += 1
        }
        walkFoundNoChange(me)
        return nil
    }

    /// The end of a walk that found no read changed: the computed is clean.
    /// But if the thread parked in the walk and was lent, what it saw before
    /// may have changed since (`walkAgainAfterLending`). (Nothing of the
    /// walk's own state touched here: a first version that handed a dirty
    /// dependency back to the walk made the optimizer reshape the walk's
    /// loop, 12 instructions more a node of a chain although it never came
    /// here.)
    @inline(__always)
    private func walkFoundNoChange(_ me: Unmanaged<_LockThread>) {
        if _slowPath(me._withUnsafeGuaranteedRef({ $0.walksLent })) { return walkAgainAfterLending(me) }
        state = .clean
    }

    /// The end of a walk that found no read changed, on a thread that
    /// parked and was lent since its outermost `retaining` scope began
    /// (`_LockThread.walksLent`): an evaluation in the walk (of a dirty
    /// dependency) may have parked for a lock while a thread waiting for one
    /// this thread held borrowed it and wrote a value the walk had found
    /// unchanged before, and a write does not mark a computed already
    /// dirty. So the reads are looked at again from the first, each dirty
    /// computed among them brought up to date first (a refresh of its own:
    /// this is rare), and a changed version evaluates this computed.
    @inline(never)
    private func walkAgainAfterLending(_ me: Unmanaged<_LockThread>) {
        for j in 0..<dependencies.count {
            let dependency = dependencies.base.unsafelyUnwrapped[j]
            let node = dependency.node
            if node._withUnsafeGuaranteedRef({ $0.isComputed }) {
                let core = Unmanaged<_ComputedCore>.fromOpaque(node.toOpaque())
                if core._withUnsafeGuaranteedRef({ $0.state == .dirty }) { core._withUnsafeGuaranteedRef { $0.refreshDirty(me) } }
            }
            if node._withUnsafeGuaranteedRef({ $0.version }) != dependency.version {
                reevaluate(me)
                return
            }
        }
        state = .clean
    }

    // MARK: Reading

    /// A read of the computed (`source`) inside an evaluation that holds
    /// its group: one the evaluation knows, or one by a thread whose last
    /// lock is its group's root (held, and the root cannot change
    /// meanwhile, since a merge needs that lock): brought up to date and
    /// recorded. False, and nothing done, outside any evaluation or if the
    /// thread does not hold it so (the caller then reads under the lock).
    ///
    /// Inline, where the value is read, is only the common read: a clean
    /// computed that the running evaluation knows in order (the next of its
    /// last reads, or the one just read again: held, see `knownRead`);
    /// a known one that is not clean is `readKnownUnclean`, anything else
    /// `readIfHeldElsewhere`, out of line. (As
    /// `_Graph.trackIfHeld`: the whole of it was not inlined, and half of
    /// it was the prologue and epilogue its rarer paths need.)
    @inlinable @inline(__always)
    func readIfHeld<Source: _Source>(_ source: Source) -> Bool {
        // Outside an evaluation: the read under the lock (`_lockedValue`,
        // reentrant where the thread holds it already).
        guard let evaluating = _BindingThread.evaluating else { return false }
        // (Known: held, so its state may be read.)
        switch evaluating._withUnsafeGuaranteedRef({ $0.knownInOrder(source) }) {
        case .next where state == .clean:
            evaluating._withUnsafeGuaranteedRef { $0.recordNext(version: version) }
            return true
        case .again where state == .clean:
            return true
        case .next:
            readKnownUnclean(evaluating, next: true)
            return true
        case .again:
            readKnownUnclean(evaluating, next: false)
            return true
        case .unknown:
            return readIfHeldElsewhere(source)
        }
    }

    /// A read `evaluating` knows (held: no look at the thread's locks) of
    /// this computed while it is dirty (brought up to date, then recorded
    /// if `next`) or evaluating (its previous value: on this thread a read
    /// of itself, not recorded; see `isEvaluating(on:)`).
    /// (Not inlinable, unlike the rest of the read: nothing in it depends
    /// on the source's type, and here the refresh is inlined into it, one
    /// call a dirty read less: triangle 3,443 -> 3,362 instructions a write,
    /// the diamond 1,031 -> 1,022.)
    @usableFromInline @inline(never)
    func readKnownUnclean(_ evaluating: Unmanaged<_ComputedCore>, next: Bool) {
        let me = _LockThread.unmanagedCurrent
        if state == .dirty {
            // (In the evaluation's `retaining` scope: see `evaluate`.)
            refreshDirtyInScope(me, depth: 0)
        } else if isEvaluating(on: me) {
            return
        }
        // (Unless the evaluation's computed went in that refresh, which
        // its closure may cause: its reads are no longer recorded, and its
        // cursor is no index, see `keepUntilEvaluated`. Nothing else makes a
        // suspended evaluation diverge.)
        if next { evaluating._withUnsafeGuaranteedRef { if !$0.diverged { $0.recordNext(version: version) } } }
    }

    /// Whether this computed, evaluating, does so on the thread `me`: a read
    /// of it there is a read of itself (directly or through others), which
    /// gets the previous value and is no dependency. Otherwise the
    /// evaluation is on a thread parked in it, from which `me` borrowed the
    /// group's lock (or took it after such a borrower merged the group):
    /// `me` reads the previous value too, but as a dependency, which the
    /// evaluation's end marks dirty (`evaluationEnded`). (Not recorded, the
    /// borrower's computed dropped it from its dependencies, and no later
    /// change of it reached that computed.)
    @usableFromInline
    func isEvaluating(on me: Unmanaged<_LockThread>) -> Bool {
        evaluatingThread == me.toOpaque()
    }

    /// The rest of `readIfHeld`, inside an evaluation: held as the thread's
    /// last lock, brought up to date and recorded (not while this computed
    /// evaluates on this thread: a read of itself gets the previous value),
    /// or false.
    @inlinable @inline(never)
    func readIfHeldElsewhere<Source: _Source>(_ source: Source) -> Bool {
        let me = _LockThread.unmanagedCurrent
        guard me._withUnsafeGuaranteedRef({ _Groups.holdsAsLast(self, $0) }) else { return false }
        if state != .evaluating || !isEvaluating(on: me) {
            // (In the evaluation's `retaining` scope: see `evaluate`.)
            if state == .dirty { refreshDirty(me) }
            _Graph.record(source, version: version, by: me)
        }
        return true
    }

    /// A read of the computed (`source`) under its group's lock: brought up
    /// to date and recorded by the running evaluation (not while this
    /// computed evaluates on this thread: a read of itself gets the previous
    /// value).
    @usableFromInline
    func prepareRead(_ source: any _Source) {
        if state != .evaluating || !isEvaluating(on: _LockThread.unmanagedCurrent) {
            refresh()
            _Graph.track(source, version: version)
        }
    }

    // MARK: Propagating

    /// A dependency changed: dirty, queued to publish if it has
    /// subscribers, and so are its dependents.
    /// (A chain, each read by the next alone, is marked in this loop: a
    /// dependent kept in place, the only one, is marked next here, not in
    /// a call of the walk, whose prologue and epilogue, saving the registers
    /// its buffer's walk needs, were two thirds of its cost a node.)
    func markDirty() {
        var core = Unmanaged.passUnretained(self)
        while let next = core._withUnsafeGuaranteedRef({ $0.markedDirty() }) { core = next }
    }

    /// Marks this core dirty and its dependents but the only one in place,
    /// which it returns (if live) for the caller to mark.
    @inline(__always)
    private func markedDirty() -> Unmanaged<_ComputedCore>? {
        guard state == .clean else { return nil }
        state = .dirty
        if let hookPoint, hookPoint._withUnsafeGuaranteedRef({ $0._hasHooks }) {
            _Graph.enqueue(Unmanaged.passUnretained(self))
        }
        if let only = onlyDependentInPlace {
            return only._withUnsafeGuaranteedRef { $0.isAlive } ? only : nil
        }
        _Graph.markDependents(of: self)
        return nil
    }

    /// Brought up to date, and its new value delivered to its hook point if
    /// it changed since subscribers last heard (`me`: the calling thread's
    /// record).
    func publishIfChanged(_ me: Unmanaged<_LockThread>) {
        if state == .dirty { refreshDirtyRetaining(me) }
        // (Its computed may have gone in the refresh: `keepUntilEvaluated`.)
        guard publishing.contains(.unheard), isAlive else { return }
        publishing.remove(.unheard)
        _ = specialized(target.unsafelyUnwrapped, Unmanaged.passUnretained(self), .publish)
    }

    /// The computed deinitializes (under its group's lock): true if its
    /// reference to this core is now the queue's, because the core is
    /// queued or being published (the queue takes no reference of its own:
    /// a write to a shared reference count per published computed per
    /// write); false if the computed releases it, after the lock.
    func handOver() -> Bool {
        guard !publishing.isDisjoint(with: [.queued, .publishing]) else { return false }
        publishing.insert(.handed)
        return true
    }

    /// Publishes it if alive (taken off the queue; under its group's lock):
    /// true if the caller must release it afterwards, outside the lock (the
    /// computed was gone and had handed its reference to the queue, and it
    /// is not queued again).
    ///
    /// A publishing may run inside another of the same core: a thread that
    /// borrowed the group's lock from one parked in this core's delivery
    /// (a subscriber waiting for a lock) wrote a value it reads and
    /// published it. The inner one leaves the mark, and the reference a
    /// computed handed over meanwhile, to the outer one, still on the parked
    /// thread's stack: it alone may release the core. (The inner one cleared
    /// the mark, the computed's `deinit` then released the core itself, and
    /// the outer publishing resumed in freed memory.)
    func dequeueAndPublish(_ me: Unmanaged<_LockThread>, dropping: Bool = false) -> Bool {
        let nested = publishing.contains(.publishing)
        publishing.remove(.queued)
        publishing.insert(.publishing)
        if isAlive, !dropping {
            publishIfChanged(me)
        } else if isAlive, state == .dirty {
            // Dropped (rounds cut): brought up to date, unheard, so that a
            // later write queues it again. (Left dirty, no write did, a
            // write not queueing a computed already dirty: its subscribers
            // heard nothing more.)
            refreshDirtyRetaining(me)
        }
        if nested { return false }
        publishing.remove(.publishing)
        guard publishing.contains(.handed), !publishing.contains(.queued) else { return false }
        if publishing.contains(.kept), !endedAfterItsComputedWent() { return false }
        publishing.remove(.handed)
        return true
    }

    /// A handed core taken off the queue whose computed went while it
    /// evaluated (`keepUntilEvaluated`): `endAfterItsComputedWent()`, and
    /// true, unless the evaluation still runs (on a thread that lent this
    /// one the group's lock: its end queues the core again).
    @inline(never)
    private func endedAfterItsComputedWent() -> Bool {
        if state == .evaluating { return false }
        endAfterItsComputedWent()
        return true
    }

    /// Drops every dependency (the computed deinitializes; under its group's
    /// lock): no longer a dependent of their nodes.
    func unregisterAll() {
        for i in 0..<dependencies.count {
            dependencies.base.unsafelyUnwrapped[i].sourceNode.removeDependent(self)
        }
    }
}

/// What few cores have, kept outside them (a word in each core was a
/// 144-byte block rather than a 128-byte one): a computed's name other than
/// the default (its core's `.named` mark says it has one), and the closure
/// of a computed that went while it evaluated, kept until the evaluation
/// ends (`_ComputedCore.keepUntilEvaluated(_:)`, the `.kept` mark). Under a
/// lock of its own, taken when a core so marked is made or goes and by
/// `Computed.name` (never on a write's or a read's path), and never while
/// a closure is released (its captures' `deinit`s may make named computeds).
enum _CoreSideTable {
    /// `Computed.init`'s default name, which is not kept.
    static let defaultName = "computed"

    private struct Entries {
        var names: [ObjectIdentifier: String] = [:]
        var kept: [ObjectIdentifier: Kept] = [:]
    }

    /// A kept closure (only touched under the lock, and by the core that
    /// kept it).
    private final class Kept: @unchecked Sendable {
        let closure: Any
        init(_ closure: Any) { self.closure = closure }
    }

    private static let entries = Mutex(Entries())
    /// Names `entries`' lock to ThreadSanitizer (`withVisibleLock`): two
    /// threads each keeping a gone computed's closure were reported racing
    /// on the table, its lock's synchronization unseen.
    private final class LockName: Sendable {}
    private static let lockName = LockName()

    static func setName(_ name: String, of core: _ComputedCore) {
        entries.withVisibleLock(lockName) { $0.names[ObjectIdentifier(core)] = name }
    }

    /// (Asked without the group's lock: the caller keeps the core, whose
    /// entry is set before the computed exists and dropped with the core.)
    static func name(of core: Unmanaged<_ComputedCore>) -> String {
        let id = core._withUnsafeGuaranteedRef { ObjectIdentifier($0) }
        return entries.withVisibleLock(lockName) { $0.names[id] } ?? defaultName
    }

    static func keep(_ closure: Any, for core: _ComputedCore) {
        let kept = Kept(closure)
        entries.withVisibleLock(lockName) { $0.kept[ObjectIdentifier(core)] = kept }
    }

    /// The kept closure, taken out (the caller lets go of it after the lock).
    static func takeKept(of core: _ComputedCore) -> AnyObject? {
        entries.withVisibleLock(lockName) { $0.kept.removeValue(forKey: ObjectIdentifier(core)) }
    }

    /// Drops what `core`, deinitializing, had here.
    static func forget(_ core: _ComputedCore) {
        let id = ObjectIdentifier(core)
        let kept = entries.withVisibleLock(lockName) { entries -> Kept? in
            entries.names[id] = nil
            return entries.kept.removeValue(forKey: id)
        }
        _ = kept
    }
}

/// A computed waiting, in a refresh, on its dirty dependency at `index`
/// (`_ComputedCore.refresh(waitingAt:on:_:)`).
struct _Refreshing {
    let core: Unmanaged<_ComputedCore>
    let index: Int
}

/// Where a read stands in the running evaluation (`_ComputedCore.knownRead`).
@usableFromInline
enum _KnownRead {
    /// Not known: the thread's locks decide whether it is held.
    case unknown
    /// The next of the last evaluation's reads.
    case next
    /// Read already in this evaluation.
    case again
}

/// A computed core's place in the publishing of changes (see
/// `_ComputedCore.handOver()`), in one byte.
struct _Publishing: OptionSet {
    let rawValue: UInt8
    /// In a thread's pending list.
    static let queued = _Publishing(rawValue: 1)
    /// Its delivery is running (a subscriber may drop the computed).
    static let publishing = _Publishing(rawValue: 2)
    /// The computed is gone and its reference to the core is the queue's.
    static let handed = _Publishing(rawValue: 4)
    /// Its value changed since subscribers last heard (or since the hook
    /// point was made).
    static let unheard = _Publishing(rawValue: 8)
    /// Its computed has a name other than the default (`_CoreSideTable`).
    static let named = _Publishing(rawValue: 16)
    /// Its computed went while it evaluated; the closure is kept until the
    /// evaluation ends (`_CoreSideTable`).
    static let kept = _Publishing(rawValue: 32)
}

/// What a running evaluation has met (`_ComputedCore.flags`), in one byte.
@usableFromInline
struct _EvaluationFlags: OptionSet, Sendable {
    @usableFromInline let rawValue: UInt8
    @inlinable init(rawValue: UInt8) { self.rawValue = rawValue }
    /// A read differed from the last evaluation's.
    /// (Computed, not stored: a stored static is reached through its
    /// one-time initializer's check, which every read of an evaluation paid.)
    @inlinable static var diverged: _EvaluationFlags { _EvaluationFlags(rawValue: 1) }
    /// The thread parked in it, and another borrowed a lock it held
    /// (`_ComputedCore.lentEvaluationEnded`).
    @inlinable static var lent: _EvaluationFlags { _EvaluationFlags(rawValue: 2) }
}

/// What `_ComputedCore.specialized` is asked to do.
@usableFromInline
enum _ComputedOperation {
    case evaluate, publish
}

/// A computed's dependencies (see `_Buffer`).
@usableFromInline typealias _Dependencies = _Buffer<_Dependency>

extension _Buffer where Element == _Dependency {
    /// Whether `source` is among them from `start` on (a linear scan,
    /// latest first).
    @inlinable @inline(__always)
    func contains(_ source: AnyObject, from start: Int) -> Bool {
        var i = count - 1
        while i >= start {
            if base.unsafelyUnwrapped[i].source === source { return true }
            i -= 1
        }
        return false
    }
}
