import Hook
import Synchronization

/// Reads the value a call posts and hands its address to the body.
typealias _Reader = (CallBack, (UnsafeRawPointer) throws -> Void) throws -> Void

/// A fish's callback (`Fish.both(_:_:callBack:)`), its object checked: returns
/// without calling when the object is gone. (Named apart from Hook's `CallBack`, the record it takes.)
typealias _FishCallBack = (CallBack) throws -> Void

/// Holds an object without keeping it alive (and without giving it a side
/// table): for callbacks that receive the object.
typealias _Weak<Object: AnyObject> = _ObjectReference<Object>

/// What a fish adds to its endpoint: a callback, transformers. Most fishes
/// have none, so it is a separate object made only when needed.
final class _FishExtras: @unchecked Sendable {
    let callback: _FishCallBack?
    let postSteps: [_Step]
    let receiveSteps: [_Step]

    init(callback: _FishCallBack?, postSteps: [_Step], receiveSteps: [_Step]) {
        self.callback = callback
        self.postSteps = postSteps
        self.receiveSteps = receiveSteps
    }
}

/// One end of a binding, with its types erased: what a ``Fish`` is made of,
/// and, once bound, a member of its ``Binding``.
///
/// A fish makes its endpoint; the first binding of the fish adopts it (sets
/// its role, extras and hook) and a later binding of the same fish gets a
/// copy. Endpoints never keep anything alive but their extras: their
/// object, hook point and hook are named by unowned references (an object
/// owns the hook points of its properties and methods, so they are valid
/// whenever the object is).
class _Endpoint: @unchecked Sendable {
    // The small fields first, in one word after the object's header (a
    // subclass's fields start after the last word of these: the property
    // endpoint keeps its own flag and offset here, so that it stays 72 bytes).
    /// Set by the adopting binding before it publishes anything.
    private(set) var role: Fish.Role = .post
    private let adopted = Atomic<Bool>(false)
    /// Whether `extras` is set (read on the delivery path, where loading
    /// the optional would retain and release it).
    private(set) final var hasExtras = false
    /// A property endpoint's: whether its `_PropertyAccess` closure is made.
    final var accessIsMade = false
    /// A property endpoint's: the offset of the property's storage in its object.
    final var cellOffset32: Int32 = 0
    private(set) var extras: _FishExtras?
    /// The hook the binding put at this endpoint's hook point (unowned).
    /// Atomic: set by `Binding.bind` after the binding's first hook is in
    /// place, so a delivery on another thread may read it meanwhile (then
    /// it sees 0, and the set goes through the hooks).
    private let tokenBits = Atomic<UInt>(0)
    private var tokenMemory: UnsafeMutableRawPointer? {
        UnsafeMutableRawPointer(bitPattern: tokenBits.load(ordering: .acquiring))
    }

    init() {}

    deinit {
        if let tokenMemory { _UnownedReference.dropMemory(tokenMemory) }
    }

    /// This endpoint set up as `fish`'s member of a binding: itself the first
    /// time, a copy after that.
    final func adopted(as fish: Fish) -> _Endpoint {
        let member = adopted.exchange(true, ordering: .acquiringAndReleasing) ? copy() : self
        if member !== self { _ = member.adopted.exchange(true, ordering: .relaxed) }
        member.role = fish.role
        if fish.callback != nil || !fish.postSteps.isEmpty || !fish.receiveSteps.isEmpty {
            member.extras = _FishExtras(callback: fish.callback, postSteps: fish.postSteps, receiveSteps: fish.receiveSteps)
            member.hasExtras = true
        }
        return member
    }

    /// Records the hook the binding added for this member.
    final func hold(_ token: HookToken) {
        tokenBits.store(UInt(bitPattern: _UnownedReference.keepMemory(of: token)), ordering: .releasing)
    }

    /// The address of that hook (0 if none): compared with a point's hooks,
    /// never followed (see `_PropertyEndpoint.receive`).
    final var tokenAddress: UInt { tokenBits.load(ordering: .relaxed) }

    /// The hook the binding added here, while it exists.
    final var token: HookToken? {
        guard let tokenMemory, let token = _UnownedReference.object(at: tokenMemory) else { return nil }
        return unsafeDowncast(token, to: HookToken.self)
    }

    /// Whether the hook the binding added here was not removed (by
    /// `unbind()`, its token, or the `HookBag` of an owner that ended). A
    /// token that is gone while its hook point lives was removed; one that
    /// went with its hook point (the point's object deinitialized) was not.
    /// A member the binding put no hook on (one that only receives) has
    /// nothing to lose. (The point asked first: a token its point detached
    /// is inactive too, and one a `HookBag` still held made a binding whose
    /// object went look unbound, which the same binding not stored in a bag
    /// did not.)
    final var hookIsAttached: Bool {
        guard let tokenMemory else { return true }
        if postingPoint == nil { return true }
        guard let token = _UnownedReference.object(at: tokenMemory) else { return false }
        return unsafeDowncast(token, to: HookToken.self).isActive
    }

    /// A new endpoint for the same hook point (not adopted).
    func copy() -> _Endpoint { preconditionFailure("every endpoint kind copies itself") }

    /// The lock group of the bindings that post from this endpoint's hook
    /// point (`fresh`, the new binding's, if none has one yet); nil once the
    /// point is gone. The point's own.
    func lockGroup(joining fresh: _Group) -> _Group? {
        postingPoint?._attachedObject(orAttach: { fresh })
    }

    final var posts: Bool { role != .observer }
    final var receives: Bool { role != .post }
    final var callback: _FishCallBack? { extras?.callback }

    /// How messages name the endpoint: `TestA.name`, `closure 'sum'`. Built
    /// when a message needs it (a type's name costs microseconds to spell).
    var description: String { "" }

    /// A problem found when the fish was made (a key path that is not hookable).
    var error: BindError? { nil }
    /// Whether the object (or the hook point) is still there.
    var isAlive: Bool { true }
    /// The hook point whose calls post, while alive; nil if the endpoint cannot post.
    var postingPoint: HookPoint? { nil }
    /// Whether a post is a store (a property): then the store and its
    /// delivery happen together, under the bindings' lock.
    var postsStores: Bool { false }
    /// The type of the value a call posts; nil if calls post no single value.
    var postType: Any.Type? { nil }
    /// Reads the posted value of the call at `call` (a pointer: the
    /// record is not copied).
    func withPostedValue(_ call: UnsafePointer<CallBack>, _ body: (UnsafeRawPointer) throws -> Void) throws {}
    /// The type a received value must have; nil if the endpoint cannot be set.
    var receiveType: Any.Type? { nil }
    /// Sets a received value (of `receiveType`); nothing if the object is gone.
    func receive(_ value: UnsafeRawPointer) {}
    /// Two fishes with the same identity are the same endpoint: the hook point, or this object.
    var identity: ObjectIdentifier { ObjectIdentifier(self) }
    /// Whether `identity` names a hook point (which keeps the lock group of the bindings that use it).
    var hasPoint: Bool { false }
    /// The object (its address) whose calls of the shared hook point post, for
    /// a property of an object that did not opt in; 0 for a point of its own.
    var targetBits: UInt { 0 }
}

/// A property of a class that did not opt in, by name: its setter's Swift
/// entry hook point, shared by every object of the class, posts the calls
/// whose `self` is this object; a received value is set by calling the
/// setter (through its hooks).
final class _NamedPropertyEndpoint<Object: AnyObject, Value>: _Endpoint, @unchecked Sendable {
    let objectReference: _UnownedReference
    let setter: SwiftEntryHook<Object, Value, Void>
    let bits: UInt
    let name: String

    init(_ object: Object, _ setter: SwiftEntryHook<Object, Value, Void>, name: String) {
        objectReference = _UnownedReference(object)
        self.setter = setter
        bits = UInt(bitPattern: Unmanaged.passUnretained(object).toOpaque())
        self.name = name
        super.init()
    }

    private init(copying other: _NamedPropertyEndpoint) {
        objectReference = _UnownedReference(copying: other.objectReference)
        setter = other.setter
        bits = other.bits
        name = other.name
        super.init()
    }

    override func copy() -> _Endpoint { _NamedPropertyEndpoint(copying: self) }
    override var description: String { name }
    override var isAlive: Bool { objectReference.object != nil }
    override var postingPoint: HookPoint? { objectReference.object == nil ? nil : setter }
    override var postsStores: Bool { true }
    override var postType: Any.Type? { Value.self }
    override var receiveType: Any.Type? { Value.self }
    override var identity: ObjectIdentifier { ObjectIdentifier(setter) }
    override var hasPoint: Bool { true }
    override var targetBits: UInt { bits }
    /// The hook is the object's: it goes when the object does.
    var owner: AnyObject? { objectReference.object }

    /// The object's own group for this setter, not the setter's: the point
    /// is the whole class's, and its group joined every binding of any
    /// object's property into one lock (bindings that share nothing waited
    /// for each other, and a callback waiting for another thread's write of
    /// an unrelated binding deadlocked).
    override func lockGroup(joining fresh: _Group) -> _Group? {
        guard let object = objectReference.object else { return nil }
        let group = _ObjectGroups.group(of: object, at: setter, joining: fresh, counted: !countedInGroups)
        countedInGroups = true
        return group
    }

    /// Whether this endpoint counts in `_ObjectGroups`' entry for its object
    /// (asked by `bind`, one thread; released in `deinit`).
    private var countedInGroups = false

    deinit {
        if countedInGroups { _ObjectGroups.leave(objectAt: bits, at: setter) }
    }

    override func withPostedValue(_ call: UnsafePointer<CallBack>, _ body: (UnsafeRawPointer) throws -> Void) throws {
        // The value as set (after any before hook replaced it).
        let value = try call.pointee.argument(1, as: Value.self)
        try withUnsafePointer(to: value) { try body(UnsafeRawPointer($0)) }
    }

    override func receive(_ value: UnsafeRawPointer) {
        guard let object = objectReference.object else { return }
        // Through the setter's entry: its hooks run (this binding's own sees
        // the change delivered already and only lets the store happen).
        try? setter._call(unsafeDowncast(object, to: Object.self), value.assumingMemoryBound(to: Value.self).pointee)
    }
}

/// A fish whose key path or hook point was refused when it was made.
final class _RefusedEndpoint: _Endpoint, @unchecked Sendable {
    let name: String
    let refusal: BindError
    init(description: String, _ refusal: BindError) {
        name = description
        self.refusal = refusal
        super.init()
    }
    override func copy() -> _Endpoint { _RefusedEndpoint(description: name, refusal) }
    override var description: String { name }
    override var error: BindError? { refusal }
}

/// How a binding sets a property and reads what it posts: one closure made
/// where the fish is made (`Fish.post`, `.observer` and `.both` are
/// inlinable), so that in an optimized client it is specialized for the
/// value type and captures nothing. `_PropertyEndpoint`'s own methods are
/// generic class methods, which run unspecialized: value witness calls for
/// every copy of the value and an unspecialized set (see call-counts.sh's
/// `binding` case).
///
/// In an unoptimized client (`_isDebugAssertConfiguration()`, decided where
/// the inlined code is compiled) the closure would not be specialized, and
/// would allocate a context for the value type's metadata: there the
/// endpoint's own methods do the work (unspecialized, as the closure would
/// be, and without allocating).
///
/// One closure for both jobs, so that a property endpoint stays 72 bytes:
/// with a value, it sets the property of the hook point at the first
/// address to it, through its hooks unless the only one is the hook at the
/// third address (the receiving binding's own; see
/// `_PropertyEndpoint.receive`); without one, it copies the property's value
/// and hands the copy's address to the body.
@usableFromInline
struct _PropertyAccess: @unchecked Sendable {
    let run: (UnsafeMutableRawPointer, UnsafeRawPointer?, UInt, (UnsafeRawPointer) throws -> Void) throws -> Void
    /// Whether `run` is made (else it does nothing).
    let isMade: Bool

    @inlinable
    init<Value>(_ type: Value.Type) {
        if Self.inOptimizedCode {
            self.init(specializing: Value.self)
        } else {
            // A closure without captures in non-generic code: no context.
            self.init(run: { _, _, _, _ in }, isMade: false)
        }
    }

    /// Whether the code this is inlined into is optimized. (A function, not
    /// the test inline: folded there in a debug build, the test would make
    /// the other branch dead code, with a warning.)
    @inlinable
    static var inOptimizedCode: Bool { !_isDebugAssertConfiguration() }

    /// The closure, whatever the build (tests reach the optimized clients' path through this).
    @inlinable
    init<Value>(specializing type: Value.Type) {
        self.init(run: { try Self.perform(Value.self, $0, $1, $2, $3) }, isMade: true)
    }

    /// What the closure does, for a point holding a `Value`: sets it to the
    /// value at `value` (through the hooks unless the only one is at
    /// `ownHook`), or, without a value, hands `body` a copy of it. The
    /// endpoint's own methods call it unspecialized.
    @inlinable
    static func perform<Value>(_ type: Value.Type, _ point: UnsafeMutableRawPointer, _ value: UnsafeRawPointer?,
                               _ ownHook: UInt, _ body: (UnsafeRawPointer) throws -> Void) throws {
        try Unmanaged<PropertyHook<Value>>.fromOpaque(point)._withUnsafeGuaranteedRef { point in
            if let value {
                point._setThroughHooks(value.assumingMemoryBound(to: Value.self).pointee, unlessOnlyHookIs: ownHook)
            } else {
                let copy = point._currentValue
                try withUnsafePointer(to: copy) { try body(UnsafeRawPointer($0)) }
            }
        }
    }

    @usableFromInline
    init(run: @escaping (UnsafeMutableRawPointer, UnsafeRawPointer?, UInt, (UnsafeRawPointer) throws -> Void) throws -> Void,
         isMade: Bool) {
        self.run = run
        self.isMade = isMade
    }
}

/// A `@Hooked` property of an object: posts its stores, receives by being set.
final class _PropertyEndpoint<Object: AnyObject, Value>: _Endpoint, @unchecked Sendable {
    /// The object, by an unowned reference: alive while `object` gives it.
    let objectReference: _UnownedReference
    /// The object's hook point, unretained: valid while the object is alive
    /// (the object owns it). Kept as an address, so that naming its identity
    /// never touches it.
    let pointAddress: UnsafeMutableRawPointer
    var point: PropertyHook<Value> { Unmanaged.fromOpaque(pointAddress).takeUnretainedValue() }
    /// Where the storage is in the object: names the property in messages,
    /// also once the object is gone (a name is spelt only when asked for).
    /// (Kept in the base's first word, `cellOffset32`.)
    var cellOffset: Int { Int(cellOffset32) }
    /// The set and the read, specialized where the fish was made, if
    /// `accessIsMade` (kept in the base's first word).
    let access: (UnsafeMutableRawPointer, UnsafeRawPointer?, UInt, (UnsafeRawPointer) throws -> Void) throws -> Void

    init(_ object: Object, _ point: PropertyHook<Value>, _ access: _PropertyAccess) {
        objectReference = _UnownedReference(object)
        pointAddress = Unmanaged.passUnretained(point).toOpaque()
        self.access = access.run
        super.init()
        // An object is far smaller than 2 GiB: its offsets fit.
        cellOffset32 = Int32(point._cellOffset)
        accessIsMade = access.isMade
    }

    private init(copying other: _PropertyEndpoint) {
        objectReference = _UnownedReference(copying: other.objectReference)
        pointAddress = other.pointAddress
        access = other.access
        super.init()
        cellOffset32 = other.cellOffset32
        accessIsMade = other.accessIsMade
    }


    override func copy() -> _Endpoint { _PropertyEndpoint(copying: self) }

    /// The object, retained, or nil once it is gone.
    var object: Object? {
        guard let object = objectReference.object else { return nil }
        return unsafeDowncast(object, to: Object.self)
    }

    override var description: String {
        "\(Object.self).\(PropertyHook<Value>._propertyName(at: cellOffset, in: Object.self) ?? "<property>")"
    }

    override var isAlive: Bool { objectReference.object != nil }
    override var postingPoint: HookPoint? {
        // The object owns the point: alive while the object is, so the
        // object is held until the point is retained. (Only tested for nil,
        // it could go on another thread, its point with it, before `point`
        // retained it: freed memory.)
        guard let owner = objectReference.object else { return nil }
        // (Not `withExtendedLifetime(owner) { point }`: that closure, not
        // specialized, looked the point's generic type up at run time on
        // every call, bind-300 +8.6% instructions.)
        let retained: HookPoint = point
        withExtendedLifetime(owner) {}
        return retained
    }
    override var postsStores: Bool { true }
    override var postType: Any.Type? { Value.self }
    override var receiveType: Any.Type? { Value.self }
    override var identity: ObjectIdentifier { unsafeBitCast(pointAddress, to: ObjectIdentifier.self) }
    override var hasPoint: Bool { true }

    override func withPostedValue(_ call: UnsafePointer<CallBack>, _ body: (UnsafeRawPointer) throws -> Void) throws {
        // A post runs inside a set of the property: the object is alive.
        if accessIsMade { return try access(pointAddress, nil, 0, body) }
        try _PropertyAccess.perform(Value.self, pointAddress, nil, 0, body)
    }

    override func receive(_ value: UnsafeRawPointer) {
        // The object kept alive for the set, as `AnyObject`: a lifetime of the
        // generic `Object` would go through unspecialized generic code.
        guard let object = objectReference.object else { return }
        defer { _fixLifetime(object) }
        // A receive runs inside this binding's delivery of the change. If the
        // point's only hook is the binding's own (a `both` member), that hook
        // would find the change delivered already and only store the value:
        // the value is stored without making the call. Any other hook (a
        // user's, another binding's) and the set goes through them all.
        // (A set never calls the body, so nothing throws.)
        if accessIsMade { return try! access(pointAddress, value, tokenAddress) { _ in } }
        try! _PropertyAccess.perform(Value.self, pointAddress, value, tokenAddress) { _ in }
    }
}

/// A hook point that posts its calls: a hookable method of an object, or a
/// closure or C function hook point. Named by an unowned reference (the
/// method's object, which owns its point, or the free point itself):
/// neither the fish nor its binding keeps it alive.
final class _CallEndpoint: _Endpoint, @unchecked Sendable {
    /// The method's object, or the point itself.
    let reference: _UnownedReference
    /// The hook point, unretained: valid while `reference.object` gives an object.
    let pointAddress: UnsafeMutableRawPointer
    let value: (type: Any.Type, read: _Reader)?
    let name: String

    /// A hookable method of `object`.
    init<Object: AnyObject>(_ object: Object, _ point: HookPoint, value: (type: Any.Type, read: _Reader)?) {
        reference = _UnownedReference(object)
        pointAddress = Unmanaged.passUnretained(point).toOpaque()
        self.value = value
        name = "\(Object.self).\(point.name)"
        super.init()
    }

    /// A closure or C function hook point (`kind` names it in messages).
    init(_ point: HookPoint, kind: String, value: (type: Any.Type, read: _Reader)?) {
        reference = _UnownedReference(point)
        pointAddress = Unmanaged.passUnretained(point).toOpaque()
        self.value = value
        name = "\(kind) '\(point.name)'"
        super.init()
    }

    private init(copying other: _CallEndpoint) {
        reference = _UnownedReference(copying: other.reference)
        pointAddress = other.pointAddress
        value = other.value
        name = other.name
        super.init()
    }

    override func copy() -> _Endpoint { _CallEndpoint(copying: self) }

    override var description: String { name }
    override var isAlive: Bool { reference.object != nil }
    override var postingPoint: HookPoint? {
        // Alive while the object (or the point) is: held while the point is retained.
        guard let owner = reference.object else { return nil }
        return withExtendedLifetime(owner) { Unmanaged<HookPoint>.fromOpaque(pointAddress).takeUnretainedValue() }
    }
    override var postType: Any.Type? { value?.type }
    override var identity: ObjectIdentifier { unsafeBitCast(pointAddress, to: ObjectIdentifier.self) }
    override var hasPoint: Bool { true }

    override func withPostedValue(_ call: UnsafePointer<CallBack>, _ body: (UnsafeRawPointer) throws -> Void) throws {
        try value?.read(call.pointee, body)
    }
}

/// An observer that is only a callback (with or without an object).
final class _CallbackEndpoint: _Endpoint, @unchecked Sendable {
    let name: String
    let alive: () -> Bool
    init(description: String, alive: @escaping () -> Bool) {
        name = description
        self.alive = alive
        super.init()
    }
    override func copy() -> _Endpoint { _CallbackEndpoint(description: name, alive: alive) }
    override var description: String { name }
    override var isAlive: Bool { alive() }
}

/// The value a call of a function-like hook point posts, FishBind's way
/// (a setter method posts its argument): the result if it is not `Void`,
/// otherwise the one argument; none for several arguments and no result.
enum _PostedValue {
    static func typed<each A, R>(_ arguments: repeat (each A).Type, result: R.Type) -> (type: Any.Type, read: _Reader)? {
        if R.self != Void.self { return (R.self, resultReader(R.self)) }
        var found: [(type: Any.Type, read: _Reader)] = []
        for argument in repeat each arguments {
            found.append((argument, argumentReader(argument, found.count)))
        }
        return found.count == 1 ? found[0] : nil
    }

    static func resultReader<R>(_ type: R.Type) -> _Reader {
        { call, body in
            let value = try call.result(as: R.self)
            try withUnsafePointer(to: value) { try body(UnsafeRawPointer($0)) }
        }
    }

    static func argumentReader<T>(_ type: T.Type, _ index: Int) -> _Reader {
        { call, body in
            let value = try call.argument(index, as: T.self)
            try withUnsafePointer(to: value) { try body(UnsafeRawPointer($0)) }
        }
    }

    /// C functions: scalars post as their Swift types (`int64_t` as `Int`,
    /// pointers as `UnsafeMutableRawPointer?`); a struct posts no value.
    static func c(_ signature: Signature) -> (type: Any.Type, read: _Reader)? {
        if signature.result != .void { return cReader(signature.result, index: nil) }
        guard signature.arguments.count == 1 else { return nil }
        return cReader(signature.arguments[0], index: 0)
    }

    static func cReader(_ type: CType, index: Int?) -> (type: Any.Type, read: _Reader)? {
        func make<T: CRepresentable>(_ t: T.Type) -> (type: Any.Type, read: _Reader) {
            (T.self, { call, body in
                let value: T = try index.map { i throws(HookError) in try call.argument(i, as: T.self) } ?? call.result(as: T.self)
                try withUnsafePointer(to: value) { try body(UnsafeRawPointer($0)) }
            })
        }
        switch type {
        case .bool: return make(Bool.self)
        case .int8: return make(Int8.self)
        case .uint8: return make(UInt8.self)
        case .int16: return make(Int16.self)
        case .uint16: return make(UInt16.self)
        case .int32: return make(Int32.self)
        case .uint32: return make(UInt32.self)
        case .int64: return make(Int.self)
        case .uint64: return make(UInt.self)
        case .float: return make(Float.self)
        case .double: return make(Double.self)
        case .pointer: return make(UnsafeMutableRawPointer?.self)
        default: return nil
        }
    }
}

/// A named property endpoint of any types: the owner of its hook.
protocol _AnyNamedEndpoint { var owner: AnyObject? { get } }
extension _NamedPropertyEndpoint: _AnyNamedEndpoint {}

/// The lock groups of by-name property endpoints: one per object and setter
/// (`_NamedPropertyEndpoint.lockGroup(joining:)`), found at bind time only.
/// An entry lasts while an endpoint of its object counts in it; each keeps
/// its object's memory (an unowned reference), so the address is not
/// reused meanwhile. (Entries that kept the memory themselves, swept once
/// the table doubled, kept objects' weak-reference side tables past the
/// process's end: LeakSanitizer reported them.)
enum _ObjectGroups {
    private struct Key: Hashable {
        let point: ObjectIdentifier
        let object: UInt
    }

    private struct Entry {
        let group: _Group
        var endpoints: Int
    }

    private struct Table: @unchecked Sendable {
        var entries: [Key: Entry] = [:]
    }

    private static let table = Mutex(Table())

    /// The group of `object` at `point` (`fresh` if it has none yet), and,
    /// if `counted`, one more endpoint counting in its entry.
    static func group(of object: AnyObject, at point: HookPoint, joining fresh: _Group, counted: Bool) -> _Group {
        let key = Key(point: ObjectIdentifier(point), object: UInt(bitPattern: Unmanaged.passUnretained(object).toOpaque()))
        return table.withLock { table in
            if var entry = table.entries[key] {
                if counted {
                    entry.endpoints += 1
                    table.entries[key] = entry
                }
                return entry.group
            }
            if counted { table.entries[key] = Entry(group: fresh, endpoints: 1) }
            return fresh
        }
    }

    /// An endpoint that counted in the entry of the object at `object` goes.
    static func leave(objectAt object: UInt, at point: HookPoint) {
        let key = Key(point: ObjectIdentifier(point), object: object)
        // (The group released after the lock.)
        let gone = table.withLock { table -> _Group? in
            guard var entry = table.entries[key] else { return nil }
            entry.endpoints -= 1
            if entry.endpoints > 0 {
                table.entries[key] = entry
                return nil
            }
            table.entries[key] = nil
            return entry.group
        }
        _ = gone
    }
}
