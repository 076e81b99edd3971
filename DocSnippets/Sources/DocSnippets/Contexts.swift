// The names that documentation blocks take as given, for blocks marked
// `<!-- snippet: NAME -->`: each block becomes a method of the struct NAME, so
// `hook`, `point`, `field` ... below are what it sees. Hand-written, not generated.
import CDocSnippets
import Foundation
import Hook
import HookBind
import HookMacros

typealias Add = @convention(c) (Int32, Int32) -> Int32

/// A hook point over C's `int32_t add(int32_t, int32_t)` and its entry.
struct AddContext {
    let hook: FunctionHook
    let hooked: Add
}

/// A `@Hooked` property's hook point, and an object to tie hooks to.
struct OwnerContext {
    final class View { func show(_ value: Any) {} }
    let point: PropertyHook<String>
    let view: View
}

/// A text field and a model with a price, both `@Hooked`.
struct BindingContext {
    final class TextField { @Hooked var text = "" }
    final class Model { @Hooked var price = 0.0 }
    let field: TextField
    let model: Model
}

/// An account of the `@Hookable` article (declared there at file scope), an
/// observable name and a signal, read as `AsyncSequence`s.
struct AsyncSequenceContext {
    let account: Account
    let name: Observable<String>
    let signal: Signal<Int>
}

/// Classes of a module that did not opt in (the article "Hooking Swift code
/// by name" names them `Model.Person`, ...), an object of each, a model.
struct SwiftByNameContext {
    class Person {
        var name = ""
        func greet(_ other: String) -> String { "Hello \(other)" }
    }
    class Label { var text = "" }
    final class TitleModel { @Hooked var title = "" }
    let ada: Person
    let label: Label
    let model: TitleModel
}
