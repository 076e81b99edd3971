import CHookThreads
import Synchronization

/// Hook snapshots that a hook change replaced, waiting until no call can be
/// reading them, shared by every hook point.
///
/// Why this is safe (see also `HookPoint`): a caller announces a hook point
/// in its thread's frames before it loads the point's snapshot, and leaves
/// the frame only after its last read of it. A snapshot is retired after the
/// exchange that unpublished it. `reclaim` first runs the heavy half of the
/// asymmetric fence (membarrier), which makes every announcement made before
/// that exchange visible, then scans the frames of every thread: a caller
/// that could still hold a retired snapshot is inside a frame of its point.
/// A snapshot whose point no thread is inside is unreachable and is freed;
/// the others stay for a later batch. Callers that enter afterwards load the
/// current snapshot, never a retired one.
///
/// Cost: retiring is a lock and an append. A batch runs when `threshold`
/// snapshots have gathered (one fence for all of them), so a hook change
/// makes no system call on the common path.
enum _Retired {
    struct Entry {
        let point: UInt
        /// A replaced snapshot (its memory) or a removed hook (+1), see `_Hooks.releaseRetired`.
        let bits: Int
    }

    struct List {
        var entries: [Entry] = []
        /// A batch runs when this many have gathered (doubles while many stay in use).
        var threshold = 64
    }

    private static let list = Mutex(List())
    private static let lockTag = LockTag()
    private final class LockTag: Sendable {}

    static func count(of point: UInt) -> Int {
        list.withVisibleLock(lockTag) { $0.entries.lazy.filter { $0.point == point }.count }
    }

    /// Retires the words `retired` of `point` (a replaced snapshot, removed
    /// hooks); may run a batch.
    static func add(_ retired: [Int], of point: UInt) {
        if addWithoutBatch(retired, of: point) { reclaim() }
    }

    /// Retires the words `retired` of `point`, and returns whether a batch
    /// is due (for a caller that runs it later, see `_DeferredReleases`).
    static func addWithoutBatch(_ retired: [Int], of point: UInt) -> Bool {
        list.withVisibleLock(lockTag) { list in
            for bits in retired { list.entries.append(Entry(point: point, bits: bits)) }
            return list.entries.count >= list.threshold
        }
    }

    /// Frees every retired snapshot that no call can be reading; returns how many.
    @discardableResult
    static func reclaim() -> Int {
        let freed: [Entry] = list.withVisibleLock(lockTag) { list in
            guard !list.entries.isEmpty else { return [] }
            var points = list.entries.map(\.point)
            var active = [UInt8](repeating: 0, count: points.count)
            _ = points.withUnsafeMutableBufferPointer { p in
                active.withUnsafeMutableBufferPointer { a in
                    hk_points_active(p.baseAddress, Int32(p.count), a.baseAddress)
                }
            }
            var freed: [Entry] = []
            var kept: [Entry] = []
            for (i, entry) in list.entries.enumerated() {
                if active[i] == 0 { freed.append(entry) } else { kept.append(entry) }
            }
            list.entries = kept
            list.threshold = Swift.max(64, kept.count * 2)
            points.removeAll()
            return freed
        }
        // Outside the lock: releasing hooks may run arbitrary deinit code.
        release(freed)
        return freed.count
    }

    /// A hook point deinitializes: no call of it is in flight, so its retired snapshots go now.
    static func forget(_ point: UInt) {
        let mine: [Entry] = list.withVisibleLock(lockTag) { list in
            var mine: [Entry] = []
            list.entries.removeAll { entry in
                guard entry.point == point else { return false }
                mine.append(entry)
                return true
            }
            return mine
        }
        release(mine)
    }

    private static func release(_ entries: [Entry]) {
        for entry in entries {
            _Hooks.releaseRetired(entry.bits)
        }
    }
}
