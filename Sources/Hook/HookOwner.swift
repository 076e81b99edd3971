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
public final class HookBag: Sendable {
    private let tokens = Mutex<[HookToken]>([])

    public init() {}

    deinit {
        let all = tokens.withVisibleLock(self, { $0 })
        for token in all { token.remove() }
        // What the hooks captured is released now (one fence for the whole bag).
        if !all.isEmpty { HookPoint.reclaimRetiredHooks() }
    }

    /// Adds a token; its hook is removed when the bag goes, or by ``removeAll()``.
    public func insert(_ token: HookToken) {
        tokens.withVisibleLock(self) { tokens in
            tokens.removeAll { !$0.isActive }
            tokens.append(token)
        }
    }

    /// Removes every hook in the bag now.
    public func removeAll() {
        let all = tokens.withVisibleLock(self, { let all = $0; $0 = []; return all })
        for token in all { token.remove() }
        if !all.isEmpty { HookPoint.reclaimRetiredHooks() }
    }

    /// The number of tokens whose hooks are still attached.
    public var count: Int { tokens.withVisibleLock(self) { $0.filter(\.isActive).count } }
}

extension HookToken {
    /// Puts the token in `bag`: the hook is removed when the bag goes.
    @discardableResult
    public func store(in bag: HookBag) -> HookToken {
        bag.insert(self)
        return self
    }
}
