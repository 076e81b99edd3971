// The IQDataBinding and Bindings (BND) seeds, in Swift: plain objects with
// @Hooked properties stand in for UIKit views and text fields.
import Foundation
import Hook
import HookBind

// MARK: IQDataBinding

final class ContentModel {
    @Hooked var title = ""
    @Hooked var content = ""
}

final class LabeledField {
    let label: String
    var text = "" { didSet { print("\(label).text = \(text)") } }
    init(_ label: String) { self.label = label }
}

final class ContentView: HookOwner {
    let hookBag = HookBag()
    let loginTextField = LabeledField("loginTextField"), pwdTextField = LabeledField("pwdTextField")
    var binding: DataBinding<ContentView, ContentModel>?

    /// ViewModel >>> View
    func bindModel(_ model: ContentModel) throws {
        binding = try bind(model)
            .bind(\.title) { view, value in view.loginTextField.text = value }
            .bind(\.content) { view, value in view.pwdTextField.text = value }
    }

    /// View >>> ViewModel
    func textFieldShouldReturn(_ text: String) throws {
        try binding?.update(\.content, text).update(\.title, "lobster")
    }

    deinit { print("contentView deinitialized: its bindings went with it") }
}

func iqDataBindingTour() throws {
    section("HookBind: the IQDataBinding seed (bind a view to its model, update without echo)")
    let contentModel = ContentModel()
    contentModel.title = "lobster"
    contentModel.content = "123456"
    var contentView: ContentView? = ContentView()
    try contentView!.bindModel(contentModel)  // both fields filled at once
    contentModel.title = "lobster & crab"  // the model changes: the view follows
    let other = try KVO.observe(contentModel, \.content) { change in
        print("another observer of the model: content \(change.oldValue) ==> \(change.newValue)")
    }
    try contentView!.textFieldShouldReturn("654321")  // no echo to this view; the other observer hears it
    print("model after update: title = \(contentModel.title), content = \(contentModel.content)")
    contentView = nil
    contentModel.title = "nobody listens"
    other.close()
}

// MARK: Bindings (BND)

final class BNDPerson {
    @Hooked var name: String
    @Hooked var age = NSNumber(value: 0)
    init(name: String) { self.name = name }
}

final class BNDTextField {
    let label: String
    @Hooked var text = ""
    init(_ label: String) { self.label = label }

    /// What a user typing does: the text changes, then the notification is posted.
    func type(_ newText: String) {
        text = newText
        NotificationCenter.default.post(name: .textFieldTextDidChange, object: self)
    }
}

extension Notification.Name {
    static let textFieldTextDidChange = Notification.Name("UITextFieldTextDidChangeNotification")
}

final class PersonViewController {
    let person = BNDPerson(name: "Jimmy")
    let textField = BNDTextField("nameField"), ageField = BNDTextField("ageField")
    let bindings = PropertyBindings()

    func viewDidLoad() throws {
        // person.name -> textField.text, when the name's setter runs (the KVO trigger)
        let toField = PropertyBinding(source: BoundProperty(person, \.name), destination: BoundProperty(textField, \.text))
        try toField.addTrigger(HookTrigger(person, \.name))
        bindings.add(toField)

        // textField.text -> person.name, when the field posts its notification
        let toPerson = PropertyBinding(source: BoundProperty(textField, \.text), destination: BoundProperty(person, \.name))
        try toPerson.addTrigger(NotificationTrigger(name: .textFieldTextDidChange, sender: textField))
        bindings.add(toPerson)

        // ageField.text -> person.age through BNDStringToNumberTransformer
        ageField.text = "36"
        let formatter = NumberFormatter()
        formatter.numberStyle = .decimal
        let age = BoundProperty(person, \.age).wrapped(by: .stringToNumber(formatter))
        let toAge = PropertyBinding(source: BoundProperty(ageField, \.text), destination: age)
        toAge.errorHandler = { error in print("not delivered: \(error)") }
        try toAge.addTrigger(NotificationTrigger(name: .textFieldTextDidChange, sender: ageField))
        bindings.add(toAge)
    }
}

func bindingsTour() throws {
    section("HookBind: the Bindings seed (source -> destination, triggers, transformers)")
    let personVC = PersonViewController()
    try personVC.viewDidLoad()
    print("textField.text = \(personVC.textField.text), person.age = \(personVC.person.age) (initial values, delivered when the triggers started)")
    personVC.person.name = "James"
    print("person.name = \(personVC.person.name) -> textField.text = \(personVC.textField.text)")
    personVC.textField.type("Jim")
    print("typed Jim -> person.name = \(personVC.person.name)")
    personVC.ageField.type("1,234")
    print("typed 1,234 in the age field -> person.age = \(personVC.person.age)")
    personVC.ageField.type("twelve")
    print("typed twelve -> person.age = \(personVC.person.age)")
    let manual = ManualTrigger()
    let copy = BNDTextField("copy")
    let snapshot = PropertyBinding(source: BoundProperty(personVC.person, \.name), destination: BoundProperty(copy, \.text))
    try snapshot.addTrigger(manual)
    personVC.person.name = "Jimbo"
    print("manual trigger: copy.text = \(copy.text) until fired")
    manual.fire()
    print("fired: copy.text = \(copy.text)")
    personVC.bindings.invalidateAll()
    personVC.person.name = "nobody"
    print("after invalidateAll: person.name = \(personVC.person.name), textField.text = \(personVC.textField.text) (not delivered)")
}
