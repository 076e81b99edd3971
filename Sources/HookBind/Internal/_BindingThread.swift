import CHookBindThread

/// HookBind's state of the calling thread: one thread-local load each
/// (CHookBindThread), kept out of Hook's thread record.
@usableFromInline
enum _BindingThread {
    /// The change a binding is delivering on the calling thread: an opaque
    /// pointer owned by the outermost delivery on this thread, or nil.
    static var change: UnsafeMutableRawPointer? {
        @inline(__always) get { hkb_binding_change_get() }
        @inline(__always) set { hkb_binding_change_set(newValue) }
    }

    /// HookBind's record of the calling thread (`_LockThread`), or nil. Set
    /// when the record is made, cleared when it is released at the thread's exit.
    @usableFromInline
    static var lockThread: UnsafeMutableRawPointer? {
        @inlinable @inline(__always) get { hkb_lock_thread_get() }
        set { hkb_lock_thread_set(newValue) }
    }

    /// The computed evaluating innermost on the calling thread (its core,
    /// unretained: it evaluates), or nil. The enclosing ones are kept by
    /// the evaluations themselves, on the stack (see
    /// `_ComputedCore.evaluate`). (A thread-local word of its own: a read
    /// inside an evaluation asks it first, in one load, where the thread's
    /// record and its graph state were two more.)
    @usableFromInline
    static var evaluating: Unmanaged<_ComputedCore>? {
        @inlinable @inline(__always) get { hkb_evaluating_get().map { Unmanaged.fromOpaque($0) } }
        @inline(__always) set { hkb_evaluating_set(newValue?.toOpaque()) }
    }

    /// What the innermost evaluation on the calling thread recorded last
    /// (the source's address), or nil: cleared when an evaluation begins
    /// and when it ends (an enclosing one then finds its own last read the
    /// longer way). A read of it again is known in one compare: a computed
    /// that read one value 30 times asked the last evaluation's reads for
    /// each, 19 instructions a read. Set only for a read the evaluation
    /// knows (the next of its last reads, or one it recorded): such a
    /// source is held, and kept alive by the evaluation's lists, so its
    /// address is no other's while it is here.
    /// (Its bits, 0 for none: compared as an optional pointer, the word
    /// cost 7 instructions a read, a test of nil and two flags combined.)
    @usableFromInline
    static var lastRead: UInt {
        @inlinable @inline(__always) get { hkb_last_read_get() }
        @inlinable @inline(__always) set { hkb_last_read_set(newValue) }
    }

    /// Whether the calling thread's stack is near its end (within a
    /// quarter of it, at most 64 KiB): one thread-local load and the frame
    /// pointer (CHookBindThread's `hkb_stack_floor`, set with the thread's
    /// record; never near where it is unknown).
    static var stackIsLow: Bool {
        @inline(__always) get { hkb_stack_is_low() != 0 }
    }

    /// Sets the calling thread's stack floor (`stackIsLow`), once, when
    /// its record is made.
    static func setStackFloor() { hkb_stack_floor_set() }
}
