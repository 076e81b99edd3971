import CHookTestSupport
import Foundation
import Hook
import SwiftEntrySample
import Synchronization
import Testing

// Random hooks on every kind of hook point (a closure, a C function's
// hooked entry, a C function hooked at its entry, a Swift function hooked
// by name, a `@HookableMethod`, a `@Hooked` property, an async closure),
// checked call by call against a plain
// model of what the documentation says a call does: before hooks in the
// order added (each may change the argument, or set a result and veto),
// instead hooks nested (the first added outermost, each running the next,
// and the original past the last, through `invokeOriginal()`, any number of
// times), after hooks in the order added (a typed `afterReturning` among
// them, once the call has a result), a call with no result running the
// original after the hooks; hooks that throw reported and the call going
// on; the hooks of a call those there when it began; calls from inside a
// hook running the original only, calls from inside the original hooked;
// hooks of an owner that went skipped, and detached at the next change of
// the point or when a call meets them (at once for a `HookOwner`). A C
// function's call always has a result: zero where no hook or original made
// one (its after hooks, typed or not, see it; nothing is reported). And on
// threads: calls made while another thread adds and removes hooks each see
// one of the lists of hooks there while they ran.

/// What a hook of a random run is and does.
private struct HookSpec {
    enum Kind: CaseIterable { case before, instead, after, typedAfter }
    /// What it does besides its kind's work, each time it runs.
    enum Action: Equatable {
        case none
        /// Calls the point (from inside a hook: the original only) and adds
        /// what it returned to its own work.
        case reenter
        case removeSelf
        case remove(Int)
        /// Adds an after hook (of the next id) that adds `amount` to the result.
        case add
        case releaseOwner(Int)
        case removeAll
    }
    let id: Int
    let kind: Kind
    let amount: Int
    /// Before: sets `amount` as the result and vetoes. Instead: sets a
    /// result even without running the original.
    let flag: Bool
    /// Instead: how many times it runs the original (the next hook).
    /// Before (1): sets `amount` as the result without vetoing (a function's).
    let invocations: Int
    let throwing: Bool
    let owner: Int?
    let action: Action

    /// A typed after hook as a plain after hook (an async point's
    /// synchronous after hooks work as its async ones).
    var asAfter: HookSpec {
        guard kind == .typedAfter else { return self }
        return HookSpec(id: id, kind: .after, amount: amount, flag: flag, invocations: 0, throwing: throwing,
                        owner: owner, action: action)
    }

    var description: String {
        "#\(id) \(kind) amount \(amount)\(flag ? " flag" : "") x\(invocations)\(throwing ? " throws" : "")"
            + "\(owner.map { " owner \($0)" } ?? "") \(action)"
    }
}

private struct HookModelError: Error, CustomStringConvertible {
    let id: Int
    var description: String { "hook #\(id) threw" }
}

/// An owner of hooks; `bagged` ones are `HookOwner`s (their hooks go at once).
private class ModelOwner {}
private final class BaggedModelOwner: ModelOwner, HookOwner {
    let hookBag = HookBag()
}

/// Where the originals report their runs: "o" and the argument. (The C
/// originals report through a C function pointer; the suite runs its cases
/// one at a time.)
nonisolated(unsafe) private var modelLog: [String] = []

/// The hook points of the random runs.
private enum ModelPointKind: CaseIterable, CustomStringConvertible {
    /// A `ClosureHook<Int64, Int64>` whose original calls the hooked closure.
    case closure
    /// A `FunctionHook` of `hk_model_original`, which calls the hooked entry.
    case cEntry
    /// An `EntryHook` of `hk_model_patched`, which calls itself.
    case patched
    /// A `SwiftEntryHook` of `SwiftEntrySample.modelOriginal`, which calls itself.
    case swiftEntry
    /// A `@HookableMethod` whose body calls the method (it has no typed
    /// after hooks: plain after hooks stand for them).
    case method
    /// A `@Hooked` property: a call is a set (its result the value
    /// stored after it), a reentrant call a set from inside a hook.
    case property
    /// An `AsyncClosureHook<Int64, Int64>`: async hooks (some suspend),
    /// and for typed after hooks synchronous after hooks added through
    /// `HookPoint` (with a `CallBack`), which work as after hooks.
    case async
    /// Patching a function's entry is refused under ThreadSanitizer.
    var isAvailable: Bool { self != .patched && self != .swiftEntry || EntryHook.isAvailable }

    var description: String {
        switch self {
        case .closure: "closure"
        case .cEntry: "C function's entry"
        case .patched: "C function hooked at its entry"
        case .swiftEntry: "Swift function hooked by name"
        case .property: "@Hooked property"
        case .method: "@HookableMethod"
        case .async: "async closure"
        }
    }
}

private typealias ModelCFunction = @convention(c) (Int64) -> Int64

/// The Swift function's hook point, found once: a look-up by name reads the
/// symbol tables, most of a run's time when each run asked.
nonisolated(unsafe) private let modelSwiftEntry = Result {
    try SwiftEntryHook.named("SwiftEntrySample.modelOriginal(_:)", as: ((Int64) -> Int64).self)
}

private final class ModelBox {
    @Hooked var value: Int64 = 0
}

/// The method kind's object: its body is the closure's original, calling the method.
private final class ModelMethodObject {
    var depth = 0
    @HookableMethod(ModelMethodObject.body) var model
    private func body(_ x: Int64) -> Int64 {
        modelLog.append("o\(x)")
        if x > 0, x % 7 == 0, depth < 3 {
            depth += 1
            defer { depth -= 1 }
            return model(x - 1) &+ 1
        }
        return x &* 2 &+ 1
    }
}

/// What the driver of a random run uses of the real hook point and its hooks.
private protocol ModelReal: AnyObject {
    var point: HookPoint! { get }
    var errors: Shared<[String]> { get }
    var tokens: [Int: HookToken] { get }
    var owners: [ModelOwner?] { get set }
    var nextID: Int { get set }
    func add(_ spec: HookSpec)
    /// A call, a call inside `point.withoutHooks`, and one inside the
    /// thread's `withoutHooks` (nil: not for this kind of point).
    func call(_ x: Int64) async -> Int64
    func callWithoutPointHooks(_ x: Int64) async -> Int64
    func callWithoutHooks(_ x: Int64) -> Int64?
    func end() throws
}

extension ModelReal {
    /// What a hook's action does to the hooks (every action but `.reenter`).
    func performChange(_ spec: HookSpec) {
        switch spec.action {
        case .none, .reenter: break
        case .removeSelf: tokens[spec.id]?.remove()
        case .remove(let other): tokens[other]?.remove()
        case .add:
            add(HookSpec(id: nextID, kind: .after, amount: spec.amount &+ 1, flag: false, invocations: 0, throwing: false,
                         owner: nil, action: .none))
            nextID += 1
        case .releaseOwner(let owner): owners[owner] = nil
        case .removeAll: point.removeAllHooks()
        }
    }
}

/// The run through the real API: a hooked function and hooks doing what their specs say.
private final class RealRun: ModelReal, @unchecked Sendable {
    let kind: ModelPointKind
    var point: HookPoint!
    /// A call of the hooked function.
    var invoke: ((Int64) -> Int64)!
    func call(_ x: Int64) async -> Int64 { invoke(x) }
    func callWithoutPointHooks(_ x: Int64) async -> Int64 { point.withoutHooks { invoke(x) } }
    func callWithoutHooks(_ x: Int64) -> Int64? { withoutHooks { invoke(x) } }
    /// Adds a typed after hook.
    var addTypedAfter: ((AnyObject?, @escaping (Int64, Int64) throws -> Void) -> HookToken)!
    let errors = Shared<[String]>([])
    var tokens: [Int: HookToken] = [:]
    var owners: [ModelOwner?] = []
    var depth = 0
    var nextID = 0
    let box = ModelBox()
    let object = ModelMethodObject()

    init(_ kind: ModelPointKind) throws {
        self.kind = kind
        let signature = Signature(returning: .int64, arguments: [.int64])
        switch kind {
        case .closure:
            let point = ClosureHook<Int64, Int64>(name: "model") { [unowned self] x in self.original(x) }
            self.point = point
            invoke = { [unowned point] in point($0) }
            addTypedAfter = { [unowned point] owner, body in point.afterReturning(owner: owner, body) }
        case .cEntry, .patched:
            let point: FunctionHook = kind == .cEntry
                ? try FunctionHook(cFunction: hk_model_original as ModelCFunction, signature: signature, name: "model")
                : try EntryHook(address: unsafeBitCast(hk_model_patched as ModelCFunction, to: UnsafeRawPointer.self),
                                signature: signature, name: "model")
            self.point = point
            let entry = point.entry(as: ModelCFunction.self)
            hk_model_set({ modelLog.append("o\($0)") }, entry)
            invoke = kind == .cEntry ? { entry($0) } : { hk_model_patched($0) }
            addTypedAfter = { [unowned point] owner, body in try! point.afterReturning(owner: owner, body) }
        case .property:
            let point = box.$value
            self.point = point
            invoke = { [box] in
                box.value = $0
                return box.value
            }
            // (The old and the new value, as a typed after hook's result and argument.)
            addTypedAfter = { [unowned point] owner, body in point.didSet(owner: owner) { try body($0, $1) } }
        case .swiftEntry:
            let point = try modelSwiftEntry.get()
            self.point = point
            modelReport = { modelLog.append("o\($0)") }
            invoke = { modelOriginal($0) }
            addTypedAfter = { [unowned point] owner, body in try! point.afterReturning(owner: owner) { try body($0, $1) } }
        case .method:
            point = object.$model
            invoke = { [object] in object.model($0) }
        case .async: preconditionFailure("an async point's run is an AsyncRealRun")
        }
        point.hookErrorHandler = { [errors] error, position in errors.mutate { $0.append("\(position): \(error)") } }
    }

    /// Puts a patched function back.
    func end() throws {
        if let entry = point as? EntryHook { try entry.restore() }
        // (Kept patched for the next run, which uses the same point.)
        if let entry = point as? SwiftEntryHook<Int64, Int64> { entry.removeAllHooks() }
        hk_model_set(nil, nil)
        modelReport = nil
    }

    /// The closure's original: as `hk_model_original`.
    func original(_ x: Int64) -> Int64 {
        modelLog.append("o\(x)")
        if x > 0, x % 7 == 0, depth < 3 {
            depth += 1
            defer { depth -= 1 }
            return invoke(x - 1) &+ 1
        }
        return x &* 2 &+ 1
    }

    func add(_ spec: HookSpec) {
        let owner = spec.owner.flatMap { owners[$0] }
        let token: HookToken
        switch spec.kind {
        case .before: token = point.before(owner: owner) { [unowned self] in try self.run(spec, &$0) }
        case .instead: token = point.instead(owner: owner) { [unowned self] in try self.run(spec, &$0) }
        case .after: token = point.after(owner: owner) { [unowned self] in try self.run(spec, &$0) }
        case .typedAfter where kind == .method:
            token = point.after(owner: owner) { [unowned self] in try self.run(spec.asAfter, &$0) }
        case .typedAfter:
            token = addTypedAfter(owner) { [unowned self] result, argument in
                modelLog.append(kind == .property ? "\(spec.id):\(result)->\(argument)" : "\(spec.id):\(argument)=\(result)")
                _ = self.perform(spec, argument)
                if spec.throwing { throw HookModelError(id: spec.id) }
            }
        }
        tokens[spec.id] = token
    }

    /// What a hook's action does; the value it adds to the hook's work.
    func perform(_ spec: HookSpec, _ argument: Int64) -> Int64 {
        guard spec.action == .reenter else {
            performChange(spec)
            return 0
        }
        guard kind == .property else { return invoke(argument) % 5 }
        // A set from inside a hook: stored without hooks.
        box.value = argument &+ Int64(spec.amount)
        return 0
    }

    func run(_ spec: HookSpec, _ call: inout CallBack) throws {
        let argument = try call.argument(0, as: Int64.self)
        modelLog.append(kind == .property ? "\(spec.id):\(argument)/\(box.value)" : "\(spec.id):\(argument)")
        let extra = perform(spec, argument)
        let amount = Int64(spec.amount)
        if kind == .property { return try runOnSet(spec, &call, argument &+ amount &+ extra) }
        switch spec.kind {
        case .before:
            try call.setArgument(0, to: argument &+ amount &+ extra)
            if spec.flag || spec.invocations == 1 { try call.setResult(amount) }
            if spec.flag { try call.veto() }
            if spec.throwing { throw HookModelError(id: spec.id) }
        case .instead:
            var total: Int64 = 0
            for _ in 0..<spec.invocations {
                try call.setArgument(0, to: try call.argument(0, as: Int64.self) &+ amount)
                try call.invokeOriginal()
                total &+= try call.result(as: Int64.self)
            }
            if spec.throwing { throw HookModelError(id: spec.id) }
            if spec.invocations > 0 || spec.flag { try call.setResult(total &+ amount &+ extra) }
        case .after:
            if call.hasResult {
                try call.setResult(try call.result(as: Int64.self) &* 3 &+ amount &+ extra)
            } else {
                try call.setResult(amount &+ extra)
            }
            if spec.throwing { throw HookModelError(id: spec.id) }
        case .typedAfter:
            Issue.record("a typed hook runs through its own body")
        }
    }

    /// `run` on a property's set: a before hook replaces the new value
    /// (`changed`) and may veto, an instead hook stores it (as changed
    /// by `amount`) as many times as it runs the original.
    func runOnSet(_ spec: HookSpec, _ call: inout CallBack, _ changed: Int64) throws {
        switch spec.kind {
        case .before:
            try call.setArgument(0, to: changed)
            if spec.flag { try call.veto() }
        case .instead:
            for _ in 0..<spec.invocations {
                try call.setArgument(0, to: try call.argument(0, as: Int64.self) &+ Int64(spec.amount))
                try call.invokeOriginal()
            }
        case .after, .typedAfter: break
        }
        if spec.throwing { throw HookModelError(id: spec.id) }
    }
}

/// The run through an async hook point: the same hooks as async hooks,
/// some suspending before their work; typed after hooks are synchronous
/// after hooks added through `HookPoint`.
private final class AsyncRealRun: ModelReal, @unchecked Sendable {
    var point: HookPoint!
    var async: AsyncClosureHook<Int64, Int64>!
    let errors = Shared<[String]>([])
    var tokens: [Int: HookToken] = [:]
    var owners: [ModelOwner?] = []
    var depth = 0
    var nextID = 0

    init() {
        async = AsyncClosureHook<Int64, Int64>(name: "model") { [unowned self] x in await self.original(x) }
        point = async
        point.hookErrorHandler = { [errors] error, position in errors.mutate { $0.append("\(position): \(error)") } }
    }

    func call(_ x: Int64) async -> Int64 { try! await async(x) }
    func callWithoutPointHooks(_ x: Int64) async -> Int64 { try! await async.withoutHooks { try await async(x) } }
    func callWithoutHooks(_ x: Int64) -> Int64? { nil }
    func end() throws {}

    func original(_ x: Int64) async -> Int64 {
        modelLog.append("o\(x)")
        if x > 0, x % 7 == 0, depth < 3 {
            depth += 1
            defer { depth -= 1 }
            return await call(x - 1) &+ 1
        }
        return x &* 2 &+ 1
    }

    func add(_ spec: HookSpec) {
        let owner = spec.owner.flatMap { owners[$0] }
        switch spec.kind {
        case .before: tokens[spec.id] = async.before(owner: owner) { [unowned self] in try await self.run(spec, &$0) }
        case .instead: tokens[spec.id] = async.instead(owner: owner) { [unowned self] in try await self.run(spec, &$0) }
        case .after: tokens[spec.id] = async.after(owner: owner) { [unowned self] in try await self.run(spec, &$0) }
        case .typedAfter:
            tokens[spec.id] = point.after(owner: owner) { [unowned self] call in
                let argument = try call.argument(0, as: Int64.self)
                modelLog.append("\(spec.id):\(argument)")
                self.performChange(spec)
                let amount = Int64(spec.amount)
                try call.setResult(call.hasResult ? try call.result(as: Int64.self) &* 3 &+ amount : amount)
                if spec.throwing { throw HookModelError(id: spec.id) }
            }
        }
    }

    /// What a hook's action does; the value it adds to the hook's work.
    func perform(_ spec: HookSpec, _ argument: Int64) async -> Int64 {
        if spec.action == .reenter { return await call(argument) % 5 }
        performChange(spec)
        return 0
    }

    func run(_ spec: HookSpec, _ call: inout AsyncCallBack<Int64, Int64>) async throws {
        // Some hooks suspend first (and may go on on another thread).
        if spec.amount % 3 == 0 { await Task.yield() }
        let argument = call.arguments
        modelLog.append("\(spec.id):\(argument)")
        let extra = await perform(spec, argument)
        let amount = Int64(spec.amount)
        switch spec.kind {
        case .before:
            call.arguments = argument &+ amount &+ extra
            if spec.flag || spec.invocations == 1 { call.setResult(amount) }
            if spec.flag { try call.veto() }
        case .instead:
            var total: Int64 = 0
            for _ in 0..<spec.invocations {
                call.arguments = call.arguments &+ amount
                try await call.invokeOriginal()
                guard let result = call.result else { throw HookModelError(id: -1) }
                total &+= result
            }
            if spec.throwing { throw HookModelError(id: spec.id) }
            if spec.invocations > 0 || spec.flag { call.setResult(total &+ amount &+ extra) }
            return
        case .after:
            call.setResult(call.result.map { $0 &* 3 &+ amount &+ extra } ?? amount &+ extra)
        case .typedAfter:
            Issue.record("a synchronous hook runs through its own body")
        }
        if spec.throwing { throw HookModelError(id: spec.id) }
    }
}

/// The model: the same run by the documentation's rules.
private final class ModelRun {
    /// A C function: every call has a result (zero where none was made).
    let isC: Bool
    /// A property: a call is a set.
    let isProperty: Bool
    /// The property's value.
    var stored = 0
    /// An async point (its "typed" after hooks are synchronous after
    /// hooks) or a method (plain after hooks): they work as after hooks.
    let typedAfterIsPlain: Bool
    init(_ kind: ModelPointKind) {
        isC = kind == .cEntry || kind == .patched
        isProperty = kind == .property
        typedAfterIsPlain = kind == .async || kind == .method
    }

    struct Attached {
        let spec: HookSpec
        /// `remove()` called on its token.
        var removed = false
    }
    /// The hooks the point lists, in the order added (orphans not yet detached included).
    var attached: [Attached] = []
    /// The hooks whose token's `remove()` was called, or that the point
    /// detached (`removeAllHooks()`, an orphan): a token's first `remove()`
    /// is a change of the point if its hook is still attached then; one
    /// the point detached is no longer active, and its `remove()` does nothing.
    var removedIDs: Set<Int> = []
    /// The hooks added with each owner (a `HookOwner`'s bag holds them).
    var owned: [Int: [Int]] = [:]
    var log: [String] = []
    var errors: [String] = []
    var ownersAlive: [Bool] = []
    var bagged: [Bool] = []
    var depth = 0
    var nextID = 0
    /// Inside a hook of the point: calls run the original only.
    var inHook = 0
    var suppressed = false

    /// A call's record.
    struct Record {
        var argument: Int
        var result: Int?
        var vetoed = false
    }

    func ownerAlive(_ spec: HookSpec) -> Bool { spec.owner.map { ownersAlive[$0] } ?? true }

    /// A change of the point: hooks of owners that went are detached.
    func changed() {
        for hook in attached where !ownerAlive(hook.spec) { removedIDs.insert(hook.spec.id) }
        attached.removeAll { !ownerAlive($0.spec) }
    }

    func add(_ spec: HookSpec) {
        if let owner = spec.owner { owned[owner, default: []].append(spec.id) }
        attached.append(Attached(spec: spec))
        changed()
    }

    func remove(_ id: Int) {
        guard !removedIDs.contains(id) else { return }
        removedIDs.insert(id)
        attached.removeAll { $0.spec.id == id }
        changed()
    }

    func releaseOwner(_ owner: Int) {
        guard ownersAlive[owner] else { return }
        ownersAlive[owner] = false
        guard bagged[owner] else { return }
        // Its bag removes the hooks it holds, each as `remove()` (a change
        // of the point unless `removeAllHooks()` or a call detached it).
        for id in owned[owner, default: []] { remove(id) }
    }

    func original(_ x: Int) -> Int {
        log.append("o\(x)")
        if x > 0, x % 7 == 0, depth < 3 {
            depth += 1
            defer { depth -= 1 }
            return call(x - 1) &+ 1
        }
        return x &* 2 &+ 1
    }

    /// The original from `invokeOriginal()` (or with no hooks): calls from
    /// inside it are hooked again.
    func originalOutsideHooks(_ x: Int) -> Int {
        let saved = inHook
        inHook = 0
        defer { inHook = saved }
        return original(x)
    }

    func call(_ x: Int) -> Int {
        if isProperty { return set(x) }
        if inHook > 0 || suppressed || attached.isEmpty { return original(x) }
        let hooks = attached.map(\.spec)
        let befores = hooks.filter { $0.kind == .before }
        let insteads = hooks.filter { $0.kind == .instead }
        let afters = hooks.filter { $0.kind == .after || $0.kind == .typedAfter }
        var record = Record(argument: x)
        for hook in befores { runHook(hook, &record, insteads) }
        if !record.vetoed { runInstead(0, insteads, &record) }
        if typedAfterIsPlain {
            for hook in afters { runHook(hook.asAfter, &record, insteads) }
            if let result = record.result { return result }
            errors.append("instead: missing result")
            return original(record.argument)
        }
        if isC, !afters.isEmpty, record.result == nil { record.result = 0 }
        for hook in afters {
            if hook.kind == .typedAfter, record.result == nil, ownerAlive(hook) { continue }
            runHook(hook, &record, insteads)
        }
        if let result = record.result { return result }
        if isC { return 0 }
        errors.append("instead: missing result")
        return original(record.argument)
    }

    /// A set of the property (from inside one of its hooks, or without
    /// hooks: stored only); the value stored after it. Its after hooks,
    /// typed or not, do not run for a vetoed set; a typed one runs once a
    /// value was stored (an instead hook may store none).
    func set(_ x: Int) -> Int {
        if inHook > 0 || suppressed || attached.isEmpty {
            stored = x
            return stored
        }
        let hooks = attached.map(\.spec)
        let befores = hooks.filter { $0.kind == .before }
        let insteads = hooks.filter { $0.kind == .instead }
        let afters = hooks.filter { $0.kind == .after || $0.kind == .typedAfter }
        var record = Record(argument: x)
        let old = stored
        for hook in befores { runHook(hook, &record, insteads) }
        if record.vetoed { return stored }
        runInstead(0, insteads, &record)
        for hook in afters {
            if hook.kind == .typedAfter {
                guard ownerAlive(hook) else {
                    changed()
                    continue
                }
                guard record.result != nil else { continue }
                inHook += 1
                log.append("\(hook.id):\(old)->\(record.argument)")
                _ = perform(hook, record.argument)
                if hook.throwing { errors.append("after: hook #\(hook.id) threw") }
                inHook -= 1
                continue
            }
            runHook(hook, &record, insteads)
        }
        return stored
    }

    /// The instead hook at `index`, or the original past the last one.
    func runInstead(_ index: Int, _ insteads: [HookSpec], _ record: inout Record) {
        guard index < insteads.count else {
            if isProperty {
                stored = record.argument
                record.result = 0
                return
            }
            record.result = originalOutsideHooks(record.argument)
            return
        }
        let hook = insteads[index]
        guard ownerAlive(hook) else {
            changed()
            return runInstead(index + 1, insteads, &record)
        }
        let threwBeforeOriginal = !runHook(hook, &record, insteads, insteadIndex: index)
        if threwBeforeOriginal { runInstead(index + 1, insteads, &record) }
    }

    /// Runs a hook (skipped, and the orphans detached, if its owner went).
    /// For an instead hook: false if it threw before running the original.
    @discardableResult
    func runHook(_ hook: HookSpec, _ record: inout Record, _ insteads: [HookSpec], insteadIndex: Int = 0) -> Bool {
        guard ownerAlive(hook) else {
            changed()
            return true
        }
        inHook += 1
        defer { inHook -= 1 }
        let argument = record.argument
        if isProperty { return runOnSet(hook, &record, insteads, insteadIndex: insteadIndex) }
        if hook.kind == .typedAfter {
            log.append("\(hook.id):\(argument)=\(record.result!)")
        } else {
            log.append("\(hook.id):\(argument)")
        }
        let extra = perform(hook, argument)
        func threw(_ position: String) { errors.append("\(position): hook #\(hook.id) threw") }
        switch hook.kind {
        case .before:
            record.argument = argument &+ hook.amount &+ extra
            if hook.flag || hook.invocations == 1 { record.result = hook.amount }
            if hook.flag { record.vetoed = true }
            if hook.throwing { threw("before") }
        case .instead:
            var total = 0
            for _ in 0..<hook.invocations {
                record.argument &+= hook.amount
                runInstead(insteadIndex + 1, insteads, &record)
                guard let result = record.result else {
                    errors.append("instead: result")
                    return true
                }
                total &+= result
            }
            if hook.throwing {
                threw("instead")
                return hook.invocations > 0
            }
            if hook.invocations > 0 || hook.flag { record.result = total &+ hook.amount &+ extra }
        case .after:
            record.result = record.result.map { $0 &* 3 &+ hook.amount &+ extra } ?? (hook.amount &+ extra)
            if hook.throwing { threw("after") }
        case .typedAfter:
            if hook.throwing { threw("after") }
        }
        return true
    }

    /// `runHook` on a property's set (in the hook, its owner alive).
    func runOnSet(_ hook: HookSpec, _ record: inout Record, _ insteads: [HookSpec], insteadIndex: Int) -> Bool {
        let argument = record.argument
        log.append("\(hook.id):\(argument)/\(stored)")
        let changed = argument &+ hook.amount &+ perform(hook, argument)
        switch hook.kind {
        case .before:
            record.argument = changed
            if hook.flag { record.vetoed = true }
        case .instead:
            for _ in 0..<hook.invocations {
                record.argument &+= hook.amount
                runInstead(insteadIndex + 1, insteads, &record)
            }
        case .after, .typedAfter: break
        }
        if hook.throwing {
            errors.append("\(hook.kind): hook #\(hook.id) threw")
            return hook.kind != .instead || hook.invocations > 0
        }
        return true
    }

    func perform(_ spec: HookSpec, _ argument: Int) -> Int {
        switch spec.action {
        case .none: return 0
        case .reenter where isProperty:
            stored = set(argument &+ spec.amount)
        case .reenter: return call(argument) % 5
        case .removeSelf: remove(spec.id)
        case .remove(let other): remove(other)
        case .add:
            add(HookSpec(id: nextID, kind: .after, amount: spec.amount &+ 1, flag: false, invocations: 0, throwing: false,
                         owner: nil, action: .none))
            nextID += 1
        case .releaseOwner(let owner): releaseOwner(owner)
        case .removeAll:
            // (Their tokens are no longer active: a later `remove()` does nothing.)
            for hook in attached { removedIDs.insert(hook.spec.id) }
            attached.removeAll()
        }
        return 0
    }
}

/// One random run of `steps` steps; what went wrong (empty: nothing).
private func hookModelRun(_ kind: ModelPointKind, seed: UInt64, steps: Int, verbose: Bool = false) async throws -> [String] {
    var random = SeededGenerator(seed: seed)
    let real: any ModelReal = kind == .async ? AsyncRealRun() : try RealRun(kind)
    defer { try? real.end() }
    let model = ModelRun(kind)
    var failures: [String] = []
    func say(_ line: String) { if verbose { print("[\(kind) \(seed)] \(line)") } }

    func newOwner() {
        let bagged = Bool.random(using: &random)
        real.owners.append(bagged ? BaggedModelOwner() : ModelOwner())
        model.ownersAlive.append(true)
        model.bagged.append(bagged)
    }
    for _ in 0..<3 { newOwner() }

    func randomSpec() -> HookSpec {
        let id = model.nextID
        model.nextID += 1
        real.nextID = model.nextID
        let hookKind = HookSpec.Kind.allCases.randomElement(using: &random)!
        let alive = model.ownersAlive.indices.filter { model.ownersAlive[$0] }
        let owner = Int.random(in: 0..<4, using: &random) == 0 ? alive.randomElement(using: &random) : nil
        let known = Array(model.attached.map(\.spec.id))
        let action: HookSpec.Action
        switch Int.random(in: 0..<24, using: &random) {
        case 0, 1: action = .reenter
        case 2: action = .removeSelf
        case 3: action = known.randomElement(using: &random).map { .remove($0) } ?? .none
        case 4: action = .add
        case 5: action = alive.randomElement(using: &random).map { .releaseOwner($0) } ?? .none
        case 6 where Int.random(in: 0..<4, using: &random) == 0: action = .removeAll
        default: action = .none
        }
        return HookSpec(id: id, kind: hookKind, amount: Int.random(in: -3...9, using: &random),
                        flag: Int.random(in: 0..<6, using: &random) == 0,
                        invocations: hookKind == .instead ? [0, 1, 1, 1, 2].randomElement(using: &random)!
                            : hookKind == .before && Int.random(in: 0..<6, using: &random) == 0 ? 1 : 0,
                        throwing: Int.random(in: 0..<10, using: &random) == 0, owner: owner,
                        // (A synchronous hook cannot call an async point.)
                        action: kind == .async && hookKind == .typedAfter && action == .reenter ? .none : action)
    }

    for step in 0..<steps {
        let choice = Int.random(in: 0..<100, using: &random)
        switch choice {
        case 0..<27:
            let spec = randomSpec()
            say("add \(spec.description)")
            real.add(spec)
            model.add(spec)
        case 27..<30:
            // Many hooks of one owner (a bag of more than 8 removes them
            // grouped by point, with one change each).
            guard let owner = model.ownersAlive.indices.filter({ model.ownersAlive[$0] }).randomElement(using: &random) else { continue }
            let count = Int.random(in: 5...14, using: &random)
            say("add \(count) after hooks of owner \(owner)")
            for _ in 0..<count {
                let spec = HookSpec(id: model.nextID, kind: .after, amount: Int.random(in: 0...3, using: &random), flag: false,
                                    invocations: 0, throwing: false, owner: owner, action: .none)
                model.nextID += 1
                real.nextID = model.nextID
                real.add(spec)
                model.add(spec)
            }
        case 30..<38:
            // Mostly an attached hook; sometimes any made so far (removed already, or detached).
            guard model.nextID > 0 else { continue }
            let id = Int.random(in: 0..<3, using: &random) > 0
                ? model.attached.randomElement(using: &random)?.spec.id ?? 0 : Int.random(in: 0..<model.nextID, using: &random)
            say("remove #\(id)")
            real.tokens[id]?.remove()
            model.remove(id)
        case 38..<42:
            guard let owner = model.ownersAlive.indices.filter({ model.ownersAlive[$0] }).randomElement(using: &random) else { continue }
            say("release owner \(owner)")
            real.owners[owner] = nil
            model.releaseOwner(owner)
            newOwner()
        case 42..<44:
            say("remove all")
            real.point.removeAllHooks()
            _ = model.perform(HookSpec(id: -1, kind: .after, amount: 0, flag: false, invocations: 0, throwing: false, owner: nil,
                                   action: .removeAll), 0)
        default:
            let x = Int.random(in: 0..<40, using: &random)
            let mode = Int.random(in: 0..<10, using: &random)
            modelLog = []
            model.log = []
            let before = real.errors.value.count
            let errorsBefore = model.errors.count
            let got: Int64, expected: Int
            switch mode {
            case 0:
                say("call \(x) without hooks")
                guard let result = real.callWithoutHooks(Int64(x)) else { continue }
                got = result
                model.suppressed = true
                expected = model.call(x)
                model.suppressed = false
            case 1:
                say("call \(x) without this point's hooks")
                got = await real.callWithoutPointHooks(Int64(x))
                model.suppressed = true
                expected = model.call(x)
                model.suppressed = false
            default:
                say("call \(x)")
                got = await real.call(Int64(x))
                expected = model.call(x)
            }
            say("  \(modelLog.joined(separator: " ")) -> \(got)")
            if got != Int64(expected) || modelLog != model.log {
                failures.append("\(kind), seed \(seed) step \(step): call \(x) (mode \(mode)) returned \(got), the model \(expected); "
                                + "ran \(modelLog), the model \(model.log)")
                return failures
            }
            let errors = Array(real.errors.value.dropFirst(before))
            let expectedErrors = Array(model.errors.dropFirst(errorsBefore))
            if errors.count != expectedErrors.count {
                failures.append("\(kind), seed \(seed) step \(step): call \(x) reported \(errors), the model \(expectedErrors)")
                return failures
            }
        }
        let count = real.point.hookCount
        if count != model.attached.count {
            failures.append("\(kind), seed \(seed) step \(step): \(count) hooks, the model \(model.attached.count): "
                            + "\(model.attached.map(\.spec.description))")
            return failures
        }
    }
    withExtendedLifetime(real) {}
    return failures
}

/// The threaded model's Swift function's hook point, found once.
nonisolated(unsafe) private let threadsSwiftEntry = Result {
    try SwiftEntryHook.named("SwiftEntrySample.threadsOriginal(_:)", as: ((Int64) -> Int64).self)
}

/// The threaded model's method: 2x + 1.
private final class ThreadsMethodObject: @unchecked Sendable {
    @HookableMethod(ThreadsMethodObject.body) var double
    private func body(_ x: Int64) -> Int64 { x &* 2 &+ 1 }
}

/// The hook point of the threaded model: a call through its hooks.
private final class ThreadedPoint: @unchecked Sendable {
    let point: HookPoint
    let call: @Sendable (Int64) -> Int64
    let end: () throws -> Void

    init(_ kind: ModelPointKind) throws {
        let signature = Signature(returning: .int64, arguments: [.int64])
        switch kind {
        case .closure:
            let point = ClosureHook<Int64, Int64>(name: "threads") { $0 &* 2 &+ 1 }
            self.point = point
            call = { [unowned point] in point($0) }
            end = {}
        case .cEntry:
            let point = try FunctionHook(cFunction: hk_threads_original as ModelCFunction, signature: signature, name: "threads")
            self.point = point
            let entry = point.entry(as: ModelCFunction.self)
            call = { entry($0) }
            end = {}
        case .patched:
            let point = try EntryHook(address: unsafeBitCast(hk_threads_patched as ModelCFunction, to: UnsafeRawPointer.self),
                                      signature: signature, name: "threads")
            self.point = point
            call = { hk_threads_patched($0) }
            end = { try point.restore() }
        case .swiftEntry:
            let point = try threadsSwiftEntry.get()
            self.point = point
            call = { threadsOriginal($0) }
            // (Kept patched for the next run, which uses the same point.)
            end = { point.removeAllHooks() }
        case .method:
            let object = ThreadsMethodObject()
            point = object.$double
            call = { object.double($0) }
            end = {}
        default:
            preconditionFailure("the threaded model runs on functions and methods")
        }
    }
}

/// A hook of the threaded model: pure, reporting its id to the thread's log.
private struct ThreadedHook: Sendable {
    let id: Int
    let position: HookPosition
    let amount: Int64
}

/// What a call does under `hooks` (the documented rules, with pure hooks):
/// its result and the ids of the hooks it ran, in order.
private func threadedModel(_ hooks: [ThreadedHook], _ x: Int64) -> (Int64, [Int64]) {
    var log: [Int64] = []
    var argument = x
    for hook in hooks where hook.position == .before {
        log.append(Int64(hook.id))
        argument &+= hook.amount
    }
    let insteads = hooks.filter { $0.position == .instead }
    func instead(_ index: Int) -> Int64 {
        guard index < insteads.count else { return argument &* 2 &+ 1 }
        log.append(Int64(insteads[index].id))
        argument &+= insteads[index].amount
        return instead(index + 1) &+ insteads[index].amount
    }
    var result = instead(0)
    for hook in hooks where hook.position == .after {
        log.append(Int64(hook.id))
        result = result &* 3 &+ hook.amount
    }
    return (result, log)
}

/// Four threads call a hooked function while a fifth adds and removes pure
/// hooks: each call must be what the model says of one of the lists of
/// hooks that were there while it ran (from the last change that ended
/// before it began to the last one that began before it ended), its
/// result and the order its hooks ran in.
private func threadedHookRun(_ kind: ModelPointKind, seed: UInt64) throws -> [String] {
    let point = try ThreadedPoint(kind)
    defer { try? point.end() }
    var random = SeededGenerator(seed: seed)
    // The changes, made in advance: the lists of hooks after each.
    var lists: [[ThreadedHook]] = [[]]
    var steps: [(add: ThreadedHook?, remove: Int?)] = []
    var attached: [ThreadedHook] = []
    for id in 0..<(underThreadSanitizer ? 60 : 200) {
        if attached.count > 1, attached.count > 6 || Bool.random(using: &random) {
            let index = Int.random(in: 0..<attached.count, using: &random)
            steps.append((nil, attached[index].id))
            attached.remove(at: index)
        } else {
            let hook = ThreadedHook(id: id, position: [.before, .instead, .after].randomElement(using: &random)!,
                                    amount: Int64.random(in: 1...5, using: &random))
            steps.append((hook, nil))
            attached.append(hook)
        }
        lists.append(attached)
    }
    let (changes, snapshots) = (steps, lists)
    /// How many changes began, and how many ended.
    let began = Atomic<Int>(0), ended = Atomic<Int>(0)
    let callers = 4
    let failures = Shared<[String]>([])
    let running = Atomic<Int>(callers)
    onThreads(callers + 1) { index in
        if index == callers {
            var tokens: [Int: HookToken] = [:]
            for (step, change) in changes.enumerated() {
                began.store(step + 1, ordering: .sequentiallyConsistent)
                if let hook = change.add {
                    let id = Int64(hook.id), amount = hook.amount
                    switch hook.position {
                    case .before:
                        tokens[hook.id] = point.point.before { call in
                            hk_thread_log_push(id)
                            try call.setArgument(0, to: try call.argument(0, as: Int64.self) &+ amount)
                        }
                    case .instead:
                        tokens[hook.id] = point.point.instead { call in
                            hk_thread_log_push(id)
                            try call.setArgument(0, to: try call.argument(0, as: Int64.self) &+ amount)
                            try call.invokeOriginal()
                            try call.setResult(try call.result(as: Int64.self) &+ amount)
                        }
                    case .after:
                        tokens[hook.id] = point.point.after { call in
                            hk_thread_log_push(id)
                            try call.setResult(try call.result(as: Int64.self) &* 3 &+ amount)
                        }
                    }
                } else if let id = change.remove {
                    tokens[id]?.remove()
                }
                ended.store(step + 1, ordering: .sequentiallyConsistent)
                sched_yield()
            }
            return
        }
        defer { running.subtract(1, ordering: .relaxed) }
        var x = Int64(index * 1_000)
        var buffer = [Int64](repeating: 0, count: 64)
        while ended.load(ordering: .sequentiallyConsistent) < changes.count {
            x &+= 1
            let first = ended.load(ordering: .sequentiallyConsistent)
            let result = point.call(x)
            let last = began.load(ordering: .sequentiallyConsistent)
            let count = Int(hk_thread_log_take(&buffer))
            let log = Array(buffer.prefix(count))
            let seen = (first...last).contains { k in
                let (expected, expectedLog) = threadedModel(snapshots[k], x)
                return expected == result && expectedLog == log
            }
            // (Four callers and a changer share two cores here: the
            // callers give way often, so that the changes go on.)
            if x % 4 == 0 { sched_yield() }
            if !seen {
                failures.mutate {
                    if $0.count < 3 {
                        $0.append("\(kind), seed \(seed): a call of \(x) between changes \(first) and \(last) returned \(result) "
                                  + "running hooks \(log): no list of hooks then gives that")
                    }
                }
                return
            }
        }
    }
    return failures.value
}

@Suite("Random hooks against a model", .serialized)
struct HookModelTests {
    /// 300 seeds of 120 steps for each kind of hook point;
    /// `HOOK_SEED=N swift test --filter HookModelTests` replays seed N with
    /// every step and call printed.
    @Test(arguments: ModelPointKind.allCases.filter { $0.isAvailable }, 0..<30)
    fileprivate func randomHooksDoWhatTheModelSays(kind: ModelPointKind, batch: Int) async throws {
        if let seed = ProcessInfo.processInfo.environment["HOOK_SEED"].flatMap(UInt64.init) {
            if batch == 0 { _ = try await hookModelRun(kind, seed: seed, steps: 120, verbose: true) }
            return
        }
        for seed in UInt64(batch * 10)..<UInt64(batch * 10 + 10) {
            let failures = try await hookModelRun(kind, seed: seed, steps: 120)
            #expect(failures.isEmpty, "\(failures.first ?? "")")
            if !failures.isEmpty { return }
        }
    }

    /// Hooks added and removed while four threads call (20 seeds of 200
    /// changes for each of a closure, a C function's hooked entry, a C
    /// function hooked at its entry, a Swift function hooked by name and a
    /// `@HookableMethod`).
    @Test(arguments: [ModelPointKind.closure, .cEntry, .patched, .swiftEntry, .method].filter { $0.isAvailable })
    fileprivate func threadsCallWhileHooksChangeAsTheModelSays(kind: ModelPointKind) throws {
        for seed in UInt64(0)..<20 {
            let failures = try threadedHookRun(kind, seed: seed)
            #expect(failures.isEmpty, "\(failures.joined(separator: "\n"))")
            if !failures.isEmpty { return }
        }
    }
}
