import Foundation
import Hook
import HookBind
import Testing

/// IQDataBinding's ContentModel and view.
final class IQModel: @unchecked Sendable {
    @Hooked var title = ""
    @Hooked var content = ""
    var plain = ""
}

final class IQView: HookOwner, @unchecked Sendable {
    let hookBag = HookBag()
    var login = "", password = ""
    var shown: [String] = []
    var binding: DataBinding<IQView, IQModel>?
}

@Suite("IQDataBinding: bind(model), bind(key), update(key, value)")
struct DataBindingTests {
    /// What a view's `update` causes is shown by the view: only its block
    /// of the property it wrote is skipped. (Every change on the writing
    /// thread was skipped: a model hook that sets another property left the
    /// view showing the old value.)
    @Test func whatAnUpdateCausesIsShownByTheViewThatWrote() throws {
        let model = IQModel()
        model.$title.didSet { [weak model] _, new in model?.content = "about " + new }
        let view = IQView()
        view.binding = try view.bind(model)
            .bind(\.title) { view, value in view.shown.append("title \(value)") }
            .bind(\.content) { view, value in view.shown.append("content \(value)") }
        view.shown = []
        try view.binding?.update(\.title, "lobster")
        #expect(model.title == "lobster" && model.content == "about lobster")
        #expect(view.shown == ["content about lobster"])
        #expect(view.hookBag.count == 2)
    }

    /// The seed: title and content shown at once, later changes followed,
    /// the view's own update not echoed.
    @Test func theSeedsContentView() throws {
        let model = IQModel()
        model.title = "lobster"
        model.content = "123456"
        let view = IQView()
        view.binding = try view.bind(model)
            .bind(\.title) { view, value in view.login = value; view.shown.append("title \(value)") }
            .bind(\.content) { view, value in view.password = value; view.shown.append("content \(value)") }
        #expect(view.login == "lobster" && view.password == "123456")
        model.content = "654321"
        #expect(view.password == "654321")
        try view.binding!.update(\.content, "typed").update(\.title, "lobster")
        #expect(model.content == "typed" && model.title == "lobster")
        #expect(view.shown == ["title lobster", "content 123456", "content 654321"])  // no echo of the update
    }

    @Test func otherObserversOfTheModelHearAnUpdate() throws {
        let model = IQModel()
        let view = IQView(), otherView = IQView()
        let binding = try view.bind(model).bind(\.content) { view, value in view.shown.append(value) }
        try otherView.bind(model).bind(\.content) { view, value in view.shown.append(value) }
        var kvo: [String] = []
        let monitor = try KVO.observe(model, \.content) { kvo.append($0.newValue) }
        try binding.update(\.content, "from view")
        #expect(view.shown == [""])
        #expect(otherView.shown == ["", "from view"])
        #expect(kvo == ["from view"])
        monitor.close()
    }

    @Test func theOneArgumentBlockWorksToo() throws {
        let model = IQModel()
        let view = IQView()
        var seen: [String] = []
        try view.bind(model).bind(\.title) { seen.append($0) }
        model.title = "a"
        #expect(seen == ["", "a"])
    }

    @Test func everythingIsRemovedWhenTheViewDeinitializes() throws {
        let model = IQModel()
        weak var weakView: IQView?
        weak var weakCanary: Canary?
        var calls = 0
        do {
            let view = IQView()
            let canary = Canary()
            weakCanary = canary
            try view.bind(model).bind(\.title) { _, _ in calls += 1; _ = canary }
            weakView = view
        }
        #expect(weakView == nil)
        #expect(releasedSoon { weakCanary == nil })  // the block went with the view, no set needed
        #expect(try PropertyHook.of(model, \.title).hookCount == 0)
        model.title = "after"
        #expect(calls == 1)
    }

    @Test func unbindRemovesOnlyThisBindingsBlocks() throws {
        let model = IQModel(), otherModel = IQModel()
        let view = IQView()
        let binding = try view.bind(model).bind(\.title) { view, value in view.shown.append("model \(value)") }
        try view.bind(otherModel).bind(\.title) { view, value in view.shown.append("other \(value)") }
        binding.unbind()
        binding.unbind()
        model.title = "a"
        otherModel.title = "b"
        #expect(view.shown == ["model ", "other ", "other b"])
    }

    /// A set of the model that stores nothing (vetoed, or taken over by an
    /// `instead` hook that does not run the original) is not shown: the
    /// view shows what the model holds.
    @Test func aSetThatStoresNothingIsNotShown() throws {
        let model = IQModel()
        let view = IQView()
        try view.bind(model).bind(\.title) { view, value in view.shown.append(value) }
        let point = try PropertyHook.of(model, \.title)
        var token = point.instead { _ in }
        model.title = "taken over"
        token.remove()
        token = point.before { call in try call.veto() }
        model.title = "vetoed"
        token.remove()
        model.title = "stored"
        #expect(view.shown == ["", "stored"])
        #expect(model.title == "stored")
    }

    @Test func aPlainPropertyIsRefusedWithItsName() throws {
        let model = IQModel()
        let view = IQView()
        #expect {
            try view.bind(model).bind(\.plain) { _ in }
        } throws: { error in
            let error = error as! BindError
            return error.kind == .notHookable && error.message.contains("IQModel")
        }
        #expect {
            try view.bind(model).update(\.plain, "x")
        } throws: { ($0 as! BindError).kind == .notHookable }
    }

    /// View A updates the title on one thread while view B updates the
    /// content on another: each skips only its own writes, at the same time.
    @Test func updatesOnTwoThreadsEachSkipOnlyTheirOwnEcho() throws {
        let model = IQModel()
        let a = IQView(), b = IQView()
        let heardByA = Shared<[String]>([]), heardByB = Shared<[String]>([])
        let bindingA = try a.bind(model)
            .bind(\.title) { _, v in heardByA.mutate { $0.append("title \(v)") } }
            .bind(\.content) { _, v in heardByA.mutate { $0.append("content \(v)") } }
        let bindingB = try b.bind(model)
            .bind(\.title) { _, v in heardByB.mutate { $0.append("title \(v)") } }
            .bind(\.content) { _, v in heardByB.mutate { $0.append("content \(v)") } }
        onThreads(2) { i in
            for n in 1...500 {
                if i == 0 { _ = try? bindingA.update(\.title, "\(n)") } else { _ = try? bindingB.update(\.content, "\(n)") }
            }
        }
        #expect(heardByA.value.filter { $0.hasPrefix("title") } == ["title "])  // only the value shown at bind
        #expect(heardByB.value.filter { $0.hasPrefix("content") } == ["content "])
        #expect(heardByA.value.filter { $0.hasPrefix("content") }.count == 501)  // B's writes, all heard
        #expect(heardByB.value.filter { $0.hasPrefix("title") }.count == 501)
    }
}
