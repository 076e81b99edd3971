import Foundation
import Hook
import Testing

/// Generic code over hook points (a tracer, a test helper, `[HookPoint]`)
/// adds synchronous `CallBack` hooks through the base type: on an async
/// point they run as async hooks that do not suspend.
@Suite("An async hook point used as a HookPoint")
struct AsyncPointThroughBaseTypeTests {
    /// What a tracer written against `HookPoint` does: one after hook on each point.
    final class Tracer: @unchecked Sendable {
        private let lock = NSLock()
        private var lines: [String] = []
        func trace(_ points: [HookPoint]) {
            for point in points {
                point.after { call in self.append("\(call)") }
            }
        }
        func append(_ line: String) { lock.withLock { lines.append(line) } }
        var all: [String] { lock.withLock { lines } }
    }

    @Test func aTracerOverHookPointsSeesAsyncCalls() async throws {
        let fetch = AsyncClosureHook(name: "fetch") { (id: Int) async throws -> String in
            await Task.yield()
            return "item \(id)"
        }
        let double = ClosureHook(name: "double") { (x: Int) in x * 2 }
        let tracer = Tracer()
        tracer.trace([fetch, double])
        #expect(fetch.hookCount == 1)
        #expect(try await fetch(7) == "item 7")
        #expect(double(4) == 8)
        #expect(tracer.all == ["fetch(7) -> \"item 7\"", "double(4) -> 8"])
    }

    @Test func synchronousHooksReadAndChangeAnAsyncCall() async throws {
        let fetch = AsyncClosureHook(name: "fetch") { (id: Int, suffix: String) async throws -> String in
            "item \(id)\(suffix)"
        }
        let point: HookPoint = fetch
        nonisolated(unsafe) var seen: [String] = []
        point.before { call in
            try call.setArgument(0, to: try call.argument(0, as: Int.self) + 100)
            let arguments = try call.arguments(as: (Int, String).self)
            seen.append("\(arguments.0)\(arguments.1)")
        }
        point.after { call in
            let result = try call.result(as: String.self)
            try call.setResult(result.uppercased())
        }
        #expect(try await fetch(1, "!") == "ITEM 101!")
        // An async hook added to the point itself runs among them, in order.
        fetch.after { call in call.setResult(call.result! + "?") }
        #expect(try await fetch(2, "") == "ITEM 102?")
        #expect(seen == ["101!", "102"])
    }

    @Test func aSynchronousBeforeHookVetoesAndAnInsteadHookReplaces() async throws {
        let originals = Counter()
        let load = AsyncClosureHook(name: "load") { (id: Int) async throws -> Int in
            originals.add()
            return id * 10
        }
        let point: HookPoint = load
        let veto = point.before { call in
            if try call.argument(0, as: Int.self) < 0 {
                try call.setResult(-1)
                try call.veto()
            }
        }
        #expect(try await load(-5) == -1)
        #expect(try await load(5) == 50)
        #expect(originals.value == 1)
        veto.remove()

        // An instead hook sets the result; the async original cannot be run
        // from a synchronous hook, and says so.
        nonisolated(unsafe) var refusal: HookError?
        point.instead { call in
            do { try call.invokeOriginal() } catch let error as HookError { refusal = error } catch {}
            try call.setResult(try call.argument(0, as: Int.self) + 1)
        }
        #expect(try await load(5) == 6)
        #expect(originals.value == 1)
        #expect(refusal?.kind == .invalidValue)
        #expect(refusal?.description.contains("invokeOriginal() from a synchronous instead hook of an async hook point") == true)
    }

    @Test func errorsOwnersAndExpiryAsEverywhere() async throws {
        struct Failure: Error {}
        let load = AsyncClosureHook(name: "load") { (id: Int) async throws -> Int in
            if id < 0 { throw Failure() }
            return id
        }
        let point: HookPoint = load
        nonisolated(unsafe) var kept: CallBack?
        nonisolated(unsafe) var seenError: (any Error)?
        final class Owner {}
        var owner: Owner? = Owner()
        point.after(owner: owner) { call in
            kept = call
            seenError = call.error
            if call.error != nil { try call.setResult(0) }   // replaces the error
        }
        #expect(try await load(-1) == 0)
        #expect(seenError is Failure)
        #expect(kept?.isLive == false)
        #expect(throws: HookError.self) { try kept?.argument(0, as: Int.self) }
        // Thrown by a synchronous hook: to the handler, as any hook's error.
        nonisolated(unsafe) var reported: [HookPosition] = []
        point.hookErrorHandler = { _, position in reported.append(position) }
        point.before { _ in throw Failure() }
        #expect(try await load(3) == 3)
        #expect(reported == [.before])
        // The owner gone, its hook stops.
        owner = nil
        seenError = nil
        await #expect(throws: Failure.self) { try await load(-2) }
        #expect(seenError == nil)
        point.removeAllHooks()
        #expect(point.hookCount == 0)
    }

    /// The crash this replaces: through the base type, `after { }` on an
    /// async point ended the process (SIGILL from a `fatalError`).
    @Test func addingThroughHookPointDoesNotEndTheProcess() async {
        await #expect(processExitsWith: .success) {
            let points: [HookPoint] = [AsyncClosureHook(name: "f") { (x: Int) async in x }]
            for point in points {
                point.before { _ in }
                point.instead { call in try call.setResult(1) }
                point.after { _ in }
                point.add(.after, owner: point) { _, _ in }
            }
        }
    }
}
