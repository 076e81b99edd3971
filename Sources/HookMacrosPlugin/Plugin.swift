import SwiftCompilerPlugin
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
