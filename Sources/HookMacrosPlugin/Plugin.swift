import SwiftCompilerPlugin
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
}
