// Swift code that did not opt in, in a module of its own, for the
// SwiftEntryHook cases: an open class's method called through its vtable
// (the benchmark's object is of a class the optimizer cannot see).

open class BenchWorker {
    public init() {}

    /// A little work, so that a call is a call.
    open func work(_ n: Int) -> Int { n &* 3 &+ 1 }
}
