import CHookThreads
import Synchronization

/// A hook point over an `async` Swift closure, and the hook point of an
/// `async` method of a `@Hookable` type (``AsyncMethodHook``, the same class):
/// ``function`` has the closure's type and runs the (possibly async) hooks
/// around it.
///
/// ```swift
/// let fetch = AsyncClosureHook(name: "fetch") { (id: Int) async throws -> String in
///     try await store.load(id)
/// }
/// fetch.before { call in
///     try await limiter.wait()                         // a hook may suspend
///     call.arguments = max(call.arguments, 0)          // one argument: its own type
/// }
/// fetch.after { call in print(call.selector, call.arguments, call.result ?? "-") }
/// let text = try await fetch(42)
/// ```
///
/// The same positions as every hook point (`before`, `instead`, `after`), the
/// same tokens, owners and error handler, and hooks that may be `async`
/// themselves. A hook receives an ``AsyncCallBack``: the call's arguments as
/// a typed tuple, its result or error, and `invokeOriginal()` for an instead
/// hook.
///
/// ## Following the task, not the thread
/// An async call may suspend (in a hook or in the original) and resume on
/// another thread, so nothing here is kept per thread:
/// - the **call record** is a value (``AsyncCallBack``) that the call passes
///   to each hook in turn; it holds copies, not pointers into a stack frame;
/// - the **reentrancy guard** is a task-local list of the async hook points
///   whose hooks are running in the current task: a call of such a point
///   from its own hooks (or from anything they await in the same task, child
///   tasks included) runs the original only. The original itself runs with
///   the list as it was outside the call, so a recursive original is hooked
///   again. A task started with `Task.detached` starts with an empty list.
/// - the **hooks of a call** are a snapshot, retained for the call (a
///   retain, not the frame scan of synchronous hook points, which needs the
///   call to stay on one thread).
///
/// With no hook attached, a call is one atomic load and the original.
///
/// ## Through `HookPoint`
/// Code that holds the point as a ``HookPoint`` (a tracer over
/// `[HookPoint]`) may add synchronous ``CallBack`` hooks: each runs as an
/// async hook that does not suspend, with a `CallBack` of the call (live
/// while it runs). It reads and changes the call as on any hook point, but
/// cannot ``CallBack/invokeOriginal()``, which throws: the original is async.
public final class AsyncClosureHook<each A, R>: HookPoint, @unchecked Sendable {
    /// The hook body of an async hook point.
    public typealias Body = (inout AsyncCallBack<repeat each A, R>) async throws -> Void

    final class Entry: @unchecked Sendable {
        /// The hook's token, which `remove()` names it by (held: an address
        /// alone could be a later token's once this one is freed).
        let token: HookToken
        let position: HookPosition
        let body: Body
        let owner: _HookOwner?
        init(token: HookToken, position: HookPosition, body: @escaping Body, owner: _HookOwner?) {
            self.token = token
            self.position = position
            self.body = body
            self.owner = owner
        }
    }

    /// The hooks a call runs: immutable, retained by each call for its duration.
    final class Snapshot: @unchecked Sendable {
        let before: [Entry]
        let instead: [Entry]
        let after: [Entry]
        init(_ entries: [Entry]) {
            before = entries.filter { $0.position == .before }
            instead = entries.filter { $0.position == .instead }
            after = entries.filter { $0.position == .after }
        }
    }

    struct State {
        var entries: [Entry] = []
        var snapshot: Snapshot?
    }

    private let hooks = Mutex(State())
    /// Whether any hook is attached: the fast path's one load.
    @usableFromInline let _attached = Atomic<Bool>(false)
    /// Whether the original may throw (``AsyncCallBack/setError(_:)``).
    let canThrow: Bool

    /// The original closure, callable without hooks. For a method's hook
    /// point, whose original is the method's body, it throws a ``HookError``:
    /// call the method.
    public let original: (repeat each A) async throws -> R
    /// A method's object, by an unowned reference (the object
    /// holds its hook points); nil for a closure.
    private let objectReference: _UnownedReference?
    /// Whether this is a method's hook point, which has no original of its
    /// own: calling it is refused before any hook runs.
    @usableFromInline let _isMethod: Bool

    /// Makes a hook point over `original`.
    /// - Parameters:
    ///   - name: The `selector` of its calls.
    ///   - target: An object reported as ``AsyncCallBack/target``; held weakly.
    ///   - original: The async closure whose calls the hooks run around.
    public init(name: String = "closure", target: AnyObject? = nil, _ original: @escaping (repeat each A) async throws -> R) {
        self.original = original
        self.canThrow = true
        self.objectReference = nil
        self._isMethod = false
        super.init(name: name, shape: .typed(kind: .asyncClosure, arguments: repeat (each A).self, result: R.self, canThrow: true), target: target)
    }

    /// The hook point of an async method of `object`.
    init(object: AnyObject, name: String, canThrow: Bool) {
        self.original = { (_: repeat each A) async throws -> R in
            throw HookError(.invalidValue, point: name, "the hook point of a method has no original of its own: call the method")
        }
        self.canThrow = canThrow
        self.objectReference = _UnownedReference(object)
        self._isMethod = true
        super.init(name: name, shape: .typed(kind: .asyncMethod, arguments: repeat (each A).self, result: R.self, canThrow: canThrow), target: nil)
    }

    deinit {
        // Its hooks go with it: no longer active (see `HookToken.isActive`).
        hooks.withVisibleLock(self) { state in for entry in state.entries { entry.token._markDetached() } }
    }

    /// The object the hook point belongs to: a method's instance while it is alive, or the closure's target.
    public override var target: AnyObject? {
        switch objectReference {
        case .some(let reference): reference.object
        case .none: super.target
        }
    }

    /// The object whose call this is, for ``AsyncCallBack/target``.
    var callTarget: AnyObject? { target }

    /// The hooked closure, of the original's type.
    public var function: (repeat each A) async throws -> R {
        { (args: repeat each A) async throws -> R in try await self.callAsFunction(repeat each args) }
    }

    /// Calls the hooked closure: `try await hook(1, 2)`.
    ///
    /// - Throws: What the call throws; ``HookError`` `.invalidValue` for a
    ///   method's hook point (call the method): no hook runs then. (They ran
    ///   around a call that never happened, whose "original" threw that
    ///   error: after hooks counted it, and one that set a result made one up.)
    @inlinable
    public func callAsFunction(_ args: repeat each A, isolation: isolated (any Actor)? = #isolation) async throws -> R {
        if _isMethod { try _refuseCallOfMethodPoint() }
        return try await _call(original, repeat each args, isolation: isolation)
    }

    @usableFromInline
    func _refuseCallOfMethodPoint() throws(HookError) {
        throw HookError(.invalidValue, point: name, "the hook point of a method has no original of its own: call the method")
    }

    // MARK: Hooks

    /// Adds an async hook at `position`. Hooks of one position run in the order added.
    ///
    /// - Parameters:
    ///   - position: Before, instead of, or after the original.
    ///   - owner: If given, the hook stops running when `owner` deinitializes
    ///     and is detached (held weakly).
    ///   - body: Receives the call's record; may suspend.
    /// - Returns: A token whose `remove()` detaches the hook.
    @discardableResult
    public func add(_ position: HookPosition, owner: AnyObject? = nil, _ body: @escaping Body) -> HookToken {
        // The token stands for the hook (its own body is never run: the
        // async call path runs the entry's).
        let token = HookToken(point: self, position: position, owner: nil, runsWhenVetoed: true, body: { _ in })
        change { state in
            state.entries.append(Entry(token: token, position: position, body: body, owner: owner.map(_HookOwner.init)))
        }
        if let bag = (owner as? HookOwner)?.hookBag { bag.insert(token) }
        return token
    }

    /// Adds an async hook that runs before the original; it may change ``AsyncCallBack/arguments`` or veto the call.
    @discardableResult
    public func before(owner: AnyObject? = nil, _ body: @escaping Body) -> HookToken { add(.before, owner: owner, body) }

    /// Adds an async hook that runs in place of the original; it may call ``AsyncCallBack/invokeOriginal()``.
    @discardableResult
    public func instead(owner: AnyObject? = nil, _ body: @escaping Body) -> HookToken { add(.instead, owner: owner, body) }

    /// Adds an async hook that runs after the original; it sees and may replace the result or error.
    @discardableResult
    public func after(owner: AnyObject? = nil, _ body: @escaping Body) -> HookToken { add(.after, owner: owner, body) }

    // Synchronous hooks, for code that holds this point as a `HookPoint`
    // (a tracer over `[HookPoint]`, a test helper): a sync body is a valid
    // async hook that does not suspend. It runs in its turn among the async
    // hooks, with a `CallBack` of the call (see `AsyncCallBack._runSynchronously`).
    // Unavailable on `AsyncClosureHook` itself, so that a closure written
    // there is always the async `Body` (overloads would make
    // `point.after { call in ... }` ambiguous); through `HookPoint`, these run.

    /// A synchronous hook, added through ``HookPoint``: it runs as an async
    /// hook that does not suspend, with a ``CallBack`` of the call.
    @available(*, unavailable, message: "an async hook point takes hooks of (inout AsyncCallBack) async throws -> Void (a synchronous CallBack hook runs when added through HookPoint)")
    public override func add(_ position: HookPosition, owner: AnyObject? = nil, _ body: @escaping HookBody) -> HookToken {
        add(position, owner: owner) { (call: inout AsyncCallBack<repeat each A, R>) in try call._runSynchronously(body) }
    }

    @available(*, unavailable, message: "an async hook point takes hooks of (inout AsyncCallBack) async throws -> Void (a synchronous CallBack hook runs when added through HookPoint)")
    public override func before(owner: AnyObject? = nil, _ body: @escaping HookBody) -> HookToken { super.before(owner: owner, body) }
    @available(*, unavailable, message: "an async hook point takes hooks of (inout AsyncCallBack) async throws -> Void (a synchronous CallBack hook runs when added through HookPoint)")
    public override func instead(owner: AnyObject? = nil, _ body: @escaping HookBody) -> HookToken { super.instead(owner: owner, body) }
    @available(*, unavailable, message: "an async hook point takes hooks of (inout AsyncCallBack) async throws -> Void (a synchronous CallBack hook runs when added through HookPoint)")
    public override func after(owner: AnyObject? = nil, _ body: @escaping HookBody) -> HookToken { super.after(owner: owner, body) }

    override func remove(_ token: HookToken) {
        change { state in state.entries.removeAll { $0.token === token } }
    }

    /// (One change for all: one a token rebuilt the list and its snapshot
    /// each time, a bag of n hooks ended in n² steps.)
    override func remove(_ tokens: [HookToken]) {
        let removed = Set(tokens.map(ObjectIdentifier.init))
        change { state in state.entries.removeAll { removed.contains(ObjectIdentifier($0.token)) } }
    }

    public override func removeAllHooks() {
        change { state in state.entries.removeAll() }
    }

    public override var hookCount: Int { hooks.withVisibleLock(self) { $0.entries.count } }

    /// Whether a hook is attached (a racy hint, as every hook point's).
    public override var hasHooks: Bool { _attached.load(ordering: .relaxed) }

    /// Makes `edit` under the lock, drops hooks whose owner is gone, and
    /// publishes a snapshot. What the change lets go of (removed hooks, the
    /// old snapshot, the owners found alive: see `HookToken.ownerIsGone`) is
    /// released after the lock: a `deinit` it runs (of what a hook's body
    /// captured, or of an owner whose bag removes its hooks) may change
    /// this point's hooks, which waited for the lock its thread held.
    private func change(_ edit: (inout State) -> Void) {
        var released: [Any] = []
        defer { withExtendedLifetime(released) {} }
        hooks.withVisibleLock(self) { state in
            released.append(state.entries)
            if let old = state.snapshot { released.append(old) }
            let before = state.entries.map { $0.token }  // (A closure: the key path crashed the runtime, a generic type with packs.)
            edit(&state)
            var alive: [AnyObject] = []
            state.entries.removeAll { $0.owner?.isGone(keeping: &alive) ?? false }
            // What the change detached is no longer active (see `HookToken.isActive`).
            // (Whenever one may have gone: an add that also dropped an orphan
            // keeps the count.)
            if !before.isEmpty {
                let kept = Set(state.entries.map { ObjectIdentifier($0.token) })
                for token in before where !kept.contains(ObjectIdentifier(token)) { token._markDetached() }
            }
            released.append(alive)
            state.snapshot = state.entries.isEmpty ? nil : Snapshot(state.entries)
            _attached.store(!state.entries.isEmpty, ordering: .releasing)
        }
    }

    private func detachOrphans() { change { _ in } }

    private func loadSnapshot() -> Snapshot? { hooks.withVisibleLock(self) { $0.snapshot } }

    /// Runs `body` with this hook point's hooks suppressed in the current task:
    /// calls made inside (at any suspension, on any thread) run the original only.
    public func withoutHooks<T>(_ body: () async throws -> T) async rethrows -> T {
        try await _AsyncFrames.$current.withValue(_AsyncFrames(point: pointID, next: _AsyncFrames.current)) {
            try await body()
        }
    }

    // MARK: The call path

    /// Calls `original` with `args` through the hooks.
    @inlinable
    final func _call(_ original: @escaping (repeat each A) async throws -> R, _ args: repeat each A,
                     isolation: isolated (any Actor)? = #isolation) async throws -> R {
        guard _attached.load(ordering: .acquiring) else {
            return try await Self._invoke(_UncheckedOriginal(original), _Unchecked((repeat each args))).value
        }
        return try await _hookedCall(original, repeat each args, isolation: isolation)
    }

    @usableFromInline
    final func _hookedCall(_ original: @escaping (repeat each A) async throws -> R, _ args: repeat each A,
                           isolation: isolated (any Actor)?) async throws -> R {
        let outer = _AsyncFrames.current
        guard let snapshot = loadSnapshot(), !_AsyncFrames.contains(outer, pointID) else {
            return try await Self._invoke(_UncheckedOriginal(original), _Unchecked((repeat each args))).value
        }
        let context = _AsyncCallContext(point: self, snapshot: snapshot, original: original, outer: outer, target: callTarget)
        var call = AsyncCallBack<repeat each A, R>(context: context, arguments: (repeat each args))
        await _AsyncFrames.$current.withValue(_AsyncFrames(point: pointID, next: outer)) {
            call.position = .before
            for entry in snapshot.before { await run(entry, &call) }
            if !call.isVetoed {
                if snapshot.instead.isEmpty {
                    await call._runOriginal()
                } else {
                    call.position = .instead
                    await runInstead(at: 0, &call)
                }
            }
            call.position = .after
            for entry in snapshot.after { await run(entry, &call) }
        }
        context.ended.store(true, ordering: .releasing)
        if let error = call.error { throw error }
        if let result = call._result { return result }
        if R.self == Void.self { return unsafeBitCast((), to: R.self) }
        _reportMissingResult()
        return try await Self._invoke(_UncheckedOriginal(original), _Unchecked(call.arguments)).value
    }

    /// Calls the original. The call path hands the arguments from the
    /// caller to the hooks to the original and back, one step at a time in
    /// one task: nothing is shared between concurrent code, which is what
    /// the unchecked boxes tell the compiler (the caller may be an actor,
    /// and the original a nonisolated closure type).
    @usableFromInline
    nonisolated static func _invoke(_ original: _UncheckedOriginal<repeat each A, R>,
                                    _ arguments: _Unchecked<(repeat each A)>) async throws -> _Unchecked<R> {
        _Unchecked(try await original.value(repeat each arguments.value))
    }

    private func run(_ entry: Entry, _ call: inout AsyncCallBack<repeat each A, R>) async {
        if let owner = entry.owner, owner.object == nil { return detachOrphans() }
        do {
            try await entry.body(&call)
        } catch {
            if endsTheCall(error, &call) { return }
            report(error, at: call.position)
        }
    }

    /// Whether `error`, thrown by a before or instead hook, is the call's
    /// outcome: a `CancellationError` (the hook's task, which is the
    /// caller's, was cancelled while it waited) of a point that can throw.
    /// Then it is (`setError`: from a before hook, the call is vetoed). Any
    /// other error of a hook goes to the error handler, and the call goes
    /// on; so does an after hook's cancellation (the call has happened: its
    /// outcome stays). (A cancelled before hook, a rate limiter's `wait()`,
    /// let the call through as if it had waited.)
    private func endsTheCall(_ error: any Error, _ call: inout AsyncCallBack<repeat each A, R>) -> Bool {
        guard canThrow, call.position != .after, error is CancellationError else { return false }
        try? call.setError(error)
        return true
    }

    /// Runs instead hook `index`, or the original past the last one.
    final func runInstead(at index: Int, _ call: inout AsyncCallBack<repeat each A, R>) async {
        let instead = call.context.snapshot.instead
        guard index < instead.count else { return await call._runOriginal() }
        let entry = instead[index]
        if let owner = entry.owner, owner.object == nil {
            detachOrphans()
            return await runInstead(at: index + 1, &call)
        }
        let saved = (call.insteadIndex, call.originalCalled)
        call.insteadIndex = index
        call.originalCalled = false
        do {
            try await entry.body(&call)
        } catch {
            if !endsTheCall(error, &call) {
                report(error, at: .instead)
                if !call.originalCalled { await runInstead(at: index + 1, &call) }
            }
        }
        call.insteadIndex = saved.0
        call.originalCalled = saved.1
    }
}

extension AsyncClosureHook: _TupleArguments {
    var _tupleID: ObjectIdentifier { ObjectIdentifier((repeat each A).self) }
    func _copyArguments(_ pointers: UnsafeMutablePointer<UnsafeMutableRawPointer?>, to tuple: UnsafeMutableRawPointer) {
        _TypedLayout.copyTuple(repeat (each A).self, slots: pointers, to: tuple)
    }
    func _assignArguments(_ pointers: UnsafeMutablePointer<UnsafeMutableRawPointer?>, from tuple: UnsafeRawPointer) {
        _TypedLayout.assignTuple(repeat (each A).self, slots: pointers, from: tuple)
    }
}

extension AsyncCallBack {
    /// Runs a synchronous hook (one added through ``HookPoint``) on this call.
    ///
    /// It gets a ``CallBack`` as a synchronous call's hook does: a frame of
    /// the point entered on this thread for the hook's run (so the record is
    /// live exactly while the hook runs, and a kept copy expires), the
    /// arguments and the result copied to this stack, and what the hook
    /// changed (arguments, result, error, veto) copied back. The one thing it
    /// cannot do is ``CallBack/invokeOriginal()``: the original is async
    /// (the record's hooks word is 0, which no synchronous call has, and
    /// `invokeOriginal` refuses on it).
    mutating func _runSynchronously(_ body: HookBody) throws {
        let point = context.point
        let thread = hk_thread_self()!
        let frame = hk_thread_push(thread, point.pointID)
        guard frame >= 0 else {
            throw HookError(.invalidValue, point: point.name, "a synchronous hook could not run: \(HK_MAX_DEPTH) hook points are active on this thread")
        }
        defer { hk_thread_leave(thread) }
        var arguments = self.arguments
        let count = _packCount(repeat (each A).self)
        let offsets = point._argumentOffsets
        let target = context.target.map { Unmanaged.passUnretained($0) }
        var thrown: (any Error)?
        withUnsafeMutablePointer(to: &arguments) { tuple in
            withUnsafeTemporaryAllocation(of: UnsafeMutableRawPointer?.self, capacity: Swift.max(count, 1)) { slots in
                for i in 0..<count { slots[i] = UnsafeMutableRawPointer(tuple) + offsets[i] }
                withUnsafeTemporaryAllocation(of: R.self, capacity: 1) { resultBuffer in
                    let result = resultBuffer.baseAddress.unsafelyUnwrapped
                    if let value = _result { result.initialize(to: value) }
                    var call = CallBack(point: point, hooks: _Hooks(bits: 0), arguments: slots.baseAddress.unsafelyUnwrapped,
                                        result: UnsafeMutableRawPointer(result), thread: thread, frame: frame,
                                        serial: hk_frame_serial(thread, frame), target: target, original: nil, oldValue: nil)
                    call._hasResult = _result != nil
                    call._position = position
                    call._error = error
                    call._vetoed = isVetoed
                    do { try body(&call) } catch { thrown = error }
                    _result = call._hasResult ? result.move() : nil
                    error = call._error
                    isVetoed = call._vetoed
                }
            }
        }
        self.arguments = arguments
        if let thrown { throw thrown }
    }
}

/// A value passed along one task's call path (see `AsyncClosureHook._invoke`).
@usableFromInline
struct _Unchecked<Value>: @unchecked Sendable {
    @usableFromInline var value: Value
    @inlinable init(_ value: Value) { self.value = value }
}

/// An original closure passed along one task's call path (a variadic
/// function type cannot be a generic argument).
@usableFromInline
struct _UncheckedOriginal<each A, R>: @unchecked Sendable {
    @usableFromInline let value: (repeat each A) async throws -> R
    @inlinable init(_ value: @escaping (repeat each A) async throws -> R) { self.value = value }
}

/// The async hook points whose hooks run in the current task, innermost first.
final class _AsyncFrames: Sendable {
    let point: UInt
    let next: _AsyncFrames?

    init(point: UInt, next: _AsyncFrames?) {
        self.point = point
        self.next = next
    }

    @TaskLocal static var current: _AsyncFrames?

    static func contains(_ frames: _AsyncFrames?, _ point: UInt) -> Bool {
        var frame = frames
        while let f = frame {
            if f.point == point { return true }
            frame = f.next
        }
        return false
    }
}

/// What a call's record shares with the call: the point, its hooks, the original.
final class _AsyncCallContext<each A, R>: @unchecked Sendable {
    let point: AsyncClosureHook<repeat each A, R>
    let snapshot: AsyncClosureHook<repeat each A, R>.Snapshot
    let original: (repeat each A) async throws -> R
    /// The frames outside the call: the original runs with them (a recursive call is hooked again).
    let outer: _AsyncFrames?
    let target: AnyObject?
    /// Set when the call has returned: a record kept past it (a copy an
    /// instead hook stored) no longer runs the original.
    let ended = Atomic<Bool>(false)

    init(point: AsyncClosureHook<repeat each A, R>, snapshot: AsyncClosureHook<repeat each A, R>.Snapshot,
         original: @escaping (repeat each A) async throws -> R, outer: _AsyncFrames?, target: AnyObject?) {
        self.point = point
        self.snapshot = snapshot
        self.original = original
        self.outer = outer
        self.target = target
    }
}

/// The record of one call at an async hook point, handed to each hook in turn.
///
/// A value holding copies: it stays valid across suspensions and threads.
/// A hook changes the call through it: ``arguments`` (before the original
/// runs), ``setResult(_:)``, ``setError(_:)``, ``veto()``,
/// ``invokeOriginal()``.
public struct AsyncCallBack<each A, R>: @unchecked Sendable {
    let context: _AsyncCallContext<repeat each A, R>
    /// The arguments, as a tuple (one argument: its own type). A before or
    /// instead hook may change them; the original gets the changed values.
    public var arguments: (repeat each A)
    /// Where the hook that holds this record runs.
    public internal(set) var position: HookPosition = .before
    /// The result: after the original ran, or once a hook set it.
    public var result: R? { _result }
    var _result: R?
    /// The error the original threw, or that a hook set; the caller gets it.
    public private(set) var error: (any Error)?
    /// Whether a before hook vetoed the call.
    public private(set) var isVetoed = false
    var insteadIndex = 0
    var originalCalled = false

    init(context: _AsyncCallContext<repeat each A, R>, arguments: (repeat each A)) {
        self.context = context
        self.arguments = arguments
    }

    /// The object the hook point belongs to, if any (an async method's instance).
    public var target: AnyObject? { context.target }
    /// The hook point's name.
    public var selector: String { context.point.name }
    /// The hook point this call is at.
    public var hookPoint: AsyncClosureHook<repeat each A, R> { context.point }
    /// The arguments boxed.
    public var args: [Any] {
        var boxed: [Any] = []
        for argument in repeat each arguments { boxed.append(argument) }
        return boxed
    }

    /// Replaces the result the caller gets (and clears an error).
    public mutating func setResult(_ value: R) {
        _result = value
        error = nil
    }

    /// Makes the call throw `error` (a throwing closure or method). From a
    /// `before` hook it fails the call: it is vetoed (the original and the
    /// instead hooks do not run), and the after hooks see the error.
    /// - Throws: ``HookError`` if the original cannot throw.
    public mutating func setError(_ error: any Error) throws(HookError) {
        guard context.point.canThrow else {
            throw HookError(.invalidValue, point: selector, "the \(context.point.shape.kind) cannot throw; \(error) cannot be its outcome")
        }
        self.error = error
        if position == .before { isVetoed = true }
    }

    /// Vetoes the call from a before hook: the original and the instead hooks
    /// do not run; a call that returns a value needs one set first.
    public mutating func veto() throws(HookError) {
        guard position == .before else {
            throw HookError(.invalidValue, point: selector, "veto() called from a \(position) hook; only a before hook can veto")
        }
        guard _result != nil || R.self == Void.self || error != nil else {
            throw HookError(.resultUnavailable, point: selector, "veto() of a call that returns \(R.self) needs a result: call setResult(_:) first")
        }
        isVetoed = true
    }

    /// Runs the original (or the next instead hook) with the current
    /// ``arguments``; its result (or error) becomes the call's.
    public mutating func invokeOriginal() async throws(HookError) {
        guard position == .instead else {
            throw HookError(.notInstead, point: selector, "invokeOriginal() called from a \(position) hook")
        }
        // (A copy kept past its call ran the remaining instead hooks and the
        // original again, outside any call, in whatever task called it.)
        guard !context.ended.load(ordering: .acquiring) else {
            throw HookError(.callBackExpired, point: selector, "invokeOriginal() of a call that has returned; call the hook point again instead")
        }
        error = nil
        await context.point.runInstead(at: insteadIndex + 1, &self)
        originalCalled = true
    }

    /// Runs the original in the frames outside the call, storing its outcome.
    mutating func _runOriginal() async {
        let context = self.context
        let arguments = self.arguments
        do {
            let value = try await _AsyncFrames.$current.withValue(context.outer) {
                try await context.original(repeat each arguments)
            }
            _result = value
        } catch {
            self.error = error
        }
    }
}

/// The hook point of one `async` method of one instance of a `@Hookable`
/// type (`object.$name`): an ``AsyncClosureHook`` whose original is the method's body.
public typealias AsyncMethodHook<each A, R> = AsyncClosureHook<repeat each A, R>

extension AsyncClosureHook {

    /// `object.$name` of an async `@Hookable` method: the point in the slot at `address`, made if needed.
    @_documentation(visibility: internal)
    public static func _hookablePoint(_ address: UnsafeMutableRawPointer, object: AnyObject, name: String, canThrow: Bool) -> AsyncClosureHook {
        _pointInWord(address) { AsyncClosureHook(object: object, name: name, canThrow: canThrow) }
    }

    /// Whether the point in a slot's word (not 0) has hooks.
    @_documentation(visibility: internal)
    @inlinable @inline(__always)
    public static func _hookableIsHooked(_ bits: UInt) -> Bool {
        Unmanaged<AsyncClosureHook>.fromOpaque(UnsafeRawPointer(bitPattern: bits).unsafelyUnwrapped)
            ._withUnsafeGuaranteedRef { $0._attached.load(ordering: .relaxed) }
    }

    /// A call of an async `@Hookable` method whose hook point exists (`bits`, the slot's word).
    @_documentation(visibility: internal)
    @inlinable
    public static func _hookableCall(_ bits: UInt, _ object: AnyObject, _ body: @escaping (repeat each A) async -> R, _ args: repeat each A,
                                     isolation: isolated (any Actor)? = #isolation) async -> R {
        let point = Unmanaged<AsyncClosureHook>.fromOpaque(UnsafeRawPointer(bitPattern: bits).unsafelyUnwrapped).takeUnretainedValue()
        // Cannot throw: the method does not, and AsyncCallBack.setError refuses it.
        return try! await point._call(body, repeat each args, isolation: isolation)
    }

    /// A call of a throwing async `@Hookable` method whose hook point exists.
    @_documentation(visibility: internal)
    @inlinable
    public static func _hookableThrowingCall(_ bits: UInt, _ object: AnyObject, _ body: @escaping (repeat each A) async throws -> R, _ args: repeat each A,
                                             isolation: isolated (any Actor)? = #isolation) async throws -> R {
        let point = Unmanaged<AsyncClosureHook>.fromOpaque(UnsafeRawPointer(bitPattern: bits).unsafelyUnwrapped).takeUnretainedValue()
        return try await point._call(body, repeat each args, isolation: isolation)
    }

    /// An override's `super.name(...)`: runs with this method's hooks suppressed in the task.
    @_documentation(visibility: internal)
    public static func _hookableUnhookedAsync<T>(_ address: UnsafeMutableRawPointer, _ body: () async throws -> T) async rethrows -> T {
        let bits = _hookableLoad(address)
        guard bits != 0 else { return try await body() }
        let point = Unmanaged<AsyncClosureHook>.fromOpaque(UnsafeRawPointer(bitPattern: bits).unsafelyUnwrapped).takeUnretainedValue()
        return try await point.withoutHooks(body)
    }
}
