// threads-probe: the threads suite without package-benchmark, so that it can be
// built with the Swift standard library linked in and copied to a machine with
// more cores and no Swift:
//
//   swift build -c release --static-swift-stdlib --product threads-probe
//   threads-probe [--threads 1,2,16] [--samples 9] [--cases function,closure,...] [--scale 0.5]
//
// For each case and thread count: a pool of N threads (ThreadPool), two
// warm-up samples, then `--samples` samples of every thread running the case's
// loop; the median sample's wall clock gives million operations per second
// over all threads. Prints the same "Threads" table as `bench-report`.
import Foundation
import ThreadsSuite
import ThreadsTable

func usage() -> Never {
    FileHandle.standardError.write(Data("""
    usage: threads-probe [--threads N,N,...] [--samples N] [--cases ID,ID,...] [--scale X]
      --threads  thread counts (default: 1, 2 and ProcessInfo.activeProcessorCount)
      --samples  measured samples per case and count (default 9; the median is shown)
      --cases    \(threadsCases.map(\.info.id).joined(separator: ",")) (default: all)
      --scale    operations per thread per sample, times the default (default 1)

    """.utf8))
    exit(2)
}

let cores = ProcessInfo.processInfo.activeProcessorCount
var counts = defaultThreadCounts(cores: cores)
var samples = 9
var scale = 1.0
var selected = threadsCases
var arguments = Array(CommandLine.arguments.dropFirst())
while !arguments.isEmpty {
    let name = arguments.removeFirst()
    if name == "-h" || name == "--help" { usage() }
    guard !arguments.isEmpty else { usage() }
    let value = arguments.removeFirst()
    switch name {
    case "--threads":
        let parsed = value.split(separator: ",").compactMap { Int($0) }
        guard !parsed.isEmpty, parsed.allSatisfy({ $0 >= 1 }) else { usage() }
        counts = []
        for n in parsed where !counts.contains(n) { counts.append(n) }
    case "--samples":
        guard let n = Int(value), n >= 1 else { usage() }
        samples = n
    case "--scale":
        guard let x = Double(value), x > 0 else { usage() }
        scale = x
    case "--cases":
        let ids = value.split(separator: ",").map(String.init)
        selected = threadsCases.filter { ids.contains($0.info.id) }
        guard selected.count == ids.count else { usage() }
    default:
        usage()
    }
}

func nanoseconds(_ body: () -> Void) -> Double {
    var start = timespec(), end = timespec()
    clock_gettime(CLOCK_MONOTONIC, &start)
    body()
    clock_gettime(CLOCK_MONOTONIC, &end)
    return Double(end.tv_sec - start.tv_sec) * 1e9 + Double(end.tv_nsec - start.tv_nsec)
}

var rows: [ThreadsRow] = []
for c in selected {
    var row = ThreadsRow(c.info)
    let ops = max(Int(Double(c.opsPerThread) * scale), 1)
    for n in counts {
        let pool = ThreadPool(threads: n, makeBody: c.prepare())
        for _ in 0..<2 { pool.run(opsPerThread: ops) }
        var times: [Double] = []
        for _ in 0..<samples { times.append(nanoseconds { pool.run(opsPerThread: ops) }) }
        pool.stop()
        times.sort()
        let median = times[times.count / 2]
        row.mops[n] = Double(n * ops) / median * 1e3
        FileHandle.standardError.write(Data("threads-probe: \(c.info.id), \(n) thread\(n == 1 ? "" : "s"): \(String(format: "%.3f", row.mops[n]!)) Mops/s (\(n) x \(ops) ops, median of \(samples) samples, \(String(format: "%.2f", median / 1e6)) ms)\n".utf8))
    }
    rows.append(row)
}
print(threadsTable(rows, cores: cores), terminator: "")
