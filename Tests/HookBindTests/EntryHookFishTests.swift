import CHookTestSupport
import Foundation
import Hook
import HookBind
import Testing

/// A C function hooked at its entry is a fish like any `FunctionHook`: every
/// call of it, made directly from C, reaches the binding.
@Suite("Fishes on entry hooks", .enabled(if: EntryHook.isAvailable, "entry hooks are unavailable under ThreadSanitizer"))
struct EntryHookFishTests {
    @Test func everyCallOfAnEntryHookedFunctionIsPosted() throws {
        let hook = try EntryHook(address: unsafeBitCast(entry_for_binding as @convention(c) (Int64) -> Int64, to: UnsafeRawPointer.self),
                                 signature: Signature(returning: .int64, arguments: [.int64]))
        defer { try? hook.restore() }
        let heard = Shared<[String]>([])
        let binding = try Binding.bind([.post(hook), .observer { call in heard.mutate { $0.append("\(call)") } }])
        #expect(entry_for_binding(41) == 41)
        #expect(heard.value == ["entry_for_binding(41) -> 41"])
        binding.unbind()
        #expect(entry_for_binding(1) == 1)
        #expect(heard.value.count == 1)
    }
}
