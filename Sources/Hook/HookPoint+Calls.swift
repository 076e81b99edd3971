/// One call at a hook point, copied out of it: what ``HookPoint/calls(bufferingPolicy:)``
/// (of any hook point, an ``AsyncClosureHook`` too) delivers to a `for await` loop.
///
/// The arguments and the result are boxed copies (`Any`), so the record
/// may escape the call and cross to another task or thread. (`@unchecked
/// Sendable`: boxing a non-Sendable value does not make it one; a
/// consumer on another thread must not mutate shared class instances it
/// finds inside without its own synchronization.)
public struct HookCallRecord: @unchecked Sendable, CustomStringConvertible {
    /// The hook point's name (``CallBack/selector``).
    public let selector: String
    /// The arguments as the original received them (after before hooks).
    public let arguments: [Any]
    /// The result the caller got; nil for `Void` or when the call threw.
    public let result: Any?
    /// The error the caller got, if any.
    public let error: (any Error)?
    /// `name(arg, ...) -> result`, as ``CallBack/description``.
    public let description: String
}

/// Finishes a stream when the hook that feeds it is released (its hook
/// point deinitialized), so a `for await` loop over it ends.
final class _StreamFeed<Element>: @unchecked Sendable {
    let continuation: AsyncStream<Element>.Continuation
    init(_ continuation: AsyncStream<Element>.Continuation) { self.continuation = continuation }
    deinit { continuation.finish() }

    /// Hands `element` to the consumer. The element is a copy made for it
    /// (boxed arguments, or a value type the caller asked for): the hook
    /// keeps no reference to it.
    func yield(_ element: Element) {
        nonisolated(unsafe) let element = element
        continuation.yield(element)
    }
}

/// The owner of a stream's hook: the stream keeps it until it terminates,
/// then the hook stops (and is detached at the point's next call or change).
final class _StreamOwner: @unchecked Sendable {}

extension HookPoint {
    /// Every call at this hook point, as an `AsyncSequence`.
    ///
    /// ```swift
    /// Task {
    ///     for await call in account.$deposit.calls() { print(call) }   // deposit(5) -> 5
    /// }
    /// ```
    ///
    /// The records are made by an after hook, in call order per thread; calls
    /// on several threads arrive in the order they reached the hook. The
    /// sequence ends when the hook point deinitializes (its object is gone);
    /// a consumer that stops iterating (or whose task is cancelled) ends it
    /// and removes the hook.
    ///
    /// - Parameter bufferingPolicy: What to keep while the consumer is behind:
    ///   `.unbounded` by default (every call, as `AsyncStream`'s default);
    ///   `.bufferingNewest(n)` / `.bufferingOldest(n)` to bound it.
    public func calls(bufferingPolicy: AsyncStream<HookCallRecord>.Continuation.BufferingPolicy = .unbounded) -> AsyncStream<HookCallRecord> {
        if let async = self as? any _AsyncCalls { return async._calls(bufferingPolicy: bufferingPolicy) }
        return _stream(bufferingPolicy: bufferingPolicy) { call in
            HookCallRecord(selector: call.selector, arguments: call.args, result: call.result,
                           error: call.error, description: call.description)
        }
    }

    /// A stream fed by an after hook: `transform` makes each element (nil: none).
    package func _stream<Element>(bufferingPolicy: AsyncStream<Element>.Continuation.BufferingPolicy,
                                 _ transform: @escaping (CallBack) throws -> Element?) -> AsyncStream<Element> {
        let (stream, continuation) = AsyncStream.makeStream(of: Element.self, bufferingPolicy: bufferingPolicy)
        let feed = _StreamFeed(continuation)
        let owner = _StreamOwner()
        let token = add(.after, owner: owner) { call in
            if let element = try transform(call) { feed.yield(element) }
        }
        // The stream holds the owner until it terminates (not the hook point:
        // the point's object must be free to go, which ends the stream),
        // then removes the hook (weakly: the hook keeps the stream's feed).
        continuation.onTermination = { [weak token] _ in
            token?.remove()
            withExtendedLifetime(owner) {}
        }
        return stream
    }
}

/// An async hook point, whose calls are recorded by an async hook.
protocol _AsyncCalls {
    func _calls(bufferingPolicy: AsyncStream<HookCallRecord>.Continuation.BufferingPolicy) -> AsyncStream<HookCallRecord>
}

extension AsyncClosureHook: _AsyncCalls {
    /// ``HookPoint/calls(bufferingPolicy:)`` of an async hook point: the same records, order, end and buffering.
    func _calls(bufferingPolicy: AsyncStream<HookCallRecord>.Continuation.BufferingPolicy) -> AsyncStream<HookCallRecord> {
        let (stream, continuation) = AsyncStream.makeStream(of: HookCallRecord.self, bufferingPolicy: bufferingPolicy)
        let feed = _StreamFeed(continuation)
        let owner = _StreamOwner()
        let token = add(.after, owner: owner) { call in
            let arguments = call.args
            let text = "\(call.selector)(\(arguments.map { String(reflecting: $0) }.joined(separator: ", ")))"
                + (call.error.map { " throws \($0)" } ?? (R.self == Void.self ? "" : call.result.map { " -> \(String(reflecting: $0))" } ?? ""))
            feed.yield(HookCallRecord(selector: call.selector, arguments: arguments, result: call.result.map { $0 as Any },
                                                   error: call.error, description: text))
        }
        continuation.onTermination = { [weak token] _ in
            token?.remove()
            withExtendedLifetime(owner) {}
        }
        return stream
    }
}
