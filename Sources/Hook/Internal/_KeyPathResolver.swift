import CFFIShim
import Synchronization

/// A stored hook point of an object: what `@Hooked` and `@HookableMethod` keep.
protocol _HookPointStorage {
    var _hookPoint: HookPoint { get }
}

extension Hooked: _HookPointStorage {
    var _hookPoint: HookPoint { owned }
}

/// Finds the hook point behind a key path, and the name of a property or
/// method hook point.
///
/// Swift on Linux keeps no names in key paths, so the hook point behind
/// `\Model.title` is found by doing: the resolver leaves a probe in the
/// thread state, makes one access through the key path, and the hooked
/// setter (or method getter) that the access reaches records its hook point
/// in the probe instead of doing its work. The object's stored properties,
/// read by reflection, then name it ("_title" holds it: "title"), and the
/// name is remembered for the class and key path so that later lookups need
/// no access at all.
@usableFromInline
enum _KeyPathResolver {
    final class Probe {
        var found: HookPoint?
    }

    struct Key: Hashable, @unchecked Sendable {
        let type: ObjectIdentifier
        let keyPath: AnyKeyPath
    }

    /// Storage label ("_title") per class and key path; "" for a key path that names no hook point.
    private static let labels = Mutex<[Key: String]>([:])
    /// Names `labels`' lock to ThreadSanitizer.
    private static let lockTag = LockTag()
    final class LockTag: Sendable {}

    /// The hook points `object` stores, with their storage labels.
    static func candidates(of object: AnyObject) -> [(label: String, point: HookPoint)] {
        var found: [(label: String, point: HookPoint)] = []
        var mirror: Mirror? = Mirror(reflecting: object)
        while let current = mirror {
            for child in current.children {
                if let label = child.label, let storage = child.value as? _HookPointStorage {
                    found.append((label, storage._hookPoint))
                }
            }
            mirror = current.superclassMirror
        }
        return found
    }

    /// The property or method name of `point`, found among `object`'s stored properties.
    static func name(of point: HookPoint, in object: AnyObject) -> String? {
        candidates(of: object).first { $0.point === point }.map { displayName($0.label) }
    }

    static func displayName(_ label: String) -> String {
        label.hasPrefix("_") ? String(label.dropFirst()) : label
    }

    /// The hook point of type `P` that `keyPath` of `object` reaches, or nil.
    /// `access` makes the one access through the key path, given the candidates.
    static func resolve<Object: AnyObject, P: HookPoint>(
        _ object: Object, _ keyPath: AnyKeyPath, kind: String, access: ([HookPoint]) -> Void
    ) -> P? {
        let all = candidates(of: object).filter { $0.point is P }
        guard !all.isEmpty else { return nil }
        let key = Key(type: ObjectIdentifier(Object.self), keyPath: keyPath)
        if let label = labels.withVisibleLock(lockTag, { $0[key] }) {
            guard let entry = all.first(where: { $0.label == label }) else { return nil }
            entry.point.noteIdentity(target: object, name: displayName(label))
            return entry.point as? P
        }
        let probe = Probe()
        let thread = hk_thread_self()!
        let previous = hk_thread_probe()
        hk_thread_set_probe(thread, Unmanaged.passUnretained(probe).toOpaque())
        access(all.map(\.point))
        hk_thread_set_probe(thread, previous)
        // Only this object's own hook points were candidates, so a find is one of them.
        guard let found = probe.found,
              let entry = all.first(where: { $0.point === found }) else {
            labels.withVisibleLock(lockTag) { $0[key] = "" }
            return nil
        }
        labels.withVisibleLock(lockTag) { $0[key] = entry.label }
        found.noteIdentity(target: object, name: displayName(entry.label))
        return found as? P
    }

    /// Called by a hooked setter or method getter: if a probe is pending on
    /// this thread, records `point` and returns true (the access must do nothing else).
    @usableFromInline
    static func answerProbe(_ point: HookPoint) -> Bool {
        guard let raw = hk_thread_probe() else { return false }
        let probe = Unmanaged<Probe>.fromOpaque(raw).takeUnretainedValue()
        if probe.found == nil { probe.found = point }
        return true
    }
}
