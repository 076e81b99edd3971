// The Fisticuffs seed, example by example, in Swift: Observable, Computed,
// Event, the login screen (plain objects with @Hooked properties in place of
// UIKit controls), and the days-of-the-week table as change sets.
import Foundation
import Hook
import HookBind

/// A text field: its `text` is a hook point, as a control's would be.
final class DemoTextField {
    @Hooked var text = ""
}

final class DemoButton {
    var isEnabled = true
    let onTap = Event<Void>()
}

final class LoginViewController {
    let usernameField = DemoTextField(), passwordField = DemoTextField(), loginButton = DemoButton()
    let username = Observable("")
    let password = Observable("")
    lazy var inputIsValid: Computed<Bool> = Computed { [weak self] in
        let user = self?.username.value
        let pass = self?.password.value
        return user?.isEmpty == false && pass?.isEmpty == false
    }

    func viewDidLoad() throws {
        // bind the text in our username & password fields to their observables
        try username.bind(usernameField, \.text)
        try password.bind(passwordField, \.text)
        // only enable the login button if they've entered an username and password
        inputIsValid.bind(loginButton, \.isEnabled)
        // do the login when the user taps the login button
        loginButton.onTap.subscribe { [weak self] _, _ in
            print("doLogin(\(self?.username.value ?? ""), \(self?.password.value ?? ""))")
        }
    }
}

func fisticuffsTour() throws {
    section("HookBind: the Fisticuffs seed (Observable, Computed, Event, bindings, change sets)")
    let observable = Observable<String>("")
    observable.subscribe { oldValue, newValue in
        print(newValue)
    }
    observable.value = "Hello, world"

    let name = Observable<String>("")
    let greeting: Computed<String> = Computed {
        return "Hello, " + name.value
    }
    greeting.subscribe { oldValue, newValue in
        print(newValue)
    }
    name.value = "world"

    let event = Event<String>()
    event.subscribe { _, str in
        print(str)
    }
    event.fire("Hello, world")

    print("-- the login screen")
    let login = LoginViewController()
    try login.viewDidLoad()
    print("login button enabled: \(login.loginButton.isEnabled)")
    login.usernameField.text = "ada"
    login.passwordField.text = "secret"
    print("typed a username and a password; login button enabled: \(login.loginButton.isEnabled)")
    login.loginButton.onTap.fire(())
    login.username.value = ""
    print("model cleared the username; field shows \"\(login.usernameField.text)\", login button enabled: \(login.loginButton.isEnabled)")

    print("-- a diamond: a -> b, a -> c, b + c -> d, evaluated once per change, never inconsistent")
    let a = Observable(1)
    let b = Computed { a.value * 2 }
    let c = Computed { a.value * 3 }
    let d = Computed { "b + c = \(b.value) + \(c.value) = \(b.value + c.value)" }
    d.subscribe { _, new in print(new) }
    a.value = 2
    a.value = 10
    print("d evaluated \(d.evaluationCount) times (once when made, once per change of a)")

    print("-- a batch: two writes, one propagation")
    let first = Observable("Ada"), last = Observable("Lovelace")
    let full = Computed { first.value + " " + last.value }
    full.subscribe { old, new in print("full name: \(old ?? "") -> \(new)") }
    batch {
        first.value = "Grace"
        last.value = "Hopper"
    }

    print("-- the days of the week as a table's change sets")
    let days = ObservableArray(["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"])
    days.subscribeChanges { change in
        print("deletions \(change.deletions), insertions \(change.insertions), moves \(change.moves.map { "\($0.from)->\($0.to)" })\(change.isReplacement ? ", whole array replaced" : "")")
    }
    try days.remove(at: 1)  // good-bye Monday! :)
    try days.move(from: 0, to: 5)  // the user drags Sunday to the end
    try days.edit { days in
        days.append("Someday")
        try days.insert("Funday", at: 0)
    }
    days.value = ["Mon", "Tue"]
    print("days: \(days.value)")
}

