import Hook
import Synchronization

/// A bound group of fishes (FishBind's `bindFishes:`): after the original
/// runs at a posting fish, every other receiving fish of the group gets the
/// change, in the order the fishes were given.
///
/// ```swift
/// try Binding.bind([
///     .both(a, \.name),
///     .both(b, \.bName),
///     .both(d, \.setDK_Name) { call, d in d.setDK_Name("DK_" + (try call.argument(0, as: String.self))) },
/// ])
/// a.name = "json"     // b.bName == "json", d.DK_Name == "DK_json"
/// ```
///
/// ## The reentrancy flag
/// While a binding delivers a change, the writes it causes on this thread,
/// also those its callbacks make directly (`d.setDK_Name(...)` above), are
/// not delivered again by that binding. Other bindings still deliver them,
/// each at most once per change: bindings chained through shared objects
/// keep them all equal, and a cycle of bindings ends.
///
/// ## Lifetime
/// A binding never keeps its objects alive: fishes hold them weakly. It lives
/// as long as a posting hook point lives, or until ``unbind()``; dropping
/// the `Binding` does not end it (FishBind's fire-and-forget `bindFishes:`).
/// A fish whose object is gone is skipped; when a posting object
/// deinitializes, its hook point and the hook the binding put there go with it.
///
/// ## Threads
/// Writes on several threads to endpoints of connected bindings (bindings
/// that share an endpoint, directly or through others) are serialized: a
/// property store and its delivery happen under the lock of their connected
/// group, so once the writers stop every endpoint holds the value of the
/// last change. Bindings that share nothing have locks of their own and never
/// wait for each other. Callbacks run under their group's lock: one that
/// waits for another thread which sets a property of the same group
/// deadlocks; one that writes another group takes that group's lock too,
/// without deadlocking (see HookBind's locking in the architecture notes).
/// When two threads' callbacks write each other's group at once, one
/// thread's write lands inside the other's delivery; a group whose callback
/// is not its binding's last fish may then keep the older value in the
/// members after the callback (see "Threads" in the Bindings article).
/// Calls of a method, closure or function run their original outside the
/// lock; only their delivery is serialized.
public final class Binding: @unchecked Sendable {
    // One object: the flag and the members, the first two inline. Each
    // member is the fish's endpoint, adopted, retained here (+1, released in
    // deinit). The hooks the binding adds hold the binding and nothing else;
    // members name their hook by an unowned reference, so nothing forms a
    // cycle: once unbound (or once its posting hook points are gone) and
    // dropped, the binding and its members go.
    private let unbound = Atomic<Bool>(false)
    private let first: Unmanaged<_Endpoint>
    private let second: Unmanaged<_Endpoint>?
    private let rest: [_Endpoint]
    /// The connected group of the members' hook points (each point keeps its group).
    private let group: _Group

    private init(_ members: [_Endpoint], group: _Group) {
        self.group = group
        first = .passRetained(members[0])
        second = members.count > 1 ? .passRetained(members[1]) : nil
        rest = Array(members.dropFirst(2))
    }

    /// The number of members (not stored: the object stays 56 bytes).
    @inline(__always)
    private var count: Int { second == nil ? 1 : 2 + rest.count }

    deinit {
        first.release()
        second?.release()
    }

    /// The lock groups of the hook points of `members` (those that have one
    /// alive), distinct: a point without one joins `fresh`.
    private static func groups(of members: [_Endpoint], joining fresh: _Group) -> [_Group] {
        var found: [_Group] = []
        for member in members where member.hasPoint {
            guard let group = member.lockGroup(joining: fresh) else { continue }
            if !found.contains(where: { $0 === group }) { found.append(group) }
        }
        return found
    }

    /// Member `index` (below `count`), unretained: the binding holds it.
    @inline(__always)
    private func member(_ index: Int) -> Unmanaged<_Endpoint> {
        switch index {
        case 0: first
        case 1: second.unsafelyUnwrapped
        default: Unmanaged.passUnretained(rest[index - 2])
        }
    }

    /// Binds `fishes`; see ``Binding``.
    ///
    /// - Throws: ``BindError`` for an empty group, a group without a poster or
    ///   without a receiver for it, a fish whose object is gone, a key path
    ///   that is not hookable, the same fish twice, and a receiver whose value
    ///   type is not what a poster sends (both fishes named). Nothing is
    ///   bound then.
    @discardableResult
    public static func bind(_ fishes: [Fish]) throws(BindError) -> Binding {
        try check(fishes)
        let members = fishes.map { $0.endpoint.adopted(as: $0) }
        // One group for every hook point of the group; their groups merge.
        let groups = groups(of: members, joining: _Group())
        _Groups.merge(groups)
        let binding = Binding(members, group: groups.first ?? _Group())
        for i in 0..<binding.count {
            binding.member(i)._withUnsafeGuaranteedRef { member in
                guard member.posts, let point = member.postingPoint else { return }
                member.hold(binding.attach(to: point, storing: member.postsStores, target: member.targetBits,
                                           owner: (member as? _AnyNamedEndpoint)?.owner))
            }
        }
        return binding
    }

    /// Binds `fishes`; see ``bind(_:)-([Fish])``.
    @discardableResult
    public static func bind(_ fishes: Fish...) throws(BindError) -> Binding {
        try bind(fishes)
    }

    /// Ends the binding: later changes are not delivered, and nothing of the
    /// binding keeps any of its endpoints alive. Idempotent.
    public func unbind() {
        unbound.store(true, ordering: .releasing)
        for i in 0..<count { member(i)._withUnsafeGuaranteedRef { $0.token?.remove() } }
    }

    /// Whether the binding still delivers: ``unbind()`` has not been called,
    /// and none of its hooks was removed (by its token, or by the `HookBag`
    /// of an owner that ended, see ``store(in:)``).
    public var isBound: Bool {
        guard !unbound.load(ordering: .acquiring) else { return false }
        return (0..<count).allSatisfy { i in member(i)._withUnsafeGuaranteedRef { $0.hookIsAttached } }
    }

    /// Ties the binding to `bag`: it ends when the bag's owner deinitializes (see `HookOwner`).
    @discardableResult
    public func store(in bag: HookBag) -> Binding {
        for i in 0..<count {
            if let token = member(i)._withUnsafeGuaranteedRef({ $0.token }) { bag.insert(token) }
        }
        return self
    }

    /// The fishes, in order.
    public var fishes: [Fish] { (0..<count).map { Fish(member: member($0).takeUnretainedValue()) } }

    // MARK: Delivering

    /// Puts the binding's hook on `point`, an instead hook: a property's
    /// store and its delivery run together under the group's lock; other
    /// hook points deliver after their original returned
    /// (`callAndDeliver`). The hook captures the binding alone and finds
    /// its poster by the call's hook point. On a point shared by every
    /// object of a class (`target`, the member's object), it runs for that
    /// object's calls only.
    private func attach(to point: HookPoint, storing: Bool, target: UInt, owner: AnyObject?) -> HookToken {
        let body = hook(storing: storing)
        return target == 0 ? point.instead(body) : point._add(.instead, onlyForTarget: target, owner: owner, body)
    }

    /// The body of the binding's hook. The hooks hold the binding; a call
    /// borrows it: a retain for the call would be a write to the binding's
    /// reference count that every thread setting one of its members shares.
    /// (Two closures, each capturing the binding alone: its context, no
    /// allocation.)
    private func hook(storing: Bool) -> HookBody {
        if storing {
            return { [self] call in
                let binding = Unmanaged.passUnretained(self)
                guard !unbound.load(ordering: .relaxed) else { return try call.invokeOriginal() }
                try binding._withUnsafeGuaranteedRef { try $0.storeAndDeliver(&call) }
            }
        }
        return { [self] call in
            let binding = Unmanaged.passUnretained(self)
            guard !unbound.load(ordering: .relaxed) else { return try call.invokeOriginal() }
            try binding._withUnsafeGuaranteedRef { try $0.callAndDeliver(&call) }
        }
    }

    /// A property's store and its delivery under the group's lock. (A
    /// method: two closures, for a point of its own and one shared by a
    /// class, each did this, and the optimizer merged the same code,
    /// reaching the one every set runs through a thunk, 24 instructions more
    /// a three-way set.)
    private func storeAndDeliver(_ call: inout CallBack) throws {
        // (The closure handed to `_Change.run` captures the binding as an
        // `Unmanaged`, a plain word: capturing the reference, the optimizer
        // passes it owned, a retain and a release per call.)
        let binding = Unmanaged.passUnretained(self)
        try _Change.run(ObjectIdentifier(self), group) { deliver in
            try call.invokeOriginal()
            // Not a set that stored nothing (an `instead` hook inside this
            // one did not run the original), as a vetoed one.
            if deliver, call.hasResult { try binding._withUnsafeGuaranteedRef { try $0.deliver(&call) } }
        }
    }

    /// A call of a method, closure or C function that posts: its original
    /// (and the instead hooks inside this one) run in the change, outside
    /// any lock (an original may wait for other threads), then, unless it
    /// threw or this binding delivered the change already, the delivery
    /// under the group's lock. (An `instead` hook, as a property's, so that
    /// a point's bindings nest and share one change: as `after` hooks each
    /// began a change of its own once the one before had ended, and six
    /// closures bound pairwise both ways were called 76 times for one call,
    /// not 16.)
    private func callAndDeliver(_ call: inout CallBack) throws {
        try _Change.once(ObjectIdentifier(self)) { first in
            try call.invokeOriginal()
            // Not a call that did nothing (an `instead` hook inside this one
            // did not run the original, nor set a result), as a property's
            // set that stored nothing: its receivers were set to an
            // argument its own object never took.
            guard first, call.error == nil, call.hasResult else { return }
            let lease = _Groups.lock(group)
            defer { _Groups.unlock(lease) }
            try deliver(&call)
        }
    }

    /// The member posting at the hook point of `call`.
    private func poster(of call: CallBack) -> Int? {
        let id = call._hookPointID
        var i = 0
        while i < count {
            if member(i)._withUnsafeGuaranteedRef({ member in
                guard member.posts && member.identity == id else { return false }
                // A point shared by the objects of a class (a named property): this member's object's call.
                let bits = member.targetBits
                return bits == 0 || call.target.map { UInt(bitPattern: Unmanaged.passUnretained($0).toOpaque()) == bits } == true
            }) { return i }
            i += 1
        }
        return nil
    }

    /// Delivers the change `call` made at its poster to every other member
    /// that receives, in order. A failing receiver does not stop the others;
    /// the first error is thrown at the end (to the poster's hook error handler).
    /// (`inout`: the record stays where the hook has it; a copy would
    /// retain what it holds.)
    private func deliver(_ record: inout CallBack) throws {
        guard let poster = poster(of: record) else { return }
        var outcome = _Delivery()
        try withUnsafeMutablePointer(to: &record) { call in
            do {
                try member(poster)._withUnsafeGuaranteedRef { member in
                    try member.withPostedValue(call) { value in
                        guard member.hasExtras else { return deliver(call, value, from: poster, &outcome) }
                        try _Step.run(member.extras?.postSteps ?? [], value) { wire in deliver(call, wire, from: poster, &outcome) }
                    }
                }
            } catch {
                outcome.note(error)
            }
            // No value (none posted, or a transformer failed): callbacks still hear of the call.
            if !outcome.delivered { deliver(call, nil, from: poster, &outcome) }
            if let error = outcome.firstError { throw error }
        }
    }

    /// One pass over the receivers: every member but the poster that
    /// receives, in order (a method, not a local closure: one capturing
    /// `outcome` would box it on the heap in debug builds).
    private func deliver(_ call: UnsafePointer<CallBack>, _ wire: UnsafeRawPointer?, from poster: Int, _ outcome: inout _Delivery) {
        outcome.delivered = true
        var r = 0
        while r < count {
            defer { r += 1 }
            guard r != poster else { continue }
            member(r)._withUnsafeGuaranteedRef { receiver in
                guard receiver.receives else { return }
                // A plain receiver (no callback, no transformer): set it.
                guard receiver.hasExtras else {
                    if let wire { receiver.receive(wire) }
                    return
                }
                do {
                    if let callback = receiver.callback {
                        try callback(call.pointee)
                    } else if let wire {
                        if let steps = receiver.extras?.receiveSteps, !steps.isEmpty {
                            try _Step.run(steps, wire) { receiver.receive($0) }
                        } else {
                            receiver.receive(wire)
                        }
                    }
                } catch {
                    outcome.note(error)
                }
            }
        }
    }

    // MARK: Checking a group

    private static func check(_ fishes: [Fish]) throws(BindError) {
        guard !fishes.isEmpty else { throw BindError(.emptyGroup, "bind needs fishes; the group is empty") }
        // Most groups are small: a scan for a fish seen before costs less
        // than a dictionary. A large one looks it up (scanned, a group of
        // 10,000 fishes took 0.6 s to bind).
        var seen: [_FishKey: Int]? = fishes.count > 16 ? [:] : nil
        for (index, fish) in fishes.enumerated() {
            if let error = fish.endpoint.error { throw error }
            if let refusal = fish.refusal { throw refusal }
            guard fish.endpoint.isAlive else {
                throw BindError(.objectGone, "the object of \(fish) is gone")
            }
            let key = _FishKey(fish)
            let first = seen == nil ? fishes[..<index].firstIndex { _FishKey($0) == key } : seen?.updateValue(index, forKey: key)
            if let first {
                throw BindError(.duplicateFish, "\(fish) appears twice in the group (fishes \(first) and \(index)); a group binds each endpoint once")
            }
            try checkSteps(fish)
        }
        guard fishes.contains(where: \.posts) else {
            throw BindError(.noPoster, "no fish of the group posts changes: \(list(fishes)); use post or both for at least one")
        }
        // The common group, checked in one pass: every poster sends one type
        // and every fish set with values takes it, and some poster has a
        // receiver other than itself. Otherwise every pair is looked at, to
        // name the first that does not fit.
        if typesAgree(fishes) { return }
        var paired = false
        for (p, poster) in fishes.enumerated() where poster.posts {
            for (r, receiver) in fishes.enumerated() where r != p && receiver.receives {
                paired = true
                guard receiver.receivesValues else { continue }
                guard let sent = poster.carriedType else {
                    throw BindError(.typeMismatch, "\(poster) sends no single value (a call posts its result, or its only argument if it returns nothing, and a C struct posts nothing), so \(receiver) cannot be set from it; receive it with a callback")
                }
                guard let accepted = receiver.acceptedType else {
                    throw BindError(.typeMismatch, "\(receiver) cannot be set; give it a callback")
                }
                guard sent == accepted else {
                    // (A `both` fish's transformer goes from its own value to
                    // the binding's, the other way from an observer's.)
                    let toReceiver = receiver.posts ? "Transformer<\(accepted), \(sent)>" : "Transformer<\(sent), \(accepted)>"
                    throw BindError(.typeMismatch, "\(poster) sends \(sent) but \(receiver) receives \(accepted); add a Transformer<\(sent), \(accepted)> to \(poster) or a \(toReceiver) to \(receiver)")
                }
            }
        }
        guard paired else {
            throw BindError(.noReceiver, "no fish of the group receives what another posts: \(list(fishes)); use observer or both for another fish")
        }
    }

    /// Whether every poster of `fishes` sends one same type that every fish
    /// set with values takes, and some poster has a receiver other than
    /// itself: what the check of each pair would find, in one pass.
    private static func typesAgree(_ fishes: [Fish]) -> Bool {
        var type: Any.Type?
        var posters = 0, receivers = 0, both = 0
        for fish in fishes {
            if fish.posts {
                posters += 1
                guard let sent = fish.carriedType, type.map({ $0 == sent }) ?? true else { return false }
                type = sent
            }
            if fish.receives { receivers += 1 }
            if fish.posts && fish.receives { both += 1 }
        }
        for fish in fishes where fish.receivesValues {
            guard let accepted = fish.acceptedType, let type, accepted == type else { return false }
        }
        // No pair: one fish both posts and receives and is the only one that does either.
        return posters > 0 && receivers > 0 && !(posters == 1 && receivers == 1 && both == 1)
    }

    private static func checkSteps(_ fish: Fish) throws(BindError) {
        if let first = fish.postSteps.first {
            guard var type = fish.endpoint.postType else {
                throw BindError(.typeMismatch, "\(fish) sends no single value, but its transformer takes \(first.input)")
            }
            for step in fish.postSteps {
                guard step.input == type else {
                    throw BindError(.typeMismatch, "\(fish) sends \(type) but its transformer takes \(step.input)")
                }
                type = step.output
            }
        }
        guard fish.receivesValues, !fish.receiveSteps.isEmpty, let end = fish.endpoint.receiveType else { return }
        var type = fish.receiveSteps[0].input
        for step in fish.receiveSteps {
            guard step.input == type else {
                throw BindError(.typeMismatch, "\(fish): a transformer gives \(type) to the next, which takes \(step.input)")
            }
            type = step.output
        }
        guard type == end else {
            throw BindError(.typeMismatch, "\(fish) is set with \(end) but its transformers give \(type)")
        }
    }

    private static func list(_ fishes: [Fish]) -> String { fishes.map(\.description).joined(separator: ", ") }
}

/// A fish's endpoint in a group, for the check of fishes given twice.
private struct _FishKey: Hashable {
    let identity: ObjectIdentifier
    let target: UInt
    init(_ fish: Fish) {
        identity = fish.endpoint.identity
        target = fish.endpoint.targetBits
    }
}

struct _Delivery {
    var delivered = false
    var firstError: (any Error)?
    mutating func note(_ error: any Error) {
        if firstError == nil { firstError = error }
    }
}
