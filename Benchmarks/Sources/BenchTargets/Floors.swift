// The floors that both the benchmarks and hook-overhead measure a case
// against, written once (the targets are relative to them).

/// The floor of a three-way binding: three objects kept equal by hand with
/// `didSet`, with a guard against echo.
public final class DidSetNode {
    public final class Group {
        var syncing = false
        public init() {}
    }
    let group: Group
    public unowned(unsafe) var first: DidSetNode?
    public unowned(unsafe) var second: DidSetNode?
    public var value = 0 {
        didSet {
            guard !group.syncing else { return }
            group.syncing = true
            first.unsafelyUnwrapped.value = value
            second.unsafelyUnwrapped.value = value
            group.syncing = false
        }
    }
    public init(group: Group) { self.group = group }
}

/// One set of the floor (in this module, as the class: the setter inlines here).
@inline(never) public func setDidSet(_ m: DidSetNode, _ v: Int) { m.value = v }
