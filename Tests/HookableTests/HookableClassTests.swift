import Testing
import HookMacros

@Hookable
final class Account {
    var balance = 0
    var owner: String
    init(owner: String) { self.owner = owner }
    func deposit(_ amount: Int) -> Int { balance += amount; return balance }
    func withdraw(_ amount: Int) throws -> Int {
        guard amount <= balance else { throw Refusal.insufficient }
        balance -= amount
        return balance
    }
    func move(to place: String) -> String { "to \(place)" }
    func move(by steps: Int) -> String { "by \(steps)" }
    func total(_ values: Int...) -> Int { values.reduce(0, +) }
    @Unhooked func plain() -> Int { 1 }
}

enum Refusal: Error { case insufficient }

@Test func hookableProbe() throws {
    let account = Account(owner: "Ada")
    #expect(account.deposit(5) == 5)
    account.$deposit.before { call in
        if try call.argument(0, as: Int.self) < 0 { try call.setArgument(0, to: 0) }
    }
    #expect(account.deposit(-5) == 5)
    var seen: [Int] = []
    account.$balance.after { call in seen.append(try call.argument(0, as: Int.self)) }
    account.balance = 7
    #expect(seen == [7])
}
