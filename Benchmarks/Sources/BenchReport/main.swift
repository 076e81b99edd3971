// bench-report: reads one run of `swift package benchmark --format
// histogramPercentiles --path DIR` and prints every case per call, as a ratio
// to its floor and to its peer, against DESIGN.md's targets, as a Markdown
// table; draws the same as an SVG chart; checks that the hooked call
// paths allocate nothing; and prints the threads cases (`threads<N>/...`) as
// the "Threads" table: Mops/s over all threads, the ratio to 1 thread, the
// machine's core count and issue 14's scaling target.
//
//   swift run -c release bench-report DIR [--markdown FILE] [--svg FILE] [--check-allocations]
import Foundation
import BenchTargets
import ThreadsTable

/// Calls, sets or writes per measured sample (`callsPerSample` in the benchmarks).
let callsPerSample = 1_000.0

struct Case {
    let id: String
    let label: String
    var floor: String? = nil
    var peer: String? = nil
    /// Its targets: `BenchTargets.targets(for:)`, shared with hook-overhead.
    var targets: [Target] { BenchTargets.targets(for: id) }
    /// DESIGN.md: this path allocates nothing.
    var zeroAllocations = false
    /// The floor or the direct call: drawn grey.
    var isBaseline = false
    /// Another library: drawn orange.
    var isPeer = false
    /// The benchmark target that measures it: `--check-allocations` checks
    /// the cases of the targets this run has (`--target` may pick one).
    var benchmarkTarget = "HookBenchmarks"
}

/// The kairo shapes (issue 30): HookBind against OpenCombine (the peer) and
/// Observation (the floor); no update allocates but mux's (its computed makes
/// an array of its 100 values on every update).
let kairoCases: [Case] = BenchTargets.kairoShapes.flatMap { shape in
    [
        Case(id: "kairo-\(shape)/computed", label: "kairo \(shape): HookBind Computed", floor: "kairo-\(shape)/observation",
             peer: "kairo-\(shape)/opencombine", zeroAllocations: shape != "mux"),
        Case(id: "kairo-\(shape)/opencombine", label: "kairo \(shape): OpenCombine", isPeer: true),
        Case(id: "kairo-\(shape)/observation", label: "kairo \(shape): Swift Observation", isPeer: true),
    ]
}

let cases: [Case] = [
    Case(id: "c/direct", label: "add: direct call through a pointer", floor: "c/floor", isBaseline: true),
    Case(id: "c/floor", label: "add: bare libffi closure + ffi_call (C, the floor)", isBaseline: true),
    Case(id: "c/none", label: "add: FunctionHook, no hooks", floor: "c/floor", zeroAllocations: true),
    Case(id: "c/before", label: "add: FunctionHook, one before hook", floor: "c/floor", zeroAllocations: true),
    Case(id: "c/after", label: "add: FunctionHook, one after hook", floor: "c/direct", zeroAllocations: true),
    Case(id: "c/typed", label: "add: FunctionHook, one typed after hook (afterReturning)", floor: "c/direct", zeroAllocations: true),
    Case(id: "c/both", label: "add: FunctionHook, before + after reading typed arguments", floor: "c/floor", zeroAllocations: true),
    Case(id: "c/instead", label: "add: FunctionHook, instead hook calling the original", floor: "c/floor", zeroAllocations: true),
    Case(id: "mix/direct", label: "5 args + 24-byte struct: direct call", floor: "mix/floor", isBaseline: true),
    Case(id: "mix/floor", label: "5 args + 24-byte struct: bare libffi closure (C, the floor)", isBaseline: true),
    Case(id: "mix/none", label: "5 args + 24-byte struct: FunctionHook, no hooks", floor: "mix/floor", zeroAllocations: true),
    Case(id: "mix/both", label: "5 args + 24-byte struct: FunctionHook, before + after", floor: "mix/floor", zeroAllocations: true),
    Case(id: "swift/direct", label: "closure (Int, Int) -> Int: plain", isBaseline: true),
    Case(id: "swift/none", label: "closure: ClosureHook, no hooks", floor: "swift/direct", zeroAllocations: true),
    Case(id: "swift/after", label: "closure: ClosureHook, one after hook", floor: "swift/direct", zeroAllocations: true),
    Case(id: "swift/typed", label: "closure: ClosureHook, one typed after hook (afterReturning)", floor: "swift/direct", zeroAllocations: true),
    Case(id: "swift/cpointer", label: "closure: ClosureHook through its C function pointer", floor: "c/floor", zeroAllocations: true),
    Case(id: "property/plain", label: "property set: plain stored property", isBaseline: true),
    Case(id: "property/none", label: "property set: @Hooked, no hooks", floor: "property/plain", zeroAllocations: true),
    Case(id: "property/after", label: "property set: @Hooked, one after hook", floor: "property/plain", zeroAllocations: true),
    Case(id: "property/typed", label: "property set: @Hooked, one typed after hook (didSet)", floor: "property/plain", zeroAllocations: true),
    Case(id: "hookable/plain", label: "method call: plain", isBaseline: true, benchmarkTarget: "HookableBenchmarks"),
    Case(id: "hookable/none", label: "method call: @Hookable, no hook point", floor: "hookable/plain", zeroAllocations: true, benchmarkTarget: "HookableBenchmarks"),
    Case(id: "hookable/idle", label: "method call: @Hookable, hook point, no hook", floor: "hookable/plain", zeroAllocations: true, benchmarkTarget: "HookableBenchmarks"),
    Case(id: "hookable/after", label: "method call: @Hookable, one after hook", floor: "hookable/plain", zeroAllocations: true, benchmarkTarget: "HookableBenchmarks"),
    Case(id: "hookableset/plain", label: "property set: plain (the @Hookable class's peer)", isBaseline: true, benchmarkTarget: "HookableBenchmarks"),
    Case(id: "hookableset/none", label: "property set: @Hookable, no hook point", floor: "hookableset/plain", zeroAllocations: true, benchmarkTarget: "HookableBenchmarks"),
    Case(id: "hookableset/idle", label: "property set: @Hookable, hook point, no hook", floor: "hookableset/plain", zeroAllocations: true, benchmarkTarget: "HookableBenchmarks"),
    Case(id: "hookableset/after", label: "property set: @Hookable, one after hook", floor: "hookableset/plain", zeroAllocations: true, benchmarkTarget: "HookableBenchmarks"),
    Case(id: "sync3/didset", label: "three-way sync: didSet by hand (the floor)", isBaseline: true),
    Case(id: "sync3/binding", label: "three-way sync: HookBind Binding", floor: "sync3/didset", peer: "sync3/opencombine", zeroAllocations: true),
    Case(id: "sync3/opencombine", label: "three-way sync: OpenCombine @Published + sink", floor: "sync3/didset", isPeer: true),
    Case(id: "sync3/observation", label: "three-way sync: Swift Observation", floor: "sync3/didset", isPeer: true),
    Case(id: "fanout1/observable", label: "write, 1 subscriber: HookBind Observable", peer: "fanout1/opencombine", zeroAllocations: true),
    Case(id: "fanout1/opencombine", label: "write, 1 subscriber: OpenCombine CurrentValueSubject", isPeer: true),
    Case(id: "fanout1/observation", label: "write, 1 subscriber: Swift Observation", isPeer: true),
    Case(id: "fanout100/observable", label: "write, 100 subscribers: HookBind Observable", peer: "fanout100/opencombine"),
    Case(id: "fanout100/opencombine", label: "write, 100 subscribers: OpenCombine CurrentValueSubject", isPeer: true),
    Case(id: "fanout100/observation", label: "write, 100 subscribers: Swift Observation", isPeer: true),
    Case(id: "diamond/computed", label: "diamond a -> b, c -> d: HookBind Computed", peer: "diamond/opencombine", zeroAllocations: true),
    Case(id: "diamond/opencombine", label: "diamond: OpenCombine map + zip", isPeer: true),
    Case(id: "diamond/observation", label: "diamond: Swift Observation", isPeer: true),
] + kairoCases + [
    Case(id: "scaling/after1", label: "add: FunctionHook, 1 after hook", floor: "c/floor", zeroAllocations: true),
    Case(id: "scaling/after10", label: "add: FunctionHook, 10 after hooks", floor: "c/floor", zeroAllocations: true),
    Case(id: "scaling/after100", label: "add: FunctionHook, 100 after hooks", floor: "c/floor", zeroAllocations: true),
    Case(id: "scaling/churn", label: "add + remove an after hook while 2 threads call"),
    // strdup + free: one malloc through libc's GOT per call (strdup's own allocation: 1 malloc per call).
    Case(id: "import/direct", label: "imported call (strdup -> malloc via libc's GOT), no hook point", floor: "import/direct", isBaseline: true),
    Case(id: "import/none", label: "imported call: ImportHook on malloc, no hooks", floor: "import/direct"),
    Case(id: "import/after", label: "imported call: ImportHook on malloc, one after hook", floor: "import/direct"),
    Case(id: "import/typed", label: "imported call: ImportHook on malloc, one typed after hook (afterReturning)", floor: "import/direct"),
    Case(id: "import/patch", label: "patch getenv in every loaded object + restore()"),
    Case(id: "entry/direct", label: "add called directly, entry not patched", isBaseline: true),
    Case(id: "entry/none", label: "add: EntryHook, no hooks", floor: "entry/direct", zeroAllocations: true),
    Case(id: "entry/after", label: "add: EntryHook, one after hook", floor: "entry/direct", zeroAllocations: true),
    Case(id: "entry/typed", label: "add: EntryHook, one typed after hook (afterReturning)", floor: "entry/direct", zeroAllocations: true),
    Case(id: "entry/both", label: "add: EntryHook, before + after reading typed arguments", floor: "entry/direct", zeroAllocations: true),
    Case(id: "observe/hook", label: "closure: one instead hook calling the original (the hook alone)", floor: "swift/direct", zeroAllocations: true),
    Case(id: "observe/traced", label: "closure: traced(), no-op tracer", floor: "observe/hook", zeroAllocations: true),
    Case(id: "observe/measured", label: "closure: measured(), no-op metrics", floor: "observe/hook", zeroAllocations: true),
    Case(id: "observe/prometheus", label: "closure: measured(), swift-prometheus (counters, histogram)", floor: "observe/hook", zeroAllocations: true),
    Case(id: "entry/patch", label: "EntryHook install() + uninstall() of add"),
    Case(id: "swiftentry/direct", label: "Swift method (vtable call), entry not patched", isBaseline: true),
    Case(id: "swiftentry/none", label: "Swift method: SwiftEntryHook, no hooks", floor: "swiftentry/direct", zeroAllocations: true),
    Case(id: "swiftentry/typed", label: "Swift method: SwiftEntryHook, one typed after hook", floor: "swiftentry/direct", zeroAllocations: true),
    Case(id: "swiftentry/after", label: "Swift method: SwiftEntryHook, one after hook", floor: "swiftentry/direct", zeroAllocations: true),
    Case(id: "swiftentry/other", label: "Swift method: SwiftEntryHook, hooks for another object", floor: "swiftentry/direct", zeroAllocations: true),
]


// MARK: Footprint (per object, at 1,000 and 100,000 objects a sample)

/// A target of the footprint table, checked against the case's own figures
/// or its floor's (the plain class).
enum FootprintTarget {
    /// At most `bytes` heap bytes above the floor and `times` the floor's time, `allocations` allocations.
    case overFloor(bytes: Double, times: Double, allocations: Double)
    /// At most this many bytes and ns.
    case within(bytes: Double?, ns: Double)

    func describe() -> String {
        switch self {
        case .overFloor(let b, let t, let a): "floor + \(format(b)) B, \(format(t))x its time, \(format(a)) allocation"
        case .within(let b, let ns): (b.map { "\(format($0)) B, " } ?? "") + "\(format(ns)) ns"
        }
    }
}

struct FootprintCase {
    let id: String
    let label: String
    var floor: String? = nil
    var target: FootprintTarget? = nil
}

let footprintCases: [FootprintCase] = [
    FootprintCase(id: "plain", label: "make: plain class, three properties (the floor)"),
    FootprintCase(id: "hooked", label: "make: three @Hooked properties, unhooked", floor: "plain",
                  target: .overFloor(bytes: 24, times: 1.5, allocations: 1)),
    FootprintCase(id: "plainmodel", label: "make: plain class, three properties, two methods (the floor)"),
    FootprintCase(id: "hookable", label: "make: @Hookable class, three properties, two methods, unhooked", floor: "plainmodel",
                  target: .overFloor(bytes: 48, times: 1.5, allocations: 1)),
    FootprintCase(id: "observation", label: "make: @Observable class, three properties (peer)"),
    FootprintCase(id: "published", label: "make: three OpenCombine @Published (peer)"),
    FootprintCase(id: "observable", label: "make: Observable<Int>, not subscribed", target: .within(bytes: 64, ns: 100)),
    FootprintCase(id: "subject", label: "make: OpenCombine CurrentValueSubject<Int> (peer)"),
    FootprintCase(id: "computed", label: "make: Computed<Int> over an Observable<Int>, no subscriber", target: .within(bytes: 128, ns: 5_000)),
    FootprintCase(id: "lookup", label: "PropertyHook.of, new object of a known class", target: .within(bytes: nil, ns: 500)),
    FootprintCase(id: "again", label: "PropertyHook.of again, same object", target: .within(bytes: nil, ns: 50)),
    FootprintCase(id: "addhook", label: "add an after hook, no call in flight", target: .within(bytes: nil, ns: 1_000)),
    FootprintCase(id: "bind", label: "Binding.bind two objects both ways", target: .within(bytes: 400, ns: 3_000)),
    FootprintCase(id: "tracking", label: "Observation tracking registration (peer)"),
]

func footprintTable(_ results: [String: Measured]) -> String {
    var lines = [
        "| case | objects | ns per object | heap bytes per object | mallocs per object | target |",
        "| --- | ---: | ---: | ---: | ---: | --- |",
    ]
    for size in ["1k", "100k"] {
        let per = size == "1k" ? 1_000.0 : 100_000.0
        func get(_ id: String) -> Measured? { results["footprint\(size)/\(id)"] }
        for c in footprintCases {
            guard let m = get(c.id), let total = m.ns else { continue }
            let ns = total * callsPerSample / per
            let mallocs = m.mallocs.map { $0 * callsPerSample / per }
            // glibc's chunks, less the 16 bytes package-benchmark's malloc
            // counter adds to each allocation still held (measured: a 48-byte
            // object grows the heap by 80 bytes under it, by 64 without it).
            let held = Swift.max((mallocs ?? 0) - (m.frees.map { $0 * callsPerSample / per } ?? 0), 0)
            let bytes = m.heapBytes.map { $0 / per - 16 * held }
            var target = ""
            if let t = c.target {
                var met: Bool?
                switch t {
                case .overFloor(let b, let x, let a):
                    if let floor = c.floor.flatMap(get), let fns = floor.ns, let fbytes = floor.heapBytes, let bytes, let mallocs {
                        met = bytes - fbytes / per <= b && ns <= x * fns * callsPerSample / per && mallocs <= a
                    }
                case .within(let b, let limit):
                    met = ns <= limit && (b == nil || (bytes ?? .infinity) <= b!)
                }
                target = t.describe() + (met.map { $0 ? ": met" : ": **not met**" } ?? "")
            }
            lines.append("| \(c.label) | \(size == "1k" ? "1,000" : "100,000") | \(format(ns)) | \(bytes.map { format($0) } ?? "") | \(mallocs.map { $0 == 0 ? "0" : format($0) } ?? "") | \(target) |")
        }
    }
    return lines.count > 2 ? lines.joined(separator: "\n") + "\n" : ""
}

// MARK: Reading the export

struct Measured {
    var ns: Double?
    var mallocs: Double?
    var worstMallocs: Double?
    /// Heap growth of one sample (the footprint cases).
    var heapBytes: Double?
    var frees: Double?
    /// The threads cases: median wall clock of one sample (ns), and from the
    /// name, operations per sample over all threads and the machine's cores.
    var sampleNs: Double?
    var threadsOps: Double?
    var cores: Int?
}

/// "…, N threads x OPS ops, C cores" ("1 thread x …") at the end of a threads case's name
/// (spaces are underscores in the file name): (N x OPS, C).
func threadsTail(_ fileName: String) -> (ops: Double, cores: Int)? {
    guard let end = fileName.range(of: "_cores.", options: .backwards) else { return nil }
    let words = fileName[..<end.lowerBound].split(separator: "_")
    // ... "2", "threads", "x", "30000", "ops,", "2"
    guard words.count >= 6, words[words.count - 5].hasPrefix("thread"), words[words.count - 4] == "x",
          words[words.count - 2] == "ops,", let n = Double(words[words.count - 6]),
          let ops = Double(words[words.count - 3]), let cores = Int(words[words.count - 1]) else { return nil }
    return (n * ops, cores)
}

/// Case id and metric from a file name such as
/// `current_run.HookBenchmarks.c_direct:_add,....wallClock.histogram.percentiles.tsv`.
func parse(_ fileName: String) -> (id: String, metric: String)? {
    guard fileName.hasSuffix(".histogram.percentiles.tsv"),
          let target = benchmarkTargets.lazy.compactMap({ fileName.range(of: ".\($0).") }).first else { return nil }
    let rest = fileName[target.upperBound...]
    guard let colon = rest.firstIndex(of: ":") else { return nil }
    let id = rest[..<colon].replacingOccurrences(of: "_", with: "/")
    let trimmed = fileName.dropLast(".histogram.percentiles.tsv".count)
    guard let dot = trimmed.lastIndex(of: ".") else { return nil }
    return (id, String(trimmed[trimmed.index(after: dot)...]))
}

/// The value at `percentile` in a percentiles TSV, in the metric's base unit
/// (ns, a count, bytes): the header names the unit the export scaled to,
/// "Time (wall clock) (us)" or "Malloc (total) (K)".
func value(at percentile: Int, in text: String) -> Double? {
    let lines = text.split(separator: "\n")
    let scales: [(String, Double)] = [("(ns)", 1), ("(us)", 1e3), ("(μs)", 1e3), ("(ms)", 1e6), ("(s)", 1e9),
                                      ("(K)", 1e3), ("(M)", 1e6), ("(G)", 1e9)]
    let header = lines.first.map(String.init) ?? ""
    let scale = scales.first { header.contains($0.0) }?.1 ?? 1
    for line in lines.dropFirst() {
        let columns = line.split(separator: "\t")
        if columns.count == 2, Int(columns[0]) == percentile { return Double(columns[1]).map { $0 * scale } }
    }
    return nil
}

/// The benchmark targets whose exports this reads.
let benchmarkTargets = ["HookBenchmarks", "HookableBenchmarks"]

/// The benchmark targets that have files in `directory`.
func targetsRun(in directory: String) throws -> Set<String> {
    let files = try FileManager.default.contentsOfDirectory(atPath: directory)
    return Set(benchmarkTargets.filter { target in files.contains { $0.contains(".\(target).") } })
}

func read(_ directory: String) throws -> [String: Measured] {
    var results: [String: Measured] = [:]
    for file in try FileManager.default.contentsOfDirectory(atPath: directory) {
        guard let (id, metric) = parse(file) else { continue }
        let text = try String(contentsOfFile: directory + "/" + file, encoding: .utf8)
        switch metric {
        case "wallClock":
            results[id, default: Measured()].ns = value(at: 50, in: text).map { $0 / callsPerSample }
            if id.hasPrefix("threads"), let (ops, cores) = threadsTail(file) {
                results[id, default: Measured()].sampleNs = value(at: 50, in: text)
                results[id, default: Measured()].threadsOps = ops
                results[id, default: Measured()].cores = cores
            }
        case "freeCountTotal":
            results[id, default: Measured()].frees = value(at: 50, in: text).map { $0 / callsPerSample }
        case "heapBytes":
            results[id, default: Measured()].heapBytes = value(at: 50, in: text)
        case "mallocCountTotal":
            results[id, default: Measured()].mallocs = value(at: 50, in: text).map { $0 / callsPerSample }
            results[id, default: Measured()].worstMallocs = value(at: 100, in: text)
        default:
            break
        }
    }
    return results
}

// MARK: The table

func table(_ results: [String: Measured]) -> String {
    var lines = [
        "| case | ns per call | vs floor | vs peer | mallocs per call | target |",
        "| --- | ---: | ---: | ---: | ---: | --- |",
    ]
    for c in cases {
        guard let ns = results[c.id]?.ns else { continue }
        let floorNs = c.floor.flatMap { results[$0]?.ns }
        let peerNs = c.peer.flatMap { results[$0]?.ns }
        let vsFloor = floorNs.map { "\(format(ns / $0))x" } ?? ""
        let vsPeer = peerNs.map { "\(format(ns / $0))x" } ?? ""
        let mallocs = results[c.id]?.mallocs.map { $0 == 0 ? "0" : format($0) } ?? ""
        var target = ""
        for t in c.targets {
            let met = t.isMet(ns: ns, floor: floorNs, peer: peerNs)
            target += (target.isEmpty ? "" : "; ") + t.describe() + (met.map { $0 ? ": met" : ": **not met**" } ?? "")
        }
        if c.zeroAllocations {
            let zero = (results[c.id]?.worstMallocs ?? 1) == 0
            target += (target.isEmpty ? "" : "; ") + (zero ? "0 allocations: met" : "0 allocations: **not met**")
        }
        lines.append("| \(c.label) | \(format(ns)) | \(vsFloor) | \(vsPeer) | \(mallocs) | \(target) |")
    }
    // A run of the threads cases alone has none of these.
    return lines.count > 2 ? lines.joined(separator: "\n") + "\n" : ""
}

// MARK: Threads

/// The threads cases (`threads<N>/<case>`): Mops/s over all threads from the
/// median wall clock of a sample and its operation count, and the ratio to 1 thread.
func threadsReport(_ results: [String: Measured]) -> String {
    var cores = 0
    let rows = threadsCaseInfos.map { info in
        var row = ThreadsRow(info)
        for (id, m) in results {
            guard id.hasPrefix("threads"), id.hasSuffix("/" + info.id),
                  let n = Int(id.dropFirst("threads".count).prefix { $0.isNumber }),
                  let ns = m.sampleNs, let ops = m.threadsOps, ns > 0 else { continue }
            row.mops[n] = ops / ns * 1e3
            cores = max(cores, m.cores ?? 0)
        }
        return row
    }
    return threadsTable(rows, cores: cores)
}

// MARK: The chart

func escape(_ s: String) -> String {
    s.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
}

/// Horizontal bars of ns per call on a log scale, 1 ns to 100 µs.
func chart(_ results: [String: Measured]) -> String {
    var rows: [(label: String, ns: Double, color: String)] = cases.compactMap { c in
        results[c.id]?.ns.map { (c.label, $0, c.isBaseline ? "#9e9e9e" : (c.isPeer ? "#f08c2e" : "#2f6fdf")) }
    }
    // The footprint cases at 100,000 objects: ns per object made, looked up, hooked or bound.
    for c in footprintCases {
        guard let total = results["footprint100k/\(c.id)"]?.ns else { continue }
        let color = c.id == "plain" ? "#9e9e9e" : (c.label.hasSuffix("(peer)") ? "#f08c2e" : "#2f6fdf")
        rows.append(("per object: " + c.label, total * callsPerSample / 100_000, color))
    }
    let labelWidth = 430.0, barWidth = 520.0, rowHeight = 22.0, top = 50.0
    let width = labelWidth + barWidth + 90, height = top + Double(rows.count) * rowHeight + 40
    let decades = 5.0  // 1 ns ... 100 µs
    func x(_ ns: Double) -> Double { labelWidth + barWidth * min(max(log10(max(ns, 1)), 0), decades) / decades }
    var svg = """
    <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" font-family="Helvetica, Arial, sans-serif" font-size="12">
    <rect width="100%" height="100%" fill="white"/>
    <text x="10" y="20" font-size="15" font-weight="bold">Hook and HookBind: ns per call (log scale), grey = floor or direct, blue = Hook/HookBind, orange = peers</text>

    """
    for d in 0...Int(decades) {
        let gx = x(pow(10, Double(d)))
        let label = ["1 ns", "10 ns", "100 ns", "1 µs", "10 µs", "100 µs"][d]
        svg += "<line x1=\"\(gx)\" y1=\"\(top - 8)\" x2=\"\(gx)\" y2=\"\(height - 30)\" stroke=\"#ddd\"/>\n"
        svg += "<text x=\"\(gx)\" y=\"\(top - 12)\" text-anchor=\"middle\" fill=\"#666\">\(label)</text>\n"
    }
    for (i, (label, ns, color)) in rows.enumerated() {
        let y = top + Double(i) * rowHeight
        svg += "<text x=\"\(labelWidth - 8)\" y=\"\(y + 15)\" text-anchor=\"end\">\(escape(label))</text>\n"
        svg += "<rect x=\"\(labelWidth)\" y=\"\(y + 4)\" width=\"\(max(x(ns) - labelWidth, 1))\" height=\"\(rowHeight - 8)\" fill=\"\(color)\"/>\n"
        svg += "<text x=\"\(x(ns) + 5)\" y=\"\(y + 15)\" fill=\"#333\">\(format(ns))</text>\n"
    }
    svg += "</svg>\n"
    return svg
}

// MARK: Main

var arguments = Array(CommandLine.arguments.dropFirst())
@MainActor func option(_ name: String) -> String? {
    guard let i = arguments.firstIndex(of: name), i + 1 < arguments.count else { return nil }
    defer { arguments.removeSubrange(i...(i + 1)) }
    return arguments[i + 1]
}
let markdownPath = option("--markdown")
let svgPath = option("--svg")
let check = arguments.contains("--check-allocations")
arguments.removeAll { $0 == "--check-allocations" }
guard let directory = arguments.first else {
    FileHandle.standardError.write(Data("usage: bench-report DIR [--markdown FILE] [--svg FILE] [--check-allocations]\n".utf8))
    exit(2)
}

do {
    let results = try read(directory)
    guard !results.isEmpty else {
        FileHandle.standardError.write(Data("bench-report: no histogramPercentiles export in \(directory)\n".utf8))
        exit(2)
    }
    let footprint = footprintTable(results)
    let threads = threadsReport(results)
    let markdown = [table(results), footprint.isEmpty ? "" : "Footprint:\n\n" + footprint, threads]
        .filter { !$0.isEmpty }.joined(separator: "\n")
    print(markdown, terminator: "")
    if let markdownPath { try markdown.write(toFile: markdownPath, atomically: true, encoding: .utf8) }
    if let svgPath { try chart(results).write(toFile: svgPath, atomically: true, encoding: .utf8) }
    let missing = cases.filter { results[$0.id]?.ns == nil }.map(\.id)
        + footprintCases.filter { results["footprint1k/\($0.id)"]?.ns == nil }.map { "footprint1k/\($0.id)" }
    if !missing.isEmpty { print("bench-report: not in this run: \(missing.joined(separator: ", "))") }
    if check {
        let ran = try targetsRun(in: directory)
        let skipped = Set(cases.map(\.benchmarkTarget)).subtracting(ran)
        if !skipped.isEmpty { print("bench-report: \(skipped.sorted().joined(separator: ", ")) not in this run: its cases are not checked") }
        let unmeasured = cases.filter { $0.zeroAllocations && ran.contains($0.benchmarkTarget) && results[$0.id]?.worstMallocs == nil }
        if !unmeasured.isEmpty {
            print("bench-report: no malloc count for \(unmeasured.map(\.id).joined(separator: ", ")): cannot check them")
            exit(1)
        }
        let allocating = cases.filter { $0.zeroAllocations && (results[$0.id]?.worstMallocs ?? 0) > 0 }
        if !allocating.isEmpty {
            for c in allocating {
                print("bench-report: \(c.id) (\(c.label)) allocated \(format(results[c.id]!.worstMallocs!)) times in one sample of \(Int(callsPerSample)) calls; DESIGN.md says 0")
            }
            exit(1)
        }
        let checked = cases.filter { $0.zeroAllocations && results[$0.id]?.worstMallocs != nil }.count
        print("bench-report: \(checked) hooked call paths allocated nothing")
    }
} catch {
    FileHandle.standardError.write(Data("bench-report: \(error)\n".utf8))
    exit(1)
}
