import Synchronization

/// An object that removes the hooks tied to it as soon as it deinitializes.
///
/// Any object can own hooks (`point.after(owner: view) { ... }`): hooks hold
/// their owner weakly, never run once it is gone, and are detached at the hook
/// point's next call or change. Swift has no way to learn of an arbitrary
/// object's death, so an owner that wants its hooks (and what they capture)
/// released at once keeps a ``HookBag``:
///
/// ```swift
/// final class Screen: HookOwner {
///     let hookBag = HookBag()
/// }
/// ```
public protocol HookOwner: AnyObject {
    /// Holds the tokens of the hooks tied to this object; removes them in its `deinit`.
    var hookBag: HookBag { get }
}

/// Tokens removed together when the bag deinitializes (see ``HookOwner``).
///
/// A token removed while in the bag (its hook removed, a subscription
/// disposed of) stays in it, and what its hook captured with it, until the
/// bag drops the removed ones: when the bag has doubled since it last did
/// (so storing a token costs the same however large the bag), on
/// ``removeAll()``, or when the bag goes. A bag removes its hooks with one
/// change of each hook point they are on.
public final class HookBag: Sendable {
    private struct Tokens {
        var all: [HookToken] = []
        /// The count at which `insert` next drops the tokens already
        /// removed: twice what stayed the last time (each insert dropping
        /// them scanned the whole bag: 100,000 subscriptions stored in one
        /// bag took 6.5 s, 70 ms now).
        var pruneAt = 32
    }

    private let tokens = Mutex(Tokens())

    public init() {}

    deinit {
        let all = tokens.withVisibleLock(self, { $0.all })
        HookToken._removeAll(all)
        // What the hooks captured is released now (one fence for the whole bag).
        if !all.isEmpty { HookPoint.reclaimRetiredHooks() }
    }

    /// Adds a token; its hook is removed when the bag goes, or by ``removeAll()``.
    public func insert(_ token: HookToken) {
        // The tokens dropped are released after the lock: a token's last
        // reference may be this bag's, and what its hook captured may
        // deinitialize and use this bag (under the lock, a trap).
        var dropped: [HookToken] = []
        defer { withExtendedLifetime(dropped) {} }
        tokens.withVisibleLock(self) { tokens in
            if tokens.all.count >= tokens.pruneAt {
                // One look at each (one removed meanwhile on another thread
                // is in one list or the other, never dropped unheld).
                var kept: [HookToken] = []
                for token in tokens.all {
                    if token.isActive { kept.append(token) } else { dropped.append(token) }
                }
                tokens.all = kept
                tokens.pruneAt = Swift.max(32, 2 * tokens.all.count)
            }
            tokens.all.append(token)
        }
    }

    /// Removes every hook in the bag now.
    public func removeAll() {
        let all = tokens.withVisibleLock(self, { let all = $0.all; $0 = Tokens(); return all })
        HookToken._removeAll(all)
        if !all.isEmpty { HookPoint.reclaimRetiredHooks() }
    }

    /// The number of tokens whose hooks are still attached.
    public var count: Int { tokens.withVisibleLock(self) { $0.all.count(where: \.isActive) } }
}

extension HookToken {
    /// Puts the token in `bag`: the hook is removed when the bag goes.
    @discardableResult
    public func store(in bag: HookBag) -> HookToken {
        bag.insert(self)
        return self
    }
}
