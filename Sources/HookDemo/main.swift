import Hook
import CHookDemoSupport

let hook = try FunctionHook(cFunction: demo_add as @convention(c) (Int64, Int64) -> Int64,
                            signature: Signature(returning: Int64.self, arguments: Int64.self, Int64.self))
hook.before { call in print("before", call); try call.setArgument(0, to: try call.argument(0, as: Int64.self) * 10) }
hook.instead { call in print("instead", call); try call.invokeOriginal(); print("instead after original", call) }
let t = hook.after { call in print("after", call, call.args, call.result ?? "nil"); try call.setResult(try call.result(as: Int64.self) + 1) }
let f = hook.entry(as: (@convention(c) (Int64, Int64) -> Int64).self)
print(f(3, 4))
t.remove(); t.remove()
print(f(3, 4))
