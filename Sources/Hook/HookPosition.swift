/// Where a hook runs relative to the original implementation.
public enum HookPosition: String, Sendable, Hashable, CaseIterable {
    /// Before the original: sees the arguments and may replace them.
    case before
    /// In place of the original: may call it (``CallBack/invokeOriginal()``),
    /// with the same or changed arguments, any number of times, and set the result.
    case instead
    /// After the original: sees the result and may replace it.
    case after

    /// The order positions run in.
    var rank: Int {
        switch self {
        case .before: 0
        case .instead: 1
        case .after: 2
        }
    }

    /// "a before hook", "an instead hook", "an after hook": for messages.
    var hookWithArticle: String { self == .before ? "a before hook" : "an \(rawValue) hook" }
}

/// The closure type of every hook: it receives the call's record, which it may change.
///
/// Hooks run on the thread that makes the call. They are not required to be
/// `@Sendable`, so that they can capture the (usually non-Sendable) objects
/// they observe; state shared with other threads needs its own synchronization.
///
/// A hook may throw; the error goes to the hook point's error handler and the
/// call goes on (a throwing `instead` hook that never reached the original
/// falls back to it).
public typealias HookBody = (inout CallBack) throws -> Void
