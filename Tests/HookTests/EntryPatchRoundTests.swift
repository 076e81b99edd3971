import CHookTestSupport
import Foundation
@testable import Hook
import Synchronization
import Testing

/// int64_t patch_round_target(int64_t): x * 5 + 2.
private let targetSignature = Signature(returning: .int64, arguments: [.int64])

/// The bytes at the entry of `patch_round_target`.
private func targetBytes() -> [UInt8] {
    let entry = unsafeBitCast(patch_round_target as @convention(c) (Int64) -> Int64, to: UnsafeRawPointer.self)
    return Array(UnsafeBufferPointer(start: entry.assumingMemoryBound(to: UInt8.self), count: 16))
}

/// `body` throws a `HookError` of `kind` whose description holds each of `texts`.
private func expectFailure(_ kind: HookError.Kind, containing texts: [String], _ body: () throws -> Void) {
    do {
        try body()
        Issue.record("expected \(kind)")
    } catch let error as HookError {
        #expect(error.kind == kind, "\(error)")
        for text in texts {
            #expect(error.description.contains(text), "\(error)")
        }
    } catch {
        Issue.record("unexpected \(error)")
    }
}

// How a patch treats the process's other threads (see "Safe while other
// threads run the function" in the Entry hooks article). Serialized: each
// test starts a thread the other's patch would meet.
@Suite("EntryHook: the patch and the other threads", .serialized,
       .enabled(if: EntryHook.isAvailable, "entry hooks are unavailable under ThreadSanitizer"))
struct EntryPatchRoundTests {
    /// A thread that blocks SIGTRAP would end the process at the int3 on the
    /// first byte (the kernel unblocks a trap and takes its default action):
    /// the patch is refused, naming the thread, and nothing is written; once
    /// the thread is gone the hook installs. (Without the check the install
    /// went through, and a call of the function from that thread meanwhile
    /// ended the process with status 133; the thread here calls a function
    /// of its own, so that the test fails rather than the process.)
    @Test func aThreadThatBlocksSIGTRAPIsNamedAndNothingIsWritten() throws {
        let before = targetBytes()
        // Its mask counts in this thread's patches only: the tests running
        // beside this one patch meanwhile.
        let tid = patch_round_blocker_start("hk-blocker")
        try #require(tid > 0)
        expectFailure(.patchingFailed, containing: ["thread \(tid) (\"hk-blocker\") blocks SIGTRAP", "nothing was written"]) {
            let hook = try EntryHook(symbol: "patch_round_target", signature: targetSignature)
            // Reached only if the patch was not refused: put the code back.
            try hook.restore()
        }
        #expect(targetBytes() == before)
        #expect(patch_round_target(3) == 17)
        #expect(patch_round_blocker_stop() > 0)

        do {
            let hook = try EntryHook(symbol: "patch_round_target", signature: targetSignature)
            defer { try? hook.restore() }
            let calls = Mutex(0)
            let token = hook.before { _ in calls.withLock { $0 += 1 } }
            defer { token.remove() }
            #expect(hook.isInstalled)
            #expect(patch_round_target(3) == 17)
            #expect(calls.withLock { $0 } == 1)
        }
        #expect(targetBytes() == before)
    }

    /// A thread asleep in a system call outside the displaced bytes can
    /// come back into the function only through its first byte: the patch
    /// does not interrupt it. (Every install sent each other thread SIGPROF,
    /// and a sleep with a handler for the signal ends early, SA_RESTART or
    /// not: here nanosleep returned EINTR with most of its 300 ms left.)
    @Test func aSleepingThreadIsNotInterrupted() throws {
        try #require(patch_round_sleeper_start(300) == 0)
        // Surely asleep by now.
        usleep(50_000)
        var installed = false
        do {
            let hook = try EntryHook(symbol: "patch_round_target", signature: targetSignature)
            installed = hook.isInstalled
            #expect(patch_round_target(1) == 7)
            try hook.restore()
        } catch {
            Issue.record("\(error)")
        }
        var left: Int64 = 0
        let result = patch_round_sleeper_join(&left)
        #expect(installed)
        #expect(result == 0, "nanosleep was cut short (errno \(result)), \(left / 1_000_000) ms left")
    }
}
