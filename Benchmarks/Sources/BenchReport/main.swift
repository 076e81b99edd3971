// bench-report: reads one run of `swift package benchmark --format
// histogramPercentiles --path DIR` and prints every case per call, as a ratio
// to its floor and to its peer, against DESIGN.md's targets, as a Markdown
// table; draws the same as an SVG chart; and checks that the hooked call
// paths allocate nothing.
//
//   swift run -c release bench-report DIR [--markdown FILE] [--svg FILE] [--check-allocations]
import Foundation

/// Calls, sets or writes per measured sample (`callsPerSample` in the benchmarks).
let callsPerSample = 1_000.0

enum Target {
    /// At most this many times the floor.
    case timesFloor(Double)
    /// At most this many ns above the floor.
    case nsOverFloor(Double)
    /// At most this many times the peer.
    case timesPeer(Double)

    func describe() -> String {
        switch self {
        case .timesFloor(let x): "at most \(format(x))x the floor"
        case .nsOverFloor(let ns): "at most +\(format(ns)) ns"
        case .timesPeer(let x): "at most \(format(x))x the peer"
        }
    }
}

struct Case {
    let id: String
    let label: String
    var floor: String? = nil
    var peer: String? = nil
    var target: Target? = nil
    /// DESIGN.md: this path allocates nothing.
    var zeroAllocations = false
    /// The floor or the direct call: drawn grey.
    var isBaseline = false
    /// Another library: drawn orange.
    var isPeer = false
}

let cases: [Case] = [
    Case(id: "c/direct", label: "add: direct call through a pointer", floor: "c/floor", isBaseline: true),
    Case(id: "c/floor", label: "add: bare libffi closure + ffi_call (C, the floor)", isBaseline: true),
    Case(id: "c/none", label: "add: FunctionHook, no hooks", floor: "c/floor", target: .timesFloor(1.1), zeroAllocations: true),
    Case(id: "c/before", label: "add: FunctionHook, one before hook", floor: "c/floor", zeroAllocations: true),
    Case(id: "c/both", label: "add: FunctionHook, before + after reading typed arguments", floor: "c/floor", target: .timesFloor(1.5), zeroAllocations: true),
    Case(id: "c/instead", label: "add: FunctionHook, instead hook calling the original", floor: "c/floor", zeroAllocations: true),
    Case(id: "mix/direct", label: "5 args + 24-byte struct: direct call", floor: "mix/floor", isBaseline: true),
    Case(id: "mix/floor", label: "5 args + 24-byte struct: bare libffi closure (C, the floor)", isBaseline: true),
    Case(id: "mix/none", label: "5 args + 24-byte struct: FunctionHook, no hooks", floor: "mix/floor", target: .timesFloor(1.1), zeroAllocations: true),
    Case(id: "mix/both", label: "5 args + 24-byte struct: FunctionHook, before + after", floor: "mix/floor", target: .timesFloor(1.5), zeroAllocations: true),
    Case(id: "swift/direct", label: "closure (Int, Int) -> Int: plain", isBaseline: true),
    Case(id: "swift/none", label: "closure: ClosureHook, no hooks", floor: "swift/direct", zeroAllocations: true),
    Case(id: "swift/after", label: "closure: ClosureHook, one after hook", floor: "swift/direct", target: .nsOverFloor(5), zeroAllocations: true),
    Case(id: "swift/cpointer", label: "closure: ClosureHook through its C function pointer", floor: "c/floor", zeroAllocations: true),
    Case(id: "property/plain", label: "property set: plain stored property", isBaseline: true),
    Case(id: "property/none", label: "property set: @Hooked, no hooks", floor: "property/plain", target: .nsOverFloor(2), zeroAllocations: true),
    Case(id: "property/after", label: "property set: @Hooked, one after hook", floor: "property/plain", zeroAllocations: true),
    Case(id: "sync3/didset", label: "three-way sync: didSet by hand (the floor)", isBaseline: true),
    Case(id: "sync3/binding", label: "three-way sync: HookBind Binding", floor: "sync3/didset", peer: "sync3/opencombine", target: .timesPeer(0.5), zeroAllocations: true),
    Case(id: "sync3/opencombine", label: "three-way sync: OpenCombine @Published + sink", floor: "sync3/didset", isPeer: true),
    Case(id: "sync3/observation", label: "three-way sync: Swift Observation", floor: "sync3/didset", isPeer: true),
    Case(id: "fanout1/observable", label: "write, 1 subscriber: HookBind Observable", peer: "fanout1/opencombine"),
    Case(id: "fanout1/opencombine", label: "write, 1 subscriber: OpenCombine CurrentValueSubject", isPeer: true),
    Case(id: "fanout1/observation", label: "write, 1 subscriber: Swift Observation", isPeer: true),
    Case(id: "fanout100/observable", label: "write, 100 subscribers: HookBind Observable", peer: "fanout100/opencombine"),
    Case(id: "fanout100/opencombine", label: "write, 100 subscribers: OpenCombine CurrentValueSubject", isPeer: true),
    Case(id: "fanout100/observation", label: "write, 100 subscribers: Swift Observation", isPeer: true),
    Case(id: "diamond/computed", label: "diamond a -> b, c -> d: HookBind Computed", peer: "diamond/opencombine"),
    Case(id: "diamond/opencombine", label: "diamond: OpenCombine map + zip", isPeer: true),
    Case(id: "diamond/observation", label: "diamond: Swift Observation", isPeer: true),
    Case(id: "scaling/after1", label: "add: FunctionHook, 1 after hook", floor: "c/floor", zeroAllocations: true),
    Case(id: "scaling/after10", label: "add: FunctionHook, 10 after hooks", floor: "c/floor", zeroAllocations: true),
    Case(id: "scaling/after100", label: "add: FunctionHook, 100 after hooks", floor: "c/floor", zeroAllocations: true),
    Case(id: "scaling/churn", label: "add + remove an after hook while 2 threads call"),
    // strdup + free: one malloc through libc's GOT per call (strdup's own allocation: 1 malloc per call).
    Case(id: "import/direct", label: "imported call (strdup -> malloc via libc's GOT), no hook point", floor: "import/direct", isBaseline: true),
    Case(id: "import/none", label: "imported call: ImportHook on malloc, no hooks", floor: "import/direct"),
    Case(id: "import/after", label: "imported call: ImportHook on malloc, one after hook", floor: "import/direct"),
    Case(id: "import/patch", label: "patch getenv in every loaded object + restore()"),
]

func format(_ x: Double) -> String {
    if x >= 100 { return String(format: "%.0f", x) }
    if x >= 10 { return String(format: "%.1f", x) }
    return String(format: "%.2f", x)
}

// MARK: Reading the export

struct Measured {
    var ns: Double?
    var mallocs: Double?
    var worstMallocs: Double?
}

/// Case id and metric from a file name such as
/// `current_run.HookBenchmarks.c_direct:_add,....wallClock.histogram.percentiles.tsv`.
func parse(_ fileName: String) -> (id: String, metric: String)? {
    guard fileName.hasSuffix(".histogram.percentiles.tsv"),
          let target = fileName.range(of: ".HookBenchmarks.") else { return nil }
    let rest = fileName[target.upperBound...]
    guard let colon = rest.firstIndex(of: ":") else { return nil }
    let id = rest[..<colon].replacingOccurrences(of: "_", with: "/")
    let trimmed = fileName.dropLast(".histogram.percentiles.tsv".count)
    guard let dot = trimmed.lastIndex(of: ".") else { return nil }
    return (id, String(trimmed[trimmed.index(after: dot)...]))
}

/// The value at `percentile` in a percentiles TSV.
func value(at percentile: Int, in text: String) -> Double? {
    for line in text.split(separator: "\n").dropFirst() {
        let columns = line.split(separator: "\t")
        if columns.count == 2, Int(columns[0]) == percentile { return Double(columns[1]) }
    }
    return nil
}

func read(_ directory: String) throws -> [String: Measured] {
    var results: [String: Measured] = [:]
    for file in try FileManager.default.contentsOfDirectory(atPath: directory) {
        guard let (id, metric) = parse(file) else { continue }
        let text = try String(contentsOfFile: directory + "/" + file, encoding: .utf8)
        switch metric {
        case "wallClock":
            results[id, default: Measured()].ns = value(at: 50, in: text).map { $0 / callsPerSample }
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
        if let t = c.target {
            var met: Bool?
            switch t {
            case .timesFloor(let x): met = floorNs.map { ns / $0 <= x }
            case .nsOverFloor(let d): met = floorNs.map { ns - $0 <= d }
            case .timesPeer(let x): met = peerNs.map { ns / $0 <= x }
            }
            target = t.describe() + (met.map { $0 ? ": met" : ": **not met**" } ?? "")
        }
        if c.zeroAllocations {
            let zero = (results[c.id]?.worstMallocs ?? 1) == 0
            target += (target.isEmpty ? "" : "; ") + (zero ? "0 allocations: met" : "0 allocations: **not met**")
        }
        lines.append("| \(c.label) | \(format(ns)) | \(vsFloor) | \(vsPeer) | \(mallocs) | \(target) |")
    }
    return lines.joined(separator: "\n") + "\n"
}

// MARK: The chart

func escape(_ s: String) -> String {
    s.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
}

/// Horizontal bars of ns per call on a log scale, 1 ns to 100 µs.
func chart(_ results: [String: Measured]) -> String {
    let rows = cases.compactMap { c in results[c.id]?.ns.map { (c, $0) } }
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
    for (i, (c, ns)) in rows.enumerated() {
        let y = top + Double(i) * rowHeight
        let color = c.isBaseline ? "#9e9e9e" : (c.isPeer ? "#f08c2e" : "#2f6fdf")
        svg += "<text x=\"\(labelWidth - 8)\" y=\"\(y + 15)\" text-anchor=\"end\">\(escape(c.label))</text>\n"
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
    let markdown = table(results)
    print(markdown, terminator: "")
    if let markdownPath { try markdown.write(toFile: markdownPath, atomically: true, encoding: .utf8) }
    if let svgPath { try chart(results).write(toFile: svgPath, atomically: true, encoding: .utf8) }
    let missing = cases.filter { results[$0.id]?.ns == nil }.map(\.id)
    if !missing.isEmpty { print("bench-report: not in this run: \(missing.joined(separator: ", "))") }
    if check {
        let unmeasured = cases.filter { $0.zeroAllocations && results[$0.id]?.worstMallocs == nil }
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
