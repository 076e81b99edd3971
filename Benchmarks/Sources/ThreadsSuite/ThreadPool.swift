// N threads kept for the life of one case at one thread count: each runs the
// case's loop on its own objects when a sample starts, and the sample ends
// when the last one is done.
//
// Why a pool and not threads started per sample: starting a thread costs tens
// of µs, and its first calls set up per-thread state (Hook's thread-local
// frames, Observation's tracking list, a malloc arena). A sample that started
// its threads would measure that setup N times over and count it against the
// thread count; the pool pays it once, before the first (warm-up) sample, so
// every sample measures the steady state that a server's long-lived threads
// see. What a sample adds to the loops is one semaphore wake-up per thread and
// one wait, a few µs against samples of milliseconds.
import Foundation

public final class ThreadPool: @unchecked Sendable {
    /// The number of threads.
    public let count: Int
    private let go: [DispatchSemaphore]
    private let done = DispatchSemaphore(value: 0)
    // Written by the caller before it signals `go`, read by the threads after
    // they wait on it: the semaphore orders them.
    private var opsPerThread = 0
    private var stopping = false

    /// Starts `threads` threads; each calls `makeBody` once, on itself, to make
    /// its private objects and the loop that runs `n` operations on them (the
    /// loop returns a checksum, so that its work is not optimized away).
    /// Returns when every thread has made its objects.
    public init(threads: Int, makeBody: @escaping @Sendable () -> (Int) -> Int) {
        count = threads
        go = (0..<threads).map { _ in DispatchSemaphore(value: 0) }
        let ready = DispatchSemaphore(value: 0)
        for t in 0..<threads {
            Thread { [self] in
                do {
                    let body = makeBody()
                    let sink = Sink()
                    ready.signal()
                    while true {
                        go[t].wait()
                        if stopping { break }
                        sink.sum &+= body(opsPerThread)
                        done.signal()
                    }
                    withExtendedLifetime(sink) {}
                }
                // The thread's objects are gone: stop() may return.
                done.signal()
            }.start()
        }
        for _ in 0..<threads { ready.wait() }
    }

    /// One sample: every thread runs `opsPerThread` operations of its loop;
    /// returns when the last has finished.
    public func run(opsPerThread n: Int) {
        opsPerThread = n
        for semaphore in go { semaphore.signal() }
        for _ in 0..<count { done.wait() }
    }

    /// Ends the threads; returns when each has released its objects.
    public func stop() {
        stopping = true
        for semaphore in go { semaphore.signal() }
        for _ in 0..<count { done.wait() }
    }
}

/// A thread's checksum, on its own heap block.
private final class Sink {
    var sum = 0
}
