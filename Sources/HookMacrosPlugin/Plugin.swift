import SwiftCompilerPlugin
import SwiftParser
import SwiftSyntax
import SwiftSyntaxMacros

@main
struct HookMacrosPlugin: CompilerPlugin {
    let providingMacros: [any Macro.Type] = [
        HookableMacro.self,
        HookableMethodMacro.self,
        HookablePropertyMacro.self,
        UnhookedMacro.self,
    ]
}

extension TokenSyntax {
    /// The identifier without the backticks that let a keyword be a name
    /// (`` `default` `` is `default`): what the names the macros make from
    /// it (`$default`, `_$default`) and the selectors spell.
    var bareText: String {
        let text = self.text
        guard text.count >= 2, text.hasPrefix("`"), text.hasSuffix("`") else { return text }
        return String(text.dropFirst().dropLast())
    }

    /// The name as generated code spells it where it declares or uses it
    /// (a parameter, an argument): bare where that is an identifier, else in
    /// backticks (`in` of `func draw(in: Rect)` is `` `in` ``, a raw
    /// identifier `` `do thing` `` keeps them).
    var escapedText: String {
        let bare = bareText
        if bare.isValidSwiftIdentifier(for: .variableName) && !Self.contextualKeywords.contains(bare) { return bare }
        return "`" + bare + "`"
    }

    /// Names that are identifiers in a declaration but may start an
    /// expression (`await x`, `consume x`): in backticks too, where they
    /// are harmless.
    static let contextualKeywords: Set<String> = [
        "any", "await", "borrow", "consume", "copy", "discard", "each", "some", "then", "unsafe", "yield",
    ]
}

extension String {
    /// Whether the text is one identifier in a declaration (`_$move_to` is,
    /// `_$do thing`, made of a raw identifier, is not).
    var isIdentifier: Bool { isValidSwiftIdentifier(for: .variableName) }
}
