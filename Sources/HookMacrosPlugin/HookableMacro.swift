import SwiftDiagnostics
import SwiftSyntax
import SwiftSyntaxBuilder
import SwiftSyntaxMacros

/// `@Hookable` on a class or an actor: a member-attribute macro that gives
/// every stored `var` the `@Hooked` storage and every method
/// `@_HookableMethod` (a body macro and its `$name` peers), and a member
/// macro that only checks what it is attached to.
public struct HookableMacro: MemberAttributeMacro, MemberMacro {
    // MARK: The type

    public static func expansion(
        of node: AttributeSyntax,
        providingMembersOf declaration: some DeclGroupSyntax,
        conformingTo protocols: [TypeSyntax],
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] {
        if let refusal = refusal(of: declaration) {
            context.diagnose(Diagnostic(node: node, message: HookableMessage.error(refusal)))
        }
        return []
    }

    /// Why `@Hookable` cannot apply to `declaration`, or nil.
    static func refusal(of declaration: some DeclGroupSyntax) -> String? {
        if declaration.is(ClassDeclSyntax.self) || declaration.is(ActorDeclSyntax.self) { return nil }
        if let s = declaration.as(StructDeclSyntax.self) {
            return "@Hookable applies to classes and actors; '\(s.name.text)' is a struct (a hook point belongs to one instance, and a struct has no identity)"
        }
        if let e = declaration.as(EnumDeclSyntax.self) {
            return "@Hookable applies to classes and actors; '\(e.name.text)' is an enum"
        }
        if let p = declaration.as(ProtocolDeclSyntax.self) {
            return "@Hookable applies to classes and actors; '\(p.name.text)' is a protocol"
        }
        if let x = declaration.as(ExtensionDeclSyntax.self) {
            return "@Hookable applies to classes and actors, not to extensions: members in an extension of '\(x.extendedType.trimmedDescription)' cannot be hooked (an extension cannot hold the per-instance storage of a hook point); declare them in the class, or hook them with a ClosureHook"
        }
        return "@Hookable applies to classes and actors"
    }

    // MARK: Each member

    public static func expansion(
        of node: AttributeSyntax,
        attachedTo declaration: some DeclGroupSyntax,
        providingAttributesFor member: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [AttributeSyntax] {
        guard refusal(of: declaration) == nil else { return [] }
        let inActor = declaration.is(ActorDeclSyntax.self)
        let typeName = declaration.as(ClassDeclSyntax.self)?.name.text ?? declaration.as(ActorDeclSyntax.self)?.name.text ?? "?"
        // The type as the methods' key paths spell it: `Box<Element>`.
        let generics = (declaration.as(ClassDeclSyntax.self)?.genericParameterClause ?? declaration.as(ActorDeclSyntax.self)?.genericParameterClause)?
            .parameters.map { $0.name.text }
        let fullType = generics.map { "\(typeName)<\($0.joined(separator: ", "))>" } ?? typeName
        if let variable = member.as(VariableDeclSyntax.self) {
            return property(variable, in: declaration, inActor: inActor, typeName: typeName, context: context)
        }
        if let function = member.as(FunctionDeclSyntax.self) {
            return method(function, in: declaration, inActor: inActor, typeName: typeName, fullType: fullType, context: context)
        }
        return []
    }

    static func hasAttribute(_ attributes: AttributeListSyntax, _ names: Set<String>) -> Bool {
        attributes.contains { element in
            guard let attribute = element.as(AttributeSyntax.self) else { return false }
            let name = attribute.attributeName.trimmedDescription
            return names.contains(name) || names.contains(name.split(separator: ".").last.map(String.init) ?? name)
        }
    }

    static func hasModifier(_ modifiers: DeclModifierListSyntax, _ names: Set<String>) -> Bool {
        modifiers.contains { names.contains($0.name.text) }
    }

    /// The global actor an attribute list names (`@MainActor`, or by the
    /// convention of their names any `@...Actor`), or nil.
    static func globalActor(of attributes: AttributeListSyntax) -> String? {
        for element in attributes {
            guard let attribute = element.as(AttributeSyntax.self) else { continue }
            let name = attribute.attributeName.trimmedDescription
            if isGlobalActor(name) { return name }
        }
        return nil
    }

    /// `MainActor`, `Swift.MainActor`, `DatabaseActor`: a global actor's
    /// attribute, which isolates a member and does not wrap it.
    static func isGlobalActor(_ attributeName: String) -> Bool {
        let last = attributeName.split(separator: ".").last.map(String.init) ?? attributeName
        return last.first?.isUppercase == true && last.hasSuffix("Actor")
    }

    /// The attribute of a property taken for a property wrapper: a
    /// capitalized one other than a global actor, `@Hooked` and `@Unhooked`.
    static func wrapper(of variable: VariableDeclSyntax) -> AttributeSyntax? {
        variable.attributes.compactMap { $0.as(AttributeSyntax.self) }.first { attribute in
            let name = attribute.attributeName.trimmedDescription
            let last = name.split(separator: ".").last.map(String.init) ?? name
            // (`@ObservationIgnored` marks a property `@Observable` leaves
            // alone: no storage of its own.)
            return name.first?.isUppercase == true && !isGlobalActor(name) && last != "Hooked" && last != "Unhooked"
                && last != "ObservationIgnored"
        }
    }

    /// Whether the type's own inheritance clause names `Sendable` (checked,
    /// not `@unchecked Sendable`).
    static func isCheckedSendable(_ declaration: some DeclGroupSyntax) -> Bool {
        declaration.inheritanceClause?.inheritedTypes.contains {
            ["Sendable", "Swift.Sendable"].contains($0.type.trimmedDescription)
        } ?? false
    }

    // MARK: Properties

    static func property(_ variable: VariableDeclSyntax, in declaration: some DeclGroupSyntax, inActor: Bool, typeName: String,
                         context: some MacroExpansionContext) -> [AttributeSyntax] {
        // Only instance `var`s that store a value.
        guard variable.bindingSpecifier.tokenKind == .keyword(.var) else { return [] }
        if hasAttribute(variable.attributes, ["Unhooked", "Hooked"]) { return [] }
        if hasModifier(variable.modifiers, ["static", "class"]) { return [] }
        let names = variable.bindings.map { $0.pattern.trimmedDescription }.joined(separator: ", ")
        func refuse(_ reason: String) -> [AttributeSyntax] {
            context.diagnose(Diagnostic(node: variable, message: HookableMessage.error(
                "@Hookable cannot hook property '\(names)' of '\(typeName)': \(reason); mark it @Unhooked to leave it a plain property")))
            return []
        }
        // Computed properties are not stored: nothing to hook.
        var observed = false
        for binding in variable.bindings {
            guard let accessors = binding.accessorBlock?.accessors else { continue }
            switch accessors {
            case .getter: return []
            case .accessors(let list):
                let kinds = Set(list.map { $0.accessorSpecifier.text })
                if kinds.contains("willSet") || kinds.contains("didSet") { observed = true } else { return [] }
            }
        }
        if observed { return refuse("it is observed (willSet/didSet), and a set would run the observer inside the hook's storage; use an after hook instead") }
        if hasModifier(variable.modifiers, ["lazy"]) { return refuse("it is lazy, and its first read would store without a hook") }
        if hasModifier(variable.modifiers, ["weak", "unowned"]) {
            return refuse("it is a weak or unowned reference, which a hook point's storage cannot hold")
        }
        if variable.bindings.count > 1 { return refuse("several properties are declared together; declare one per line") }
        // (A tuple pattern, `var (x, y) = (0, 0)`: a property wrapper takes one name.)
        if variable.bindings.first?.pattern.is(IdentifierPatternSyntax.self) != true { return refuse("it is not a single name") }
        // `@Observable` makes each stored property computed, with storage of
        // its own: `@Hooked` cannot wrap that (the compiler said "property
        // wrapper cannot be applied to a computed property" and "invalid
        // redeclaration of synthesized property" inside the expansions).
        if hasAttribute(declaration.attributes, ["Observable"]), !hasAttribute(variable.attributes, ["ObservationIgnored"]) {
            return refuse("'\(typeName)' is @Observable, whose macro makes the property computed, with a storage of its own that @Hooked cannot wrap; mark it @ObservationIgnored to hook it instead of observing it")
        }
        // (A global actor's attribute, `@MainActor`, is not a wrapper: `@Hooked @MainActor var` is isolated storage.)
        if let other = wrapper(of: variable) {
            return refuse("it already has the attribute @\(other.attributeName.trimmedDescription), and two storages cannot wrap one property")
        }
        if inActor, hasModifier(variable.modifiers, ["nonisolated"]) {
            return refuse("it is nonisolated, so its sets do not run one at a time on the actor")
        }
        if inActor, let actor = globalActor(of: variable.attributes) {
            return refuse("it is isolated to @\(actor), not to the actor, whose accessors the macro spells")
        }
        if !inActor, variable.modifiers.contains(where: { $0.name.text == "nonisolated" && $0.detail?.detail.text == "unsafe" }) {
            return refuse("it is nonisolated(unsafe), which has no effect once @Hooked's storage makes it a computed property (and a Sendable class refuses that storage as mutable)")
        }
        if !inActor, let actor = globalActor(of: variable.attributes), globalActor(of: declaration.attributes) == nil,
           isCheckedSendable(declaration) {
            return refuse("it is isolated to @\(actor) while its Sendable class is not, and @Hooked's storage would be mutable state of a Sendable class; isolate the whole class to @\(actor) instead")
        }
        if let type = variable.bindings.first?.typeAnnotation?.type,
           let name = mentioned(noncopyableGenerics(of: declaration), in: type) {
            return refuse("its type uses '\(name)', which may be noncopyable (~Copyable), and a hook point's storage copies the value")
        }
        if inActor {
            // An actor's accessors are spelt by the expansion, which needs the value's type.
            guard let binding = variable.bindings.first, HookablePropertyMacro.valueType(of: binding) != nil else {
                let written = variable.bindings.first?.initializer.map { " `\($0.value.trimmedDescription)`" } ?? ""
                return refuse("its type cannot be told from its initializer\(written), and the hook point `$\(names)` of an actor's property is spelt with it; write the type (`var \(names): Type = ...`)")
            }
            guard binding.pattern.is(IdentifierPatternSyntax.self) else { return refuse("it is not a single name") }
            if let name = binding.pattern.as(IdentifierPatternSyntax.self)?.identifier.bareText, !("_" + name).isIdentifier {
                return refuse("its storage and hook point would be named `_\(name)` and `$\(name)`, which are not identifiers (a raw identifier)")
            }
            if let name = binding.pattern.as(IdentifierPatternSyntax.self)?.identifier.bareText,
               let initializer = synchronousInitAssigning(name, in: declaration) {
                return refuse("\(initializer) uses it, and Swift 6.3 treats that use (an assignment through the property's init accessor, a change, a read) as actor-isolated from a nonisolated context; give the property an initial value and leave it alone in that init, or make that init async")
            }
            return ["@_HookableProperty"]
        }
        return ["@Hook.Hooked"]
    }

    /// `init(label:)` if a synchronous initializer of `declaration` uses
    /// the property `name` (assigns, changes or reads it: see
    /// `AssignmentFinder`), else nil.
    static func synchronousInitAssigning(_ name: String, in declaration: some DeclGroupSyntax) -> String? {
        // (Inside `#if` too, in any clause: which one is compiled is not known here.)
        for member in members(of: declaration) {
            guard let initializer = member.decl.as(InitializerDeclSyntax.self), let body = initializer.body,
                  initializer.signature.effectSpecifiers?.asyncSpecifier == nil else { continue }
            // (A parameter or a local of the same name is what a bare
            // `name` means there.)
            let parameters = initializer.signature.parameterClause.parameters.map { ($0.secondName ?? $0.firstName).bareText }
            let locals = LocalNames(viewMode: .sourceAccurate)
            locals.walk(body)
            let finder = AssignmentFinder(name: name, bareIsProperty: !parameters.contains(name) && !locals.names.contains(name))
            finder.walk(body)
            if finder.found {
                let labels = initializer.signature.parameterClause.parameters.map { "\($0.firstName.text):" }.joined()
                return "the synchronous init(\(labels))"
            }
        }
        return nil
    }

    // MARK: Methods

    static func method(_ function: FunctionDeclSyntax, in declaration: some DeclGroupSyntax, inActor: Bool, typeName: String, fullType: String,
                       context: some MacroExpansionContext) -> [AttributeSyntax] {
        if hasAttribute(function.attributes, ["Unhooked", "_HookableMethod"]) { return [] }
        if hasModifier(function.modifiers, ["static", "class"]) { return [] }
        let display = fullName(function)
        if let reason = unsupported(function) ?? noncopyableUse(in: function, declaration) {
            context.diagnose(Diagnostic(node: function.name, message: HookableMessage.error(
                "@Hookable cannot hook method '\(display)' of '\(typeName)': \(reason); mark it @Unhooked to leave it a plain method")))
            return []
        }
        let naming = peerName(of: function, in: declaration)
        if let problem = naming.problem {
            context.diagnose(Diagnostic(node: function.name, message: HookableMessage.error(
                "@Hookable cannot name a hook point for method '\(display)' of '\(typeName)': \(problem); mark one of them @Unhooked")))
            return []
        }
        let isOverride = hasModifier(function.modifiers, ["override"])
        let isFinal = declaration.as(ClassDeclSyntax.self).map { hasModifier($0.modifiers, ["final"]) } ?? true
        // A raw identifier in the name or a label (`func `do thing`()`) makes no identifier of `$do thing`.
        var generated = [naming.name, "_" + naming.name]
        if isOverride || (!inActor && !isFinal) { generated.append(HookableMethodMacro.slotFinder(function)) }
        if let bad = generated.first(where: { !$0.isIdentifier }) {
            context.diagnose(Diagnostic(node: function.name, message: HookableMessage.error(
                "@Hookable cannot hook method '\(display)' of '\(typeName)': it would declare `\(bad)`, which is not an identifier (a raw identifier in its name or labels); mark it @Unhooked to leave it a plain method")))
            return []
        }
        return ["""
            @_HookableMethod(\(literal: naming.name), selector: \(literal: naming.selector), override: \(literal: isOverride), actor: \(literal: inActor), final: \(literal: isFinal), type: \(literal: fullType))
            """]
    }

    /// The generic parameters of `declaration` that may be noncopyable
    /// (`<T: ~Copyable>`, `where T: ~Copyable`).
    static func noncopyableGenerics(of declaration: some DeclGroupSyntax) -> Set<String> {
        let clause = declaration.as(ClassDeclSyntax.self)?.genericParameterClause ?? declaration.as(ActorDeclSyntax.self)?.genericParameterClause
        let whereClause = declaration.as(ClassDeclSyntax.self)?.genericWhereClause ?? declaration.as(ActorDeclSyntax.self)?.genericWhereClause
        var names = Set<String>()
        for parameter in clause?.parameters ?? [] where parameter.inheritedType?.trimmedDescription.contains("~Copyable") == true {
            names.insert(parameter.name.text)
        }
        for requirement in whereClause?.requirements ?? [] {
            if case .conformanceRequirement(let conformance) = requirement.requirement,
               conformance.rightType.trimmedDescription.contains("~Copyable") {
                names.insert(conformance.leftType.trimmedDescription)
            }
        }
        return names
    }

    /// The first of `names` that `type` names (a generic parameter), or nil.
    static func mentioned(_ names: Set<String>, in type: TypeSyntax) -> String? {
        guard !names.isEmpty else { return nil }
        final class Finder: SyntaxVisitor {
            let names: Set<String>
            var found: String?
            init(_ names: Set<String>) {
                self.names = names
                super.init(viewMode: .sourceAccurate)
            }
            override func visit(_ node: IdentifierTypeSyntax) -> SyntaxVisitorContinueKind {
                if found == nil, names.contains(node.name.text) { found = node.name.text }
                return .visitChildren
            }
        }
        let finder = Finder(names)
        finder.walk(type)
        return finder.found
    }

    /// Why a method of `declaration` cannot be hooked for a generic
    /// parameter of its type that may be noncopyable, or nil. (The
    /// expansion's hook point type then failed: "'T' does not conform to
    /// 'Copyable'".)
    static func noncopyableUse(in function: FunctionDeclSyntax, _ declaration: some DeclGroupSyntax) -> String? {
        let names = noncopyableGenerics(of: declaration)
        guard !names.isEmpty else { return nil }
        for (i, parameter) in function.signature.parameterClause.parameters.enumerated() {
            if let name = mentioned(names, in: parameter.type) {
                let what = parameter.secondName?.text ?? (parameter.firstName.text == "_" ? "#\(i + 1)" : parameter.firstName.text)
                return "parameter '\(what)' uses '\(name)', which may be noncopyable (~Copyable), and the hooks see a copy of the arguments"
            }
        }
        if let result = function.signature.returnClause?.type, let name = mentioned(names, in: result) {
            return "its result uses '\(name)', which may be noncopyable (~Copyable), and the hooks see a copy of it"
        }
        return nil
    }

    /// Why a method cannot be hooked, or nil.
    static func unsupported(_ function: FunctionDeclSyntax) -> String? {
        if function.genericParameterClause != nil || function.genericWhereClause != nil {
            return "it is generic, and a hook point has one type of arguments and result"
        }
        let effects = function.signature.effectSpecifiers
        if let clause = effects?.throwsClause {
            if clause.type != nil { return "it uses typed throws, and hooks may throw any error (declare it 'throws')" }
            if clause.throwsSpecifier.tokenKind == .keyword(.rethrows) { return "it rethrows" }
        }
        for (i, parameter) in function.signature.parameterClause.parameters.enumerated() {
            let what = parameter.secondName?.text ?? (parameter.firstName.text == "_" ? "#\(i + 1)" : parameter.firstName.text)
            if let reason = unsupportedType(parameter.type, parameter: true) {
                return "parameter '\(what)' \(reason)"
            }
            if (parameter.secondName ?? parameter.firstName).text == "_" {
                return "parameter \(what) has no name inside the method ('_'), so the method cannot hand its value to the hooks; give it one"
            }
        }
        if let result = function.signature.returnClause?.type, let reason = unsupportedType(result, parameter: false) {
            return "its result \(reason)"
        }
        return nil
    }

    static func unsupportedType(_ type: TypeSyntax, parameter: Bool) -> String? {
        // No specifier can be spelt in the hook point's type (`MethodHook<sending T>`).
        let attributed = type.as(AttributedTypeSyntax.self)
        if let attributed {
            for specifier in Array(attributed.specifiers) + Array(attributed.lateSpecifiers) {
                let text = specifier.as(SimpleTypeSpecifierSyntax.self)?.specifier.text ?? specifier.trimmedDescription
                switch text {
                case "inout": return "is inout, and the hooks see a copy of the arguments"
                case "borrowing", "consuming", "__shared", "__owned": return "is \(text), and the hooks see a copy of the arguments"
                default: return "is marked '\(text)', which the hook point's type cannot carry"
                }
            }
        }
        final class Finder: SyntaxVisitor {
            var reason: String?
            let parameter: Bool
            init(parameter: Bool) {
                self.parameter = parameter
                super.init(viewMode: .sourceAccurate)
            }
            override func visit(_ node: SomeOrAnyTypeSyntax) -> SyntaxVisitorContinueKind {
                if node.someOrAnySpecifier.tokenKind == .keyword(.some) { reason = reason ?? "has an opaque 'some' type, which a hook point cannot name" }
                return .visitChildren
            }
            override func visit(_ node: FunctionTypeSyntax) -> SyntaxVisitorContinueKind {
                if parameter {
                    reason = reason ?? "has a closure type (Swift 6.3.1 crashes emitting a reabstraction thunk for closure-typed values in a parameter pack)"
                }
                return .visitChildren
            }
            override func visit(_ node: IdentifierTypeSyntax) -> SyntaxVisitorContinueKind {
                if node.name.text == "Self" { reason = reason ?? "names 'Self', which differs in each subclass while the hook point's type is fixed" }
                return .visitChildren
            }
        }
        let finder = Finder(parameter: parameter)
        finder.walk(type)
        if let reason = finder.reason { return reason }
        // An attribute on a parameter's type (`@escaping`, `@autoclosure`,
        // `@Sendable`) where no function type is written: a closure type
        // behind a type alias (`@escaping Completion`).
        if parameter, let attribute = attributed?.attributes.compactMap({ $0.as(AttributeSyntax.self) }).first {
            return "is marked @\(attribute.attributeName.trimmedDescription), so its type is a closure type (here behind a type alias), and Swift 6.3.1 crashes emitting a reabstraction thunk for closure-typed values in a parameter pack"
        }
        return nil
    }

    /// `name(label:_:)`.
    static func fullName(_ function: FunctionDeclSyntax) -> String {
        let labels = function.signature.parameterClause.parameters.map { "\($0.firstName.bareText):" }.joined()
        return "\(function.name.bareText)(\(labels))"
    }

    /// The name of a method's `$name` peer and its selector. A method whose
    /// name is unique among the hooked methods of its class gets `$name`
    /// and the selector `name`; overloads get `$name_label1_label2` (`_`
    /// for an unlabeled parameter) and the selector `name(label1:label2:)`;
    /// overloads with the same labels add their parameter types instead:
    /// `$name_Int`, `$name_String_Int`. A method named as a property whose
    /// projection is `$name` (`var count` and `func count(of:)`) is named
    /// as an overload is: `$count_of`, selector `count(of:)`.
    static func peerName(of function: FunctionDeclSyntax, in declaration: some DeclGroupSyntax) -> (name: String, selector: String, problem: String?) {
        let base = function.name.bareText
        // The members beside it, `#if` clauses included, but for those of
        // another clause of an `#if` it is in (never compiled together).
        // (Only the members outside `#if` were looked at: a method in an
        // `#if` and an overload outside both got `$name`, an "invalid
        // redeclaration" in the expansions.)
        let all = members(of: declaration)
        // (Found by its text: the compiler hands a member of an `#if`
        // clause over as a node of its own. Two of the same text are in
        // different clauses, or the compiler refuses them anyway.)
        let text = function.trimmedDescription
        let mine = all.first { $0.decl.id == function.id }?.clauses
            ?? all.first { $0.decl.as(FunctionDeclSyntax.self)?.trimmedDescription == text }?.clauses ?? []
        let beside = all.filter { !Self.exclusive($0.clauses, mine) }.map(\.decl)
        let siblings = beside.compactMap { $0.as(FunctionDeclSyntax.self) }.filter {
            $0.name.bareText == base && !hasAttribute($0.attributes, ["Unhooked"]) && !hasModifier($0.modifiers, ["static", "class"])
        }
        guard siblings.count > 1 || hasProjectedProperty(named: base, among: beside) else { return ("$" + base, base, nil) }
        func labels(_ f: FunctionDeclSyntax) -> String {
            f.signature.parameterClause.parameters.map { $0.firstName.text == "_" ? "_" : $0.firstName.bareText }.joined(separator: "_")
        }
        func types(_ f: FunctionDeclSyntax) -> String {
            let text = f.signature.parameterClause.parameters.map { p in
                p.type.trimmedDescription + (p.ellipsis != nil ? "s" : "")
            }.joined(separator: "_")
            return String(text.map { $0.isLetter || $0.isNumber || $0 == "_" ? $0 : "_" })
        }
        let selector = fullName(function)
        let myLabels = labels(function)
        let sameLabels = siblings.filter { labels($0) == myLabels }
        if sameLabels.count == 1 { return ("$\(base)_\(myLabels)", selector, nil) }
        let myTypes = types(function)
        if sameLabels.filter({ types($0) == myTypes }).count > 1 {
            return ("", selector, "another overload has the same labels and parameter types")
        }
        return ("$\(base)_\(myTypes)", selector, nil)
    }
}

extension HookableMacro {
    /// Where a member is: the `#if` declarations it is inside, each with
    /// the index of its clause.
    typealias Clauses = [(ifConfig: SyntaxIdentifier, clause: Int)]

    /// Every member of `declaration`, those inside `#if` clauses (any
    /// clause, nested too) included, each with where it is.
    static func members(of declaration: some DeclGroupSyntax) -> [(decl: DeclSyntax, clauses: Clauses)] {
        var found: [(decl: DeclSyntax, clauses: Clauses)] = []
        func visit(_ list: MemberBlockItemListSyntax, _ clauses: Clauses) {
            for member in list {
                if let ifConfig = member.decl.as(IfConfigDeclSyntax.self) {
                    for (index, clause) in ifConfig.clauses.enumerated() {
                        if case .decls(let inner)? = clause.elements { visit(inner, clauses + [(ifConfig.id, index)]) }
                    }
                } else {
                    found.append((member.decl, clauses))
                }
            }
        }
        visit(declaration.memberBlock.members, [])
        return found
    }

    /// Whether members at `a` and `b` are in different clauses of one
    /// `#if` (never compiled together).
    static func exclusive(_ a: Clauses, _ b: Clauses) -> Bool {
        a.contains { x in b.contains { y in x.ifConfig == y.ifConfig && x.clause != y.clause } }
    }

    /// Whether one of `members` has the projection `$name`: a
    /// stored instance `var` that `@Hookable` hooks (or refuses, until it is
    /// marked `@Unhooked`), or one with a wrapper, which may project one.
    static func hasProjectedProperty(named name: String, among members: [DeclSyntax]) -> Bool {
        members.contains { member in
            guard let variable = member.as(VariableDeclSyntax.self),
                  variable.bindingSpecifier.tokenKind == .keyword(.var),
                  !hasModifier(variable.modifiers, ["static", "class"]),
                  variable.bindings.contains(where: { $0.pattern.as(IdentifierPatternSyntax.self)?.identifier.bareText == name })
            else { return false }
            if wrapper(of: variable) != nil || hasAttribute(variable.attributes, ["Hooked"]) { return true }
            if hasAttribute(variable.attributes, ["Unhooked"]) { return false }
            // Stored: no accessors, or observers only.
            return variable.bindings.allSatisfy { binding in
                guard case .accessors(let list)? = binding.accessorBlock?.accessors else { return binding.accessorBlock == nil }
                return list.allSatisfy { ["willSet", "didSet"].contains($0.accessorSpecifier.text) }
            }
        }
    }
}

/// A diagnostic of the Hook macros.
struct HookableMessage: DiagnosticMessage {
    let message: String
    let diagnosticID: MessageID
    let severity: DiagnosticSeverity

    static func error(_ message: String) -> HookableMessage {
        HookableMessage(message: message, diagnosticID: MessageID(domain: "HookMacros", id: "hookable"), severity: .error)
    }
}

/// `@Unhooked`: leaves a member of a `@Hookable` type alone. It expands to nothing.
public struct UnhookedMacro: PeerMacro {
    public static func expansion(
        of node: AttributeSyntax,
        providingPeersOf declaration: some DeclSyntaxProtocol,
        in context: some MacroExpansionContext
    ) throws -> [DeclSyntax] { [] }
}

/// The names a body binds (`let`, `var`, `for`, `if let`, outside closures).
final class LocalNames: SyntaxVisitor {
    var names: Set<String> = []
    override func visit(_ node: IdentifierPatternSyntax) -> SyntaxVisitorContinueKind {
        names.insert(node.identifier.bareText)
        return .visitChildren
    }
    override func visit(_ node: OptionalBindingConditionSyntax) -> SyntaxVisitorContinueKind {
        // `if let name` (no `=`): the pattern is the name.
        if let pattern = node.pattern.as(IdentifierPatternSyntax.self) { names.insert(pattern.identifier.bareText) }
        return .visitChildren
    }
    override func visit(_ node: ClosureExprSyntax) -> SyntaxVisitorContinueKind { .skipChildren }
}

/// Whether a body uses the property `name`: assigns it (`name = ...` or
/// `self.name = ...`), or names it otherwise (`self.name`, a read, `+=`, a
/// mutating call; bare `name` too where no parameter has that name), all of
/// which the expansion makes actor-isolated accessors.
final class AssignmentFinder: SyntaxVisitor {
    let name: String
    let bareIsProperty: Bool
    var found = false
    init(name: String, bareIsProperty: Bool = true) {
        self.name = name
        self.bareIsProperty = bareIsProperty
        super.init(viewMode: .sourceAccurate)
    }
    override func visit(_ node: MemberAccessExprSyntax) -> SyntaxVisitorContinueKind {
        if node.base?.trimmedDescription == "self", node.declName.baseName.bareText == name { found = true }
        return .visitChildren
    }
    override func visit(_ node: DeclReferenceExprSyntax) -> SyntaxVisitorContinueKind {
        // (Not a member's name, `other.name`, nor a key path's, `\.name`.)
        if bareIsProperty, node.baseName.bareText == name, node.parent?.as(MemberAccessExprSyntax.self)?.declName != node,
           node.parent?.is(KeyPathPropertyComponentSyntax.self) != true {
            found = true
        }
        return .visitChildren
    }
    func assigns(_ target: ExprSyntax) -> Bool {
        if let reference = target.as(DeclReferenceExprSyntax.self) { return reference.baseName.bareText == name }
        if let member = target.as(MemberAccessExprSyntax.self), member.base?.is(DeclReferenceExprSyntax.self) == true,
           member.base?.trimmedDescription == "self" {
            return member.declName.baseName.bareText == name
        }
        return false
    }
    override func visit(_ node: SequenceExprSyntax) -> SyntaxVisitorContinueKind {
        let elements = Array(node.elements)
        for (i, element) in elements.enumerated().dropFirst() where element.is(AssignmentExprSyntax.self) {
            if assigns(elements[i - 1]) { found = true }
        }
        return .visitChildren
    }
    override func visit(_ node: InfixOperatorExprSyntax) -> SyntaxVisitorContinueKind {
        if node.operator.is(AssignmentExprSyntax.self), assigns(node.leftOperand) { found = true }
        return .visitChildren
    }
    // Closures in an init run later, isolated or not: not the init's own assignment.
    override func visit(_ node: ClosureExprSyntax) -> SyntaxVisitorContinueKind { .skipChildren }
}
