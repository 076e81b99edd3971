@_spi(Reflection) import Swift
import CHookThreads
import Synchronization


/// Finds the hook point behind a key path, and the name of a property or
/// method hook point.
///
/// `@Hooked` properties: what a class's fields are (label, offset, type) is
/// read once per class with the runtime's field reflection. Swift on Linux
/// keeps no names in key paths, so which field `\Model.title` sets is found
/// by doing, once per class and key path: the resolver makes the hook points
/// of the object's `Hooked` fields of that value type, leaves a probe in the
/// thread state, makes one set through the key path, and the setter that the
/// set reaches records its hook point in the probe instead of storing. The
/// field's offset is remembered, so a lookup on any other object of the
/// class is a dictionary lookup and a load at that offset: no reflection, no
/// set. `@HookableMethod` storage is found the same way, its getter answering the probe.
@usableFromInline
enum _KeyPathResolver {
    final class Probe {
        var found: HookPoint?
    }

    struct Key: Hashable, @unchecked Sendable {
        let type: ObjectIdentifier
        let keyPath: AnyKeyPath
    }


    /// Names the resolver's locks to ThreadSanitizer.
    private static let lockTag = LockTag()
    final class LockTag: Sendable {}

    /// A stored field of a class that holds a `Hooked` value.
    struct Field {
        let label: String
        let offset: Int
        let type: Any.Type
    }

    /// `Hooked` fields per class (superclasses' included), read once per class.
    private static let fields = Mutex<[ObjectIdentifier: [Field]]>([:])
    /// Offset of the `Hooked` storage per (class, key path); -1: the key path names none.
    private static let offsets = Mutex<[Key: Int]>([:])

    static func hookedFields(of type: AnyClass) -> [Field] {
        let id = ObjectIdentifier(type)
        if let known = fields.withVisibleLock(lockTag, slot: 1, { $0[id] }) { return known }
        var found: [Field] = []
        // `.classType`, spelled by its raw value: Swift 6 calls the static var unsafe.
        _forEachField(of: type, options: _EachFieldOptions(rawValue: 1 << 0)) { name, offset, fieldType, _ in
            if fieldType is _AnyHooked.Type || fieldType is _AnyHookableMethod.Type {
                found.append(Field(label: String(cString: name), offset: offset, type: fieldType))
            }
            return true
        }
        fields.withVisibleLock(lockTag, slot: 1) { $0[id] = found }
        return found
    }

    /// The property name of the `Hooked` field at `offset` of `type`.
    static func label(at offset: Int, in type: AnyClass) -> String? {
        hookedFields(of: type).first { $0.offset == offset }.map { displayName($0.label) }
    }

    /// Looks up by the identity of the key path object first (a key path
    /// literal is one object per place it is written; `_OffsetTable`, no
    /// lock, no hashing of components), then by equality.
    private static func knownOffset(_ key: Key) -> Int? {
        if let offset = _OffsetTable.find(key.type, key.keyPath) { return offset }
        guard let offset = offsets.withVisibleLock(lockTag, slot: 2, { $0[key] }) else { return nil }
        _OffsetTable.insert(key.type, key.keyPath, offset: offset)
        return offset
    }

    private static func remember(_ key: Key, _ offset: Int) {
        offsets.withVisibleLock(lockTag, slot: 2) { $0[key] = offset }
        _OffsetTable.insert(key.type, key.keyPath, offset: offset)
    }

    /// The hook point of the `@Hooked` property that `keyPath` sets, made if
    /// needed; nil if the key path names no `@Hooked` property of this type.
    static func propertyPoint<Object: AnyObject, Value>(_ object: Object, _ keyPath: ReferenceWritableKeyPath<Object, Value>) -> PropertyHook<Value>? {
        // The common case first: no key to build, no reference counting.
        if let offset = _OffsetTable.find(ObjectIdentifier(Object.self), keyPath) {
            return offset < 0 ? nil : _HookedCell<Value>.point(in: object, cellOffset: offset)
        }
        let key = Key(type: ObjectIdentifier(Object.self), keyPath: keyPath)
        if let offset = knownOffset(key) {
            return offset < 0 ? nil : _HookedCell<Value>.point(in: object, cellOffset: offset)
        }
        let candidates = hookedFields(of: type(of: object)).filter { $0.type == Hooked<Value>.self }
            .map { _HookedCell<Value>.point(in: object, cellOffset: $0.offset) }
        guard !candidates.isEmpty else {
            remember(key, -1)
            return nil
        }
        let probed = probe(candidates) { object[keyPath: keyPath] = object[keyPath: keyPath] }
        guard let found = candidates.first(where: { $0 === probed }) else {
            remember(key, -1)
            return nil
        }
        remember(key, found.cellOffset)
        return found
    }

    /// The hook point of the `@HookableMethod` that `keyPath` reads, made if
    /// needed; nil if it names none of this type. Learnt once per class and
    /// key path as for properties, by a probe the method's getter answers.
    static func methodPoint<Object: AnyObject, each A, R>(
        _ object: Object, _ keyPath: KeyPath<Object, (repeat each A) -> R>
    ) -> MethodHook<repeat each A, R>? {
        let key = Key(type: ObjectIdentifier(Object.self), keyPath: keyPath)
        if let offset = knownOffset(key) {
            guard offset >= 0,
                  let field = hookedFields(of: type(of: object)).first(where: { $0.offset == offset }),
                  let maker = field.type as? _AnyHookableMethod.Type else { return nil }
            return maker._point(in: object, cellOffset: offset) as? MethodHook<repeat each A, R>
        }
        let candidates = hookedFields(of: type(of: object)).compactMap { field in
            (field.type as? _AnyHookableMethod.Type).map { ($0._point(in: object, cellOffset: field.offset), field.offset) }
        }
        guard !candidates.isEmpty else {
            remember(key, -1)
            return nil
        }
        // Through AnyKeyPath: generic code cannot hold a value of a variadic function type.
        let probed = probe(candidates.map(\.0)) { _ = object[keyPath: keyPath as AnyKeyPath] }
        guard let found = candidates.first(where: { $0.0 === probed }), let typed = found.0 as? MethodHook<repeat each A, R> else {
            remember(key, -1)
            return nil
        }
        remember(key, found.1)
        return typed
    }

    /// The offset of a stored property in `object` (a `Hooked` or
    /// `HookableMethod` storage, for the `$name` projections and unoptimized
    /// accessors), remembered per class and key path: the first time, the key
    /// path projects the property in place.
    static func cellOffset<Object: AnyObject, Cell>(_ object: Object, _ storage: ReferenceWritableKeyPath<Object, Cell>) -> Int {
        if let offset = _OffsetTable.find(ObjectIdentifier(Object.self), storage) { return offset }
        let base = Unmanaged.passUnretained(object).toOpaque()
        let offset = withUnsafeMutablePointer(to: &object[keyPath: storage]) { UnsafeMutableRawPointer($0) - base }
        remember(Key(type: ObjectIdentifier(Object.self), keyPath: storage), offset)
        return offset
    }

    /// The address of the `Hooked` storage at `storage` in `object` (the
    /// accessors of an unoptimized build, where a key path access allocates).
    @usableFromInline
    static func cell<Object: AnyObject, Value>(_ object: Object, _ storage: ReferenceWritableKeyPath<Object, Hooked<Value>>) -> UnsafeMutablePointer<Hooked<Value>> {
        (Unmanaged.passUnretained(object).toOpaque() + cellOffset(object, storage)).assumingMemoryBound(to: Hooked<Value>.self)
    }

    /// What the user wrote, as far as a key path on Linux tells, without
    /// addresses: `\Person.plain` where Swift names a stored property (a
    /// final class's); otherwise the class, the value type and the class's
    /// stored properties of that type (`\BNode.<a (Int) -> Int property:
    /// transform or another>`), as a key path through a getter names only its
    /// address.
    static func describe(_ keyPath: AnyKeyPath, of type: AnyClass, valueType: Any.Type) -> String {
        let written = "\(keyPath)"
        guard written.contains("<computed 0x") else { return written }
        var labels: [String] = []
        // Superclasses' fields included, as in `hookedFields(of:)`.
        _forEachField(of: type, options: _EachFieldOptions(rawValue: 1 << 0)) { name, _, fieldType, _ in
            if fieldType == valueType { labels.append(displayName(String(cString: name))) }
            return true
        }
        let candidates = labels.isEmpty ? "no stored property of \(type) has that type"
            : labels.count == 1 ? "\(labels[0]), or a computed one"
            : "one of \(labels.joined(separator: ", ")), or a computed one"
        return "\\\(type).<a \(valueType) property: \(candidates)>"
    }

    static func displayName(_ label: String) -> String {
        label.hasPrefix("_") ? String(label.dropFirst()) : label
    }

    /// Makes `access` with a probe pending on this thread and every candidate
    /// marked probing (its setter or getter takes the slow path, which answers
    /// the probe instead of doing its work); returns the hook point that answered.
    private static func probe(_ candidates: [HookPoint], _ access: () -> Void) -> HookPoint? {
        let probe = Probe()
        let thread = hk_thread_self()!
        let previous = hk_thread_probe()
        for candidate in candidates { candidate.setProbing(true) }
        hk_thread_set_probe(thread, Unmanaged.passUnretained(probe).toOpaque())
        access()
        hk_thread_set_probe(thread, previous)
        for candidate in candidates { candidate.setProbing(false) }
        return probe.found
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

/// Offsets of named stored fields, per class, read by field reflection once
/// and kept in `_OffsetTable` under the name's static address (found
/// without a lock, no string made per lookup): `_hookableFieldAddress`.
enum _FieldOffsets {
    static func offset(of field: StaticString, in type: AnyClass) -> Int {
        let id = ObjectIdentifier(type)
        if let offset = _OffsetTable.find(id, field: field) { return offset }
        let wanted = field.description
        var found: Int?
        // `.classType`, spelled by its raw value (see `hookedFields`).
        _forEachField(of: type, options: _EachFieldOptions(rawValue: 1 << 0)) { name, offset, _, _ in
            if String(cString: name) == wanted { found = offset }
            return found == nil
        }
        guard let found else { preconditionFailure("\(type) has no stored field \(wanted)") }
        _OffsetTable.insert(id, field: field, offset: found)
        return found
    }
}
