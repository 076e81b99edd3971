import Hook

extension Observable {
    /// Every value set, in order, as an `AsyncSequence` (not the current
    /// value: the first element is the next set; a set that stores nothing,
    /// vetoed or taken over by an `instead` hook that did not run the
    /// original, is not one; a ``batch(_:)`` is one set, its last value). Ends when the observable deinitializes; a
    /// consumer that stops detaches its hook.
    ///
    /// The stream is a hook of the observable, so a write made by one of its
    /// own hooks (a subscriber that writes the value back, a clamp in an
    /// `after` hook) or inside `withoutHooks` is stored without it, as it is
    /// without the subscribers (Hook's reentrancy guard): that value is not
    /// an element, and the last element may differ from ``value``. Computeds
    /// do see such a write.
    ///
    /// ```swift
    /// for await name in person.name.values { print(name) }
    /// ```
    ///
    /// - Parameter bufferingPolicy: `.unbounded` by default (as `AsyncStream`'s);
    ///   `.bufferingNewest(1)` keeps only the latest value while the consumer is behind.
    public func values(bufferingPolicy: AsyncStream<Value>.Continuation.BufferingPolicy = .unbounded) -> AsyncStream<Value> {
        hookPoint._stream(bufferingPolicy: bufferingPolicy) { call in call.hasResult ? try call.argument(0, as: Value.self) : nil }
    }

    /// ``values(bufferingPolicy:)`` with every value kept.
    public var values: AsyncStream<Value> { values() }
}

extension Signal {
    /// Every value emitted, in order, as an `AsyncSequence` (not a vetoed
    /// emit). Ends when the signal deinitializes; a consumer that stops
    /// detaches its hook.
    ///
    /// - Parameter bufferingPolicy: `.unbounded` by default (as `AsyncStream`'s).
    public func values(bufferingPolicy: AsyncStream<Value>.Continuation.BufferingPolicy = .unbounded) -> AsyncStream<Value> {
        hookPoint._stream(bufferingPolicy: bufferingPolicy) { call in call.isVetoed ? nil : try call.argument(0, as: Value.self) }
    }

    /// ``values(bufferingPolicy:)`` with every value kept.
    public var values: AsyncStream<Value> { values() }
}
