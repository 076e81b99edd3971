// CFFIShim: libffi for Swift, plus the per-thread state of the hook call path.
//
// Nothing here knows about Swift. The thread state is C because a `_Thread_local`
// read is a single segment-relative load, cheaper than pthread_getspecific, and
// because other threads read it with C11 atomics (see hk_points_active).
#ifndef CFFISHIM_H
#define CFFISHIM_H

#include <ffi.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

// MARK: - libffi type descriptors

// The C scalar types, one number each, for Swift and C alike: `CType._scalarCode`
// (typed access compares types by it), the codes a hook point keeps per
// argument (hk_call_integer extends by them) and libffi's types (so Swift never
// touches libffi's mutable globals). 0: void, or no scalar.
typedef enum {
  HK_SCALAR_VOID = 0,
  HK_SCALAR_BOOL = 1,
  HK_SCALAR_INT8 = 2,
  HK_SCALAR_UINT8 = 3,
  HK_SCALAR_INT16 = 4,
  HK_SCALAR_UINT16 = 5,
  HK_SCALAR_INT32 = 6,
  HK_SCALAR_UINT32 = 7,
  HK_SCALAR_INT64 = 8,
  HK_SCALAR_UINT64 = 9,
  HK_SCALAR_FLOAT = 10,
  HK_SCALAR_DOUBLE = 11,
  HK_SCALAR_POINTER = 12,
} hk_scalar;

// libffi's type of a scalar (`bool` is uint8, as C passes it).
ffi_type *hk_ffi_scalar_type(hk_scalar kind);

// The ffi_abi values this libffi accepts, so the Swift side can name them.
int hk_ffi_default_abi(void);
int hk_ffi_first_abi(void);
int hk_ffi_last_abi(void);

// 1 where hk_call_integer can call a function (x86-64 System V), else 0.
int hk_direct_calls(void);

// Calls `fn` directly, without libffi, where every argument (at most 6) and
// the result are of the System V x86-64 INTEGER class (integers, bool,
// pointers): the arguments are read from `args` (libffi's view, a pointer to
// each value) by their scalar codes (hk_scalar: BOOL to UINT64, POINTER) and
// extended to a register as a C caller does; the result (code 0: void) is
// stored in `result` widened to 64 bits, as libffi stores a closure's result.
// Unused argument registers are passed as 0, which a callee ignores.
void hk_call_integer(const void *fn, void *const *args, const unsigned char *codes, int count,
                     unsigned char result_code, void *result);

// MARK: - Native entries

// A native entry: a C function of at most six INTEGER-class arguments (x86-64
// System V) that saves the six argument registers in order into six words on
// its stack and returns `handler(context, words)` in rax, without libffi. The
// code lies in a page that is written once and then made read-execute; the
// context and handler in a read-write page beside it (W^X-compatible). NULL
// when the system refuses the pages (errno says why) or off x86-64.
typedef uint64_t (*hk_native_handler)(void *context, uint64_t *registers);
void *hk_native_entry_make(hk_native_handler handler, void *context);
// Sets the context of an entry that no one calls yet.
void hk_native_entry_set_context(void *entry, void *context);
// Returns an entry to the pool; no call may be in flight.
void hk_native_entry_free(void *entry);

typedef uint64_t (*hk_register_function)(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t);

// Calls an INTEGER-class function with the six argument registers a native
// entry saved, unchanged (what the caller passed), and returns its rax.
static inline uint64_t hk_call_registers(const void *fn, const uint64_t *r) {
  return ((hk_register_function)fn)(r[0], r[1], r[2], r[3], r[4], r[5]);
}

// The exported symbol that starts exactly at `address`, or NULL (dladdr).
const char *hk_symbol_name(const void *address);

// MARK: - Per-thread hook state

// How many hook points may be active at once on one thread (nested hooks).
// A call that would go deeper runs the original only.
#define HK_MAX_DEPTH 64

typedef struct hk_thread {
  // Hook points whose hooks are running on this thread, innermost last.
  // Written only by the owning thread; read by writers of other threads that
  // want to know whether an old snapshot of hooks may still be in use.
  _Atomic(uintptr_t) active[HK_MAX_DEPTH];
  // A serial number for each active frame, so a CallBack can tell whether the
  // call it describes is still running.
  uint64_t serial[HK_MAX_DEPTH];
  _Atomic(int) depth;
  // > 0 inside withoutHooks { }: every hook point runs its original only.
  int suppressed;
  // The depth below which a frame may be entered: HK_MAX_DEPTH, or 0 while
  // suppressed (one test in hk_thread_enter for both).
  uint8_t limit;
  // hk_asymmetric_fence, copied at registration (made before any thread
  // registers, never changed): read where the thread's record is at hand.
  uint8_t asymmetric;
  uint64_t next_serial;
  // While a key path is resolved to its hook point on this thread, where the
  // hooked setter or getter that the access reaches records its hook point
  // (see `PropertyHook.of`). NULL otherwise.
  void *probe;
  // The change a binding (HookBind) is delivering on this thread, or NULL:
  // opaque here, owned by the outermost delivery's stack frame.
  void *binding_change;
  struct hk_thread *next;
  struct hk_thread *prev;
} hk_thread;

extern _Thread_local hk_thread *hk_current_thread
    __attribute__((tls_model("initial-exec")));

// Allocates and registers this thread's state (once per thread; at thread
// exit it is unregistered and kept for the next thread that registers).
hk_thread *hk_thread_register(void);

// This thread's state, or NULL if it never used a hook point.
static inline hk_thread *hk_thread_current(void) { return hk_current_thread; }

static inline hk_thread *hk_thread_self(void) {
  hk_thread *t = hk_current_thread;
  return t ? t : hk_thread_register();
}

// 1 once this process registered for expedited membarrier(2): then a frame is
// announced with a plain store, and a writer that needs the announcement to be
// visible issues the heavy half of the fence (see hk_points_active).
// 0: every announcement is a seq_cst store (an xchg on x86-64).
extern int hk_asymmetric_fence;

// Publishes frame depth `depth` so that it is ordered before any later load of
// the hook snapshot, as seen by a writer that runs hk_points_active.
static inline void hk_thread_publish_depth(hk_thread *t, int depth) {
  if (t->asymmetric) {
    atomic_store_explicit(&t->depth, depth, memory_order_relaxed);
    // The light half: the compiler keeps the store before the snapshot load;
    // the CPU's store buffer is drained by the writer's membarrier.
    atomic_signal_fence(memory_order_seq_cst);
  } else {
    atomic_store_explicit(&t->depth, depth, memory_order_seq_cst);
  }
}

// Marks `point` active on this thread. Returns the frame index, or -1 when the
// call must run the original only: hooks are suppressed, the point is already
// active on this thread (reentrancy), or the depth limit is reached.
// The announcement is ordered before any later load of the hook snapshot,
// which is what lets writers on other threads see it.
static inline int hk_thread_enter(hk_thread *t, uintptr_t point) {
  // Unsigned and capped first (suppressed: a cap of 0): the compiler then
  // knows the frame index is not negative, and callers' `frame >= 0` tests
  // fold away.
  unsigned d = (unsigned)atomic_load_explicit(&t->depth, memory_order_relaxed);
  if (d >= t->limit) return -1;
  if (__builtin_expect(d != 0, 0)) {  // (none at depth 0: the common case)
    for (unsigned i = d; i > 0; i--) {
      // Exact match only: a frame tagged with bit 0 is running its original, not a hook.
      if (atomic_load_explicit(&t->active[i - 1], memory_order_relaxed) == point) return -1;
    }
  }
  atomic_store_explicit(&t->active[d], point, memory_order_relaxed);
  t->serial[d] = ++t->next_serial;
  hk_thread_publish_depth(t, (int)d + 1);
  return (int)d;
}

// hk_thread_enter for a call that makes no record (a lone typed after hook):
// the frame gets no serial. Its serial stays 0, as every frame left has, so
// no record is live in it. (Its test is hk_thread_enter's, written out again:
// a shared helper returning the depth made a typed call longer: call-counts.sh.)
static inline int hk_thread_enter_unrecorded(hk_thread *t, uintptr_t point) {
  unsigned d = (unsigned)atomic_load_explicit(&t->depth, memory_order_relaxed);
  if (d >= t->limit) return -1;
  if (__builtin_expect(d != 0, 0)) {
    for (unsigned i = d; i > 0; i--) {
      if (atomic_load_explicit(&t->active[i - 1], memory_order_relaxed) == point) return -1;
    }
  }
  atomic_store_explicit(&t->active[d], point, memory_order_relaxed);
  hk_thread_publish_depth(t, (int)d + 1);
  return (int)d;
}


// Like enter, but also succeeds when the point is already active: used by
// `withoutHooks(on:)`, which only needs the point marked.
static inline int hk_thread_push(hk_thread *t, uintptr_t point) {
  int d = atomic_load_explicit(&t->depth, memory_order_relaxed);
  if (d >= HK_MAX_DEPTH) return -1;
  atomic_store_explicit(&t->active[d], point, memory_order_relaxed);
  t->serial[d] = ++t->next_serial;
  hk_thread_publish_depth(t, d + 1);
  return d;
}

// Ends the innermost frame. Release: everything the frame read of a snapshot
// happens before a writer that sees the frame gone frees that snapshot.
static inline void hk_thread_leave(hk_thread *t) {
  int d = atomic_load_explicit(&t->depth, memory_order_relaxed) - 1;
  t->serial[d] = 0;
  atomic_store_explicit(&t->active[d], 0, memory_order_release);
  atomic_store_explicit(&t->depth, d, memory_order_release);
}


// Leaves a frame entered by hk_thread_enter_unrecorded, the innermost (its
// serial is 0 already): the depth becomes its index.
static inline void hk_thread_leave_unrecorded(hk_thread *t, int frame) {
  atomic_store_explicit(&t->active[frame], 0, memory_order_release);
  atomic_store_explicit(&t->depth, frame, memory_order_release);
}

// hk_thread_leave for a caller that knows the frame's index (a call record):
// the innermost frame, so the depth becomes that index.
static inline void hk_thread_leave_frame(hk_thread *t, int frame) {
  t->serial[frame] = 0;
  hk_thread_leave_unrecorded(t, frame);
}

// The serial number of frame `index` of the calling thread.
static inline uint64_t hk_frame_serial(const hk_thread *t, int index) { return t->serial[index]; }

// While frame `index` runs the original (no hook of its point running), tag the
// point with bit 0: the frame still protects its snapshot from being freed, but a
// nested call of the same point (a recursive function) gets its hooks again.
static inline void hk_frame_set_running_original(hk_thread *t, int index, uintptr_t point, int running) {
  atomic_store_explicit(&t->active[index], running ? (point | 1) : point, memory_order_relaxed);
}

static inline int hk_thread_is_suppressed(hk_thread *t) { return t->suppressed > 0; }
// How many frames are active on this thread (its own state only).
static inline int hk_thread_depth(hk_thread *t) { return atomic_load_explicit(&t->depth, memory_order_relaxed); }
static inline void hk_thread_suppress(hk_thread *t) {
  t->suppressed++;
  t->limit = 0;
}
static inline void hk_thread_unsuppress(hk_thread *t) {
  t->suppressed--;
  if (t->suppressed == 0) t->limit = HK_MAX_DEPTH;
}

// The pending key-path probe of the calling thread, or NULL.
static inline void *hk_thread_probe(void) {
  hk_thread *t = hk_current_thread;
  return t ? t->probe : 0;
}
static inline void hk_thread_set_probe(hk_thread *t, void *probe) { t->probe = probe; }

// The binding change being delivered on the calling thread, or NULL.
static inline void *hk_thread_binding_change(void) {
  hk_thread *t = hk_current_thread;
  return t ? t->binding_change : 0;
}
static inline void hk_thread_set_binding_change(void *change) { hk_thread_self()->binding_change = change; }

// HookBind's record of the calling thread (its held locks and graph state), or
// NULL: one initial-exec TLS load, where a pthread key costs a call. Owned by
// HookBind, which clears it when the thread's record is released at exit.
extern _Thread_local void *hk_lock_thread __attribute__((tls_model("initial-exec")));
static inline void *hk_lock_thread_get(void) { return hk_lock_thread; }
static inline void hk_lock_thread_set(void *record) { hk_lock_thread = record; }

// Whether frame `index` with `serial` is still running on the calling thread.
// `t` and `index` are a call record's: a registered thread (non-null) and a
// frame it entered (0 ..< HK_MAX_DEPTH). Comparing the serial is enough: every
// frame entered gets a new one, and a frame left has 0 (the thread's record
// starts zeroed), so neither a returned call nor a later call at the same
// depth matches. Nor does a call of a later thread: an exited thread's record
// is kept, never freed, and the next thread to register takes it with its
// serials going on from where they stopped (see hk_thread_register), so a
// record's address and a serial name one frame for the life of the process.
static inline int hk_frame_is_live(const hk_thread *t, int index, uint64_t serial) {
  return hk_current_thread == t && t->serial[index] == serial;
}


// Which of `points` (count of them) some thread is inside a frame of, written
// to `active` (1 or 0 each); returns how many are. One fence (membarrier, when
// registered) and one scan of the registered threads serve the whole batch.
int hk_points_active(const uintptr_t *points, int count, unsigned char *active);

// MARK: - Words written once (a hook point made on first need)

// Loads the word at `address` (acquire: what was published with it is visible).
static inline uintptr_t hk_word_load(const void *address) {
  return atomic_load_explicit((_Atomic(uintptr_t) *)address, memory_order_acquire);
}

// Stores `desired` at `address` if it holds `expected`; returns what it held
// before (== expected on success). Acquire-release.
static inline uintptr_t hk_word_compare_exchange(void *address, uintptr_t expected, uintptr_t desired) {
  atomic_compare_exchange_strong_explicit((_Atomic(uintptr_t) *)address, &expected, desired,
                                          memory_order_acq_rel, memory_order_acquire);
  return expected;
}

// MARK: - An object a hook point names without a weak reference

// A +1 strong reference to `object` if it is not deinitializing, else NULL.
// `object`'s memory must be kept (an unowned reference does that): a weak
// reference would give the object a side table, and every later retain and
// release of it would take the runtime's slow path.
void *hk_object_try_retain(void *object);
// An unowned reference: keeps `object`'s memory, not the object (swift_unownedRetain / Release).
void hk_object_keep_memory(void *object);
void hk_object_drop_memory(void *object);


// Tell ThreadSanitizer about synchronization it cannot see: Swift's
// Synchronization.Mutex locks with atomics and futex calls made inside the
// (uninstrumented) standard library. No-ops unless this target is built with
// -fsanitize=thread.
void hk_tsan_acquire(void *address);
void hk_tsan_release(void *address);

// Number of threads with registered hook state (for tests and diagnostics).
int hk_registered_thread_count(void);


// MARK: - Import slots (ImportSlots.c)
//
// The places through which loaded ELF objects reach an imported function: GOT
// slots (R_X86_64_JUMP_SLOT, R_X86_64_GLOB_DAT, and R_X86_64_64 data pointers
// with addend 0) and the defining object's dynamic symbol-table entry, which
// dlsym, dlvsym and the relocation of objects loaded later read. Every write is
// one atomic 8-byte store, made inside dl_iterate_phdr for an object the loader
// still lists; a page in the object's RELRO range (or any page that is not
// writable) is made writable for the store and given back the protection
// /proc/self/maps listed. Nothing is allocated inside dl_iterate_phdr.

enum {
  HK_SLOT_SYMBOL = 0,     // st_value of the definition in the dynamic symbol table
  HK_SLOT_ABSOLUTE = 1,   // R_X86_64_64: a function pointer in data
  HK_SLOT_GLOB_DAT = 6,   // R_X86_64_GLOB_DAT: an address-taken import
  HK_SLOT_JUMP = 7        // R_X86_64_JUMP_SLOT: a PLT call
};

typedef struct {
  void *address;               // the 8-byte slot
  void *previous;              // what it held before (for HK_SLOT_SYMBOL: st_value)
  void *current;               // filled by hk_import_read
  uintptr_t object_base;       // dlpi_addr (l_addr) of the object that holds it
  const void *object_dynamic;  // and its PT_DYNAMIC (l_ld): together, the object's identity
  const char *object_name;     // malloc'd copy of dlpi_name ("" for the program; NULL if out of memory)
  int kind;                    // HK_SLOT_*
  unsigned char previous_info; // st_info of a symbol entry
  unsigned char unprotected;   // the page was read-only and made writable for the store
  unsigned char live;          // the object was loaded at the last walk
  unsigned char restored;      // hk_import_restore put the previous value back
} hk_import_slot;

typedef struct {
  const char *symbol;
  void *original;                  // the real function (dlsym)
  void *replacement;               // the hook's entry
  const uintptr_t *excluded_bases; // objects never patched (Hook's image, libffi): l_addr
  const void *const *excluded_dynamics; // and l_ld of each
  size_t excluded_count;
  const char *const *scope;        // object names (full path or file name); NULL: every object
  size_t scope_count;
  int patch_definition;            // also point the definition's symbol-table entry at replacement
  uintptr_t definition_base;       // the object that defines original: l_addr
  const void *definition_dynamic;  // and l_ld
  int refuse_protection_change;    // test seam: mprotect fails with EACCES
  int dry_run;                     // write nothing: count imports, list the slots holding replacement
  int restore_loader_bound;        // hk_import_restore: also every unlisted slot holding replacement
} hk_import_request;

enum {
  HK_IMPORT_ERROR_PROTECTION = 1, // mprotect refused (error: its errno)
  HK_IMPORT_ERROR_UNMAPPED = 2,   // /proc/self/maps could not be read or lists no mapping there
  HK_IMPORT_ERROR_MEMORY = 3      // malloc failed outside the walk (error: ENOMEM)
};

typedef struct {
  hk_import_slot *slots;   // slots written by the operation (malloc'd)
  size_t count, capacity;
  size_t objects;          // loaded objects with a dynamic section
  size_t objects_in_scope; // of those, in scope and not excluded
  size_t imports;          // relocations naming the symbol in the objects in scope
  size_t bound_elsewhere;  // slots bound to another definition, left alone
  int error;               // errno of the failure (0: none)
  int error_kind;          // HK_IMPORT_ERROR_*
  void *error_address;
  char error_object[256];
} hk_import_outcome;

// Points every slot naming request->symbol in the objects in scope at
// replacement, and records what each held. -1 if a page could not be unprotected
// (outcome->error); the slots written before stay in outcome.
int hk_import_patch(const hk_import_request *request, hk_import_outcome *outcome);

// Puts back the previous value of each of `slots` that still holds the
// replacement in an object still loaded (sets live and restored); with
// request->restore_loader_bound, then points every other slot (outside the
// excluded objects) that holds the replacement back at the original (those
// are added to outcome). Scope is ignored.
int hk_import_restore(const hk_import_request *request, hk_import_slot *slots, size_t count,
                      hk_import_outcome *outcome);

// Sets live and current of each slot (current only when live).
void hk_import_read(hk_import_slot *slots, size_t count);

void hk_import_outcome_free(hk_import_outcome *outcome);
void hk_import_slot_free_name(hk_import_slot *slot);

// The protection (PROT_*) of the mapping holding `address`, from /proc/self/maps; -1 if unmapped.
int hk_import_page_protection(const void *address);

// The base of the object holding `address`, and the ELF type (STT_*) of the
// symbol that starts exactly there or -1. 0 if no object holds it.
int hk_import_describe(const void *address, uintptr_t *base, int *type);
// The identity of the object holding `address`, as dl_iterate_phdr sees it:
// its link map's l_addr (the load bias, dlpi_addr) and l_ld. 0 if none holds it.
int hk_import_image(const void *address, uintptr_t *base, const void **dynamic);
uintptr_t hk_import_image_base(const void *address);
// The object holding this shim (and the Hook code linked with it), and libffi.
int hk_import_own_image(uintptr_t *base, const void **dynamic);
int hk_import_libffi_image(uintptr_t *base, const void **dynamic);
uintptr_t hk_import_own_image_base(void);
// Nonzero while this thread is inside a dl_iterate_phdr callback of the shim (tests).
int hk_import_walking(void);
// dlsym(RTLD_DEFAULT, symbol) and dlvsym(RTLD_DEFAULT, symbol, version).
void *hk_import_lookup(const char *symbol);
void *hk_import_lookup_version(const char *symbol, const char *version);

#ifdef __cplusplus
}
#endif
#endif
