import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxBuilder
import SwiftSyntaxMacros

/// `@_HookableProperty`, put on each stored `var` of a `@Hookable` actor by
/// `@Hookable` (a class's get `@Hooked`, whose accessors reach the storage by
/// key path, which an actor's isolated properties do not allow):
/// - peers: `_name`, the `Hooked<Value>` storage (`nonisolated(unsafe)`: the
///   actor's own accessors and the hook point reach it, nothing else), and
///   `$name`, the `PropertyHook<Value>`, `nonisolated`, made on first need
///   (it finds the storage by the field's offset, not by an access of it,
///   which would race with the actor's own accessors);
/// - accessors: an `init` accessor that initializes the storage, a get that
///   loads the value, a set that is a load, a test and the store until the
///   property has a hook point (then through it).
public struct HookablePropertyMacro: AccessorMacro, PeerMacro {
    /// The property's name, value type and access, or nil if it is not one
    /// `var name: Type` (or `var name = literal`) binding.
    static func parts(_ declaration: some DeclSyntaxProtocol) -> (name: String, type: String, access: String)? {
        guard let variable = declaration.as(VariableDeclSyntax.self), variable.bindings.count == 1,
              let binding = variable.bindings.first,
              let name = binding.pattern.as(IdentifierPatternSyntax.self)?.identifier.bareText,
              let type = valueType(of: binding) else { return nil }
        var access = ""
        for modifier in variable.modifiers where modifier.detail == nil {
            switch modifier.name.text {
            case "public", "open": access = "public "
            case "package": access = "package "
            case "fileprivate": access = "fileprivate "
            case "private": access = "private "
            default: continue
            }
        }
        return (name, type, access)
    }

    /// The type of a binding: written, or the default type of a literal
    /// initializer (`0`: Int, `0.5`: Double, `""`: String, `true`: Bool), or
    /// `T` of an initializer `T(...)`; nil if it cannot be told from the syntax.
    /// Standard generic types whose initializer call, unspecialized, does
    /// not spell the property's type.
    static let unspecializedGenerics: Set<String> = [
        "Array", "ContiguousArray", "ArraySlice", "Set", "Dictionary", "Optional", "Result",
        "Range", "ClosedRange", "KeyValuePairs", "Slice", "CollectionOfOne", "EmptyCollection",
        "Unmanaged", "UnsafePointer", "UnsafeMutablePointer", "UnsafeBufferPointer", "UnsafeMutableBufferPointer",
        "Atomic", "Mutex", "AsyncStream", "AsyncThrowingStream", "CheckedContinuation",
    ]
    /// Labels of a one-argument initializer that is failable in the
    /// standard library and Foundation (`init?(rawValue:)`, `Int(exactly:)`,
    /// `URL(string:)`, `UUID(uuidString:)`, `Data(base64Encoded:)`,
    /// `String(validatingUTF8:)`).
    static let failableLabels: Set<String> = [
        "rawValue", "exactly", "string", "uuidString", "base64Encoded", "validatingUTF8", "validating", "bitPattern",
    ]
    /// Types whose unlabeled one-argument initializer may be a failable
    /// conversion (`Int("8080")`, `Double("0.5")`, `Bool("true")`).
    static let conversionTargets: Set<String> = [
        "Int", "Int8", "Int16", "Int32", "Int64", "UInt", "UInt8", "UInt16", "UInt32", "UInt64",
        "Double", "Float", "Float16", "Float80", "Bool", "Character", "Decimal",
    ]

    static func valueType(of binding: PatternBindingSyntax) -> String? {
        // (`T!` as `T?`: `Hooked<T!>` is "using '!' is not allowed here".)
        if let annotation = binding.typeAnnotation { return HookableMethodMacro.Signature.spelled(annotation.type) }
        guard var value = binding.initializer?.value else { return nil }
        if let prefix = value.as(PrefixOperatorExprSyntax.self), prefix.operator.text == "-" { value = prefix.expression }
        if value.is(IntegerLiteralExprSyntax.self) { return "Int" }
        if value.is(FloatLiteralExprSyntax.self) { return "Double" }
        if value.is(StringLiteralExprSyntax.self) { return "String" }
        if value.is(BooleanLiteralExprSyntax.self) { return "Bool" }
        if let call = value.as(FunctionCallExprSyntax.self) {
            let callee = call.calledExpression
            if let reference = callee.as(DeclReferenceExprSyntax.self), reference.baseName.text.first?.isUppercase == true {
                let name = reference.baseName.text
                // Not the type where the syntax does not tell it: a generic
                // type named without its arguments (`Array(repeating: 0,
                // count: 3)` is an `Array<Int>`), or a conversion that may be
                // a failable initializer (`Int("8080")` is an `Int?`,
                // `Mode(rawValue: 1)` a `Mode?`): spelt as `name`, the
                // expansion did not compile.
                if unspecializedGenerics.contains(name) { return nil }
                let arguments = call.arguments
                if arguments.count == 1, let only = arguments.first {
                    if let label = only.label?.text, failableLabels.contains(label) { return nil }
                    if only.label == nil, call.trailingClosure == nil, conversionTargets.contains(name) { return nil }
                }
                return name
            }
            if let generic = callee.as(GenericSpecializationExprSyntax.self),
               let reference = generic.expression.as(DeclReferenceExprSyntax.self), reference.baseName.text.first?.isUppercase == true {
                return generic.trimmedDescription
            }
            if callee.is(ArrayExprSyntax.self) || callee.is(DictionaryExprSyntax.self) { return callee.trimmedDescription }
        }
        return nil
    }

    public static func expansion(
        of node: AttributeSyntax,
        providingAccessorsOf declaration: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [AccessorDeclSyntax] {
        guard let (name, type, _) = parts(declaration) else { return [] }
        let storage = "_" + name
        return [
            """
            @storageRestrictions(initializes: \(raw: storage))
            init(initialValue) {
                \(raw: storage) = Hook.Hooked<\(raw: type)>(wrappedValue: initialValue)
            }
            """,
            """
            get {
                \(raw: storage)._hookableValue
            }
            """,
            """
            set {
                Hook.Hooked<\(raw: type)>._hookableSet(Hook.Hooked<\(raw: type)>._hookableAddress(&\(raw: storage)), newValue)
            }
            """,
        ]
    }

    public static func expansion(
        of node: AttributeSyntax,
        providingPeersOf declaration: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        guard let (name, type, access) = parts(declaration) else { return [] }
        let storage = "_" + name
        return [
            """
            /// Where `\(raw: name)` keeps its value and, once made, its hook point.
            @exclusivity(unchecked) nonisolated(unsafe) private var \(raw: storage): Hook.Hooked<\(raw: type)>
            """,
            """
            /// The hook point of `\(raw: name)` of this instance (made on first need).
            \(raw: access)nonisolated var $\(raw: name): Hook.PropertyHook<\(raw: type)> {
                Hook.Hooked<\(raw: type)>._hookablePoint(Hook._hookableFieldAddress(self, \(literal: storage)), object: self, name: \(literal: name))
            }
            """,
        ]
    }
}
