/// The stated types of a Swift entry hook checked against the function's
/// demangled signature, and where each value lives in the registers.
struct _SwiftEntryPlan {
    let layout: _SwiftFrameLayout
    let owned: [Bool]
    let selfIsObject: Bool
    /// Whether `self` is passed by value and holds references: a
    /// `consuming` method (which its name does not tell) destroys it before
    /// it returns, so it is not read after the call (see
    /// `SwiftEntryPoint.readsArgumentsAfterReturn`).
    let selfMayBeConsumed: Bool

    init(function: _SwiftFunction, written: String, arguments: [Any.Type], result: Any.Type, canThrow: Bool) throws(HookError) {
        let stated = "(" + arguments.map { _typeName($0, qualified: true) }.joined(separator: ", ") + ")\(canThrow ? " throws" : "") -> " + _typeName(result, qualified: true)
        // (An async overload beside a synchronous one of the same types:
        // not a candidate, so the stated synchronous type picks the other.
        // Both passed, and no name could tell them apart.)
        if function.isAsync {
            throw HookError(.unsupportedType, point: written, "'\(function.demangled)' is async: Swift entry hooks do not hook async functions yet")
        }
        if function.isGeneric {
            throw HookError(.unsupportedType, point: written, "'\(function.demangled)' is generic: typed access needs concrete types (trace it with SwiftTrace)")
        }
        if let thrown = function.thrownType {
            throw HookError(.unsupportedType, point: written, "'\(function.demangled)' throws \(thrown) (typed throws), whose error comes back in the result registers: typed access does not support it (trace it with SwiftTrace)")
        }
        if function.kind == .modify {
            throw HookError(.unsupportedType, point: written, "'\(function.demangled)' is a modify coroutine: observe its accesses with SwiftModifyHook (a `+=` from another module calls it, not the setter)")
        }
        if function.canThrow != canThrow {
            throw HookError(.typeMismatch, point: written, function.canThrow
                ? "'\(function.demangled)' throws: state its type as (...) throws -> R, not \(stated)"
                : "'\(function.demangled)' does not throw; stated \(stated)")
        }
        // The types the function has, `self` first.
        var expected = function.parameters
        if function.hasSelf, let type = function.type { expected.insert(type, at: 0) }
        let expectedText = "(" + expected.joined(separator: ", ") + ") -> " + function.result
        guard expected.count == arguments.count else {
            throw HookError(.typeMismatch, point: written, "'\(function.demangled)' has the type \(expectedText)\(function.hasSelf ? " (self first)" : ""); stated \(stated)")
        }
        var selfIsObject = false
        var selfInContext = false
        var owned: [Bool] = []
        for (i, (type, text)) in zip(arguments, expected).enumerated() {
            let isSelf = function.hasSelf && i == 0
            var wanted = text
            var isOwned = false
            for modifier in ["__owned ", "consuming ", "sending "] where wanted.hasPrefix(modifier) {
                wanted.removeFirst(modifier.count)
                isOwned = true
            }
            for modifier in ["__shared ", "borrowing "] where wanted.hasPrefix(modifier) { wanted.removeFirst(modifier.count) }
            var byAddress = wanted.hasPrefix("inout ")
            if byAddress { wanted = "Swift.UnsafeMutablePointer<" + wanted.dropFirst(6) + ">" }
            let statedName = _SwiftNames.canonical(_typeName(type, qualified: true))
            if isSelf {
                let kind = unsafeBitCast(type, to: UnsafeRawPointer.self).load(as: UInt.self)
                if _SwiftNames.canonical(wanted) == statedName, kind == 0 || kind >= 0x800 {
                    selfIsObject = true
                    selfInContext = true
                } else if statedName == _SwiftNames.canonical("Swift.UnsafeMutablePointer<\(wanted)>") {
                    byAddress = true   // a mutating method's (or a struct setter's) self
                    selfInContext = true
                } else if _SwiftNames.canonical(wanted) != statedName {
                    throw HookError(.typeMismatch, point: written, "self of '\(function.demangled)' is \(wanted) (a mutating member's: UnsafeMutablePointer<\(wanted)>); stated \(_typeName(type, qualified: true))")
                } else if function.kind == .setter {
                    throw HookError(.typeMismatch, point: written, "a struct's setter is mutating: state its self as UnsafeMutablePointer<\(wanted)>")
                }
            } else if _SwiftNames.canonical(wanted) != statedName {
                throw HookError(.typeMismatch, point: written, "argument \(i) of '\(function.demangled)' is \(text); stated \(_typeName(type, qualified: true))")
            }
            _ = byAddress
            owned.append(!isSelf && (isOwned || function.kind == .setter || function.kind == .initializer))
        }
        let resultName = _SwiftNames.canonical(_typeName(result, qualified: true))
        guard _SwiftNames.canonical(function.result) == resultName else {
            throw HookError(.typeMismatch, point: written, "'\(function.demangled)' returns \(function.result); stated \(_typeName(result, qualified: true))")
        }
        // A closure argument or result: its registers hold it as the
        // function's own convention passes it (its code returning an `Int` in
        // rax), while a value of its type read or written through a type
        // parameter (`argument(0, as:)`) is one returning its result
        // indirectly: called, it read garbage. A non-escaping one (mangled
        // `XE`; its demangled name does not say) has a context on the
        // caller's stack with no object header besides: copying it retained
        // that header (a crash, half the time). Refused.
        let isClosure = { (type: Any.Type) in unsafeBitCast(type, to: UnsafeRawPointer.self).load(as: UInt.self) == 0x302 }
        if let closure = arguments.firstIndex(where: isClosure) {
            throw HookError(.unsupportedType, point: written, """
                argument \(closure) of '\(function.demangled)' is a \(function.mangled.contains("XE") ? "non-escaping " : "")closure, \
                which typed access does not support (SwiftTrace traces its calls, without their values)
                """)
        }
        if isClosure(result) {
            throw HookError(.unsupportedType, point: written, """
                '\(function.demangled)' returns a closure, which typed access does not support (SwiftTrace traces its calls, without their values)
                """)
        }
        func isPOD(_ type: Any.Type) -> Bool {
            func open<T>(_: T.Type) -> Bool { _isPOD(T.self) }
            return _openExistential(type, do: open)
        }
        selfMayBeConsumed = function.hasSelf && !selfInContext && !isPOD(arguments[0])
        // Registers: the explicit arguments in order, then a self passed by value.
        var order = Array(arguments.indices)
        if function.hasSelf, !selfInContext { order.append(order.removeFirst()) }
        var places = [[_SwiftCopy]?](repeating: nil, count: arguments.count)
        var general = 0, vector = 0
        for i in order {
            let lowering = try _SwiftLowering(arguments[i], point: written, parameter: !(i == 0 && selfInContext))
            if i == 0, selfInContext {
                places[i] = _SwiftFrameLayout.copies(lowering, [(false, _SwiftFrameLayout.selfIndex)], result: false)
                continue
            }
            var registers: [(isFloat: Bool, index: Int)] = []
            for register in lowering.registers {
                if register.isFloat {
                    guard vector < 8 else { throw Self.stackError(function, written) }
                    registers.append((true, vector)); vector += 1
                } else {
                    guard general < 6 else { throw Self.stackError(function, written) }
                    registers.append((false, general)); general += 1
                }
            }
            places[i] = _SwiftFrameLayout.copies(lowering, registers, result: false)
        }
        var resultPlace: [_SwiftCopy] = []
        if resultName != "()" {
            let lowering = try _SwiftLowering(result, point: written)
            var general = 0, vector = 0
            var registers: [(isFloat: Bool, index: Int)] = []
            for register in lowering.registers {
                if register.isFloat { registers.append((true, vector)); vector += 1 } else { registers.append((false, general)); general += 1 }
            }
            resultPlace = _SwiftFrameLayout.copies(lowering, registers, result: true)
        }
        layout = _SwiftFrameLayout(arguments: places.map { $0! }, result: resultPlace)
        self.owned = owned
        self.selfIsObject = selfIsObject
    }

    private static func stackError(_ function: _SwiftFunction, _ written: String) -> HookError {
        HookError(.unsupportedType, point: written, "'\(function.demangled)' takes arguments on the stack (more than 6 general or 8 floating-point registers): typed access does not support it")
    }
}

extension _SwiftNames {
    /// A type as text with the sugar spelled out and no spaces, so that a
    /// demangled type and `_typeName` compare: `[Swift.Int]` and
    /// `Swift.Array<Swift.Int>` both read `Swift.Array<Swift.Int>`.
    static func canonical(_ text: String) -> String {
        // A variadic parameter (`Swift.Int...`) is an array to the function,
        // and stated as one (it was a type mismatch).
        if text.hasSuffix("...") { return canonical("[" + text.dropLast(3) + "]") }
        var parser = TypeParser(characters: Array(text))
        return parser.type().filter { !$0.isWhitespace }
    }

    private struct TypeParser {
        let characters: [Character]
        var i = 0

        init(characters: [Character]) { self.characters = characters }

        mutating func skipSpaces() { while i < characters.count, characters[i] == " " { i += 1 } }

        mutating func eat(_ text: String) -> Bool {
            skipSpaces()
            let wanted = Array(text)
            guard i + wanted.count <= characters.count, Array(characters[i..<(i + wanted.count)]) == wanted else { return false }
            i += wanted.count
            return true
        }

        mutating func type() -> String {
            for modifier in ["inout ", "__owned ", "__shared ", "consuming ", "borrowing ", "sending ", "@escaping ", "@Sendable ", "isolated "] where eat(modifier) {
                return type()
            }
            let base = postfix(primary())
            var effects = ""
            if eat("async") { effects += "async " }
            if eat("throws") { effects += "throws " }
            if eat("->") { return base + effects + "->" + type() }
            return base
        }

        mutating func primary() -> String {
            skipSpaces()
            if eat("(") { return "(" + list(until: ")").joined(separator: ",") + ")" }
            if eat("[") {
                let key = type()
                if eat(":") {
                    let value = type()
                    _ = eat("]")
                    return "Swift.Dictionary<\(key),\(value)>"
                }
                _ = eat("]")
                return "Swift.Array<\(key)>"
            }
            var name = ""
            while i < characters.count {
                let c = characters[i]
                if c.isLetter || c.isNumber || c == "_" || c == "." {
                    name.append(c)
                    i += 1
                } else if c == "<" {
                    i += 1
                    name += "<" + list(until: ">").joined(separator: ",") + ">"
                } else {
                    break
                }
            }
            return name
        }

        mutating func postfix(_ base: String) -> String {
            var result = base
            while i < characters.count, characters[i] == "?" || characters[i] == "!" {
                i += 1
                result = "Swift.Optional<\(result)>"
            }
            return result
        }

        mutating func list(until close: String) -> [String] {
            var elements: [String] = []
            while i < characters.count {
                if eat(close) { break }
                // A tuple element's label.
                let start = i
                var label = ""
                while i < characters.count, characters[i].isLetter || characters[i].isNumber || characters[i] == "_" { label.append(characters[i]); i += 1 }
                if !label.isEmpty, i < characters.count, characters[i] == ":", close == ")" {
                    i += 1
                    elements.append(label + ":" + type())
                } else {
                    i = start
                    let before = i
                    elements.append(type())
                    if i == before { i += 1 }   // a character no rule reads: skipped
                }
                _ = eat(",")
            }
            return elements
        }
    }
}
