import Foundation
import Hook
import HookBind
import Testing

@Suite("ObservableArray change sets")
struct ObservableArrayTests {
    /// Subscribes to `array`'s change sets, recording them.
    func record<E>(_ array: ObservableArray<E>) -> Shared<[ArrayChange<E>]> {
        let changes = Shared<[ArrayChange<E>]>([])
        array.subscribeChanges { change in changes.mutate { $0.append(change) } }
        return changes
    }

    /// That `change` takes `before` to `after` (elements unique): its old
    /// and new elements, sorted offsets, what stays in the same order on
    /// both sides, moves of equal elements, insertions new and deletions
    /// gone.
    func expect(_ change: ArrayChange<Int>, describes before: [Int], _ after: [Int], _ context: String) {
        #expect(change.oldElements == before && change.elements == after, "\(context)")
        #expect(change.deletions == change.deletions.sorted() && change.insertions == change.insertions.sorted(), "\(context)")
        let moved = Set(change.moves.map(\.from)), movedTo = Set(change.moves.map(\.to))
        let kept = before.indices.filter { !change.deletions.contains($0) && !moved.contains($0) }.map { before[$0] }
        let landed = after.indices.filter { !change.insertions.contains($0) && !movedTo.contains($0) }.map { after[$0] }
        #expect(kept == landed, "\(context)")
        for move in change.moves { #expect(before[move.from] == after[move.to], "\(context)") }
        for i in change.insertions { #expect(!before.contains(after[i]), "\(context)") }
        for i in change.deletions { #expect(!after.contains(before[i]), "\(context)") }
    }

    @Test func aBeforeHookThatReplacesTheArrayIsDescribed() throws {
        // It sorts what an append proposes: as long as the edit, but not it.
        let array = ObservableArray([3, 1, 2])
        let changes = record(array)
        let token = array.hookPoint.before { call in
            try call.setArgument(0, to: try call.argument(0, as: [Int].self).sorted())
        }
        defer { token.remove() }
        array.append(0)
        #expect(array.value == [0, 1, 2, 3])
        // Not the append it was (an insertion at 3 of 3, with 3, 1, 2 kept):
        // a replacement, from what was heard to what is stored.
        let change = try #require(changes.value.first)
        #expect(change.isReplacement)
        #expect(change.oldElements == [3, 1, 2] && change.elements == [0, 1, 2, 3])
        #expect(change.deletions == [0, 1, 2] && change.insertions == [0, 1, 2, 3] && change.moves.isEmpty)
        // A hook that lets the edit through leaves its identities.
        token.remove()
        let passing = array.hookPoint.before { _ in }
        defer { passing.remove() }
        try array.insert(9, at: 1)
        let insert = try #require(changes.value.last)
        #expect(!insert.isReplacement && insert.insertions == [1] && insert.deletions.isEmpty)
    }

    @Test func aWriteInsideAnEditIsHeardThenReplacedByTheEdit() throws {
        // As documented on `edit`: the editor began from [1], so the
        // edit's elements replace the append made inside it; each change
        // set goes from what the one before ended with.
        let array = ObservableArray([1])
        let changes = record(array)
        array.edit { editor in
            editor.append(2)
            array.append(3)
        }
        #expect(array.value == [1, 2])
        #expect(changes.value.count == 2)
        expect(try #require(changes.value.first), describes: [1], [1, 3], "the inner append")
        let last = try #require(changes.value.last)
        #expect(last.oldElements == [1, 3] && last.elements == [1, 2])
    }

    @Test func removedElementsAreLetGoOfOnceTheChangeIsDelivered() throws {
        final class Row {}
        let array = ObservableArray([Row(), Row()])
        var heard = 0
        array.subscribeChanges { _ in heard += 1 }
        weak var first = array.value[0]
        weak var all = array.value[1]
        _ = try array.remove(at: 0)
        #expect(heard == 1)
        #expect(first == nil)
        array.removeAll()
        #expect(all == nil)
    }

    @Test func aBatchWhoseEditFailedLeavesNoStartForTheNextBatch() throws {
        let array = ObservableArray([1, 2, 3])
        let changes = record(array)
        // Nothing edited: an offset out of range.
        batch { _ = try? array.remove(at: 9) }
        // Stored without a call, heard with the next change.
        try array.hookPoint.withoutHooks { try array.move(from: 0, to: 2) }
        let veto = array.hookPoint.before { call in try call.veto() }
        batch { array.append(4) }   // vetoed: [2, 3, 1] stays
        veto.remove()
        #expect(array.value == [2, 3, 1])
        array.append(5)
        let change = try #require(changes.value.last)
        expect(change, describes: [1, 2, 3], [2, 3, 1, 5], "after a vetoed batch")
    }

    @Test func theSeedsDaysOfTheWeek() throws {
        let days = ObservableArray(["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"])
        let changes = record(days)
        try days.remove(at: 1)  // good-bye Monday
        try days.move(from: 0, to: 5)  // Sunday last
        #expect(days.value == ["Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"])
        #expect(changes.value.count == 2)
        #expect(changes.value[0].deletions == [1] && changes.value[0].insertions.isEmpty && changes.value[0].moves.isEmpty)
        #expect(changes.value[1].moves == [.init(from: 0, to: 5)])
        #expect(changes.value[1].deletions.isEmpty && changes.value[1].insertions.isEmpty)
    }

    @Test func insertionsDeletionsAndMovesOfOneEditAreOneChange() throws {
        let array = ObservableArray(["a", "b", "c", "d"])
        let changes = record(array)
        try array.edit { array in
            array.append("e")  // a b c d e
            try array.remove(at: 1)  // a c d e
            try array.move(from: 2, to: 0)  // d a c e
            try array.insert("x", at: 1)  // d x a c e
        }
        #expect(array.value == ["d", "x", "a", "c", "e"])
        #expect(changes.value.count == 1)
        let change = changes.value[0]
        #expect(change.oldElements == ["a", "b", "c", "d"])
        #expect(change.elements == ["d", "x", "a", "c", "e"])
        #expect(change.deletions == [1])  // b
        #expect(change.insertions.sorted() == [1, 4])  // x, e
        #expect(change.moves.count == 1)
        let move = change.moves[0]
        #expect(change.oldElements[move.from] == change.elements[move.to])
        #expect(!change.isReplacement)
    }

    @Test func changeSetsAreExactForEqualElements() throws {
        // Identities, not equality: moving one of two equal elements is a move of that one.
        let array = ObservableArray([1, 1, 2])
        let changes = record(array)
        try array.move(from: 0, to: 2)
        #expect(changes.value[0].moves == [.init(from: 0, to: 2)])
        try array.replace(at: 0, with: 1)  // same value, new element
        #expect(changes.value[1].deletions == [0] && changes.value[1].insertions == [0])
    }

    /// Random edits of a few steps each, on an array of up to 200 unique
    /// elements: each change describes exactly what happened (old and new
    /// elements; what stays keeps its order; each move and insertion says
    /// where its element is), and an edit of one step is that step alone,
    /// wherever in the array it is (found without diffing the whole array).
    @Test func randomEditsAreDescribedExactly() throws {
        var generator = SystemRandomNumberGenerator()
        var seed = UInt64.random(in: 0...UInt64.max, using: &generator)
        func random(_ range: Range<Int>) -> Int {
            seed = seed &* 6364136223846793005 &+ 1442695040888963407
            return range.lowerBound + Int((seed >> 33) % UInt64(range.count))
        }
        let startSeed = seed
        let array = ObservableArray(Array(0..<100))
        var nextElement = 100
        let changes = record(array)
        for round in 0..<300 {
            let before = array.value
            let steps = random(1..<5)
            var single: (kind: Int, at: Int)?
            try array.edit { editor in
                for _ in 0..<steps {
                    let kind = editor.count < 20 ? 0 : (editor.count > 200 ? 1 : random(0..<4))
                    switch kind {
                    case 0:
                        let at = random(0..<editor.count + 1)
                        try editor.insert(nextElement, at: at)
                        single = (0, at)
                    case 1:
                        let at = random(0..<editor.count)
                        try editor.remove(at: at)
                        single = (1, at)
                    case 2:
                        let at = random(0..<editor.count)
                        try editor.replace(at: at, with: nextElement)
                        single = (2, at)
                    default:
                        let from = random(0..<editor.count), to = random(0..<editor.count)
                        try editor.move(from: from, to: to)
                        single = from == to ? nil : (3, from)
                    }
                    nextElement += 1
                }
            }
            let after = array.value
            guard before != after else { continue }
            let change = try #require(changes.value.last)
            let context = "round \(round), seed \(startSeed)"
            expect(change, describes: before, after, context)
            if steps == 1, let single {
                switch single.kind {
                case 0: #expect(change.insertions == [single.at] && change.deletions.isEmpty && change.moves.isEmpty, "\(context)")
                case 1: #expect(change.deletions == [single.at] && change.insertions.isEmpty && change.moves.isEmpty, "\(context)")
                case 2: #expect(change.deletions == [single.at] && change.insertions == [single.at] && change.moves.isEmpty, "\(context)")
                default: #expect(change.moves.count == 1 && change.deletions.isEmpty && change.insertions.isEmpty, "\(context)")
                }
            }
        }
    }

    /// Batches of several edits (reads between them seeing the edits so
    /// far), sometimes with a whole-array replacement among them, are one
    /// change each, from the array before the batch to the array after,
    /// described exactly; a computed that reads the array follows it.
    /// Seeded (the seed is named on failure).
    @Test func randomBatchesOfEditsAreOneChangeDescribedExactly() throws {
        var seed: UInt64 = 0x5EED_0A11
        func random(_ range: Range<Int>) -> Int {
            seed = seed &* 6364136223846793005 &+ 1442695040888963407
            return range.lowerBound + Int((seed >> 33) % UInt64(range.count))
        }
        let array = ObservableArray(Array(0..<40))
        var nextElement = 40
        let changes = record(array)
        let total = Computed { array.value.reduce(0, &+) }
        let heardTotal = Shared<Int?>(nil)
        total.subscribe { _, new in heardTotal.value = new }
        var replaced = 0
        for round in 0..<300 {
            let before = array.value
            let changesBefore = changes.value.count
            var mirror = before
            var replacedThisRound = false
            try batch { () throws(BindError) in
                for _ in 0..<random(1..<4) {
                    if random(0..<10) == 0 {
                        // A replacement among the edits.
                        let count = random(0..<30)
                        mirror = (0..<count).map { _ in
                            nextElement += 1
                            return nextElement
                        }
                        nextElement += 1
                        array.value = mirror
                        replacedThisRound = true
                        continue
                    }
                    try array.edit { (editor: inout ArrayEditor<Int>) throws(BindError) in
                        for _ in 0..<random(1..<4) {
                            let kind = editor.count < 10 ? 0 : (editor.count > 80 ? 1 : random(0..<4))
                            switch kind {
                            case 0:
                                let at = random(0..<editor.count + 1)
                                try editor.insert(nextElement, at: at)
                                mirror.insert(nextElement, at: at)
                            case 1:
                                let at = random(0..<editor.count)
                                try editor.remove(at: at)
                                mirror.remove(at: at)
                            case 2:
                                let at = random(0..<editor.count)
                                try editor.replace(at: at, with: nextElement)
                                mirror[at] = nextElement
                            default:
                                let from = random(0..<editor.count), to = random(0..<editor.count)
                                try editor.move(from: from, to: to)
                                mirror.insert(mirror.remove(at: from), at: to)
                            }
                            nextElement += 1
                        }
                    }
                    // Reads inside the batch see the edits so far.
                    #expect(array.value == mirror, "round \(round)")
                    #expect(array.count == mirror.count, "round \(round)")
                }
            }
            let after = array.value
            #expect(after == mirror, "round \(round)")
            #expect(total.value == after.reduce(0, &+), "round \(round)")
            let delivered = changes.value.dropFirst(changesBefore)
            #expect(delivered.count == 1, "round \(round): \(delivered.count) changes for one batch")
            guard let change = delivered.last else { continue }
            let context = "round \(round)"
            #expect(change.oldElements == before && change.elements == after, "\(context)")
            if replacedThisRound { replaced += 1 }
            if change.isReplacement {
                #expect(replacedThisRound, "\(context): a replacement where no batch replaced the array")
                #expect(change.deletions == Array(before.indices) && change.insertions == Array(after.indices), "\(context)")
                continue
            }
            expect(change, describes: before, after, context)
            if before == after { #expect(change.isEmpty, "\(context): no difference, yet \(change.deletions) \(change.insertions) \(change.moves)") }
        }
        #expect(replaced > 10)
        #expect(heardTotal.value == nil || heardTotal.value == total.value)
    }

    /// A change subscriber that edits the array while it hears a change
    /// stores the edit without a call (as an `Observable`'s subscriber
    /// that writes it: no recursion); the next change set goes from what
    /// subscribers heard, so it describes that edit too.
    @Test func anEditByAChangeSubscriberIsInTheNextChangeSet() throws {
        let array = ObservableArray([1, 2, 3])
        let changes = record(array)
        let subscription = array.subscribeChanges { change in
            if change.elements.count == 4 { array.append(14) }
        }
        array.append(4)
        #expect(array.value == [1, 2, 3, 4, 14])
        #expect(changes.value.count == 1)
        try array.remove(at: 0)
        #expect(changes.value.count == 2)
        let change = changes.value[1]
        #expect(change.oldElements == [1, 2, 3, 4] && change.elements == [2, 3, 4, 14])
        #expect(change.deletions == [0] && change.insertions == [3] && change.moves.isEmpty)
        subscription.dispose()
    }

    /// A batch whose write at its end is vetoed leaves the array as before
    /// the batch, and the next edit is described as itself (it was a
    /// whole-array replacement); a `before` hook that edits the array while
    /// that write is under way does not trap (its identities were the
    /// batch's, for the array from before the batch).
    @Test func aVetoedBatchAndAnEditDuringItsWrite() throws {
        let array = ObservableArray([1, 2, 3])
        let changes = record(array)
        var token = array.hookPoint.before { call in try call.veto() }
        batch { array.append(4) }
        token.remove()
        #expect(array.value == [1, 2, 3] && changes.value.isEmpty)
        array.append(5)
        let change = try #require(changes.value.last)
        #expect(!change.isReplacement && change.insertions == [3] && change.deletions.isEmpty)
        var edited = false
        token = array.hookPoint.before { _ in
            guard !edited else { return }
            edited = true
            _ = try? array.remove(at: 0)
        }
        batch { array.removeAll() }
        token.remove()
        #expect(edited && array.value.isEmpty)
        var heard = [1, 2, 3]
        for (i, change) in changes.value.enumerated() {
            #expect(change.oldElements == heard, "change \(i)")
            if !change.isReplacement { expect(change, describes: change.oldElements, change.elements, "change \(i)") }
            heard = change.elements
        }
        #expect(heard == array.value)
    }

    /// Four threads append, remove, move and batch at once: each change set
    /// begins where the one before it ended and describes its change
    /// exactly, and the last one ends at the array's elements.
    @Test func changeSetsFromFourThreadsFollowEachOther() {
        let array = ObservableArray<Int>([])
        let changes = Shared<[ArrayChange<Int>]>([])
        let subscription = array.subscribeChanges { change in changes.mutate { $0.append(change) } }
        onThreads(4) { t in
            for i in 0..<800 {
                switch (i + t) % 5 {
                case 0, 1: array.append(t * 100_000 + i)
                case 2: _ = try? array.remove(at: 0)
                case 3: try? array.edit { (editor: inout ArrayEditor<Int>) throws(BindError) in
                        if editor.count > 1 { try editor.move(from: 0, to: editor.count - 1) }
                    }
                default: batch {
                        array.append(-(t * 100_000 + i) - 1)
                        _ = try? array.remove(at: 0)
                    }
                }
            }
        }
        var heard: [Int] = []
        for (i, change) in changes.value.enumerated() {
            #expect(change.oldElements == heard, "change \(i)")
            expect(change, describes: change.oldElements, change.elements, "change \(i)")
            heard = change.elements
        }
        #expect(heard == array.value)
        subscription.dispose()
    }

    /// Edits made where no call delivers them at once (by a change
    /// subscriber while it hears a change, in `withoutHooks`, by a `before`
    /// hook of the array's own point while the write it interrupts is
    /// under way) among plain edits, batches, vetoed writes and writes an
    /// `instead` hook takes over: every change set goes from the elements
    /// the last one ended with (or the array made with) to the elements
    /// stored, described exactly, and the array holds what the edits, in
    /// the order they stored, make. Seeded (`ARRAY_SEED=N` runs one seed
    /// and prints its steps).
    @Test func changeSetsGoFromWhatWasHeardToWhatIsStoredWhereverTheEditIsMade() throws {
        let only = ProcessInfo.processInfo.environment["ARRAY_SEED"].flatMap(UInt64.init)
        for seed in only.map({ [$0] }) ?? Array(1...60) {
            try heardToStored(seed: seed, verbose: only != nil)
        }
    }

    func heardToStored(seed start: UInt64, verbose: Bool) throws {
        var seed = start
        func random(_ range: Range<Int>) -> Int {
            seed = seed &* 6364136223846793005 &+ 1442695040888963407
            return range.lowerBound + Int((seed >> 33) % UInt64(range.count))
        }
        let initial = Array(0..<12)
        let array = ObservableArray(initial)
        let changes = record(array)
        var next = 100
        /// One random edit of `elements` (kept between 4 and 30 long),
        /// made by `editor` too.
        func randomEdit(_ editor: inout ArrayEditor<Int>) throws(BindError) {
            let kind = editor.count < 4 ? 0 : (editor.count > 30 ? 1 : random(0..<4))
            next += 1
            switch kind {
            case 0: try editor.insert(next, at: random(0..<editor.count + 1))
            case 1: try editor.remove(at: random(0..<editor.count))
            case 2: try editor.replace(at: random(0..<editor.count), with: next)
            default: try editor.move(from: random(0..<editor.count), to: random(0..<editor.count))
            }
        }
        func edit() throws { try array.edit { (editor: inout ArrayEditor<Int>) throws(BindError) in try randomEdit(&editor) } }
        for step in 0..<80 {
            let kind = random(0..<7)
            let before = array.value
            var token: HookToken?
            switch kind {
            case 0: try edit()
            case 1: try array.hookPoint.withoutHooks { try edit() }
            case 2:
                // A change subscriber edits the array while it hears this change.
                var done = false
                let subscription = array.subscribeChanges { _ in
                    guard !done else { return }
                    done = true
                    try? array.edit { (editor: inout ArrayEditor<Int>) throws(BindError) in try randomEdit(&editor) }
                }
                try edit()
                subscription.dispose()
            case 3:
                // A before hook edits the array before the write it interrupts stores.
                var done = false
                token = array.hookPoint.before { _ in
                    guard !done else { return }
                    done = true
                    try? array.edit { (editor: inout ArrayEditor<Int>) throws(BindError) in try randomEdit(&editor) }
                }
                try edit()
            case 4:
                token = array.hookPoint.before { call in try call.veto() }
                try edit()
                #expect(array.value == before, "seed \(start), step \(step): a vetoed write stored")
            case 5:
                token = array.hookPoint.instead { _ in }
                try edit()
                #expect(array.value == before, "seed \(start), step \(step): a write taken over stored")
            default:
                try batch { () throws(BindError) in
                    for _ in 0..<random(1..<4) { try array.edit { (editor: inout ArrayEditor<Int>) throws(BindError) in try randomEdit(&editor) } }
                }
            }
            token?.remove()
            if verbose { print("seed \(start) step \(step) kind \(kind): \(before) -> \(array.value); \(changes.value.count) changes") }
        }
        // A last plain edit delivers whatever is still unheard.
        try edit()
        var heard = initial
        for (i, change) in changes.value.enumerated() {
            let context = "seed \(start), change \(i)"
            #expect(change.oldElements == heard, "\(context): from \(change.oldElements), but \(heard) was heard last")
            if change.isReplacement {
                #expect(change.deletions == Array(change.oldElements.indices) && change.insertions == Array(change.elements.indices), "\(context)")
            } else {
                expect(change, describes: change.oldElements, change.elements, context)
            }
            heard = change.elements
        }
        #expect(heard == array.value, "seed \(start): the last change set ends at \(heard), the array is \(array.value)")
    }

    @Test func replacingTheWholeArrayIsOneReplacement() {
        let array = ObservableArray([1, 2, 3])
        let changes = record(array)
        array.value = [4, 5]
        #expect(changes.value.count == 1)
        let change = changes.value[0]
        #expect(change.isReplacement)
        #expect(change.deletions == [0, 1, 2] && change.insertions == [0, 1])
        array.replaceAll(with: [])
        #expect(changes.value[1].isReplacement && changes.value[1].deletions == [0, 1])
        array.removeAll()  // already empty: an empty change
        #expect(changes.value[2].isEmpty)
    }

    /// A batch whose closing write ran no hook (`withoutHooks`) leaves no
    /// start for the next batch: a veto of that one's write restores its
    /// own start, and the change after is right. (The old start stayed, the
    /// next batch kept it, and the change after the veto lost the
    /// replaced element: its insertions rebuilt [1, 2, 3, 5].)
    @Test func aBatchWithoutACallLeavesNoStartForALaterVetoedBatch() throws {
        let array = ObservableArray([1, 2, 3])
        let changes = record(array)
        array.hookPoint.withoutHooks { batch { try? array.replace(at: 0, with: 9) } }
        let veto = array.hookPoint.before { call in try call.veto() }
        batch { array.append(4) }
        veto.remove()
        array.append(5)
        #expect(array.value == [9, 2, 3, 5])
        let change = try #require(changes.value.last)
        var rebuilt = change.oldElements
        for deletion in change.deletions.reversed() { rebuilt.remove(at: deletion) }
        for insertion in change.insertions { rebuilt.insert(change.elements[insertion], at: insertion) }
        #expect(rebuilt == change.elements, "\(change)")
    }

    @Test func offsetsOutOfRangeThrowAndLeaveTheArrayAsItWas() {
        let array = ObservableArray(["a", "b"], name: "letters")
        let changes = record(array)
        for (what, attempt) in [
            ("remove at offset 2 of an array of 2", { try array.remove(at: 2) }),
            ("insert at offset 3 of an array of 2", { try array.insert("c", at: 3) }),
            ("move to offset -1 of an array of 2", { try array.move(from: 0, to: -1) }),
            ("replace at offset 9 of an array of 2", { try array.replace(at: 9, with: "z") }),
            ("read at offset 5 of an array of 2", { _ = try array.element(at: 5) }),
        ] as [(String, () throws -> Void)] {
            do {
                try attempt()
                Issue.record("no error for \(what)")
            } catch let error as BindError {
                #expect(error.kind == .indexOutOfRange)
                #expect(error.message.contains(what), "\(error.message)")
                #expect(error.message.hasPrefix("ObservableArray 'letters': "), "\(error.message)")
            } catch {
                Issue.record("unexpected \(error)")
            }
        }
        #expect(array.value == ["a", "b"])
        #expect(changes.value.isEmpty)
    }

    @Test func aFailingEditChangesNothing() {
        let array = ObservableArray([1, 2])
        let changes = record(array)
        #expect(throws: BindError.self) {
            try array.edit { array in
                array.append(3)
                try array.remove(at: 7)
            }
        }
        #expect(array.value == [1, 2])
        #expect(changes.value.isEmpty)
    }

    @Test func computedsReadArraysAndOldNewSubscribersStillWork() throws {
        let array = ObservableArray([1, 2, 3])
        let sum = Computed { array.value.reduce(0, +) }
        var heard: [String] = []
        array.subscribe { old, new in heard.append("\(old!.count)->\(new.count)") }
        array.append(4)
        #expect(sum.value == 10)
        try array.remove(at: 0)
        #expect(sum.value == 9)
        #expect(heard == ["3->4", "4->3"])
        #expect(array.count == 3)
    }

    @Test func writesInABatchMakeOneChangeSet() throws {
        let array = ObservableArray(["a", "b", "c"])
        let changes = record(array)
        try batch { () throws(BindError) in
            array.append("d")
            try array.remove(at: 0)
            try array.move(from: 0, to: 2)  // c d b
        }
        #expect(array.value == ["c", "d", "b"])
        #expect(changes.value.count == 1)
        let change = changes.value[0]
        #expect(change.oldElements == ["a", "b", "c"])
        #expect(change.deletions == [0])
        #expect(change.insertions == [1])
        #expect(change.moves.map { change.oldElements[$0.from] } == ["b"] || change.moves.map { change.oldElements[$0.from] } == ["c"])
    }

    @Test func aVetoedChangeIsNotDeliveredAndLaterChangesStayExact() throws {
        let array = ObservableArray([1, 2, 3])
        let changes = record(array)
        array.hookPoint.before { call in
            if try call.argument(0, as: [Int].self).count > 3 { try call.veto() }
        }
        array.append(4)  // vetoed
        #expect(array.value == [1, 2, 3])
        try array.remove(at: 2)
        #expect(changes.value.count == 1)
        #expect(changes.value[0].deletions == [2] && changes.value[0].insertions.isEmpty)
    }
}
