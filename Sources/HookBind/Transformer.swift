import Foundation

/// Converts values on their way between fishes (the Bindings seed's
/// transformers): `forward` in the direction of the flow, `reverse` back.
///
/// ```swift
/// let formatter = NumberFormatter()
/// formatter.numberStyle = .decimal   // the default style has no fraction digits: 0.25 would be "0"
/// let text = Transformer<String, NSNumber>.stringToNumber(formatter)
///     .then(Transformer(forward: { $0.doubleValue }, reverse: { NSNumber(value: $0) }))
/// try Binding.bind([
///     .both(field, \.text).transformed(by: text),   // String <-> Double
///     .both(model, \.price),                        // Double
/// ])
/// ```
///
/// A transformer that throws drops the change for the receivers that need
/// the converted value; the error goes to the posting hook point's
/// `HookPoint/hookErrorHandler`.
public struct Transformer<Input, Output> {
    /// Converts in the direction of the flow.
    public let forward: (Input) throws -> Output
    /// Converts back (needed by `both` fishes that receive values).
    public let reverse: ((Output) throws -> Input)?

    public init(forward: @escaping (Input) throws -> Output, reverse: ((Output) throws -> Input)? = nil) {
        self.forward = forward
        self.reverse = reverse
    }

    /// This transformer followed by `next`; reversible if both are.
    public func then<Next>(_ next: Transformer<Output, Next>) -> Transformer<Input, Next> {
        let first = forward, second = next.forward
        var back: ((Next) throws -> Input)?
        if let r1 = reverse, let r2 = next.reverse {
            back = { try r1(try r2($0)) }
        }
        return Transformer<Input, Next>(forward: { try second(try first($0)) }, reverse: back)
    }

    /// The same conversion the other way round; nil without a `reverse`.
    public var reversed: Transformer<Output, Input>? {
        reverse.map { Transformer<Output, Input>(forward: $0, reverse: forward) }
    }
}

extension Transformer where Input == String, Output == NSNumber {
    /// Parses text with `formatter`, and formats numbers back (the Bindings
    /// seed's `BNDStringToNumberTransformer`). Text the formatter does not
    /// read as a number throws ``BindError/Kind/transformFailed``.
    public static func stringToNumber(_ formatter: NumberFormatter) -> Transformer<String, NSNumber> {
        return Transformer(
            forward: { text in
                guard let number = formatter.number(from: text) else {
                    throw BindError(.transformFailed, "\"\(text)\" is not a number for the formatter")
                }
                return number
            },
            reverse: { number in
                guard let text = formatter.string(from: number) else {
                    throw BindError(.transformFailed, "the formatter cannot format \(number)")
                }
                return text
            })
    }
}

extension Transformer where Input == NSNumber, Output == Double {
    /// `NSNumber` <-> `Double`, to chain after ``stringToNumber(_:)``.
    public static var numberToDouble: Transformer<NSNumber, Double> {
        Transformer(forward: { $0.doubleValue }, reverse: { NSNumber(value: $0) })
    }
}

/// One conversion step with its types erased: values travel as addresses of
/// stack values, so a binding moves them without boxing.
struct _Step {
    let input: Any.Type
    let output: Any.Type
    let apply: (UnsafeRawPointer, (UnsafeRawPointer) throws -> Void) throws -> Void

    init<I, O>(_ convert: @escaping (I) throws -> O) {
        input = I.self
        output = O.self
        apply = { value, next in
            let converted = try convert(value.assumingMemoryBound(to: I.self).pointee)
            try withUnsafePointer(to: converted) { try next(UnsafeRawPointer($0)) }
        }
    }

    /// Runs `steps[index...]` on `value`, then `body` on the result.
    static func run(_ steps: [_Step], from index: Int = 0, _ value: UnsafeRawPointer,
                    _ body: (UnsafeRawPointer) throws -> Void) throws {
        guard index < steps.count else { return try body(value) }
        try steps[index].apply(value) { try run(steps, from: index + 1, $0, body) }
    }
}
