import Foundation
import Hook
import HookBind
import Testing

@Suite("Transformers")
struct TransformerTests {
    static func formatter() -> NumberFormatter {
        let formatter = NumberFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.numberStyle = .decimal
        formatter.usesGroupingSeparator = false
        return formatter
    }

    /// The Bindings seed's String <-> number example, chained with NSNumber <-> Double, both ways.
    @Test func chainedTransformersConvertBothWays() throws {
        let field = Label(), model = Model()
        let text = Transformer.stringToNumber(Self.formatter()).then(.numberToDouble)
        try Binding.bind([.both(field, \.text).transformed(by: text), .both(model, \.price)])
        field.text = "12.5"
        #expect(model.price == 12.5)
        model.price = 3
        #expect(field.text == "3")
        model.price = 0.25
        #expect(field.text == "0.25")
    }

    /// The README's example as written: a formatter with `numberStyle = .decimal`
    /// (a default `NumberFormatter` rounds 0.25 to "0"), and a failed conversion
    /// reported to the field's hook point.
    @Test func readmeTransformerExample() throws {
        let field = Label(), model = Model()
        let formatter = NumberFormatter()
        formatter.numberStyle = .decimal
        formatter.locale = Locale(identifier: "en_US_POSIX")
        let refused = Refusals()
        field.$text.hookErrorHandler = { error, _ in refused.add("\(error)") }
        try Binding.bind([
            .both(field, \.text).transformed(by: Transformer.stringToNumber(formatter).then(.numberToDouble)),
            .both(model, \.price),
        ])
        field.text = "12.5"
        #expect(model.price == 12.5)
        model.price = 0.25
        #expect(field.text == "0.25")
        field.text = "twelve"
        #expect(model.price == 0.25)
        #expect(refused.all.count == 1)
        #expect(refused.all.first?.contains("twelve") == true)
        // What the old example did: a default formatter has no fraction digits.
        #expect(NumberFormatter().string(from: 0.25) == "0")
    }

    @Test func transformersChainOnTheFishInTheOrderAdded() throws {
        let field = Label(), model = Model()
        try Binding.bind([
            .both(field, \.text)
                .transformed(by: .stringToNumber(Self.formatter()))
                .transformed(by: .numberToDouble)
                .transformed(by: Transformer<Double, Double>(forward: { $0 * 100 }, reverse: { $0 / 100 })),
            .both(model, \.price),
        ])
        field.text = "1.5"          // 1.5 -> 150 cents
        #expect(model.price == 150)
        model.price = 250
        #expect(field.text == "2.5")
    }

    @Test func observerAndPosterTransformersActInTheDirectionOfFlow() throws {
        let model = Model(), label = Label(), cents = Holder()
        try Binding.bind([
            .post(model, \.price).transformed(by: Transformer<Double, Int>(forward: { Int(($0 * 100).rounded()) })),
            .observer(cents, \.value),
            .observer(label, \.text).transformed(by: Transformer<Int, String>(forward: { "\($0) cents" })),
        ])
        model.price = 1.25
        #expect(cents.value == 125)
        #expect(label.text == "125 cents")
    }

    @Test func aFailedConversionDropsTheChangeAndIsReported() throws {
        let field = Label(), model = Model()
        let reported = Shared<[String]>([])
        field.$text.hookErrorHandler = { error, _ in reported.mutate { $0.append("\(error)") } }
        try Binding.bind([.both(field, \.text).transformed(by: Transformer.stringToNumber(Self.formatter()).then(.numberToDouble)),
                          .both(model, \.price)])
        field.text = "7"
        field.text = "seven"
        #expect(model.price == 7)
        #expect(field.text == "seven")
        #expect(reported.value == ["HookBind: \"seven\" is not a number for the formatter"])
    }

    @Test func reversedAndComposedTransformers() throws {
        let double = Transformer<Int, Int>(forward: { $0 * 2 }, reverse: { $0 / 2 })
        let text = Transformer<Int, String>(forward: { String($0) }, reverse: { Int($0) ?? 0 })
        let both = double.then(text)
        #expect(try both.forward(21) == "42")
        #expect(try both.reverse?("42") == 21)
        #expect(try both.reversed?.forward("10") == 5)
        #expect(Transformer<Int, Int>(forward: { $0 }).reversed == nil)
        #expect(double.then(Transformer<Int, Int>(forward: { $0 })).reverse == nil)
    }
}

/// Errors a hook error handler received (it is @Sendable).
final class Refusals: @unchecked Sendable {
    private let lock = NSLock()
    private var list: [String] = []
    func add(_ message: String) { lock.withLock { list.append(message) } }
    var all: [String] { lock.withLock { list } }
}

/// The README's binding example, as written there.
@Suite("README examples")
struct ReadmeExampleTests {
    final class TextField { @Hooked var text = "" }
    final class TitleLabel { @Hooked var title = "" }

    @Test func theBindingExample() throws {
        let field = TextField(), label = TitleLabel()
        var printed: [String] = []
        let binding = try Binding.bind([
            .both(field, \.text),
            .both(label, \.title),
            .observer { callBack in printed.append("changed to \(callBack.args[0])") },
        ])
        field.text = "Ada"
        #expect(label.title == "Ada")
        label.title = "Grace"
        #expect(field.text == "Grace")
        #expect(printed == ["changed to Ada", "changed to Grace"])
        binding.unbind()
        field.text = "Edsger"
        #expect(label.title == "Grace" && printed.count == 2)
    }
}
