import Hook
import Logging
import Metrics
import Tracing

#if canImport(Glibc)
import Glibc
#endif

// Hooked calls into the Swift server ecosystem's observability: a span per
// call (swift-distributed-tracing), a counter of calls, a counter of errors
// and a timer of durations (swift-metrics), a log line per call (swift-log).
// Each is one hook of the point, removed like any hook (its token, or an
// owner). Nothing is attached, and nothing costs, until one of them is added.

/// Monotonic nanoseconds, for durations (no allocation, no Foundation).
@inline(__always)
func _now() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
}

/// The metrics of one hook point: calls, errors and durations, each
/// dimensioned by the point's name.
struct _CallMetrics: Sendable {
    let calls: Counter
    let errors: Counter
    let duration: Timer

    init(prefix: String, point: String, factory: any MetricsFactory) {
        let dimensions = [("point", point)]
        calls = Counter(label: "\(prefix)_calls_total", dimensions: dimensions, factory: factory)
        errors = Counter(label: "\(prefix)_errors_total", dimensions: dimensions, factory: factory)
        duration = Timer(label: "\(prefix)_duration_seconds", dimensions: dimensions, factory: factory)
    }
}

extension HookPoint {
    /// Records a span for every call of this hook point.
    ///
    /// ```swift
    /// let token = account.$deposit.traced { call, attributes in
    ///     attributes["amount"] = (try? call.argument(0, as: Int.self)) ?? 0
    /// }
    /// ```
    ///
    /// The span is named after the hook point (``CallBack/selector``) and is
    /// the current context (`InstrumentationContext.current`) while the
    /// original runs, so hooked calls made inside it are its children. An
    /// error the call ends with is recorded on the span and sets its status.
    /// Attributes come from `attributes`, given the call once the original
    /// returned; without it the span has one, `hook.call`, the call's
    /// description (`name(arguments) -> result`), each value cut to its
    /// first ``describedValueLength`` Unicode scalars. Pass `attributes` to
    /// choose what a span keeps where arguments are secrets or large. The
    /// span ends when the original returned: building its attributes is
    /// not part of its duration.
    ///
    /// It is an instead hook that calls the original: instead hooks added
    /// before it run outside the span. With swift-distributed-tracing's
    /// no-op tracer (nothing bootstrapped) a call is the original's and
    /// nothing more; a span that does not record (sampled out) gets no
    /// attributes, whose text is most of a traced call's cost.
    ///
    /// On an ``AsyncClosureHook`` the span is current across the original's
    /// suspensions, and its one attribute is `hook.call` (an async call has
    /// no ``CallBack`` to hand `attributes`, which is not called there);
    /// given `attributes`, its spans have none: the arguments it was given
    /// to keep out are not recorded either.
    ///
    /// The span's status is the call's at this hook: a later hook (an
    /// instead hook added before this one, which runs outside it, or an after
    /// hook) can still change what the caller gets.
    ///
    /// - Parameters:
    ///   - tracer: The tracer; by default `InstrumentationSystem.tracer`, read
    ///     here, once: bootstrap the instrumentation system before tracing
    ///     (traced before, a point keeps the no-op tracer: its calls cost
    ///     the hook and record nothing until traced again).
    ///   - kind: The spans' kind.
    ///   - owner: If given, the hook goes with it, as any hook.
    ///   - attributes: Sets the span's attributes from the call.
    /// - Returns: The hook's token: `remove()` stops the tracing.
    @discardableResult
    public func traced(by tracer: (any Tracer)? = nil, ofKind kind: SpanKind = .internal, owner: AnyObject? = nil,
                       attributes: (@Sendable (CallBack, inout SpanAttributes) -> Void)? = nil) -> HookToken {
        // An async point's original can only be called from an async hook.
        if let async = self as? any _AsyncObservable {
            return async._traced(tracer, kind, owner, describing: attributes == nil)
        }
        // Read once: `InstrumentationSystem.tracer` takes a lock, and a cast per call costs as much.
        let tracer = tracer ?? InstrumentationSystem.tracer
        let isNoOp = tracer is NoOpTracer
        return instead(owner: owner) { call in
            // The no-op tracer (nothing bootstrapped): no span to make current.
            if isNoOp { return try call.invokeOriginal() }
            let span = tracer.startSpan(call.selector, context: InstrumentationContext.current ?? .topLevel, ofKind: kind)
            do {
                try InstrumentationContext.withValue(span.context) { try call.invokeOriginal() }
            } catch {
                span.end()
                throw error
            }
            // The call's end: what follows is the span's bookkeeping.
            let returned = DefaultTracerClock.now
            if let error = call.error {
                span.recordError(error, attributes: [:], at: returned)
                span.setStatus(SpanStatus(code: .error))
            }
            // A span that records nothing (sampled out) gets no attributes: their text is most of the cost.
            if span.isRecording {
                if let attributes {
                    attributes(call, &span.attributes)
                } else {
                    span.attributes["hook.call"] = call._description(valueLength: HookPoint.describedValueLength)
                }
            }
            span.end(at: returned)
        }
    }

    /// Counts the calls of this hook point and the errors they end with,
    /// and times them: `<prefix>_calls_total`, `<prefix>_errors_total`
    /// (counters) and `<prefix>_duration_seconds` (a timer, in
    /// nanoseconds), each with the dimension `point`: the `point` argument,
    /// by default the hook point's name. Points of the same name share their series
    /// (two types' `deposit` methods, two closures named alike): give each a
    /// `point` of its own where that matters.
    ///
    /// ```swift
    /// sqliteStep.measured()          // hook_calls_total{point="sqlite3_step"} ...
    /// ```
    ///
    /// The metrics are made once, here, by `factory`: measured before
    /// `MetricsSystem.bootstrap`, a point's calls go to the no-op factory
    /// for as long as the hook stays (measure again after bootstrapping).
    /// A call increments two counters at most and records one duration
    /// (monotonic clock). Like ``traced(by:ofKind:owner:attributes:)``
    /// it is an instead hook that calls the original: a call a before hook
    /// vetoes reaches neither, and is not counted. Errors are those the
    /// original throws (a Swift `throws` function's); a C function throws
    /// none, so its `errors_total` stays 0 (count its failures from its
    /// result with an after hook). A point that takes no instead hook
    /// (`SwiftModifyHook`) gets the series and no counts.
    ///
    /// Durations are nanoseconds, most of a microsecond or less: with a
    /// histogram backend (swift-prometheus), give the timer buckets that
    /// fine (its default ones start at 5 ms, where every call would fall in
    /// the first).
    ///
    /// - Parameters:
    ///   - prefix: The metrics' label prefix (`hook` by default).
    ///   - point: The `point` dimension's value; by default the point's name.
    ///   - factory: Where the metrics go; by default `MetricsSystem.factory`.
    ///   - owner: If given, the hook goes with it.
    /// - Returns: The hook's token: `remove()` stops the counting.
    @discardableResult
    public func measured(prefix: String = "hook", point: String? = nil, factory: (any MetricsFactory)? = nil, owner: AnyObject? = nil) -> HookToken {
        let metrics = _CallMetrics(prefix: prefix, point: point ?? name, factory: factory ?? MetricsSystem.factory)
        if let async = self as? any _AsyncObservable { return async._measured(metrics, owner) }
        return instead(owner: owner) { call in
            let start = _now()
            try call.invokeOriginal()
            metrics.duration.recordNanoseconds(Int64(truncatingIfNeeded: _now() &- start))
            metrics.calls.increment()
            if call.error != nil { metrics.errors.increment() }
        }
    }

    /// Logs every call of this hook point: one line at `level`, the call's
    /// description (`name(arguments) -> result`, or `throws error`; each
    /// value cut to its first ``describedValueLength`` Unicode scalars), with the
    /// metadata `hook.point`. An after hook: it sees what the caller gets.
    ///
    /// ```swift
    /// fetch.logged(to: Logger(label: "calls"), level: .debug)
    /// ```
    ///
    /// - Returns: The hook's token: `remove()` stops the logging.
    @discardableResult
    public func logged(to logger: Logger, level: Logger.Level = .info, owner: AnyObject? = nil) -> HookToken {
        after(owner: owner) { call in
            // The level is tested first: a line below the logger's level costs no description.
            guard logger.logLevel <= level else { return }
            logger.log(level: level, "\(call._description(valueLength: HookPoint.describedValueLength))", metadata: ["hook.point": "\(call.selector)"])
        }
    }
}

extension HookPoint {
    /// How many Unicode scalars of each argument and result a span's `hook.call`
    /// attribute and a ``logged(to:level:owner:)`` line keep (a value cut
    /// shorter ends with `…`): a call's arguments may be megabytes.
    public static let describedValueLength = 256
}

/// An async hook point: its spans and metrics come from an async instead
/// hook, which may call the async original.
protocol _AsyncObservable {
    func _traced(_ tracer: (any Tracer)?, _ kind: SpanKind, _ owner: AnyObject?, describing: Bool) -> HookToken
    func _measured(_ metrics: _CallMetrics, _ owner: AnyObject?) -> HookToken
}

extension AsyncClosureHook: _AsyncObservable {
    /// The span is current across the original's suspensions. Its one
    /// attribute is `hook.call`, the call's arguments and error: an async
    /// call has no ``CallBack`` to hand an attributes closure (`describing`
    /// false: one was given, and the span gets no attribute).
    func _traced(_ tracer: (any Tracer)?, _ kind: SpanKind, _ owner: AnyObject?, describing: Bool) -> HookToken {
        let tracer = tracer ?? InstrumentationSystem.tracer
        let isNoOp = tracer is NoOpTracer
        return instead(owner: owner) { call in
            if isNoOp { return try await call.invokeOriginal() }
            let span = tracer.startSpan(call.selector, context: InstrumentationContext.current ?? .topLevel, ofKind: kind)
            do {
                try await InstrumentationContext.withValue(span.context) { try await call.invokeOriginal() }
            } catch {
                span.end()
                throw error
            }
            let returned = DefaultTracerClock.now
            if let error = call.error {
                span.recordError(error, attributes: [:], at: returned)
                span.setStatus(SpanStatus(code: .error))
            }
            if describing, span.isRecording {
                span.attributes["hook.call"] = call.selector + "("
                    + call.args.map { _cut(String(reflecting: $0), to: HookPoint.describedValueLength) }.joined(separator: ", ") + ")"
                    + (call.error.map { " throws " + _cut("\($0)", to: HookPoint.describedValueLength) } ?? "")
            }
            span.end(at: returned)
        }
    }

    /// Durations include the original's suspensions.
    func _measured(_ metrics: _CallMetrics, _ owner: AnyObject?) -> HookToken {
        instead(owner: owner) { call in
            let start = _now()
            try await call.invokeOriginal()
            metrics.duration.recordNanoseconds(Int64(truncatingIfNeeded: _now() &- start))
            metrics.calls.increment()
            if call.error != nil { metrics.errors.increment() }
        }
    }
}
