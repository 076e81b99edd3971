import Foundation
import Hook
import HookMacros
import Testing

/// A model as apps write them: `Codable`, and hookable with one attribute.
@Hookable
final class Profile: Codable {
    var name: String
    var age: Int
    var nickname: String?
    var tags: [String]

    init(name: String, age: Int, nickname: String?, tags: [String]) {
        self.name = name
        self.age = age
        self.nickname = nickname
        self.tags = tags
    }

    func greeting() -> String { "Hello, \(name)" }
    func birthday() { age += 1 }
}

/// The same model, not hookable: the JSON both must write.
final class PlainProfile: Codable {
    var name: String
    var age: Int
    var nickname: String?
    var tags: [String]

    init(name: String, age: Int, nickname: String?, tags: [String]) {
        self.name = name
        self.age = age
        self.nickname = nickname
        self.tags = tags
    }
}

/// `@Hooked` by hand, in a class whose conformances Swift synthesizes.
final class Setting: Codable {
    @Hooked var key = ""
    @Hooked var value: Double? = nil
}

@Suite("@Hookable and @Hooked models are Codable, with the plain class's JSON")
struct CodableModelTests {
    static func json(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    @Test(arguments: [nil, "Ace"] as [String?])
    func aHookableModelRoundTripsWithThePlainJSON(nickname: String?) throws {
        let profile = Profile(name: "Ada", age: 36, nickname: nickname, tags: ["math", "engines"])
        let plain = PlainProfile(name: "Ada", age: 36, nickname: nickname, tags: ["math", "engines"])
        // Hooked and called first: the hook points made take no part.
        var greeted = 0
        profile.$greeting.after { _ in greeted += 1 }
        profile.$age.after { _ in }
        profile.birthday()
        profile.age = 36
        #expect(profile.greeting() == "Hello, Ada" && greeted == 1)

        let text = try Self.json(profile)
        #expect(text == (try Self.json(plain)))
        #expect(!text.contains("$"))
        #expect(nickname != nil || !text.contains("nickname"))

        let decoded = try JSONDecoder().decode(Profile.self, from: Data(text.utf8))
        #expect(decoded.name == "Ada" && decoded.age == 36 && decoded.nickname == nickname && decoded.tags == ["math", "engines"])
        // The decoded object is hookable like any other, and alone.
        var sets: [Int] = []
        decoded.$age.after { call in sets.append(try call.argument(0, as: Int.self)) }
        decoded.birthday()
        profile.birthday()
        #expect(sets == [37])
        #expect(decoded.greeting() == "Hello, Ada" && greeted == 1)
        // The plain class reads what the hookable one wrote, and back.
        let asPlain = try JSONDecoder().decode(PlainProfile.self, from: Data(text.utf8))
        #expect(asPlain.nickname == nickname)
    }

    @Test func aMissingOptionalKeyDecodesAsNil() throws {
        let decoded = try JSONDecoder().decode(Profile.self, from: Data(#"{"name":"Bo","age":3,"tags":[]}"#.utf8))
        #expect(decoded.nickname == nil && decoded.name == "Bo")
        let setting = try JSONDecoder().decode(Setting.self, from: Data(#"{"key":"volume"}"#.utf8))
        #expect(setting.key == "volume" && setting.value == nil)
        // A required key missing is still an error, as for the plain class.
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(Profile.self, from: Data(#"{"age":3,"tags":[]}"#.utf8)) }
    }

    @Test func hookedPropertiesEncodeTheirValueAlone() throws {
        let setting = Setting()
        setting.key = "volume"
        var seen: [String] = []
        setting.$key.after { call in seen.append(try call.argument(0, as: String.self)) }
        #expect(try Self.json(setting) == #"{"key":"volume"}"#)
        setting.value = 0.5
        #expect(try Self.json(setting) == #"{"key":"volume","value":0.5}"#)
        let copy = try JSONDecoder().decode(Setting.self, from: Data(try Self.json(setting).utf8))
        copy.key = "bass"
        #expect(copy.key == "bass" && copy.value == 0.5)
        #expect(seen.isEmpty)   // the original's hook, not the copy's
    }

    @Test func equatableHashableAndSendableFollowTheValue() {
        let a = Hooked(wrappedValue: 3), b = Hooked(wrappedValue: 3), c = Hooked(wrappedValue: 4)
        #expect(a == b && a != c)
        #expect(Set([a, b, c]).count == 2)
        #expect(a.hashValue == b.hashValue)
        func isSendable<T: Sendable>(_: T.Type) -> Bool { true }
        #expect(isSendable(Hooked<Int>.self))
        #expect(isSendable(Hooked<[String]>.self))
    }
}
