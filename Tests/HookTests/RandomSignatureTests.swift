import CHookTestSupport
import Foundation
import Hook
import Testing

/// Random C signatures, random values, compared bit for bit.
///
/// The "original" of each signature is itself a libffi closure (a second hook
/// point whose instead hook records its arguments and returns a planned
/// result), and the caller is libffi's `ffi_call`: only libffi marshals values
/// on either side of the hook under test. Set HOOK_TEST_SEED to replay a run.
@Suite("Random signatures")
struct RandomSignatureTests {
    static let signatureCount = 1_200

    static let scalars: [CType] = [.bool, .int8, .uint8, .int16, .uint16, .int32, .uint32, .int64, .uint64, .float, .double, .pointer]

    static func randomScalar(_ g: inout SeededGenerator) -> CType { scalars.randomElement(using: &g)! }

    static func randomStruct(_ g: inout SeededGenerator, depth: Int) -> CType {
        let count = Int.random(in: 1...6, using: &g)
        return .structure((0..<count).map { _ in
            switch Int.random(in: 0..<10, using: &g) {
            case 0 where depth < 2: randomStruct(&g, depth: depth + 1)
            case 1: .array(randomScalar(&g), count: Int.random(in: 1...5, using: &g))
            default: randomScalar(&g)
            }
        })
    }

    static func randomType(_ g: inout SeededGenerator) -> CType {
        Int.random(in: 0..<5, using: &g) == 0 ? randomStruct(&g, depth: 0) : randomScalar(&g)
    }

    static func randomSignature(_ g: inout SeededGenerator) -> Signature {
        let count = Int.random(in: 0...20, using: &g)
        let result: CType = Int.random(in: 0..<6, using: &g) == 0 ? .void : randomType(&g)
        return Signature(returning: result, arguments: (0..<count).map { _ in randomType(&g) })
    }

    /// A random value of `type`; floating values are random bit patterns (NaNs included).
    static func randomValue(_ type: CType, _ g: inout SeededGenerator) -> CValue {
        switch type {
        case .void: .void
        case .bool: .bool(Bool.random(using: &g))
        case .int8: .int8(.random(in: .min ... .max, using: &g))
        case .uint8: .uint8(.random(in: .min ... .max, using: &g))
        case .int16: .int16(.random(in: .min ... .max, using: &g))
        case .uint16: .uint16(.random(in: .min ... .max, using: &g))
        case .int32: .int32(.random(in: .min ... .max, using: &g))
        case .uint32: .uint32(.random(in: .min ... .max, using: &g))
        case .int64: .int64(.random(in: .min ... .max, using: &g))
        case .uint64: .uint64(g.next())
        case .float: .float(Float(bitPattern: .random(in: .min ... .max, using: &g)))
        case .double: .double(Double(bitPattern: g.next()))
        case .pointer: .pointer(UnsafeRawPointer(bitPattern: UInt(g.next())))
        case .structure(let members): .structure(members.map { randomValue($0, &g) })
        case .array(let element, let count): .array((0..<count).map { _ in randomValue(element, &g) })
        case .union, .bitField: .void
        }
    }

    @Test func hookedCallsPassEveryValueBitForBit() throws {
        let seed = ProcessInfo.processInfo.environment["HOOK_TEST_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: .min ... .max)
        var g = SeededGenerator(seed: seed)
        let neverCalled = address(of: abi_void as @convention(c) (Int32, Double) -> Void)
        var structs = 0, stackHeavy = 0
        for index in 0..<Self.signatureCount {
            let signature = Self.randomSignature(&g)
            let context: Comment = "seed \(seed) (HOOK_TEST_SEED=\(seed) replays it), signature #\(index): \(signature)"
            if signature.arguments.contains(where: { if case .structure = $0 { true } else { false } }) { structs += 1 }
            if signature.arguments.count > 8 { stackHeavy += 1 }

            let arguments = signature.arguments.map { Self.randomValue($0, &g) }
            let planned = Self.randomValue(signature.result, &g)
            // Sometimes a before hook replaces an argument, sometimes an after hook the result.
            let replaceIndex = signature.arguments.isEmpty || !Bool.random(using: &g) ? nil : Int.random(in: 0..<signature.arguments.count, using: &g)
            let replacement = replaceIndex.map { Self.randomValue(signature.arguments[$0], &g) }
            let newResult: CValue? = signature.result != .void && Bool.random(using: &g) ? Self.randomValue(signature.result, &g) : nil

            // The original: a libffi closure recording what it received.
            let received = Shared<[CValue]>([])
            let original = try FunctionHook(function: neverCalled, signature: signature, name: "original#\(index)")
            original.instead { call in
                received.value = try (0..<call.argumentCount).map { try call.argumentValue($0) }
                try call.setResultValue(planned)
            }
            // The hook under test, over the original's entry.
            let hooked = try FunctionHook(function: original.entry, signature: signature, name: "hooked#\(index)")
            let seenBefore = Shared<[CValue]>([])
            let seenAfter = Shared<[CValue]>([])
            let seenResult = Shared<CValue?>(nil)
            hooked.before { call in
                seenBefore.value = try (0..<call.argumentCount).map { try call.argumentValue($0) }
                if let replaceIndex, let replacement { try call.setArgumentValue(replaceIndex, to: replacement) }
            }
            hooked.after { call in
                seenAfter.value = try (0..<call.argumentCount).map { try call.argumentValue($0) }
                seenResult.value = try call.resultValue()
                if let newResult { try call.setResultValue(newResult) }
            }

            let result = try hooked.callEntry(with: arguments)

            var delivered = arguments
            if let replaceIndex, let replacement { delivered[replaceIndex] = replacement }
            let ok = seenBefore.value == arguments
                && received.value == delivered
                && seenAfter.value == delivered
                && seenResult.value == planned
                && result == (newResult ?? planned)
            #expect(seenBefore.value == arguments, "before hook's arguments; \(context)")
            #expect(received.value == delivered, "original's arguments; \(context)")
            #expect(seenAfter.value == delivered, "after hook's arguments; \(context)")
            #expect(seenResult.value == planned, "after hook's result; \(context)")
            #expect(result == (newResult ?? planned), "caller's result; \(context)")
            if !ok { break }
        }
        // The generator covers what the test claims to cover.
        #expect(structs > Self.signatureCount / 4)
        #expect(stackHeavy > Self.signatureCount / 4)
    }
}
