import CFFIShim
import Synchronization

/// Holds a hook point's hooks: a mutable list for writers, an immutable snapshot for callers.
///
/// How a snapshot stays valid while calls are in flight, with no lock and no
/// reference counting on the call path:
///
/// 1. A caller first announces itself in its thread's frame stack
///    (`hk_thread_enter`, a seq_cst store), then loads the snapshot (seq_cst).
/// 2. A writer swaps in a new snapshot (seq_cst exchange), keeps the old one in
///    `retired`, then asks `hk_point_is_active_anywhere` whether any thread is
///    inside a frame of this hook point.
/// 3. By the total order of seq_cst operations, a caller that loaded the old
///    snapshot announced itself before the exchange, so the writer sees it. If
///    no thread is inside, nothing can hold a retired snapshot and they are
///    released; otherwise they wait for a later write or for `deinit`.
///
/// The writer side takes a `Mutex`; the call path only loads atomics.
final class _HookSlot: @unchecked Sendable {
    private struct State {
        var lists = _HookLists()
        var nextID: UInt64 = 1
        var retired: [_HookSnapshot] = []
        var errorHandler: (@Sendable (any Error, HookPosition) -> Void)?
    }

    /// The current snapshot, as the bit pattern of a +1 `Unmanaged`, or 0 when
    /// no hook is attached.
    private let current = Atomic<Int>(0)
    private let state = Mutex(State())
    /// The identity the hook point's frames carry in the thread state.
    @inline(__always)
    var pointID: UInt { UInt(bitPattern: ObjectIdentifier(self)) }

    init() {}

    deinit {
        // By the hook point's contract no call is in flight any more.
        let bits = current.load(ordering: .acquiring)
        if bits != 0 {
            Unmanaged<_HookSnapshot>.fromOpaque(UnsafeRawPointer(bitPattern: bits)!).release()
        }
    }

    /// Whether any hook is attached (a racy hint for the call path's fast exit).
    @inline(__always)
    var hasHooks: Bool { current.load(ordering: .relaxed) != 0 }

    /// Loads the snapshot. Call only inside a frame of this hook point.
    @inline(__always)
    func loadSnapshot() -> Unmanaged<_HookSnapshot>? {
        let bits = current.load(ordering: .sequentiallyConsistent)
        guard bits != 0 else { return nil }
        return Unmanaged.fromOpaque(UnsafeRawPointer(bitPattern: bits)!)
    }

    func add(_ body: @escaping HookBody, at position: HookPosition) -> UInt64 {
        var id: UInt64 = 0
        update { state in
            id = state.nextID
            state.nextID += 1
            state.lists.append(_HookEntry(id: id, body: body), at: position)
        }
        return id
    }

    func remove(id: UInt64) {
        update { state in _ = state.lists.remove(id: id) }
    }

    func removeAll() {
        update { state in state.lists = _HookLists() }
    }

    var count: Int { state.withLock { $0.lists.count } }

    var errorHandler: (@Sendable (any Error, HookPosition) -> Void)? {
        get { state.withLock { $0.errorHandler } }
        set { state.withLock { $0.errorHandler = newValue } }
    }

    /// Applies `change`, publishes a new snapshot, and frees old snapshots
    /// when no call can be using them. Freed hooks are released outside the
    /// lock, since releasing a closure may run arbitrary deinit code.
    private func update(_ change: (inout State) -> Void) {
        let released: [_HookSnapshot] = state.withLock { state in
            change(&state)
            let newBits: Int
            if state.lists.isEmpty {
                newBits = 0
            } else {
                let snapshot = _HookSnapshot(state.lists)
                newBits = Int(bitPattern: Unmanaged.passRetained(snapshot).toOpaque())
            }
            let oldBits = current.exchange(newBits, ordering: .sequentiallyConsistent)
            if oldBits != 0 {
                state.retired.append(Unmanaged<_HookSnapshot>.fromOpaque(UnsafeRawPointer(bitPattern: oldBits)!).takeRetainedValue())
            }
            guard !state.retired.isEmpty, hk_point_is_active_anywhere(pointID) == 0 else { return [] }
            defer { state.retired = [] }
            return state.retired
        }
        _ = released
    }

    /// Reports an error thrown by a hook: to the handler, or to standard error.
    func report(_ error: any Error, at position: HookPosition, point name: String) {
        if let handler = errorHandler {
            handler(error, position)
        } else {
            let message = "Hook: a \(position) hook of '\(name)' threw: \(error)\n"
            FileHandleStandardError.write(message)
        }
    }
}
