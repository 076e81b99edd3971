@_spi(HookBind) import Hook
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
/// Writes on several threads to endpoints of bindings are serialized: a
/// property store and its delivery happen under one lock that all bindings
/// share (taken once per change, by its outermost delivery), so once the
/// writers stop every endpoint holds the value of the last change. Callbacks
/// run under that lock: one that waits for another thread which sets a
/// bound property deadlocks. Calls of a method, closure or function run their
/// original outside the lock; only their delivery is serialized.
public final class Binding: @unchecked Sendable {
    let core: _BindingCore
    private let tokens: [HookToken]

    private init(core: _BindingCore, tokens: [HookToken]) {
        self.core = core
        self.tokens = tokens
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
        let core = _BindingCore(fishes)
        var tokens: [HookToken] = []
        for (index, fish) in fishes.enumerated() where fish.posts {
            guard let point = fish.endpoint.postingPoint else { continue }
            tokens.append(core.attach(to: point, poster: index, storing: fish.endpoint.postsStores))
        }
        return Binding(core: core, tokens: tokens)
    }

    /// Binds `fishes`; see ``bind(_:)-swift.type.method``.
    @discardableResult
    public static func bind(_ fishes: Fish...) throws(BindError) -> Binding {
        try bind(fishes)
    }

    /// Ends the binding: later changes are not delivered. Idempotent.
    public func unbind() {
        core.unbound.store(true, ordering: .releasing)
        for token in tokens { token.remove() }
    }

    /// Whether ``unbind()`` has not been called (and no hook of the binding was removed).
    public var isBound: Bool { !core.unbound.load(ordering: .acquiring) && tokens.allSatisfy(\.isActive) }

    /// Ties the binding to `bag`: it ends when the bag's owner deinitializes (see ``HookOwner``).
    @discardableResult
    public func store(in bag: HookBag) -> Binding {
        for token in tokens { bag.insert(token) }
        return self
    }

    /// The fishes, in order.
    public var fishes: [Fish] { core.fishes }

    // MARK: Checking a group

    private static func check(_ fishes: [Fish]) throws(BindError) {
        guard !fishes.isEmpty else { throw BindError(.emptyGroup, "bind needs fishes; the group is empty") }
        for (index, fish) in fishes.enumerated() {
            if let error = fish.endpoint.error { throw error }
            if let refusal = fish.refusal { throw refusal }
            guard fish.endpoint.isAlive else {
                throw BindError(.objectGone, "the object of \(fish) is gone")
            }
            // Groups are small: a scan costs less than a dictionary.
            if let first = fishes[..<index].firstIndex(where: { $0.endpoint.identity == fish.endpoint.identity }) {
                throw BindError(.duplicateFish, "\(fish) appears twice in the group (fishes \(first) and \(index)); a group binds each endpoint once")
            }
            try checkSteps(fish)
        }
        guard fishes.contains(where: \.posts) else {
            throw BindError(.noPoster, "no fish of the group posts changes: \(list(fishes)); use post or both for at least one")
        }
        var paired = false
        for (p, poster) in fishes.enumerated() where poster.posts {
            for (r, receiver) in fishes.enumerated() where r != p && receiver.receives {
                paired = true
                guard receiver.receivesValues else { continue }
                guard let sent = poster.carriedType else {
                    throw BindError(.typeMismatch, "\(poster) sends no single value (its calls have several arguments and no result), so \(receiver) cannot be set from it; receive it with a callback")
                }
                guard let accepted = receiver.acceptedType else {
                    throw BindError(.typeMismatch, "\(receiver) cannot be set; give it a callback")
                }
                guard sent == accepted else {
                    throw BindError(.typeMismatch, "\(poster) sends \(sent) but \(receiver) receives \(accepted); add a Transformer<\(sent), \(accepted)> to one of them")
                }
            }
        }
        guard paired else {
            throw BindError(.noReceiver, "no fish of the group receives what another posts: \(list(fishes)); use observer or both for another fish")
        }
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

/// One fish as the delivery path reads it: a final class, so that reading
/// a receiver copies nothing.
final class _Member: @unchecked Sendable {
    let endpoint: _Endpoint
    let callback: _Callback?
    let postSteps: [_Step]
    let receiveSteps: [_Step]
    let receives: Bool

    init(_ fish: Fish) {
        endpoint = fish.endpoint
        callback = fish.callback
        postSteps = fish.postSteps
        receiveSteps = fish.receiveSteps
        receives = fish.receives
    }
}

/// What the hooks of a binding share: the fishes and the unbound flag. The
/// hooks hold it strongly; it holds nothing that holds them.
final class _BindingCore: @unchecked Sendable {
    let fishes: [Fish]
    /// The fishes as delivery reads them; a poster delivers to every other one that receives.
    let members: [_Member]
    let unbound = Atomic<Bool>(false)

    init(_ fishes: [Fish]) {
        self.fishes = fishes
        members = fishes.map(_Member.init)
    }

    var id: ObjectIdentifier { ObjectIdentifier(self) }

    /// Puts the hook of poster `index` on `point`: a property's store and its
    /// delivery run together (an instead hook around the store); other
    /// hook points deliver after their original returned.
    func attach(to point: HookPoint, poster index: Int, storing: Bool) -> HookToken {
        if storing {
            return point.instead { [self] call in
                guard !unbound.load(ordering: .relaxed) else { return try call.invokeOriginal() }
                try _Change.run(id) { deliver in
                    try call.invokeOriginal()
                    if deliver { try Self.deliver(call, from: index, of: members) }
                }
            }
        }
        return point.after { [self] call in
            guard !unbound.load(ordering: .relaxed), call.error == nil else { return }
            try _Change.run(id) { deliver in
                if deliver { try Self.deliver(call, from: index, of: members) }
            }
        }
    }

    /// Delivers the change `call` made at `poster` to `receivers`, in order.
    /// A failing receiver does not stop the others; the first error is thrown
    /// at the end (to the poster's hook error handler).
    static func deliver(_ call: CallBack, from poster: Int, of members: [_Member]) throws {
        var outcome = _Delivery()
        do {
            try members[poster].endpoint.withPostedValue(call) { value in
                try _Step.run(members[poster].postSteps, value) { wire in deliver(call, wire, from: poster, of: members, &outcome) }
            }
        } catch {
            outcome.note(error)
        }
        // No value (none posted, or a transformer failed): callbacks still hear of the call.
        if !outcome.delivered { deliver(call, nil, from: poster, of: members, &outcome) }
        if let error = outcome.firstError { throw error }
    }

    /// One pass over the receivers: every member but the poster that
    /// receives, in order (a function, not a local closure: one capturing
    /// `outcome` would box it on the heap in debug builds).
    private static func deliver(_ call: CallBack, _ wire: UnsafeRawPointer?, from poster: Int, of members: [_Member], _ outcome: inout _Delivery) {
        outcome.delivered = true
        var r = 0
        while r < members.count {
            let receiver = members[r]
            r += 1
            guard r - 1 != poster, receiver.receives else { continue }
            do {
                if let callback = receiver.callback {
                    try callback(call)
                } else if let wire {
                    if receiver.receiveSteps.isEmpty {
                        receiver.endpoint.receive(wire)
                    } else {
                        try _Step.run(receiver.receiveSteps, wire) { receiver.endpoint.receive($0) }
                    }
                }
            } catch {
                outcome.note(error)
            }
        }
    }
}

struct _Delivery {
    var delivered = false
    var firstError: (any Error)?
    mutating func note(_ error: any Error) {
        if firstError == nil { firstError = error }
    }
}
