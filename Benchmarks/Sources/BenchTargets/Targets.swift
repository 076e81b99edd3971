// The performance targets of the benchmark cases, by case id: the one place
// that both `bench-report` (a full benchmark run) and `hook-overhead` (the
// quick measure) read them, so that the two never disagree.
import Foundation

/// A performance target of one case.
public enum Target: Sendable {
    /// At most this many times the floor.
    case timesFloor(Double)
    /// At most this many ns above the floor.
    case nsOverFloor(Double)
    /// At most this many times the peer.
    case timesPeer(Double)
    /// At most this many ns.
    case ns(Double)

    public func describe() -> String {
        switch self {
        case .timesFloor(let x): "at most \(format(x))x the floor"
        case .nsOverFloor(let ns): "at most +\(format(ns)) ns"
        case .timesPeer(let x): "at most \(format(x))x the peer"
        case .ns(let ns): "at most \(format(ns)) ns"
        }
    }

    /// Whether `ns` meets the target; nil when the floor or peer it needs is not known.
    public func isMet(ns: Double, floor: Double?, peer: Double?) -> Bool? {
        switch self {
        case .timesFloor(let x): floor.map { ns / $0 <= x }
        case .nsOverFloor(let d): floor.map { ns - $0 <= d }
        case .timesPeer(let x): peer.map { ns / $0 <= x }
        case .ns(let limit): ns <= limit
        }
    }
}

/// The targets of each case that has any (DESIGN.md's, as the issues set them).
public let caseTargets: [String: [Target]] = [
    "c/none": [.timesFloor(1.1)],
    "c/both": [.timesFloor(1.3)],
    "mix/none": [.timesFloor(1.1)],
    "mix/both": [.timesFloor(1.3)],
    "swift/after": [.nsOverFloor(10)],
    "swift/typed": [.nsOverFloor(10)],
    "property/none": [.nsOverFloor(2)],
    "property/after": [.nsOverFloor(10)],
    "property/typed": [.nsOverFloor(10)],
    "hookable/none": [.nsOverFloor(2)],
    "hookable/idle": [.nsOverFloor(2)],
    "hookableset/none": [.nsOverFloor(2)],
    "hookableset/idle": [.nsOverFloor(2)],
    "sync3/binding": [.timesPeer(0.5), .timesFloor(5)],
    "fanout1/observable": [.ns(25), .timesPeer(0.15)],
    // Issue 26: a hooked C call with one typed after hook within 10 ns of the
    // direct call, through FunctionHook, ImportHook and EntryHook alike.
    "c/typed": [.nsOverFloor(10)],
    "import/typed": [.nsOverFloor(10)],
    "entry/typed": [.nsOverFloor(10)],
    // Issue 28: a traced call with the no-op tracer within 5 ns of the hook alone.
    "observe/traced": [.nsOverFloor(5)],
    // Issue 30: a diamond write in 150 ns, 0.1x OpenCombine (the kairo shapes:
    // `targets(for:)`).
    "diamond/computed": [.ns(150), .timesPeer(0.1)],
    // Issue 27: a Swift method hooked by name, one typed after hook within
    // 15 ns of the plain call, a call on another object than the hooked one within 5 ns.
    "swiftentry/typed": [.nsOverFloor(15)],
    "swiftentry/other": [.nsOverFloor(5)],
]

/// The kairo shapes of js-reactivity-benchmark the benchmarks run (`kairo-<shape>/...`).
public let kairoShapes = ["deep", "broad", "diamond", "triangle", "mux", "repeated", "unstable", "avoidable"]

/// The targets of case `id` (none for most): a kairo shape's HookBind case at
/// most 0.2x OpenCombine (its peer) and Observation (its floor).
public func targets(for id: String) -> [Target] {
    if id.hasPrefix("kairo-"), id.hasSuffix("/computed") { return [.timesPeer(0.2), .timesFloor(0.2)] }
    return caseTargets[id] ?? []
}

/// A figure with two or three significant digits.
public func format(_ x: Double) -> String {
    if x >= 100 { return String(format: "%.0f", x) }
    if x >= 10 { return String(format: "%.1f", x) }
    return String(format: "%.2f", x)
}
