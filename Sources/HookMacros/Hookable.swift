@_exported import Hook

/// Makes every stored `var` and every method of a class or an actor a hook
/// point of each instance.
///
/// ```swift
/// @Hookable
/// final class Account {
///     var balance = 0
///     func deposit(_ amount: Int) -> Int { balance += amount; return balance }
/// }
/// let account = Account()
/// account.$deposit.before { call in                 // MethodHook<Int, Int>
///     if try call.argument(0, as: Int.self) < 0 { try call.setArgument(0, to: 0) }
/// }
/// account.$balance.after { call in print(call.args[0]) }   // PropertyHook<Int>
/// account.deposit(-5)                                // 0
/// ```
///
/// - A stored `var` of a class gets `@Hooked`'s storage: `object.$name` is
///   its `PropertyHook<Value>`, `PropertyHook.of(object, \.name)` finds it.
///   One of an actor gets the same storage in a private peer and accessors
///   spelt by the macro (`actor.$name`; its type must be written or told by
///   a literal initializer, and a synchronous `init` cannot assign it).
/// - A method keeps its body, which runs directly while the method has no
///   hook point (a load and a test more than the plain method); its hook point
///   is `object.$name`, a `MethodHook<Arguments..., Result>`
///   (`AsyncMethodHook` for an `async` method), made on first need. In its
///   CallBacks `target` is the instance and `selector` the method's name.
///   Overloads: `$name_label1_label2` (`_` for an unlabeled parameter) and the
///   selector `name(label1:label2:)`; overloads with the same labels
///   `$name_Type1_Type2`. `MethodHook.of(object, \.$name)` is `object.$name`.
///   A name in backticks (a keyword: `` func `default`() ``) gives `$default`
///   and the selector `default`.
/// - A class isolated to a global actor (`@MainActor`) works as any: its
///   methods' slots are `nonisolated(unsafe)` (the slot is an atomic word),
///   so a `nonisolated` method is hooked too.
/// - `@Unhooked` leaves a member alone.
/// - Overrides: a hook runs once per call, around the most derived
///   implementation, when the subclass is `@Hookable` too: its override uses
///   the inherited hook point (found through a `final` method of the base,
///   by labels and function type, so overloads are told apart), and its
///   `super.name(...)` call runs unhooked.
///
/// What it cannot hook is a compile-time error naming the member and why:
/// generic methods, `inout` / `borrowing` / `consuming` / `sending` (any
/// specifier) or closure-typed parameters (a type attribute such as
/// `@escaping` counts), opaque `some` types, typed throws, `rethrows`,
/// `Self`, raw identifiers in a method's name or labels, `lazy`, `weak`,
/// `unowned`, `nonisolated(unsafe)` and observed (`willSet`/`didSet`)
/// properties, and properties that already have a wrapper (a global actor's
/// attribute is not one). It applies to classes and actors
/// only; members in extensions cannot be hooked (an extension has no stored
/// properties to keep a hook point in).
@attached(memberAttribute)
@attached(member)
public macro Hookable() = #externalMacro(module: "HookMacrosPlugin", type: "HookableMacro")

/// Leaves a member of a `@Hookable` type a plain member: no hook point, no cost.
@attached(peer)
public macro Unhooked() = #externalMacro(module: "HookMacrosPlugin", type: "UnhookedMacro")

/// Put on each method by `@Hookable`; not for direct use.
@attached(body)
@attached(peer, names: arbitrary)
public macro _HookableMethod(_ peer: String, selector: String, override: Bool, actor: Bool, final: Bool, type: String) =
    #externalMacro(module: "HookMacrosPlugin", type: "HookableMethodMacro")

/// Put on each stored `var` of a `@Hookable` actor by `@Hookable`; not for direct use.
@attached(accessor, names: named(init), named(get), named(set))
@attached(peer, names: prefixed(_), prefixed(`$`))
public macro _HookableProperty() = #externalMacro(module: "HookMacrosPlugin", type: "HookablePropertyMacro")
