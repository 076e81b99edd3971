import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxBuilder
import SwiftSyntaxMacros

/// `@_HookableMethod("$name", selector: "name", override: false, actor: false)`,
/// put on each method of a `@Hookable` type by `@Hookable`:
/// - peers (not for an override, which uses the inherited ones): `_$name`,
///   one word where the method's hook point is kept once made, and `$name`,
///   the typed hook point, made on first need;
/// - a new body: the original body becomes a nested function, called
///   directly while the word is 0 (no hook point yet: a load and a test) or
///   the point has no hook (a load and a test more), else through the hook
///   point (the nested function becomes a closure only there).
public struct HookableMethodMacro: BodyMacro, PeerMacro {
    struct Options {
        var peer = ""
        var selector = ""
        var isOverride = false
        var inActor = false
        /// A final class's overrides do not exist: no slot finder.
        var isFinal = false
        var type = "Self"
    }

    /// The expression of a slot's address: by key path in a class, by an
    /// access in an actor (an actor's key paths do not reach stored properties in place).
    static func address(_ options: Options, _ storage: String) -> String {
        options.inActor
            ? "Hook._hookableActorSlot(self, \(literalString(storage))) { Hook._hookableAddress(&self.\(storage)) }"
            : "Hook._hookableAddress(self, \\\(options.type).\(storage))"
    }

    /// The slot's address in `$name`: in an actor, by the field's offset
    /// (`$name` is nonisolated: an access of the slot there would race, for
    /// ThreadSanitizer and the language, with the methods' own on the actor).
    static func projectionAddress(_ options: Options, _ storage: String) -> String {
        options.inActor ? "Hook._hookableFieldAddress(self, \(literalString(storage)))" : address(options, storage)
    }

    /// `"text"` as a Swift string literal (the names are identifiers, `$` included).
    static func literalString(_ text: String) -> String { "\"" + text + "\"" }

    /// The name of the `final` method through which an override finds the
    /// slot it inherits: the method's name and labels (`f(_:by:)` is
    /// `_hookableSlot_f__by`); its parameter, the method's function type,
    /// tells overloads with the same labels apart. The override cannot
    /// spell the slot itself: the base class may name overloads it does not see.
    static func slotFinder(_ function: FunctionDeclSyntax) -> String {
        let labels = function.signature.parameterClause.parameters.map { $0.firstName.text == "_" ? "_" : "_" + $0.firstName.bareText }
        return "_hookableSlot_" + function.name.bareText + labels.joined()
    }

    /// The metatype of the method's function type, `((Int) throws -> Int).self`.
    static func functionType(_ signature: Signature) -> String {
        let effects = (signature.isAsync ? " async" : "") + (signature.canThrow ? " throws" : "")
        return "((" + signature.argumentTypes.joined(separator: ", ") + ")" + effects + " -> " + signature.resultType + ")"
    }

    /// The slot's address as the body reaches it: its own slot, or for an
    /// override the inherited one, through the base's finder.
    static func bodyAddress(_ options: Options, _ function: FunctionDeclSyntax, _ signature: Signature) -> String {
        guard options.isOverride else { return address(options, "_" + options.peer) }
        return "self.\(slotFinder(function))(\(functionType(signature)).self)"
    }

    static func options(_ node: AttributeSyntax) -> Options {
        var options = Options()
        guard let arguments = node.arguments?.as(LabeledExprListSyntax.self) else { return options }
        for argument in arguments {
            let text = argument.expression.as(StringLiteralExprSyntax.self)?.representedLiteralValue
            let flag = argument.expression.as(BooleanLiteralExprSyntax.self)?.literal.tokenKind == .keyword(.true)
            switch argument.label?.text {
            case nil: options.peer = text ?? ""
            case "selector": options.selector = text ?? ""
            case "override": options.isOverride = flag
            case "actor": options.inActor = flag
            case "final": options.isFinal = flag
            case "type": options.type = text ?? "Self"
            default: break
            }
        }
        return options
    }

    /// What the expansion needs to know of a method's signature.
    struct Signature {
        /// As the hook point spells them: an implicitly unwrapped optional
        /// as an optional (`T!` cannot be a generic argument: "using '!' is
        /// not allowed here").
        let argumentTypes: [String]
        let argumentNames: [String]
        let resultType: String
        /// As the method wrote them (`T!` kept: the body unwraps implicitly).
        let writtenArgumentTypes: [String]
        let writtenResultType: String
        let isAsync: Bool
        let canThrow: Bool

        init(_ function: FunctionDeclSyntax) {
            var types: [String] = []
            var written: [String] = []
            var names: [String] = []
            for parameter in function.signature.parameterClause.parameters {
                let type = Self.spelled(parameter.type), asWritten = parameter.type.trimmedDescription
                types.append(parameter.ellipsis != nil ? "[\(type)]" : type)
                written.append(parameter.ellipsis != nil ? "[\(asWritten)]" : asWritten)
                // In backticks where it is a keyword (`func draw(in: Rect)`): `_hookableOriginal(`in`)`.
                names.append((parameter.secondName ?? parameter.firstName).escapedText)
            }
            argumentTypes = types
            writtenArgumentTypes = written
            argumentNames = names
            resultType = function.signature.returnClause.map { Self.spelled($0.type) } ?? "Void"
            writtenResultType = function.signature.returnClause?.type.trimmedDescription ?? "Void"
            isAsync = function.signature.effectSpecifiers?.asyncSpecifier != nil
            canThrow = function.signature.effectSpecifiers?.throwsClause != nil
        }

        /// `type` as a generic argument spells it: `T!` as `T?`.
        static func spelled(_ type: TypeSyntax) -> String {
            if let unwrapped = type.as(ImplicitlyUnwrappedOptionalTypeSyntax.self) { return unwrapped.wrappedType.trimmedDescription + "?" }
            return type.trimmedDescription
        }

        /// `MethodHook<Int, String>` or `AsyncMethodHook<Int, String>`.
        var pointType: String {
            (isAsync ? "Hook.AsyncMethodHook" : "Hook.MethodHook") + "<" + (argumentTypes + [resultType]).joined(separator: ", ") + ">"
        }
    }

    static func accessModifier(_ function: FunctionDeclSyntax) -> String {
        for modifier in function.modifiers {
            switch modifier.name.text {
            case "public", "open": return "public "
            case "package": return "package "
            case "fileprivate": return "fileprivate "
            case "private": return "private "
            default: continue
            }
        }
        return ""
    }

    // MARK: Peers

    public static func expansion(
        of node: AttributeSyntax,
        providingPeersOf declaration: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        guard let function = declaration.as(FunctionDeclSyntax.self) else { return [] }
        let options = options(node)
        if options.isOverride { return [] }
        let signature = Signature(function)
        // An inlinable method that is not public refers, in its body, to
        // its slot (and an override's, to the slot finder): those must be
        // usable from inline code ("property '_$read' is internal and
        // cannot be referenced from an '@inlinable' function").
        let inlinable = HookableMacro.hasAttribute(function.attributes, ["inlinable", "_alwaysEmitIntoClient"])
            && ["", "package "].contains(accessModifier(function))
        let access = (inlinable ? "@usableFromInline " : "") + accessModifier(function)
        // (Nonisolated in a class too: a class isolated to a global actor
        // (`@MainActor`) isolates its stored properties, and a
        // `nonisolated` method could not reach its slot.)
        let storageModifier = options.inActor ? "nonisolated(unsafe)" : "nonisolated(unsafe) final"
        let projectionModifier = options.inActor ? "nonisolated" : "final"
        let point = signature.pointType
        let storage = "_" + options.peer
        return [
            """
            /// Where `\(raw: options.peer)` keeps its hook point, once made.
            \(raw: access)\(raw: storageModifier) var \(raw: storage) = Hook._HookableSlot<\(raw: point)>()
            """,
            """
            /// The hook point of `\(raw: options.selector)` of this instance (made on first need).
            \(raw: access)\(raw: projectionModifier) var \(raw: options.peer): \(raw: point) {
                \(raw: point)._hookablePoint(\(raw: projectionAddress(options, storage)), object: self, name: \(literal: options.selector), canThrow: \(literal: signature.canThrow))
            }
            """,
        ] + (options.inActor || options.isFinal ? [] : [
            """
            /// Where an override of `\(raw: options.selector)` finds `\(raw: storage)`.
            \(raw: access)nonisolated final func \(raw: slotFinder(function))(_: \(raw: functionType(signature)).Type) -> UnsafeMutableRawPointer {
                \(raw: address(options, storage))
            }
            """,
        ])
    }

    // MARK: The body

    public static func expansion(
        of node: AttributeSyntax,
        providingBodyFor declaration: some DeclSyntaxProtocol & WithOptionalCodeBlockSyntax,
        in context: some MacroExpansionContext
    ) throws -> [CodeBlockItemSyntax] {
        guard let function = declaration.as(FunctionDeclSyntax.self), let body = function.body else { return [] }
        let options = options(node)
        let signature = Signature(function)
        let point = signature.pointType
        let slot = bodyAddress(options, function, signature)

        // An override's call of the same method on super runs unhooked: the
        // hooks already run around the override.
        var statements = body.statements
        if options.isOverride {
            let rewriter = SuperCallRewriter(name: function.name.bareText, address: slot, point: point,
                                             isAsync: signature.isAsync, canThrow: signature.canThrow)
            statements = rewriter.rewrite(statements).cast(CodeBlockItemListSyntax.self)
        }

        let parameters = zip(signature.argumentNames, signature.writtenArgumentTypes).map { "_ \($0): \($1)" }.joined(separator: ", ")
        let effects = (signature.isAsync ? " async" : "") + (signature.canThrow ? " throws" : "")
        let arguments = signature.argumentNames.joined(separator: ", ")
        let prefix = (signature.canThrow ? "try " : "") + (signature.isAsync ? "await " : "")
        let call = signature.canThrow ? "_hookableThrowingCall" : "_hookableCall"
        let tail = arguments.isEmpty ? "" : ", " + arguments
        let original: DeclSyntax = """
            func _hookableOriginal(\(raw: parameters))\(raw: effects) -> \(raw: signature.writtenResultType) {\(statements)
            }
            """
        return [
            CodeBlockItemSyntax(item: .decl(original)),
            "let _hookableBits = Hook._hookableLoad(\(raw: slot))",
            "if _hookableBits == 0 || !\(raw: point)._hookableIsHooked(_hookableBits) { return \(raw: prefix)_hookableOriginal(\(raw: arguments)) }",
            "return \(raw: prefix)\(raw: point).\(raw: call)(_hookableBits, self, _hookableOriginal\(raw: tail))",
        ]
    }
}

/// Turns `super.name(...)` into a call that runs with the method's hook point's hooks suppressed.
final class SuperCallRewriter: SyntaxRewriter {
    let name: String
    let address: String
    let point: String
    let isAsync: Bool
    let canThrow: Bool

    init(name: String, address: String, point: String, isAsync: Bool, canThrow: Bool) {
        self.name = name
        self.address = address
        self.point = point
        self.isAsync = isAsync
        self.canThrow = canThrow
        super.init(viewMode: .sourceAccurate)
    }

    override func visit(_ node: FunctionCallExprSyntax) -> ExprSyntax {
        guard let member = node.calledExpression.as(MemberAccessExprSyntax.self),
              member.base?.is(SuperExprSyntax.self) == true,
              member.declName.baseName.bareText == name else {
            return super.visit(node)
        }
        let inner = (canThrow ? "try " : "") + (isAsync ? "await " : "")
        let helper = isAsync ? "_hookableUnhookedAsync" : "_hookableUnhooked"
        let replaced: ExprSyntax = """
            (\(raw: point).\(raw: helper)(\(raw: address)) { \(raw: inner)\(node.trimmed) })
            """
        return replaced.with(\.leadingTrivia, node.leadingTrivia).with(\.trailingTrivia, node.trailingTrivia)
    }

    // Closures and nested functions inside the override are left as written.
}
