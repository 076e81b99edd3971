/// The object a hook is tied to, held weakly: once it is gone the hook no
/// longer runs and is detached.
@usableFromInline
final class _HookOwner: @unchecked Sendable {
    // Written once in init; weak loads are thread-safe.
    @usableFromInline weak var object: AnyObject?
    init(_ object: AnyObject) { self.object = object }

    /// Whether the owner is gone; a live one is appended to `alive`, for
    /// the caller to release after the lock it holds (see
    /// `HookToken.ownerIsGone(keeping:)`).
    func isGone(keeping alive: inout [AnyObject]) -> Bool {
        guard let object else { return true }
        alive.append(object)
        return false
    }
}

/// How many hooks a snapshot has at each position.
@usableFromInline
struct _HookCounts {
    @usableFromInline var before: Int32
    @usableFromInline var instead: Int32
    @usableFromInline var after: Int32
}

/// An immutable snapshot of a hook point's hooks, for two hooks or more:
/// one allocation holding the hooks (tokens), before ones first, then
/// instead, then after, each in the order added.
///
/// The call path reaches a snapshot through an atomic word and never retains
/// it; a snapshot that has been replaced is freed only once no thread is inside
/// a call of its hook point (see `HookPoint`).
///
/// Who holds the hooks: the published word holds each of its hooks +1. A
/// change hands the hooks that stay from the old word to the new one without
/// retaining them (a hook change costs a copy of the words, not a reference
/// count per hook), and retires the old snapshot as memory only, beside each
/// hook it removed (`_Retired` frees all of one point's retired words in the
/// same batch, so a hook is never released before a snapshot that lists
/// it). So a snapshot's elements are not
/// released with it: `_Hooks.releasePublished` releases them for the word a
/// point still publishes when it goes.
@usableFromInline
final class _HookSnapshot: ManagedBuffer<_HookCounts, Unmanaged<HookToken>> {
    /// A snapshot of `tokens` (in position order, `counts` of each
    /// position), taking over the reference the caller holds of each.
    static func make(_ tokens: [Unmanaged<HookToken>], _ counts: _HookCounts) -> _HookSnapshot {
        let buffer = create(minimumCapacity: tokens.count) { _ in counts }
        buffer.withUnsafeMutablePointerToElements { elements in
            tokens.withUnsafeBufferPointer { source in
                elements.initialize(from: source.baseAddress.unsafelyUnwrapped, count: source.count)
            }
        }
        return unsafeDowncast(buffer, to: _HookSnapshot.self)
    }
}

/// The hooks a call reads: the published word of a hook point with its
/// probe bit cleared. Bit 1 set: one hook, the word is a +1 ``HookToken``
/// (no snapshot is made for a single hook), bit 2 says whether it is an
/// after hook (the most common set of hooks, told without reading the
/// token) and bit 3 whether it is a typed one (`_TypedAfterHook`);
/// otherwise a +1 `_HookSnapshot`. (Objects are 16-byte aligned: the low
/// four bits of their address are free.)
@usableFromInline
struct _Hooks {
    // The low bits of the word (objects are 16-byte aligned: the low four
    // bits of their address are free). Named once, used everywhere.
    /// Bit 0: a key path probe may be pending (`HookPoint.setProbing`); not
    /// part of the hooks: readers clear it.
    @inlinable static var probedBit: Int { 1 }
    /// Bit 1: one hook, the word is a +1 `HookToken`.
    @inlinable static var singleBit: Int { 2 }
    /// Bit 2: the one hook is an after hook.
    @inlinable static var afterBit: Int { 4 }
    /// Bit 3: the one hook is a typed after hook (`isTypedAfter`).
    @inlinable static var typedBit: Int { 8 }
    /// The four flag bits; the rest is the address.
    @inlinable static var flagBits: Int { 15 }
    /// Bits 1 to 3: a lone typed after hook.
    @inlinable static var loneTypedAfterBits: Int { singleBit | afterBit | typedBit }

    @usableFromInline let bits: Int

    @inlinable @inline(__always)
    init(bits: Int) { self.bits = bits }

    @inlinable @inline(__always)
    var isSingle: Bool { bits & Self.singleBit != 0 }

    /// One hook, an after hook.
    @inlinable @inline(__always)
    var isLoneAfter: Bool { bits & Self.afterBit != 0 }

    /// One hook, a typed after hook (`_TypedAfterHook`). (Any word: the
    /// probe bit is not looked at.)
    @inlinable @inline(__always)
    var isLoneTypedAfter: Bool { bits & Self.loneTypedAfterBits == Self.loneTypedAfterBits }

    @inlinable @inline(__always)
    var single: Unmanaged<HookToken> { .fromOpaque(UnsafeRawPointer(bitPattern: bits & ~Self.flagBits).unsafelyUnwrapped) }

    @inlinable @inline(__always)
    var snapshot: Unmanaged<_HookSnapshot> { .fromOpaque(UnsafeRawPointer(bitPattern: bits).unsafelyUnwrapped) }

    /// Whether every hook runs after the original (no before or instead hook).
    @inline(__always)
    var onlyAfter: Bool { count(.before) == 0 && count(.instead) == 0 }

    /// The number of hooks at `position`.
    @inline(__always)
    func count(_ position: HookPosition) -> Int {
        if isSingle { return single._withUnsafeGuaranteedRef { $0.position == position } ? 1 : 0 }
        return snapshot._withUnsafeGuaranteedRef { buffer in
            buffer.withUnsafeMutablePointerToHeader { counts in
                switch position {
                case .before: Int(counts.pointee.before)
                case .instead: Int(counts.pointee.instead)
                case .after: Int(counts.pointee.after)
                }
            }
        }
    }

    /// Hook `index` of those at `position` (below `count(position)`).
    @inline(__always)
    func entry(_ position: HookPosition, _ index: Int) -> Unmanaged<HookToken> {
        if isSingle { return single }
        return snapshot._withUnsafeGuaranteedRef { buffer in
            buffer.withUnsafeMutablePointers { counts, elements in
                switch position {
                case .before: elements[index]
                case .instead: elements[Int(counts.pointee.before) + index]
                case .after: elements[Int(counts.pointee.before + counts.pointee.instead) + index]
                }
            }
        }
    }

    /// How many hooks of each position the word holds.
    var counts: _HookCounts {
        if isSingle {
            let position = single._withUnsafeGuaranteedRef { $0.position }
            return _HookCounts(before: position == .before ? 1 : 0, instead: position == .instead ? 1 : 0,
                               after: position == .after ? 1 : 0)
        }
        return snapshot._withUnsafeGuaranteedRef { buffer in buffer.withUnsafeMutablePointerToHeader { $0.pointee } }
    }

    /// Every hook, in position order, as the word holds them (valid while it is).
    func tokens() -> [Unmanaged<HookToken>] {
        if isSingle { return [single] }
        return snapshot._withUnsafeGuaranteedRef { buffer in
            buffer.withUnsafeMutablePointers { counts, elements in
                Array(UnsafeBufferPointer(start: elements, count: counts.pointee.total))
            }
        }
    }

    /// The +1 word for `tokens` (in position order, `counts` of each
    /// position): 0, one token, or a snapshot. The word takes over the
    /// caller's reference of each token.
    static func publish(_ tokens: [Unmanaged<HookToken>], _ counts: _HookCounts) -> Int {
        switch tokens.count {
        case 0: return 0
        case 1:
            let token = tokens[0]
            let (position, isTypedAfter) = token._withUnsafeGuaranteedRef { ($0.position, $0.isTypedAfter) }
            let after = position == .after ? afterBit : 0
            let typed = isTypedAfter ? typedBit : 0
            let address = Int(bitPattern: token.toOpaque())
            // Swift objects are 16-byte aligned: the flag bits are free (checked in debug builds).
            assert(address & flagBits == 0, "a HookToken at \(address) is not 16-byte aligned")
            return address | singleBit | after | typed
        default:
            let address = Int(bitPattern: Unmanaged.passRetained(_HookSnapshot.make(tokens, counts)).toOpaque())
            assert(address & flagBits == 0, "a hook snapshot at \(address) is not 16-byte aligned")
            return address
        }
    }

    /// Releases the word a point publishes when the point goes (probe bit
    /// cleared): its hooks, and its snapshot.
    static func releasePublished(_ bits: Int) {
        guard bits != 0 else { return }
        let hooks = _Hooks(bits: bits)
        // (The point goes: its hooks are detached, see `HookToken.isActive`.)
        if hooks.isSingle {
            hooks.single._withUnsafeGuaranteedRef { $0._markDetached() }
            hooks.single.release()
            return
        }
        for token in hooks.tokens() {
            token._withUnsafeGuaranteedRef { $0._markDetached() }
            token.release()
        }
        hooks.snapshot.release()
    }

    /// Releases a retired word (see `_HookSnapshot`): a hook that a change
    /// removed, or a replaced snapshot (its memory: its hooks went on to the
    /// next word, or were retired one by one).
    static func releaseRetired(_ bits: Int) {
        let hooks = _Hooks(bits: bits)
        if hooks.isSingle { hooks.single.release() } else { hooks.snapshot.release() }
    }
}

extension _HookCounts {
    /// The number of hooks.
    var total: Int { Int(before) + Int(instead) + Int(after) }

    /// Counts one more (`by` 1) or one less (-1) hook at `position`.
    mutating func add(_ by: Int32, at position: HookPosition) {
        switch position {
        case .before: before += by
        case .instead: instead += by
        case .after: after += by
        }
    }

    /// Where a hook of `position` goes: after the last hook of its position,
    /// or (`first`) before the first.
    func index(of position: HookPosition, first: Bool) -> Int {
        switch position {
        case .before: first ? 0 : Int(before)
        case .instead: first ? Int(before) : Int(before) + Int(instead)
        case .after: first ? Int(before) + Int(instead) : total
        }
    }
}
