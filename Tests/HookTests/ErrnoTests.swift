import CHookTestSupport
import Glibc
import Hook
import Testing

/// A hooked C call keeps its `errno`: the caller sees what the original set
/// (or what a hook put in `CallBack.errno`), never what the hooks' own code
/// did to the thread's `errno`.
@Suite struct ErrnoTests {
    typealias Unary = @convention(c) (Int32) -> Int32
    static let unary = Signature(returning: .int32, arguments: [.int32])

    /// Something a hook might do that sets `errno`: `isatty` of a closed descriptor (EBADF).
    static func clobberErrno() { _ = isatty(-1) }

    @Test func anAfterHookThatChangesErrnoLeavesTheOriginals() throws {
        let hook = try FunctionHook(cFunction: hk_errno_fail as Unary, signature: Self.unary, name: "hk_errno_fail")
        #expect(hook.usesNativeEntry)
        var seen: Int32 = 0
        let token = hook.after { call in
            seen = call.errno
            Self.clobberErrno()
        }
        defer { token.remove() }
        let entry = hook.entry(as: Unary.self)
        errno = 0
        #expect(entry(ENOENT) == -1)
        #expect(errno == ENOENT)
        #expect(seen == ENOENT)
    }

    @Test func aBeforeHookThatChangesErrnoDoesNotReachTheCaller() throws {
        // hk_errno_keep leaves errno alone, as strtol does on success: a
        // caller that set it to 0 before must find 0 after.
        let hook = try FunctionHook(cFunction: hk_errno_keep as Unary, signature: Self.unary, name: "hk_errno_keep")
        var seen: Int32 = -1
        let tokens = [
            hook.before { call in
                seen = call.errno
                Self.clobberErrno()
            },
            hook.after { _ in Self.clobberErrno() },
        ]
        defer { tokens.forEach { $0.remove() } }
        errno = 0
        #expect(hook.entry(as: Unary.self)(41) == 42)
        #expect(errno == 0)
        #expect(seen == 0)
    }

    @Test func aHookSetsTheErrnoTheCallerSees() throws {
        let hook = try FunctionHook(cFunction: hk_errno_fail as Unary, signature: Self.unary, name: "hk_errno_fail")
        let entry = hook.entry(as: Unary.self)
        // An after hook changes the original's.
        let after = hook.after { call in call.errno = EACCES }
        #expect(entry(ENOENT) == -1)
        #expect(errno == EACCES)
        after.remove()
        // An instead hook fails the call without the original.
        var originals = 0
        let instead = hook.instead { call in
            if try call.argument(0, as: Int32.self) == 0 {
                try call.setResult(Int32(-1))
                call.errno = EPERM
                Self.clobberErrno()
            } else {
                try call.invokeOriginal()
                originals += 1
                Self.clobberErrno()
            }
        }
        defer { instead.remove() }
        errno = 0
        #expect(entry(0) == -1)
        #expect(errno == EPERM)
        #expect(originals == 0)
        // One that runs it gives back the original's.
        #expect(entry(ENOTDIR) == -1)
        #expect(errno == ENOTDIR)
        #expect(originals == 1)
    }

    @Test func aTypedAfterHookLeavesTheOriginalsErrno() throws {
        // A lone typed after hook on a native entry: no record, its own path.
        let hook = try FunctionHook(cFunction: hk_errno_fail as Unary, signature: Self.unary, name: "hk_errno_fail")
        var codes: [Int32] = []
        let token = try hook.afterReturning { (_: Int32, code: Int32) in
            codes.append(code)
            Self.clobberErrno()
        }
        defer { token.remove() }
        #expect(hook.entry(as: Unary.self)(ENOENT) == -1)
        #expect(errno == ENOENT)
        #expect(codes == [ENOENT])
    }

    @Test func aLibffiEntryKeepsTheErrnoToo() throws {
        typealias Fail = @convention(c) (Double) -> Double
        let hook = try FunctionHook(cFunction: hk_errno_fail_double as Fail,
                                    signature: Signature(returning: .double, arguments: [.double]), name: "hk_errno_fail_double")
        #expect(!hook.usesNativeEntry)
        let token = hook.after { _ in Self.clobberErrno() }
        defer { token.remove() }
        #expect(hook.entry(as: Fail.self)(Double(ENOENT)) == -1)
        #expect(errno == ENOENT)
    }

    @Test(.enabled(if: EntryHook.isAvailable, "entry hooks are unavailable under ThreadSanitizer"))
    func anEntryHookKeepsTheErrnoOfADirectCall() throws {
        let hook = try EntryHook(address: unsafeBitCast(hk_errno_fail_entry as Unary, to: UnsafeRawPointer.self), signature: Self.unary)
        defer { try? hook.restore() }
        var calls = 0
        let token = hook.after { _ in
            calls += 1
            Self.clobberErrno()
        }
        defer { token.remove() }
        // The C caller calls it directly and reads errno after.
        #expect(hk_errno_call_fail(ENOENT) == ENOENT)
        #expect(calls == 1)
    }
}
