import CHookThreads

/// Runs `body` with every hook suppressed on the calling thread: calls of any
/// hook point made inside run the original only.
///
/// Other threads are unaffected. Scopes nest. This is the primitive that
/// stands in for FishBind's `deadFish`: a write made inside does not notify.
///
/// ```swift
/// withoutHooks { hooked(1, 2) }   // no hook runs
/// ```
public func withoutHooks<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
    let thread = hk_thread_self()!
    hk_thread_suppress(thread)
    defer { hk_thread_unsuppress(thread) }
    return try body()
}

/// Whether hooks are suppressed on the calling thread (inside ``withoutHooks(_:)``).
public var hooksAreSuppressed: Bool {
    guard let thread = hk_thread_current() else { return false }
    return hk_thread_is_suppressed(thread) != 0
}
