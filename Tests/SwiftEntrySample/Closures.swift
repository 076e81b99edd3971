/// Closure arguments: a non-escaping one's context lives on the caller's
/// stack (a hook cannot copy it), an escaping one's on the heap.
public func applyTwice(_ body: () -> Int) -> Int { body() &+ body() }
public func applyKept(_ body: @escaping () -> Int) -> Int { body() &+ body() }
public func applyMaybe(_ body: (() -> Int)?) -> Int { body?() ?? 0 }
