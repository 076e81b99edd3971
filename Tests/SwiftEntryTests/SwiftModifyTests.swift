import Foundation
import Hook
import Synchronization
import SwiftEntrySample
import Testing

extension SwiftEntrySuites {
@Suite struct SwiftModifyTests {
    @Test func plusEqualsFromAnotherModuleIsObservedWithTheValueAfterTheAccess() throws {
        let age = try SwiftModifyHook.named("SwiftEntrySample.Person.age", of: Person.self, as: Int.self)
        defer { try? age.restore() }
        let ada = Person(name: "Ada", age: 36), bob = Person(name: "Bob", age: 50)
        var seen: [String] = []
        age.afterAccess { person, value in seen.append("\(person.name) \(value)") }
        ada.age += 1
        bob.age -= 10
        #expect(seen == ["Ada 37", "Bob 40"])
        #expect(ada.age == 37 && bob.age == 40)

        // For one object; a String property's append (an inout access) too.
        age.removeAllHooks()
        seen = []
        age.afterAccess(for: ada) { person, value in seen.append("\(person.name) \(value)") }
        ada.age += 2
        bob.age += 2
        #expect(seen == ["Ada 39"])
        let name = try SwiftModifyHook.named("SwiftEntrySample.Person.name", of: Person.self, as: String.self)
        defer { try? name.restore() }
        var names: [String] = []
        name.afterAccess { _, value in names.append(value) }
        ada.name += " Lovelace"
        ada.name.append("!")
        #expect(names == ["Ada Lovelace", "Ada Lovelace!"])
        #expect(ada.name == "Ada Lovelace!")

        // A computed property: its modify yields a copy and sets it when the access ends.
        let title = try SwiftModifyHook.named("SwiftEntrySample.Person.title", of: Person.self, as: String.self)
        defer { try? title.restore() }
        var titles: [String] = []
        title.afterAccess { person, value in titles.append("\(value) -> \(person.name)") }
        ada.title += "?"
        #expect(titles == ["Ada Lovelace! (39)? -> Ada Lovelace! (39)?"])
    }

    /// A hook point of a modify coroutine takes only `afterAccess` hooks: a
    /// `before`, `instead` or `after` hook given through `HookPoint` is
    /// refused through the error handler, and the accesses go on. (An
    /// `after` hook was run as a typed one: a crash.)
    @Test func hooksOtherThanAfterAccessAreRefusedWithoutCrashing() throws {
        let age = try SwiftModifyHook.named("SwiftEntrySample.Person.age", of: Person.self, as: Int.self)
        defer { try? age.restore() }
        final class Reported: @unchecked Sendable { var texts: [String] = [] }
        let box = Reported()
        age.hookErrorHandler = { error, _ in box.texts.append("\(error)") }
        defer { age.hookErrorHandler = nil }
        let generic: HookPoint = age
        let after = generic.after { _ in }
        let before = generic.before { _ in }
        #expect(!after.isActive && !before.isActive)
        #expect(age.hookCount == 0)
        #expect(box.texts.count == 2)
        #expect(box.texts.first?.contains("afterAccess hooks only") == true, "\(box.texts)")
        var seen: [Int] = []
        age.afterAccess { _, value in seen.append(value) }
        let ada = Person(name: "Ada", age: 1)
        ada.age += 1
        #expect(seen == [2] && ada.age == 2)
    }

    /// An access held open across `await` (an `inout` argument of an async
    /// function) may end on another thread: it is observed there. (Accesses
    /// were recorded per thread, and one that ended on another thread
    /// aborted the process.) Rounds go on until some access moved.
    @Test func anAccessHeldAcrossAnAwaitMayEndOnAnotherThread() async throws {
        let age = try SwiftModifyHook.named("SwiftEntrySample.Person.age", of: Person.self, as: Int.self)
        defer { try? age.restore() }
        let counts = AccessCounts()
        age.afterAccess { _, _ in counts.seen.add(1, ordering: .relaxed) }
        var rounds = 0
        while counts.moved.load(ordering: .relaxed) == 0, rounds < 50 {
            rounds += 1
            let people = (0..<64).map { HeldPerson(person: Person(name: "p\($0)", age: 0)) }
            // On an executor whose jobs go to two threads in turn: a task's
            // access begins in one job and ends in another.
            await withTaskExecutorPreference(AlternatingExecutor.shared) {
                await withTaskGroup(of: Void.self) { group in
                    for held in people { group.addTask { await counts.bump(&held.person.age) } }
                }
            }
            #expect(people.allSatisfy { $0.person.age == 1 })
        }
        #expect(counts.moved.load(ordering: .relaxed) > 0, "no access ended on another thread in \(rounds) rounds")
        #expect(counts.seen.load(ordering: .relaxed) == 64 * rounds)
    }

    /// Modify accesses nested 100 deep (each `inout` of a person's age held
    /// open while the next begins) are each observed when they end, the
    /// innermost first. (Past 64 open at once on a thread, an access was
    /// not observed, without a word: 64 of 100.)
    @Test func accessesNested100DeepAreEachObserved() throws {
        let age = try SwiftModifyHook.named("SwiftEntrySample.Person.age", of: Person.self, as: Int.self)
        defer { try? age.restore() }
        let people = (0..<100).map { Person(name: "p\($0)", age: $0) }
        var seen: [String] = []
        age.afterAccess { person, value in seen.append("\(person.name) \(value)") }
        func bump(_ age: inout Int, then inner: () -> Void) {
            age += 1000
            inner()
        }
        func nest(_ i: Int) {
            guard i < people.count else { return }
            bump(&people[i].age) { nest(i + 1) }
        }
        nest(0)
        #expect(seen.count == 100)
        #expect(seen.first == "p99 1099" && seen.last == "p0 1000")
        #expect(people.map(\.age) == (0..<100).map { $0 + 1000 })
        // Again, after the accesses past 64 let their buffer go.
        seen = []
        nest(0)
        #expect(seen.count == 100)
    }

    @Test func anAccessInsideTheHookRunsNoHookAndErrorsNameWhatWasWritten() throws {
        let age = try SwiftModifyHook.named("SwiftEntrySample.Person.age", of: Person.self, as: Int.self)
        defer { try? age.restore() }
        var runs = 0
        age.afterAccess { person, _ in
            runs += 1
            person.age += 100   // an access inside the hook: no hook
        }
        let ada = Person(name: "Ada", age: 1)
        ada.age += 1
        #expect(runs == 1 && ada.age == 102)
        #expect { try SwiftModifyHook.named("SwiftEntrySample.Person.age", of: Person.self, as: String.self) } throws: { error in
            (error as? HookError)?.kind == .typeMismatch && "\(error)".contains("Swift.Int") && "\(error)".contains("stated Swift.String")
        }
        #expect { try SwiftModifyHook.named("SwiftEntrySample.Person.height", of: Person.self, as: Int.self) } throws: { error in
            (error as? HookError)?.kind == .symbolNotFound && "\(error)".contains("SwiftEntrySample.Person.height")
        }
    }
}
}

struct HeldPerson: @unchecked Sendable { let person: Person }

final class AccessCounts: Sendable {
    let seen = Atomic<Int>(0)
    let moved = Atomic<Int>(0)

    /// An `inout` access held across a suspension; counts the ones that resumed on another thread.
    func bump(_ value: inout Int) async {
        let before = pthread_self()
        await Task.yield()
        if pthread_self() != before { moved.add(1, ordering: .relaxed) }
        value += 1
    }
}

/// A task executor whose jobs run on two threads of its own, in turn.
final class AlternatingExecutor: TaskExecutor, @unchecked Sendable {
    static let shared = AlternatingExecutor()

    private final class Worker: @unchecked Sendable {
        let lock = NSCondition()
        var jobs: [UnownedJob] = []
    }
    private let workers = [Worker(), Worker()]
    private let next = Atomic<Int>(0)

    private init() {
        for worker in workers {
            let thread = Thread { [unowned self] in
                while true {
                    worker.lock.lock()
                    while worker.jobs.isEmpty { worker.lock.wait() }
                    let job = worker.jobs.removeFirst()
                    worker.lock.unlock()
                    job.runSynchronously(on: self.asUnownedTaskExecutor())
                }
            }
            thread.start()
        }
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let worker = workers[next.add(1, ordering: .relaxed).newValue % 2]
        let unowned = UnownedJob(job)
        worker.lock.lock()
        worker.jobs.append(unowned)
        worker.lock.signal()
        worker.lock.unlock()
    }
}
