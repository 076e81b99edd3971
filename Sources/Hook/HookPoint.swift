import CHookThreads
import Glibc
import Synchronization

/// Anything whose calls can be intercepted: a C function (``FunctionHook``;
/// ``ImportHook`` for the calls every loaded library makes to an imported one),
/// a Swift closure (``ClosureHook``, ``ThrowingClosureHook``), a `@Hooked`
/// property of one object (``PropertyHook``) or a hookable method of one
/// object (``MethodHook``).
///
/// Every kind has the same hooks: `before` (sees and may replace the
/// arguments, or ``CallBack/veto()`` the call), `instead` (replaces the call,
/// may ``CallBack/invokeOriginal()``), `after` (sees and may replace the
/// result), each receiving the ``CallBack`` of the call; the same tokens, owners,
/// reentrancy guard and ``withoutHooks(_:)``.
///
/// ## Threads
/// Calls may run on any number of threads while hooks are added and removed:
/// the call path of a synchronous hook point takes no lock and allocates
/// nothing (an ``AsyncClosureHook``'s call with hooks takes its point's lock
/// to load the hooks and allocates its call's context). Hooks run on the
/// thread that makes the call, so state they share needs its own
/// synchronization.
///
/// A call runs the hooks attached when it began: a hook removed meanwhile
/// (by another thread, or by an earlier hook of the same call) still runs in
/// it; calls that begin after ``HookToken/remove()`` returned do not run it.
///
/// ## How hooks stay valid while calls are in flight
/// 1. A caller announces the hook point in its thread's frame stack
///    (`hk_thread_enter`: a plain store plus the light half of an asymmetric
///    fence, or a seq_cst store where membarrier(2) is unavailable), then
///    loads the snapshot.
/// 2. A writer swaps in a new snapshot (seq_cst exchange) and hands the old
///    one to the retired list (`_Retired`), shared by every hook point. No
///    system call: adding or removing a hook is a lock, an allocation and an
///    exchange.
/// 3. Retired snapshots are freed in batches: when enough have gathered,
///    when a ``HookBag`` empties, or on ``reclaimRetiredHooks()``, one fence
///    (the heavy half, `membarrier`) and one scan of every thread's frames
///    serve the whole batch. By the fence, a caller that loaded an old
///    snapshot announced itself before the exchange, so the scan sees it; a
///    snapshot of a hook point that no thread is inside is freed, the others
///    wait for a later batch. A hook point's own retired snapshots are freed
///    by its `deinit` (no call can be in flight then).
public class HookPoint: @unchecked Sendable, CustomStringConvertible {
    // MARK: What the calls look like (read by CallBack)

    /// The number of arguments.
    @usableFromInline let argumentCountValue: Int
    /// `CType._scalarCode` of each argument, then of the result (C functions).
    @usableFromInline let codes: UnsafeMutablePointer<UInt8>
    /// The Swift type of each argument, then of the result (typed hook points);
    /// `nil` entries for C functions, whose typed access goes by C type.
    @usableFromInline let typeIDs: UnsafeMutablePointer<ObjectIdentifier?>
    /// The offset of each argument in the tuple `(repeat each A)` that a typed
    /// call keeps its arguments in (kept after `typeIDs`, see `_Shape`).
    @inlinable
    final var _argumentOffsets: UnsafePointer<Int> {
        UnsafeRawPointer(typeIDs + argumentCountValue + 1).assumingMemoryBound(to: Int.self)
    }
    /// Whether arguments and result are C memory described by a ``Signature``.
    @usableFromInline let isCFunction: Bool
    /// The shared description of the calls (see `_Shape`): it owns the
    /// `codes` and `typeIDs` above, so the point keeps it.
    let sharedShape: _Shape
    /// What the calls look like: types, kind, signature.
    var shape: _CallShape { sharedShape.shape }

    // MARK: Identity

    private let fixedName: String?
    private weak var fixedTarget: AnyObject?
    /// The name of a property or method hook point, learnt once asked for:
    /// 0, or the bit pattern of a +1 `_LateName`, set once. (A lock here
    /// was taken on every call a traced or logged point made, to name it.)
    private let lateNameBits = Atomic<UInt>(0)

    // MARK: Hooks

    /// The current hooks (`_Hooks`): 0 for none, else the bit pattern of a
    /// +1 `Unmanaged` of the one hook (bit 1 set) or of a `_HookSnapshot`.
    /// Bit 0 set forces calls onto the slow path (while a key path is probed).
    @usableFromInline let current = Atomic<Int>(0)
    /// One object of this package's, hung on the point (HookBind: the lock
    /// group of the bindings that use the point), +1, released with the
    /// point; 0 until asked for. See `_attachedObject(orAttach:)`.
    private let attachedBits = Atomic<UInt>(0)
    private let state = Mutex(_HookState())

    init(name: String?, shape: _Shape, target: AnyObject?) {
        self.fixedName = name
        self.fixedTarget = target
        self.sharedShape = shape
        self.isCFunction = shape.shape.isCFunction
        self.argumentCountValue = shape.shape.argumentCount
        self.codes = shape.codes
        self.typeIDs = shape.typeIDs
    }

    deinit {
        // No call is in flight any more (each kind's contract), so the snapshots can go.
        _Hooks.releasePublished(current.load(ordering: .acquiring) & ~_Hooks.probedBit)
        if state.withVisibleLock(self, { $0.hasRetired }) { _Retired.forget(pointID) }
        let attached = attachedBits.load(ordering: .acquiring)
        if attached != 0 { Unmanaged<AnyObject>.fromOpaque(UnsafeRawPointer(bitPattern: attached).unsafelyUnwrapped).release() }
        let late = lateNameBits.load(ordering: .acquiring)
        if late != 0 { Unmanaged<_LateName>.fromOpaque(UnsafeRawPointer(bitPattern: late).unsafelyUnwrapped).release() }
    }

    /// The object hung on this point, made by `make` (and kept until the
    /// point goes) the first time any thread asks: once, however many
    /// threads race. Every caller must ask for the same type `T` (HookBind
    /// alone does: a binding's lock group).
    package final func _attachedObject<T: AnyObject>(orAttach make: () -> T) -> T {
        let bits = attachedBits.load(ordering: .acquiring)
        if bits != 0 { return Unmanaged<T>.fromOpaque(UnsafeRawPointer(bitPattern: bits).unsafelyUnwrapped).takeUnretainedValue() }
        let made = Unmanaged.passRetained(make())
        let (exchanged, original) = attachedBits.compareExchange(
            expected: 0, desired: UInt(bitPattern: made.toOpaque()), ordering: .acquiringAndReleasing)
        if exchanged { return made.takeUnretainedValue() }
        made.release()
        return Unmanaged<T>.fromOpaque(UnsafeRawPointer(bitPattern: original).unsafelyUnwrapped).takeUnretainedValue()
    }

    /// The hook point's name: the `selector` of its CallBacks and the subject of its errors.
    public var name: String {
        if let fixedName { return fixedName }
        let bits = lateNameBits.load(ordering: .acquiring)
        if bits != 0 { return Unmanaged<_LateName>.fromOpaque(UnsafeRawPointer(bitPattern: bits).unsafelyUnwrapped)._withUnsafeGuaranteedRef { $0.name } }
        if let name = findLateName() {
            let made = Unmanaged.passRetained(_LateName(name))
            let (exchanged, _) = lateNameBits.compareExchange(expected: 0, desired: UInt(bitPattern: made.toOpaque()), ordering: .acquiringAndReleasing)
            if !exchanged { made.release() }
            return name
        }
        return "<\(shape.kind) of an object not yet seen>"
    }

    /// A property or method: its name is the label of its storage in the object.
    func findLateName() -> String? { nil }

    /// The object the hook point belongs to, if any and still alive (held weakly).
    public var target: AnyObject? { fixedTarget }

    public var description: String { "\(shape.kind) '\(name)'" }

    /// The identity frames of this hook point carry in the thread state.
    /// (Final: a dynamic call would retain the point, a write shared by every caller.)
    @inlinable
    final var pointID: UInt { UInt(bitPattern: ObjectIdentifier(self)) }

    // MARK: Adding and removing hooks

    /// Adds a hook at `position`. Hooks of one position run in the order added.
    ///
    /// - Parameters:
    ///   - position: Before, instead of, or after the original.
    ///   - owner: If given, the hook is tied to it: it stops running
    ///     when `owner` deinitializes and is detached (at once if `owner` is a
    ///     ``HookOwner``, otherwise at the next call or change of this hook point).
    ///     The owner is held weakly.
    ///   - body: The hook; it receives the call's record, which it may change.
    /// - Returns: A token whose `remove()` detaches the hook.
    @discardableResult
    public func add(_ position: HookPosition, owner: AnyObject? = nil, _ body: @escaping HookBody) -> HookToken {
        // A vetoed property set stored nothing: a user's after hook of it does not run.
        let runsWhenVetoed = position != .after || shape.kind != .property
        let token = HookToken(point: self, position: position, owner: owner.map(_HookOwner.init),
                              runsWhenVetoed: runsWhenVetoed, body: body)
        return insert(token, owner: owner, first: false)
    }

    /// Adds a bookkeeping hook: an after hook that is part of what the
    /// point is for (HookBind's observable graph, an array's change list),
    /// not a user's hook. It runs for every call, a vetoed set included
    /// (``CallBack/isVetoed`` tells); ``hookCount`` leaves it out and
    /// ``removeAllHooks()`` keeps it. `first`: before the after hooks
    /// already there.
    @discardableResult
    package func _addBookkeepingHook(first: Bool = false, _ body: @escaping HookBody) -> HookToken {
        let token = HookToken(point: self, position: .after, owner: nil, runsWhenVetoed: true, isBookkeeping: true, body: body)
        return insert(token, owner: nil, first: first)
    }

    /// Adds a hook that runs only for calls whose ``CallBack/target`` is the
    /// object at `target` (its address), tied to `owner` (HookBind's fishes on
    /// a property of an object that did not opt in; a Swift entry's stub
    /// skips other objects' calls while every hook is for one object).
    @discardableResult
    package func _add(_ position: HookPosition, onlyForTarget target: UInt, owner: AnyObject?, _ body: @escaping HookBody) -> HookToken {
        let token = _FilteredHookToken(point: self, position: position, owner: owner.map(_HookOwner.init),
                                       runsWhenVetoed: position != .after || shape.kind != .property, target: target) { call in
            guard let object = call.target, UInt(bitPattern: Unmanaged.passUnretained(object).toOpaque()) == target else {
                // Another object's call: an instead hook lets it through.
                if position == .instead { try call.invokeOriginal() }
                return
            }
            try body(&call)
        }
        return insert(token, owner: owner, first: false)
    }

    /// Adds a typed hook made by a subclass (`_TypedAfterHook`, `_TypedSetHook`).
    func _addTyped(_ token: HookToken, owner: AnyObject?) -> HookToken {
        insert(token, owner: owner, first: false)
    }

    /// Publishes `token` among the hooks, in position order.
    private func insert(_ token: HookToken, owner: AnyObject?, first: Bool) -> HookToken {
        update { hooks, _ in hooks.insert(token, first: first) }
        if let bag = (owner as? HookOwner)?.hookBag { bag.insert(token) }
        return token
    }

    /// Adds a hook that runs before the original; it may read and replace
    /// arguments, or veto the call.
    @discardableResult
    public func before(owner: AnyObject? = nil, _ body: @escaping HookBody) -> HookToken { add(.before, owner: owner, body) }

    /// Adds a hook that runs in place of the original. It may call
    /// ``CallBack/invokeOriginal()`` (with changed arguments, any number of
    /// times) and set the result. Several instead hooks nest: the first added
    /// runs first, and its `invokeOriginal()` runs the next one.
    @discardableResult
    public func instead(owner: AnyObject? = nil, _ body: @escaping HookBody) -> HookToken { add(.instead, owner: owner, body) }

    /// Adds a hook that runs after the original; it sees and may replace the result.
    @discardableResult
    public func after(owner: AnyObject? = nil, _ body: @escaping HookBody) -> HookToken { add(.after, owner: owner, body) }

    /// Adds a hook tied to `owner` that receives it: the hook never captures
    /// the owner, so it cannot keep it alive, and stops with it.
    ///
    /// ```swift
    /// point.add(.after, owner: view) { view, call in view.refresh() }
    /// ```
    @discardableResult
    public func add<Owner: AnyObject>(_ position: HookPosition, owner: Owner, _ body: @escaping (Owner, inout CallBack) throws -> Void) -> HookToken {
        let box = _HookOwner(owner)
        return add(position, owner: owner) { call in
            guard let owner = box.object as? Owner else {
                // Gone since the call found it alive (on another thread): an
                // instead hook that did nothing would take the call over, and
                // a set would store nothing. The call goes on as without it.
                if position == .instead { try call.invokeOriginal() }
                return
            }
            try body(owner, &call)
        }
    }

    /// Detaches every hook added to this point. (HookBind's own bookkeeping
    /// on an observable's point stays: it keeps the computeds that read the
    /// observable current. A binding's hooks are hooks like any other.)
    public func removeAllHooks() { update { hooks, _ in hooks.removeAll { !$0.isBookkeeping } } }

    /// `removeAllHooks()` for a caller that holds a lock of its own which
    /// what the hooks captured may ask for in a `deinit` (`ImportHook`'s
    /// `restore()`, under the registry's lock): nothing the removal lets go
    /// of is released here; the caller releases `deferred` once its lock is
    /// let go of.
    func removeAllHooks(deferring deferred: inout _DeferredReleases) {
        update(deferring: &deferred) { hooks, _ in hooks.removeAll { !$0.isBookkeeping } }
    }

    /// The number of hooks attached (hooks of owners that are gone included
    /// until they are detached; HookBind's own bookkeeping on an observable's
    /// point left out).
    public var hookCount: Int {
        state.withVisibleLock(self) { _ in
            let bits = current.load(ordering: .relaxed) & ~_Hooks.probedBit
            return bits == 0 ? 0 : _Hooks(bits: bits).tokens().count { $0._withUnsafeGuaranteedRef { !$0.isBookkeeping } }
        }
    }

    /// Receives errors thrown by hooks (by default they are written to standard error).
    public var hookErrorHandler: (@Sendable (any Error, HookPosition) -> Void)? {
        get { state.withVisibleLock(self) { $0.errorHandler } }
        set { state.withVisibleLock(self) { $0.errorHandler = newValue } }
    }

    /// Runs `body` with this hook point's hooks suppressed on the calling
    /// thread: calls made inside run the original only.
    public func withoutHooks<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        let thread = hk_thread_self()!
        let frame = hk_thread_push(thread, pointID)
        if frame < 0 { hk_thread_suppress(thread) }
        defer { frame < 0 ? hk_thread_unsuppress(thread) : hk_thread_leave(thread) }
        return try body()
    }

    func remove(_ token: HookToken) { update { hooks, _ in hooks.remove(token) } }

    /// Removes `tokens` (each marked removed already) with one change.
    func remove(_ tokens: [HookToken]) {
        let removed = Set(tokens.map(ObjectIdentifier.init))
        update { hooks, _ in hooks.removeAll { removed.contains(ObjectIdentifier($0)) } }
    }

    /// Applies `change` to the hooks (in position order) and publishes them;
    /// the old snapshot and the hooks the change removed are retired (freed
    /// by a later batch, see `_Retired`). No system call, and no reference
    /// count per hook: the hooks that stay go on from the old word to the
    /// new one (see `_HookSnapshot`). The hooks are read back from the
    /// published word: nothing else keeps a list of them.
    private func update(_ change: (inout _HookEdit, inout _HookState) -> Void) {
        var deferred = _DeferredReleases()
        update(deferring: &deferred, change)
        deferred.release()
    }

    /// `update(_:)`, with what it lets go of (the live owners it looked at,
    /// the batch of retired hooks it made due) left in `deferred`.
    private func update(deferring deferred: inout _DeferredReleases, _ change: (inout _HookEdit, inout _HookState) -> Void) {
        var orphans = false
        // Owners found alive, released after the lock (see `ownerIsGone`).
        var alive: [AnyObject] = []
        // (Handed over whole where the caller holds none yet: appended, the
        // owners were copied into a new array, an allocation a change.)
        defer { if deferred.owners.isEmpty { swap(&deferred.owners, &alive) } else { deferred.owners.append(contentsOf: alive) } }
        let retired: [Int] = state.withVisibleLock(self) { state in
            let published = current.load(ordering: .relaxed) & ~_Hooks.probedBit
            var hooks = _HookEdit(published)
            change(&hooks, &state)
            // Orphans detached during a call of this point stay in use until
            // it returns: the next change tries again to release them.
            // (Only hooks with an owner can be orphans: none, no look.)
            if state.ownedHooks + hooks.ownedChange > 0 {
                // Every owner looked at (the live ones kept in `alive`), then,
                // if one was gone, the orphans removed: a second look at a
                // live owner is not its last reference (`alive` holds one).
                alive.reserveCapacity(state.ownedHooks + max(hooks.ownedChange, 0))
                var anyGone = false
                hooks.forEach { if $0.ownerIsGone(keeping: &alive) { anyGone = true } }
                if anyGone {
                    hooks.removeAll(where: \.isOrphaned)
                    orphans = true
                }
            }
            state.ownedHooks += hooks.ownedChange
            orphans = orphans || state.releasesOrphans
            state.releasesOrphans = orphans && hk_thread_current().map { hk_thread_depth($0) > 0 } ?? false
            _hooksWillPublish(hooks.tokens)
            var newBits = _Hooks.publish(hooks.tokens, hooks.counts)
            if state.probes > 0 { newBits |= _Hooks.probedBit }
            let oldBits = current.exchange(newBits, ordering: .sequentiallyConsistent) & ~_Hooks.probedBit
            // The old snapshot's memory (its hooks went on, or are retired
            // below); a lone hook's word is the hook itself.
            var retired = hooks.removed.map { Int(bitPattern: $0.toOpaque()) | _Hooks.singleBit }
            if oldBits != 0, !_Hooks(bits: oldBits).isSingle { retired.append(oldBits) }
            if !retired.isEmpty { state.hasRetired = true }
            return retired
        }
        if !retired.isEmpty, _Retired.addWithoutBatch(retired, of: pointID) { deferred.reclaims = true }
        // Hooks whose owner died are rare and may hold what their owner
        // captured: release them now rather than at the next batch.
        if orphans { deferred.reclaims = true }
    }

    /// Called under the point's lock with the hooks about to be published
    /// (Swift entries keep their fast path's filter in step).
    func _hooksWillPublish(_ hooks: [Unmanaged<HookToken>]) {}

    /// Frees the hook snapshots that earlier hook changes retired and no call
    /// is using any more, at the cost of one fence for all of them; returns
    /// how many were freed. Hook changes do this by themselves in batches and
    /// a ``HookBag`` when it empties; call it to release what removed hooks
    /// captured at a moment of your choosing.
    @discardableResult
    public static func reclaimRetiredHooks() -> Int { _Retired.reclaim() }

    /// The number of this hook point's replaced hook snapshots and removed
    /// hooks that are not freed yet (a diagnostic: they wait for a batch, see
    /// ``reclaimRetiredHooks()``).
    public var retiredSnapshotCount: Int { _Retired.count(of: pointID) }

    /// While probing, calls take the slow path even with no hook attached.
    func setProbing(_ on: Bool) { update { _, state in state.probes += on ? 1 : -1 } }

    // MARK: The call path

    /// Whether a hook is attached (a racy hint; a hook added meanwhile sees
    /// the next call). Also true for an instant while a key path is
    /// resolved to this point (`PropertyHook.of`).
    @inlinable
    public var hasHooks: Bool { _hasHooks }

    /// Whether calls must take the slow path: a hook is attached, or a probe
    /// may be pending (see `_isProbed`). Final, for the call paths (a load,
    /// not a call through the class's table); an async hook point keeps its
    /// hooks elsewhere and overrides ``hasHooks``.
    @inlinable @inline(__always)
    package final var _hasHooks: Bool { current.load(ordering: .relaxed) != 0 }

    /// Whether a key path probe may be pending on this point (bit 0, see
    /// `setProbing(_:)`): only then does a set or a method getter ask the
    /// thread for one (`_KeyPathResolver.answerProbe`).
    @inlinable @inline(__always)
    final var _isProbed: Bool { current.load(ordering: .relaxed) & _Hooks.probedBit != 0 }

    // The three phases of a hooked call. Typed hook points call them from
    // code specialized in the caller's module, so that the original runs
    // there, directly, when no instead hook is attached.

    /// Enters this hook point's frame on the calling thread, loads the hooks,
    /// makes the call's record at `call` (uninitialized memory on the
    /// caller's stack: built in place, never copied) and runs the before
    /// hooks. `false`: nothing was made, run the original only. Every `true`
    /// must be finished with ``_end(_:)``, which also destroys the record.
    ///
    /// Inlined into each call path (specialized in the caller's module for
    /// typed hook points): the frame is a few loads and stores of the
    /// thread's own state, and a lone after hook (the most common set of
    /// hooks) needs no loop and no call here.
    @inlinable @inline(__always)
    final func _begin(_ call: UnsafeMutablePointer<CallBack>,
                      _ arguments: UnsafeMutablePointer<UnsafeMutableRawPointer?>, _ result: UnsafeMutableRawPointer,
                      target: Unmanaged<AnyObject>?, oldValue: UnsafeRawPointer?, errno: Int32 = 0) -> Bool {
        let thread = hk_thread_self().unsafelyUnwrapped
        let frame = hk_thread_enter(thread, pointID)
        guard frame >= 0 else { return false }
        let bits = current.load(ordering: .sequentiallyConsistent) & ~_Hooks.probedBit
        guard bits != 0 else {
            hk_thread_leave(thread)
            return false
        }
        let hooks = _Hooks(bits: bits)
        call.initialize(to: CallBack(
            point: self, hooks: hooks, arguments: arguments, result: result,
            thread: thread, frame: frame, serial: hk_frame_serial(thread, frame),
            target: target, original: nil, oldValue: oldValue, errno: errno))
        if hooks.isLoneAfter {
            // (Nothing runs between here and the hook: it may say "after" now.)
            call.pointee._position = .after
            call.pointee._runsPlainOriginal = true
            call.pointee._loneAfter = true
        } else if !hooks.isSingle || hooks.single._withUnsafeGuaranteedRef({ $0.position == .before }) {
            _runBeforeHooks(call)
        }
        // (A lone instead hook, a binding's: nothing runs before it.)
        return true
    }

    /// Runs the before hooks of a call (any set of hooks but a lone after hook).
    @usableFromInline @inline(__always)
    final func _runBeforeHooks(_ call: UnsafeMutablePointer<CallBack>) {
        let hooks = call.pointee.hooks
        if hooks.onlyAfter {
            call.pointee._runsPlainOriginal = true
            return
        }
        let before = hooks.count(.before)
        // Index loops: `for in` goes through an iterator that allocates in unoptimized builds.
        var i = 0
        while i < before { _run(hooks.entry(.before, i), &call.pointee); i += 1 }
        call.pointee._runsPlainOriginal = !call.pointee._vetoed && hooks.count(.instead) == 0
    }

    /// Runs the instead hooks (unless vetoed); `original` is an `_OriginalInvoker` for `invokeOriginal()`.
    @usableFromInline
    final func _runInsteadHooks(_ call: inout CallBack, original: UnsafeRawPointer?) {
        guard !call._vetoed else { return }
        call._original = original
        // A C function's call returns zero where no hook or original made a
        // result; one a before hook set stays (zeroed, it was lost where no
        // instead hook ran the original, while a closure kept it).
        if isCFunction, !call._hasResult { memset(call.resultPointer, 0, shape.resultBufferSize) }
        call._position = .instead
        _runInstead(at: 0, &call)
    }

    /// Runs the after hooks, leaves the frame and destroys the record.
    /// Inlined like ``_begin(_:_:_:target:oldValue:)``: a lone after hook
    /// of a call that was not vetoed runs from here.
    /// (Typed hook points only: closures and methods, never a C function.)
    @inlinable @inline(__always)
    final func _end(_ record: UnsafeMutablePointer<CallBack>) -> _Outcome {
        _leave(record, isCFunction: false)
        let call = record.move()
        return _Outcome(hasResult: call._hasResult, error: call._error)
    }

    /// ``_end(_:)`` for a caller that needs no outcome (a property set, a C
    /// call: what they return is in place already). The record's one
    /// reference is its error: with none, the record needs no destroying,
    /// and the call releases no nil error. `isCFunction`: a constant of the
    /// caller (`self.isCFunction`), so that the test is not made per call.
    @inlinable @inline(__always)
    final func _finish(_ record: UnsafeMutablePointer<CallBack>, isCFunction: Bool) {
        _leave(record, isCFunction: isCFunction)
        if _slowPath(record.pointee._error != nil) { _ = record.move() }
    }

    /// Runs the after hooks and leaves the frame (the record stays).
    @inlinable @inline(__always)
    final func _leave(_ record: UnsafeMutablePointer<CallBack>, isCFunction: Bool) {
        if record.pointee._loneAfter {
            // `_begin` found one after hook and nothing else: no veto is
            // possible, and it runs here without a loop.
            if isCFunction { record.pointee._hasResult = true }
            _run(record.pointee.hooks.single, &record.pointee)
        } else if !record.pointee.hooks.isSingle {
            // (A lone before or instead hook has no after hook to run.)
            _runAfterHooks(record)
        }
        hk_thread_leave_frame(record.pointee.thread, record.pointee.frame)
    }

    /// Runs the after hooks of a call (any but a lone after hook of a call not vetoed).
    @usableFromInline @inline(__always)
    final func _runAfterHooks(_ record: UnsafeMutablePointer<CallBack>) {
        let hooks = record.pointee.hooks
        let after = hooks.count(.after)
        guard after > 0 else { return }
        if isCFunction { record.pointee._hasResult = true }
        record.pointee._position = .after
        var i = 0
        // A vetoed property set stored nothing: its after hooks do not run.
        if record.pointee._vetoed {
            while i < after {
                let entry = hooks.entry(.after, i)
                if entry._withUnsafeGuaranteedRef({ $0.runsWhenVetoed }) { _run(entry, &record.pointee) }
                i += 1
            }
        } else {
            while i < after { _run(hooks.entry(.after, i), &record.pointee); i += 1 }
        }
    }

    /// Runs one hook; a hook whose owner is gone is skipped and detached.
    @inlinable @inline(__always)
    final func _run(_ entry: Unmanaged<HookToken>, _ call: inout CallBack) {
        entry._withUnsafeGuaranteedRef { hook in
            if hook.owner != nil { return _runOwned(hook, &call) }
            do {
                try hook.body(&call)
            } catch {
                report(error, at: call.position)
            }
        }
    }

    /// A call whose one hook is a typed after hook (`_TypedAfterHook`), for a
    /// caller that saw one (a racy hint): the original runs in the frame,
    /// then the hook with the result and the arguments, with no record.
    /// Returns nil, with nothing run and the frame left, when the hooks
    /// changed meanwhile: the caller takes the general path.
    @inlinable @inline(__always)
    final func _callWithTypedAfter<each A, R>(_ original: (repeat each A) throws -> R,
                                              _ args: repeat each A) throws -> R? {
        let thread = hk_thread_self().unsafelyUnwrapped
        // No record is made: the frame needs no serial.
        let frame = hk_thread_enter_unrecorded(thread, pointID)
        // Reentrant or suppressed: the original only.
        guard frame >= 0 else { return try original(repeat each args) }
        let hooks = _Hooks(bits: current.load(ordering: .sequentiallyConsistent))
        guard hooks.isLoneTypedAfter else {
            hk_thread_leave_unrecorded(thread, frame)
            return nil
        }
        // Tagged while the original runs, so that a recursive original is hooked again.
        hk_frame_set_running_original(thread, frame, pointID, 1)
        let result: R
        do {
            result = try original(repeat each args)
        } catch {
            // An after-returning hook does not run for a call that threw.
            hk_thread_leave_unrecorded(thread, frame)
            throw error
        }
        hk_frame_set_running_original(thread, frame, pointID, 0)
        _runTyped(hooks.single, as: _TypedAfterHook<repeat each A, R>.self) { hook in
            try hook.typedBody(result, repeat each args)
        }
        hk_thread_leave_unrecorded(thread, frame)
        return result
    }

    /// Runs a lone typed hook of a call without a record (`Hook`: the kind
    /// this point makes, see `_Hooks`): skipped, and detached, if its owner
    /// is gone; an error it throws goes to the handler.
    @inlinable @inline(__always)
    final func _runTyped<Hook: HookToken>(_ entry: Unmanaged<HookToken>, as type: Hook.Type, _ run: (Hook) throws -> Void) {
        Unmanaged<Hook>.fromOpaque(entry.toOpaque())._withUnsafeGuaranteedRef { hook in
            if _slowPath(hook.owner != nil), _ownerIsGone(hook) { return }
            do {
                try run(hook)
            } catch {
                report(error, at: .after)
            }
        }
    }

    /// Whether `hook` is tied to an owner that is gone (then it is detached).
    @usableFromInline
    final func _ownerIsGone(_ hook: HookToken) -> Bool {
        guard let owner = hook.owner, owner.object == nil else { return false }
        detachOrphans()
        return true
    }

    /// Runs a hook tied to an owner, if the owner is alive.
    @usableFromInline
    final func _runOwned(_ hook: HookToken, _ call: inout CallBack) {
        if let owner = hook.owner, owner.object == nil { return detachOrphans() }
        do {
            try hook.body(&call)
        } catch {
            report(error, at: call.position)
        }
    }

    /// Detaches hooks whose owner is gone (they are already skipped).
    private func detachOrphans() { update { _, _ in } }

    /// Runs instead hook `index`, or the original past the last one: tagged
    /// as running, as a call without instead hooks runs it, so that a
    /// recursive original is hooked again (untagged, the instead hook
    /// waiting in `invokeOriginal()` counted as a running hook, and every
    /// level below the first ran the original only).
    final func _runInstead(at index: Int, _ call: inout CallBack) {
        guard index < call.hooks.count(.instead) else {
            call._markRunningOriginal(true)
            _invokeOriginal(&call)
            call._markRunningOriginal(false)
            return
        }
        call.hooks.entry(.instead, index)._withUnsafeGuaranteedRef { hook in
            if let owner = hook.owner, owner.object == nil {
                detachOrphans()
                return _runInstead(at: index + 1, &call)
            }
            let saved = (call.insteadIndex, call.originalCalled)
            call.insteadIndex = Int32(index)
            call.originalCalled = false
            do {
                try hook.body(&call)
            } catch {
                report(error, at: .instead)
                if !call.originalCalled { _runInstead(at: index + 1, &call) }
            }
            call.insteadIndex = saved.0
            call.originalCalled = saved.1
        }
    }

    /// Runs the original implementation with the call's current arguments and
    /// stores its result (or error) in the call. Closures and methods pass an
    /// `_OriginalInvoker` to ``_runInsteadHooks(_:original:)``; C functions and
    /// properties override it.
    func _invokeOriginal(_ call: inout CallBack) {
        call._original.unsafelyUnwrapped.assumingMemoryBound(to: (any _OriginalInvoker).self).pointee.invoke(&call)
    }

    /// Reports an error thrown by a hook: to the handler, or to standard error.
    @usableFromInline
    final func report(_ error: any Error, at position: HookPosition) {
        if let handler = hookErrorHandler {
            handler(error, position)
        } else {
            FileHandleStandardError.write("Hook: \(position.hookWithArticle) of '\(name)' threw: \(error)\n")
        }
    }
}

/// What the caller of ``HookPoint/_end(_:)`` learns.
@usableFromInline
struct _Outcome {
    @usableFromInline var hasResult: Bool
    @usableFromInline var error: (any Error)?

    @inlinable
    init(hasResult: Bool, error: (any Error)?) {
        self.hasResult = hasResult
        self.error = error
    }
}

/// The mutable side of a hook point, behind its lock.
struct _HookState {
    var errorHandler: (@Sendable (any Error, HookPosition) -> Void)?
    var probes = 0
    /// Whether a snapshot of this point went to the retired list.
    var hasRetired = false
    /// Orphaned hooks were detached inside a call: release them at the next change too.
    var releasesOrphans = false
    /// How many of the published hooks are tied to an owner (only they can
    /// be orphans: a change looks for orphans while there are any).
    var ownedHooks = 0
}

/// A change of a hook point's hooks, made under its lock (`HookPoint.update`):
/// the published hooks, borrowed from the published word (which holds
/// each +1), in position order with how many of each position; the hooks
/// it adds, each retained once; the hooks it removes, whose references the
/// change retires. No reference count is touched for the hooks that stay.
struct _HookEdit {
    private(set) var tokens: [Unmanaged<HookToken>]
    private(set) var counts: _HookCounts
    /// Removed hooks: the published word's references, to retire.
    private(set) var removed: [Unmanaged<HookToken>] = []
    /// How many more (or fewer) hooks with an owner there are.
    private(set) var ownedChange = 0

    init(_ published: Int) {
        if published == 0 {
            tokens = []
            counts = _HookCounts(before: 0, instead: 0, after: 0)
        } else {
            let hooks = _Hooks(bits: published)
            tokens = hooks.tokens()
            counts = hooks.counts
        }
    }

    /// Adds `token` after the last hook of its position, or (`first`) before the first.
    mutating func insert(_ token: HookToken, first: Bool) {
        tokens.insert(.passRetained(token), at: counts.index(of: token.position, first: first))
        counts.add(1, at: token.position)
        if token.owner != nil { ownedChange += 1 }
    }

    /// Removes `token`, if there.
    mutating func remove(_ token: HookToken) {
        let address = Unmanaged.passUnretained(token).toOpaque()
        guard let at = tokens.firstIndex(where: { $0.toOpaque() == address }) else { return }
        take(tokens.remove(at: at))
    }

    /// Removes every hook `predicate` is true of.
    mutating func removeAll(where predicate: (HookToken) -> Bool) {
        var kept: [Unmanaged<HookToken>] = []
        kept.reserveCapacity(tokens.count)
        for token in tokens {
            if token._withUnsafeGuaranteedRef(predicate) { take(token) } else { kept.append(token) }
        }
        tokens = kept
    }

    /// Whether `predicate` is true of any hook.
    func contains(where predicate: (HookToken) -> Bool) -> Bool {
        tokens.contains { $0._withUnsafeGuaranteedRef(predicate) }
    }

    /// Calls `body` with every hook.
    func forEach(_ body: (HookToken) -> Void) {
        for token in tokens { token._withUnsafeGuaranteedRef(body) }
    }

    private mutating func take(_ token: Unmanaged<HookToken>) {
        token._withUnsafeGuaranteedRef { token in
            token._markDetached()
            counts.add(-1, at: token.position)
            if token.owner != nil { ownedChange -= 1 }
        }
        removed.append(token)
    }
}

/// What a change of a point's hooks lets go of: the live owners it looked
/// at (a reference each, see `HookToken.ownerIsGone(keeping:)`), and whether
/// the retired hooks are to be freed now (a batch is due, or an orphan was
/// removed). Either may run a `deinit` of the user's: `release()` runs where
/// no lock of Hook's is held.
struct _DeferredReleases {
    var owners: [AnyObject] = []
    var reclaims = false

    consuming func release() {
        if reclaims { _Retired.reclaim() }
        owners.removeAll()
    }
}

/// A hook point's name learnt late (see `HookPoint.name`), published once.
final class _LateName: Sendable {
    let name: String
    init(_ name: String) { self.name = name }
}
