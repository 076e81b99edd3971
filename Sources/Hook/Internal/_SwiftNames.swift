import CEntryHooks
import Glibc
import Synchronization

/// The runtime's demangler (libswiftCore exports it with the C convention;
/// pointer and integer arguments are passed alike by both conventions).
@_silgen_name("swift_demangle")
private func _swiftDemangle(_ mangled: UnsafePointer<CChar>?, _ length: Int, _ output: UnsafeMutablePointer<CChar>?,
                            _ outputSize: UnsafeMutablePointer<Int>?, _ flags: UInt32) -> UnsafeMutablePointer<CChar>?

/// A Swift function of a loaded object, named as its symbol demangles.
struct _SwiftFunction: @unchecked Sendable {
    enum Kind: String, Sendable {
        case function, initializer, getter, setter, modify
    }

    let mangled: String
    let demangled: String
    let object: String
    let address: UnsafeRawPointer
    let size: UInt64
    let kind: Kind
    let isStatic: Bool
    /// The type the function is a member of (`Model.Person`), nil for a free function.
    let context: String?
    /// The base name (`greet`, `init`, the property's name for an accessor).
    let baseName: String
    /// The argument labels (`_` for none); nil for an accessor.
    let labels: [String]?
    /// The parameters' types as demangled (`Swift.String`, `inout Swift.Int`); an accessor's value for a setter.
    let parameters: [String]
    /// The result type as demangled (`()` for none).
    let result: String
    /// An accessor's value type (`Swift.Int` for `age.modify : Swift.Int`); nil for a function.
    let valueType: String?
    /// Whether it throws. (A getter's demangled name does not say: `get
    /// throws` reads as a getter; `SwiftEntryHook.named` takes it from the
    /// stated type.)
    var canThrow: Bool
    /// The error type of typed throws (`throws(E)`), which the function
    /// returns in the result registers with 1 in r12, unlike `throws`.
    let thrownType: String?
    /// Whether it is async. A function's demangled name says it; an
    /// accessor's does not (`get async` reads as a getter): `_SwiftNames.find`
    /// sets it from the async function pointer beside it (its symbol + `Tu`)
    /// or from its method descriptor's flags.
    var isAsync: Bool
    /// Generic (the function or its type has generic parameters).
    let isGeneric: Bool

    /// As people write it: `Model.Person.greet(_:)`, `Model.Person.name.setter`, `Model.Person.init(name:)`.
    var written: String {
        let path = context.map { $0 + "." } ?? ""
        switch kind {
        case .getter, .setter, .modify: return path + baseName + "." + kind.rawValue
        case .function, .initializer: return path + baseName + "(" + (labels ?? []).map { $0 + ":" }.joined() + ")"
        }
    }

    /// As written, with `init` for a class's allocating entry: `Model.Person.init(name:)`.
    var name: String { baseName == "__allocating_init" ? _SwiftNames.allocatingAsInit(written) : written }

    /// What a call of it passes and gets back, as far as its name says: the
    /// type (or module) it is in, what its `self` is (an instance; the type,
    /// for a static member or an initializer; none), its parameters' and
    /// result's types, how it throws. A function whose code is a jump to
    /// another of the same call shape hands that one a call it can read
    /// (see `_SwiftNames.merged(into:)`).
    var callShape: String {
        let own = type == nil ? "none" : isStatic || kind == .initializer ? "type" : "instance"
        return [context ?? "", own, parameters.joined(separator: ", "), result, canThrow ? "throws" : "", thrownType ?? ""].joined(separator: "|")
    }

    /// Whether the function has a `self` that is an argument (not static, not an initializer, in a type).
    var hasSelf: Bool { type != nil && !isStatic && kind != .initializer }

    /// The type it is a member of: the context when that is more than a module.
    var type: String? { context.flatMap { $0.contains(".") ? $0 : nil } }

    /// The Swift function whose symbol is `mangled`, demangled as
    /// `demangled`, or nil for anything else (thunks, specializations,
    /// closures, metadata).
    init?(mangled: String, demangled: String, object: String, address: UnsafeRawPointer, size: UInt64) {
        var text = Substring(demangled)
        var isStatic = false
        if text.hasPrefix("static ") {
            isStatic = true
            text = text.dropFirst(7)
        }
        // A member of an extension of another module's type
        // (`(extension in Model):Swift.String.shouted() -> Swift.String`):
        // named by its type, `Swift.String.shouted()`, found in the
        // extension's module (whose symbols begin with the type's mangling).
        if text.hasPrefix("(extension in "), let close = text.firstIndex(of: ")"), text[close...].hasPrefix("):") {
            text = text[text.index(close, offsetBy: 2)...]
            if text.hasPrefix("static ") {
                isStatic = true
                text = text.dropFirst(7)
            }
        }
        // Only plain names: thunks, specializations, closures and the like begin otherwise or say " in ".
        guard let first = text.first, first.isLetter || first == "_", !text.contains(" in "),
              !text.contains(" of "), !text.contains("{"), !text.contains(" with unmangled suffix ") else { return nil }
        guard let path = _SwiftNames.pathEnd(text) else { return nil }
        let name = text[..<path]
        var rest = text[path...]
        self.mangled = mangled
        self.demangled = demangled
        self.object = object
        self.address = address
        self.size = size
        self.isStatic = isStatic
        if rest.hasPrefix(" : ") {
            // An accessor: Model.Person.name.getter : Swift.String
            let parts = name.split(separator: ".", omittingEmptySubsequences: false)
            guard parts.count >= 2, let kind = Kind(rawValue: String(parts[parts.count - 1])),
                  kind == .getter || kind == .setter || kind == .modify else { return nil }
            self.kind = kind
            baseName = String(parts[parts.count - 2])
            context = parts.count > 2 ? parts[..<(parts.count - 2)].joined(separator: ".") : nil
            labels = nil
            let type = String(rest.dropFirst(3))
            valueType = type
            parameters = kind == .setter ? [type] : []
            result = kind == .getter ? type : "()"
            canThrow = false
            thrownType = nil
            isAsync = false
            isGeneric = name.contains("<") || baseName == "subscript"
            return
        }
        // A function: Model.Person.greet(Swift.String) throws -> Swift.String
        guard rest.hasPrefix("(") || rest.hasPrefix("<") else { return nil }
        var generic = name.contains("<")
        if rest.hasPrefix("<") {
            generic = true
            guard let close = _SwiftNames.matching(rest, from: rest.startIndex) else { return nil }
            rest = rest[rest.index(after: close)...]
        }
        guard rest.hasPrefix("("), let close = _SwiftNames.matching(rest, from: rest.startIndex) else { return nil }
        let inner = rest[rest.index(after: rest.startIndex)..<close]
        var tail = rest[rest.index(after: close)...]
        var canThrow = false, isAsync = false
        var thrownType: String?
        if tail.hasPrefix(" async") { isAsync = true; tail = tail.dropFirst(6) }
        if tail.hasPrefix(" throws") {
            canThrow = true
            tail = tail.dropFirst(7)
            if tail.hasPrefix("("), let end = _SwiftNames.matching(tail, from: tail.startIndex) {
                let thrown = String(tail[tail.index(after: tail.startIndex)..<end])
                // `throws(any Error)` is `throws`.
                if thrown != "any Swift.Error", thrown != "Swift.Error" { thrownType = thrown }
                tail = tail[tail.index(after: end)...]
            }
        }
        if tail.hasPrefix(" where ") { return nil }
        guard tail.hasPrefix(" -> ") else { return nil }
        result = String(tail.dropFirst(4))
        valueType = nil
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        var base = String(parts[parts.count - 1])
        var kind = Kind.function
        if base == "__allocating_init" || base == "init" {
            kind = .initializer
            base = base == "init" ? "init" : "__allocating_init"
        }
        guard base != "deinit", base != "__deallocating_deinit", !base.hasPrefix("__derived") else { return nil }
        baseName = base
        self.kind = kind
        context = parts.count > 1 ? parts[..<(parts.count - 1)].joined(separator: ".") : nil
        var labels: [String] = []
        var parameters: [String] = []
        for parameter in _SwiftNames.splitTopLevel(inner) {
            let (label, type) = _SwiftNames.label(of: parameter)
            labels.append(label ?? "_")
            parameters.append(type)
        }
        self.labels = labels
        self.parameters = parameters
        self.canThrow = canThrow
        self.thrownType = thrownType
        self.isAsync = isAsync
        isGeneric = generic
    }
}

/// Finding Swift functions by the names people write.
enum _SwiftNames {
    /// Tests: find functions through method descriptors only, as in a
    /// stripped module built with library evolution.
    @TaskLocal static var descriptorsOnly = false

    /// `Model.Person.__allocating_init(name:)` as written: `Model.Person.init(name:)`.
    static func allocatingAsInit(_ written: String) -> String {
        let marker = "__allocating_init("
        guard let paren = written.firstIndex(of: "("), written[..<paren].hasSuffix("__allocating_init") else { return written }
        return written[..<written.index(paren, offsetBy: -(marker.count - 1))] + "init(" + written[written.index(after: paren)...]
    }

    /// The demangled form of the first `length` bytes of `mangled`, or nil
    /// if they are not a Swift symbol or, with `containing`, if it does not
    /// contain that text (looked for in the C string: a lookup demangles
    /// every symbol of a module, and most are not what it looks for).
    static func demangle(_ mangled: UnsafePointer<CChar>, length: Int, containing: String?) -> String? {
        guard let text = _swiftDemangle(mangled, length, nil, nil, 0) else { return nil }
        defer { free(text) }
        if let containing, strstr(text, containing) == nil { return nil }
        return String(cString: text)
    }

    /// Where the dotted name at the start of `text` ends (at `(`, `<` after the name, or ` : `).
    static func pathEnd(_ text: Substring) -> Substring.Index? {
        var i = text.startIndex
        while i < text.endIndex {
            let c = text[i]
            if c == "(" { return i }
            if c == " " { return text[i...].hasPrefix(" : ") ? i : nil }
            if c == "<" {
                // Generic arguments of a type in the path (`Model.Box<A>.get`), or the function's own generic parameters.
                guard let close = matching(text, from: i) else { return nil }
                let after = text.index(after: close)
                if after < text.endIndex, text[after] == "." { i = text.index(after: after); continue }
                return i
            }
            i = text.index(after: i)
        }
        return nil
    }

    /// The index of the bracket closing the one at `start` (`(`, `<`, `[`).
    static func matching(_ text: Substring, from start: Substring.Index) -> Substring.Index? {
        var depth = 0
        var i = start
        var previous: Character = " "
        while i < text.endIndex {
            let c = text[i]
            switch c {
            case "(", "<", "[": depth += 1
            case ")", "]": depth -= 1
            case ">" where previous != "-": depth -= 1
            default: break
            }
            if depth == 0 { return i }
            previous = c
            i = text.index(after: i)
        }
        return nil
    }

    /// `text` split at its top-level `, `.
    static func splitTopLevel(_ text: Substring) -> [Substring] {
        guard !text.isEmpty else { return [] }
        var parts: [Substring] = []
        var depth = 0
        var start = text.startIndex
        var i = text.startIndex
        var previous: Character = " "
        while i < text.endIndex {
            let c = text[i]
            switch c {
            case "(", "<", "[": depth += 1
            case ")", "]": depth -= 1
            case ">" where previous != "-": depth -= 1
            case "," where depth == 0:
                parts.append(text[start..<i])
                start = text.index(i, offsetBy: 2, limitedBy: text.endIndex) ?? text.endIndex
            default: break
            }
            previous = c
            i = text.index(after: i)
        }
        parts.append(text[start...])
        return parts
    }

    /// A parameter's label (nil if none) and type: `name: Swift.String`.
    static func label(of parameter: Substring) -> (String?, String) {
        var i = parameter.startIndex
        while i < parameter.endIndex, parameter[i].isLetter || parameter[i].isNumber || parameter[i] == "_" { i = parameter.index(after: i) }
        if i > parameter.startIndex, parameter[i...].hasPrefix(": ") {
            return (String(parameter[..<i]), String(parameter[parameter.index(i, offsetBy: 2)...]))
        }
        return (nil, String(parameter))
    }

    /// What a name the user wrote asks for.
    struct Query {
        /// Without spaces; `init` for `__allocating_init`.
        let text: String
        /// Whether it names the labels (`greet(_:)`) or an accessor.
        let isExact: Bool

        /// Whether it is a pattern (`Model.Person.*`): `*` and `?` as in a shell.
        let isPattern: Bool

        init(_ written: String, pattern: Bool = false) {
            let text = written.filter { !$0.isWhitespace }
            self.text = text
            isPattern = pattern
            isExact = text.hasSuffix(")") || text.hasSuffix(".getter") || text.hasSuffix(".setter") || text.hasSuffix(".modify")
            mustContain = pattern ? Self.literalName(ofPattern: text) : Self.lastName(of: text)
        }

        /// A pattern query whose names contain `name` (demangled only then).
        private init(pattern: String, containing name: String) {
            text = pattern
            isPattern = true
            isExact = false
            mustContain = name
        }

        /// Where to look for names like this one's when it names nothing:
        /// the same last name anywhere under its module (`Model.greet` for
        /// `Model.Person.greet(_:)`), then the other members of the type it
        /// writes (`Model.Person.wave()` lists `Model.Person`'s).
        var similar: [Query] {
            guard !isPattern, let last = Self.lastName(of: text) else { return [] }
            var queries: [Query] = []
            let path = Self.path(of: text)
            // (What was written, escaped: `[` of a generic argument, `*`
            // and `?` are fnmatch's.)
            func literal<S: StringProtocol>(_ text: S) -> String {
                text.reduce(into: "") { escaped, character in
                    if "*?[]\\".contains(character) { escaped.append("\\") }
                    escaped.append(character)
                }
            }
            let module = path.firstIndex(of: ".").map { String(path[..<$0]) }
            let under = module.map { literal($0) + ".*" } ?? "*"
            queries.append(Query(pattern: under + literal(last) + "*", containing: last))
            if let dot = path.lastIndex(of: "."), let type = Self.lastName(of: String(path[..<dot])), path[..<dot].contains(".") {
                queries.append(Query(pattern: literal(path[..<dot]) + ".*", containing: type))
            }
            return queries
        }

        /// The last name of the path, before the labels and an accessor
        /// (`init`, `name` of `Model.Person.name.setter`): what `matches`
        /// compares the query with ends with it, and that path is the
        /// demangled name's, but for `init` written for `__allocating_init`
        /// (which contains it).
        static func lastName(of text: String) -> String? {
            let path = path(of: text)
            let last = path.lastIndex(of: ".").map { path[path.index(after: $0)...] } ?? path
            return last.isEmpty ? nil : String(last)
        }

        /// The path written, without the labels and an accessor.
        private static func path(of text: String) -> Substring {
            var path = Substring(text)
            if let paren = path.firstIndex(of: "(") { path = path[..<paren] }
            for accessor in [".getter", ".setter", ".modify"] where path.hasSuffix(accessor) { path = path.dropLast(accessor.count) }
            return path
        }

        /// The longest name of a pattern's literal start after its module
        /// (`JSONEncoder` of `Foundation.JSONEncoder.*`): `fnmatch` matches
        /// from the start, so the path of every name it matches has it
        /// (the module is left out: `Foundation.` matches
        /// `FoundationEssentials.`). Nil when the start has no such name.
        static func literalName(ofPattern text: String) -> String? {
            let start = text.prefix { !"*?[\\(".contains($0) }
            guard let dot = start.firstIndex(of: ".") else { return nil }
            let names = start[start.index(after: dot)...].split(separator: ".")
            return names.max { $0.count < $1.count }.map(String.init)
        }

        /// What the demangled name of every function it matches contains
        /// (nil: no such text is known).
        let mustContain: String?

        /// The module prefixes to look under (Foundation's types live in FoundationEssentials).
        var symbolPrefixes: [String] {
            guard let dot = text.firstIndex(of: "."), !text.hasPrefix("Swift.") else { return [] }
            let module = String(text[..<dot])
            guard !module.isEmpty, module.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" }) else { return [] }
            let modules = module == "Foundation" ? ["Foundation", "FoundationEssentials", "FoundationInternationalization"] : [module]
            return modules.map { "$s\($0.utf8.count)\($0)" }
        }

        /// `name` with `Foundation.` read as any of Foundation's modules.
        private func aliases(of name: String) -> [String] {
            for module in ["FoundationEssentials.", "FoundationInternationalization."] where name.hasPrefix(module) {
                return [name, "Foundation." + name.dropFirst(module.count)]
            }
            return [name]
        }

        func matches(_ function: _SwiftFunction) -> Bool {
            var written = function.written
            if function.baseName == "__allocating_init" {
                written = _SwiftNames.allocatingAsInit(written)
            }
            if isPattern {
                return aliases(of: written).contains { fnmatch(text, $0, 0) == 0 }
            }
            var base = written
            if !isExact, function.kind == .function || function.kind == .initializer, let paren = written.lastIndex(of: "(") {
                base = String(written[..<paren])
            }
            if !isExact, function.kind != .function, function.kind != .initializer {
                // `Model.Person.name` names the property's accessors.
                base = String(written[..<written.lastIndex(of: ".")!])
            }
            for name in aliases(of: base) where name == text || name.hasSuffix("." + text) { return true }
            return false
        }
    }

    /// Every Swift function whose name matches `query`, in every loaded object
    /// (`object`: only those whose path ends with it). Looks under the query's
    /// module first, then everywhere.
    /// Up to `limit` names of loaded functions like `query`'s, which names
    /// none (see `Query.similar`), as they are written (a property's
    /// accessors as the property); empty if none.
    static func similarNames(to query: Query, object: String?, limit: Int = 8) -> [String] {
        for similar in query.similar {
            var names: [String] = []
            for function in find(similar, object: object) {
                var name = function.name
                if function.kind == .getter || function.kind == .setter || function.kind == .modify {
                    name = String(name[..<name.lastIndex(of: ".")!])
                }
                if !names.contains(name) { names.append(name) }
            }
            if !names.isEmpty { return Array(names.sorted().prefix(limit)) + (names.count > limit ? ["..."] : []) }
        }
        return []
    }

    static func find(_ query: Query, object: String?) -> [_SwiftFunction] {
        final class Found {
            var functions: [_SwiftFunction] = []
            let query: Query
            let object: String?
            init(_ query: Query, _ object: String?) { self.query = query; self.object = object }
        }
        /// The functions found under `prefixes`, and how many symbols had one of them.
        func scan(_ prefixes: [String]) -> ([_SwiftFunction], Int32) {
            let found = Found(query, object)
            let visited = withExtendedLifetime(found) {
                let list = prefixes.map { $0 + "\0" }.joined() + "\0"
                return hk_entry_each_object_function(list, { object, name, address, size, context in
                    let found = Unmanaged<Found>.fromOpaque(context!).takeUnretainedValue()
                    if let wanted = found.object {
                        let path = String(cString: object!)
                        if path != wanted, !path.hasSuffix("/" + wanted) { return 0 }
                    }
                    let name = name!
                    var length = strlen(name)
                    var address = address!, size = size
                    var describedAsync = false
                    if length > 2, name[length - 2] == UInt8(ascii: "T"), name[length - 1] == UInt8(ascii: "q") {
                        // A method descriptor (flags, then the implementation relative to the
                        // field): the way to a class's method of a module built with library
                        // evolution, whose implementation symbols are local (and may be stripped).
                        // Its flags say whether the method is async (0x40, the runtime's
                        // `MethodDescriptorFlags::IsAsync`), which an accessor's name does not.
                        describedAsync = address.load(as: UInt32.self) & 0x40 != 0
                        let offset = address.load(fromByteOffset: 4, as: Int32.self)
                        guard offset != 0 else { return 0 }
                        address = address + 4 + Int(offset)
                        if describedAsync {
                            // An async method's implementation is its async function pointer (the
                            // code relative to it, then its context's size), not code: followed, so
                            // that it is the same function as its symbol (not a second one of the name).
                            let code = address.load(as: Int32.self)
                            guard code != 0 else { return 0 }
                            address = address + Int(code)
                        }
                        size = 0
                        length -= 2
                    } else if _SwiftNames.descriptorsOnly {
                        return 0
                    }
                    // (Demangled, and parsed only if it can match: a lookup
                    // under Foundation's modules parsed 11,000 names, 0.3 s
                    // of the demo's debug build and most of its run under
                    // valgrind.)
                    guard let demangled = _SwiftNames.demangle(name, length: length, containing: found.query.mustContain) else { return 0 }
                    let mangled = String(decoding: UnsafeRawBufferPointer(start: name, count: length), as: UTF8.self)
                    if var function = _SwiftFunction(mangled: mangled, demangled: demangled, object: String(cString: object!), address: address, size: size),
                       found.query.matches(function) {
                        if describedAsync { function.isAsync = true }
                        found.functions.append(function)
                    }
                    return 0
                }, Unmanaged.passUnretained(found).toOpaque())
            }
            return (found.functions, visited)
        }
        var found: [_SwiftFunction] = []
        var moduleSeen = false
        if !query.symbolPrefixes.isEmpty {
            let (functions, visited) = scan(query.symbolPrefixes)
            found = functions
            moduleSeen = visited > 0
        }
        // Not under the module's prefix (no such module, or an extension of another module's type): everywhere.
        if found.isEmpty, !moduleSeen { found = scan(["$s"]).0 }
        // A class's initializer is called through its allocating entry: the other one runs inside it.
        let allocating = Set(found.filter { $0.baseName == "__allocating_init" }.map { allocatingAsInit($0.written) })
        found.removeAll { $0.kind == .initializer && $0.baseName == "init" && allocating.contains($0.written) }
        // The same function under two symbols (an alias, or its symbol and its
        // method descriptor) counts once: its symbol, which has its size.
        var seen = Set<UInt>()
        found.sort { $0.size > $1.size }
        // (Async if its descriptor says so, though the symbol kept does not.)
        let described = Set(found.filter(\.isAsync).map { UInt(bitPattern: $0.address) })
        found = found.filter { seen.insert(UInt(bitPattern: $0.address)).inserted }
        for i in found.indices where described.contains(UInt(bitPattern: found[i].address)) { found[i].isAsync = true }
        markAsyncGetters(&found)
        return found
    }

    /// Marks the getters of `functions` that are async. Their names do not
    /// say it (`get async` demangles as a plain getter), and a getter taken
    /// for a plain one was traced as one and hooked with its result read
    /// from registers it does not return in. Every async function has an
    /// async function pointer, a data symbol named as the function + `Tu`,
    /// which the walk of `find` does not see (it takes functions and method
    /// descriptors): one walk of each object that has getters among
    /// `functions` collects those names, not a lookup per getter. (Not with
    /// `descriptorsOnly`, as in a stripped module, where the descriptor's
    /// flags alone say it.)
    static func markAsyncGetters(_ functions: inout [_SwiftFunction]) {
        guard !descriptorsOnly else { return }
        var objects: [String: UnsafeRawPointer] = [:]
        for function in functions where function.kind == .getter && !function.isAsync { objects[function.object] = function.address }
        final class Names { var all = Set<String>() }
        for (object, inside) in objects {
            let names = Names()
            withExtendedLifetime(names) {
                _ = hk_swift_each_async_pointer(inside, { name, length, context in
                    let names = Unmanaged<Names>.fromOpaque(context!).takeUnretainedValue()
                    names.all.insert(String(decoding: UnsafeRawBufferPointer(start: name!, count: length), as: UTF8.self))
                    return 0
                }, Unmanaged.passUnretained(names).toOpaque())
            }
            for i in functions.indices where functions[i].object == object && functions[i].kind == .getter && names.all.contains(functions[i].mangled) {
                functions[i].isAsync = true
            }
        }
    }

    /// For each of `functions` (by address) that others share code with:
    /// those others, as written. An optimized build merges identical
    /// functions (LLVM's MergeFunctions): one keeps the body, and the others'
    /// code becomes a jump to it (`Cat.greet(_:)` a `jmp` to `Person.greet(_:)`,
    /// the trivial getters of two classes one body). A hook on the one kept
    /// would run for the others' calls too, handed their `self` and
    /// arguments as its own: a `Cat` read as a `Person`. Each object of
    /// `functions` is walked once for its Swift symbols whose code is only a
    /// jump (small ones), and the jumps that lead to a function, directly or
    /// through another such jump, are followed back.
    ///
    /// Only a jump from a function of another call shape counts (another
    /// type, another `self`, other parameters or result: `callShape`). One
    /// of the same shape hands the function a call it can read, and is
    /// mostly an accessor that forwards to the function (`var title { get {
    /// name } }`: after inlining, its body is the getter's and the two merge;
    /// a debug build calls the getter from it too); refusing those refused
    /// the setter of a stored property a computed one sets (the release
    /// build of SwiftEntrySample's `Person.name.setter`, which the reach
    /// probe hooks). A function that is itself such a jump is no obstacle:
    /// its patch relocates the jump.
    /// A jump a hook point has patched since (the function that jumps hooked
    /// by name first) is taken as it was (`patchedJumps`); one an `EntryHook`
    /// made from its symbol patched is not seen.
    static func merged(into functions: [_SwiftFunction]) -> [UInt: [String]] {
        final class Jumps { var all: [(name: String, from: UInt, to: UInt)] = [] }
        var objects: [String: UnsafeRawPointer] = [:]
        for function in functions { objects[function.object] = function.address }
        var merged: [UInt: [String]] = [:]
        for (object, inside) in objects {
            let jumps = Jumps()
            withExtendedLifetime(jumps) {
                _ = hk_swift_each_jump(inside, { name, address, target, context in
                    let jumps = Unmanaged<Jumps>.fromOpaque(context!).takeUnretainedValue()
                    jumps.all.append((String(cString: name!), UInt(bitPattern: address), UInt(bitPattern: target)))
                    return 0
                }, Unmanaged.passUnretained(jumps).toOpaque())
            }
            // A patched one jumps to its hook point's stub: where it jumped before.
            let patched = patchedJumps.withLock { $0 }
            var into: [UInt: [Int]] = [:]
            for (i, jump) in jumps.all.enumerated() { into[patched[jump.from] ?? jump.to, default: []].append(i) }
            for function in functions where function.object == object {
                let address = UInt(bitPattern: function.address)
                var reached: Set<UInt> = [address], pending = [address], others: [String] = []
                while let next = pending.popLast() {
                    for i in into[next] ?? [] {
                        let jump = jumps.all[i]
                        guard reached.insert(jump.from).inserted else { continue }
                        pending.append(jump.from)
                        // (What is not a function as written, a protocol witness, a thunk,
                        // a closure, jumps to it as its own caller: not counted, followed.)
                        guard let from = UnsafeRawPointer(bitPattern: jump.from),
                              let demangled = jump.name.withCString({ demangle($0, length: strlen($0), containing: nil) }),
                              let other = _SwiftFunction(mangled: jump.name, demangled: demangled, object: object, address: from, size: 0),
                              other.callShape != function.callShape, !others.contains(other.name) else { continue }
                        others.append(other.name)
                    }
                }
                if !others.isEmpty { merged[address] = others }
            }
        }
        return merged
    }

    /// Where the functions Swift entries were made for jumped before their
    /// patch, by address, for those whose code is only a jump (see
    /// `merged(into:)`): a patched one jumps to its hook point's stub.
    static let patchedJumps = Mutex<[UInt: UInt]>([:])

    /// Notes where `function` jumps, if its code is only a jump: its hook
    /// point is being made, and the patch is about to replace the jump.
    static func willPatch(_ function: _SwiftFunction) {
        guard let target = hk_swift_jump_target(function.address, function.size) else { return }
        patchedJumps.withLock { $0[UInt(bitPattern: function.address)] = UInt(bitPattern: target) }
    }
}
