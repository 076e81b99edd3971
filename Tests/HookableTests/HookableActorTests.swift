import HookMacros
import Testing

@Hookable
actor Tally {
    @Unhooked private var total = 0
    func add(_ n: Int) -> Int { total += n; return total }
    func addSlowly(_ n: Int) async -> Int {
        await Task.yield()
        total += n
        return total
    }
    @Unhooked var snapshot: Int { total }
}

/// Implicitly unwrapped optionals: hooked as optionals, used as written.
@Hookable
actor Lookup {
    var last: String! = nil
    func find(_ key: String!) -> Int! {
        last = key
        return key.count
    }
}

@Suite("@Hookable actors")
struct HookableActorTests {
    @Test func aSynchronousInitWhoseParameterIsNamedAsAProperty() async throws {
        let seeded = Seeded(seed: 3)
        #expect(seeded.first == 6)
        #expect(await seeded.total == 0)
        var heard: [Int] = []
        let token = seeded.$seed.after { call in heard.append(try call.argument(0, as: Int.self)) }
        defer { token.remove() }
        await seeded.setSeed(4)
        #expect(await seeded.seed == 4)
        #expect(heard == [4])
    }

    @Test func aPropertyTypedByItsInitializerCallIsHooked() async throws {
        let thermostat = await Thermostat(label: "hall")
        var heard: [Thermostat.Calibration] = []
        let token = thermostat.$calibration.after { call in heard.append(try call.argument(0, as: Thermostat.Calibration.self)) }
        defer { token.remove() }
        await thermostat.calibrate(0.5)
        #expect(await thermostat.calibration == .init(offset: 0.5))
        #expect(heard == [.init(offset: 0.5)])
    }

    /// (`T!` was spelled in the hook points' types: "using '!' is not
    /// allowed here", in the expansions.)
    @Test func implicitlyUnwrappedOptionalsAreHookedAsOptionals() async throws {
        let lookup = Lookup()
        var heard: [String] = []
        let method = lookup.$find.after { call in
            heard.append("\(try call.argument(0, as: String?.self) ?? "nil") -> \(try call.result(as: Int?.self) ?? -1)")
        }
        let property = lookup.$last.after { call in heard.append("last = \(try call.argument(0, as: String?.self) ?? "nil")") }
        defer { method.remove(); property.remove() }
        #expect(await lookup.find("four") == 4)
        #expect(await lookup.last == "four")
        #expect(heard == ["last = four", "four -> 4"])
    }

    @Test func actorMethodsAreHookedPerInstance() async throws {
        let tally = Tally(), other = Tally()
        tally.$add.before { call in try call.setArgument(0, to: try call.argument(0, as: Int.self) * 10) }
        tally.$addSlowly.after { call in call.setResult(call.result! + 1_000) }
        #expect(await tally.add(1) == 10)
        #expect(await other.add(1) == 1)
        #expect(await tally.addSlowly(1) == 1_011)
        #expect(tally.$add.target === tally)
        #expect(tally.$add.name == "add")
    }

    @Test func concurrentCallsStaySerialized() async throws {
        let tally = Tally()
        let seen = Counter()
        tally.$add.after { _ in seen.add() }
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<8 {
                group.addTask { for _ in 0..<100 { _ = await tally.add(1) } }
            }
            // `$add` is nonisolated: asked for off the actor while it runs calls.
            group.addTask { for _ in 0..<100 { #expect(tally.$add.hookCount == 1) } }
        }
        #expect(await tally.snapshot == 800)
        #expect(seen.value == 800)
    }
    @Test func actorPropertiesAreHookedPerInstance() async throws {
        let hall = await Thermostat(label: "hall"), attic = await Thermostat(label: "attic")
        let seen = Counter()
        #expect(hall.$target.name == "target")
        #expect(hall.$target.target === hall)
        #expect(hall.$target === hall.$target)
        hall.$target.before { call in                      // a limit: at most 25
            if try call.argument(0, as: Int.self) > 25 { try call.setArgument(0, to: 25) }
        }
        hall.$target.after { call in
            seen.note("\(try call.oldValue(as: Int.self))->\(call.args[0])")
        }
        await hall.setTarget(30)
        await attic.setTarget(30)
        #expect(await hall.target == 25)
        #expect(await attic.target == 30)                  // its own point, never made
        #expect(seen.log == ["20->25"])

        // Veto, and an instead hook that stores something else.
        hall.$label.before { call in
            if try call.argument(0, as: String.self).isEmpty { try call.veto() }
        }
        hall.$readings.instead { call in
            try call.setArgument(0, to: try call.argument(0, as: [Double].self).map { $0.rounded() })
            try call.invokeOriginal()
        }
        await hall.record(20.4)
        await hall.record(21.6)
        #expect(await hall.readings == [20, 22])
        await hall.switchOff()
        #expect(await hall.mode == .off)
    }

    @Test func anActorPropertyWithoutAHookPointIsAPlainStoredProperty() async {
        let attic = await Thermostat(label: "attic")
        await attic.setTarget(18)
        #expect(await attic.target == 18)
        #expect(await attic.label == "attic")
        // Made now, on first need: it sees the current value as the old one.
        let seen = Counter()
        attic.$target.after { call in seen.add(try call.oldValue(as: Int.self)) }
        await attic.setTarget(19)
        #expect(seen.value == 18)
    }

    @Test func actorPropertySetsFromManyTasksWhileHooksChange() async throws {
        let hall = await Thermostat(label: "hall")
        let seen = Counter()
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<8 {
                group.addTask {
                    for i in 0..<200 { await hall.setTarget(task * 1_000 + i) }
                }
            }
            group.addTask {
                for _ in 0..<50 {
                    let token = hall.$target.after { _ in seen.add() }
                    token.remove()
                }
            }
        }
        let token = hall.$target.after { _ in seen.add(1_000_000) }
        await hall.setTarget(1)
        #expect(await hall.target == 1)
        #expect(seen.value >= 1_000_000)
        token.remove()
    }

    @Test func anActorsHookPointDoesNotKeepItAlive() async {
        weak var weakHall: Thermostat?
        var point: PropertyHook<Int>?
        do {
            let hall = await Thermostat(label: "hall")
            weakHall = hall
            point = hall.$target
            point?.after { _ in }
        }
        #expect(weakHall == nil)
        #expect(point != nil)
    }
}

/// A synchronous init whose parameter has a hooked property's name: the bare
/// name there is the parameter, not the property (which @Hookable would refuse).
@Hookable
actor Seeded {
    var seed = 0
    let first: Int
    var total = 0
    init(seed: Int) {
        // A local and a key path named as properties: not the properties.
        let total = seed * 2
        first = [total].map(\.self)[0]
    }
    func setSeed(_ value: Int) { seed = value }
}

@Hookable
actor Thermostat {
    var target = 20
    var label: String
    var readings: [Double] = []
    private(set) var mode: Mode = .auto
    // A type the macro reads from its initializer `Type(...)`.
    var calibration = Calibration(offset: 0)

    enum Mode: Sendable { case auto, off }
    struct Calibration: Sendable, Equatable { var offset: Double }

    init(label: String) async { self.label = label }

    func setTarget(_ value: Int) { target = value }
    func record(_ value: Double) { readings.append(value) }
    func switchOff() { mode = .off }
    func calibrate(_ offset: Double) { calibration = Calibration(offset: offset) }
}
