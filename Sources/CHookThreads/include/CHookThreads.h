// CHookThreads: the per-thread state of the hook call path (frames, the
// reentrancy guard, serials), words written once and references that do not
// keep an object alive. Nothing here knows about libffi or Swift's types.
//
// The thread state is C because a `_Thread_local` read is a single
// segment-relative load, cheaper than pthread_getspecific, and because other
// threads read it with C11 atomics (see hk_points_active).
#ifndef CHOOKTHREADS_H
#define CHOOKTHREADS_H

#include <stdatomic.h>
#include <stdint.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

// MARK: - Per-thread hook state

// How many hook points may be active at once on one thread (nested hooks;
// a recursive function's calls each count). A call that would go deeper runs
// the original only, and so does a call nested past HK_SHALLOW_DEPTH where
// the thread's stack is near its end (see hk_thread_may_go_deeper); the first
// such call in the process says so on stderr.
#define HK_MAX_DEPTH 1024
// The depth up to which a frame is entered inline, with one test; deeper
// ones ask hk_thread_may_go_deeper first. (Each costs a typed closure
// call 3 instructions, call-counts' closure-typed: a path of the deep
// frames' own, or a call returning the frame, cost 4 to 8.)
#define HK_SHALLOW_DEPTH 64

typedef struct hk_thread {
  _Atomic(int) depth;
  // > 0 inside withoutHooks { }: every hook point runs its original only.
  int suppressed;
  // The depth below which a frame is entered inline: HK_SHALLOW_DEPTH, or 0
  // while suppressed (one test in hk_thread_enter for both).
  uint8_t limit;
  // hk_asymmetric_fence, copied at registration (made before any thread
  // registers, never changed): read where the thread's record is at hand.
  uint8_t asymmetric;
  // 0: the stack's floor is not known yet; 1: being found; 2: found
  // (stack_floor, 0 where the stack's bounds could not be had).
  uint8_t floor_state;
  // 1: the record shared by the threads that are registering or have exited
  // (hk_thread_register): limit 0, and nothing may write it (a
  // `withoutHooks` there restored a limit of 64 on it, and every thread
  // then entered frames on one record).
  uint8_t stand_in;
  // The deepest frame this record entered past HK_SHALLOW_DEPTH (what a
  // later thread that takes the record must clear).
  int deepest;
  // Below this address the thread's stack is near its end: calls nested
  // past HK_SHALLOW_DEPTH run their originals only (hk_thread_may_go_deeper).
  uintptr_t stack_floor;
  uint64_t next_serial;
  // While a key path is resolved to its hook point on this thread, where the
  // hooked setter or getter that the access reaches records its hook point
  // (see `PropertyHook.of`). NULL otherwise.
  void *probe;
  struct hk_thread *next;
  struct hk_thread *prev;
  // Hook points whose hooks are running on this thread, innermost last.
  // Written only by the owning thread; read by writers of other threads that
  // want to know whether an old snapshot of hooks may still be in use.
  // (After the scalars, which the call path reads: a record is mmap'd, and
  // the pages of frames no call went deep enough to use are never touched.)
  _Atomic(uintptr_t) active[HK_MAX_DEPTH];
  // A serial number for each active frame, so a CallBack can tell whether the
  // call it describes is still running.
  uint64_t serial[HK_MAX_DEPTH];
} hk_thread;

// Whether a frame may be entered at depth `depth` (below HK_MAX_DEPTH), past
// HK_SHALLOW_DEPTH (or while suppressed): not suppressed, and the stack not
// within a quarter of its size, at most 256 KiB, of its end.
__attribute__((cold)) int hk_thread_may_go_deeper(hk_thread *t, unsigned depth);
// A call refused for HK_MAX_DEPTH: says so on stderr, the first time in the
// process.
__attribute__((cold)) void hk_thread_too_deep(void);

// The calling thread's stack: its lowest address and its size (pthread's
// attributes; the main thread's from its resource limit). 0 if unknown.
// May allocate (the main thread's bounds are read from /proc).
int hk_stack_bounds(uintptr_t *low, size_t *size);

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

// Frame `d` taken, then announced. The depth first: a signal handler that
// interrupts the thread from here on takes the next frame. (Written after
// the frame's point and serial, one that came in between took frame `d` and
// left it cleared: the interrupted call ran its hooks with its point missing,
// no reentrancy guard and its snapshot free to go, and its record read serial
// 0, which made it live in any empty frame.) Then the serial, then the point
// with the fence the snapshot's load needs after it: a writer that saw the
// depth before the point reads the point too, both stores coming before the
// fence as the one store did.
static inline void hk_thread_claim_frame(hk_thread *t, unsigned d) {
  atomic_store_explicit(&t->depth, (int)d + 1, memory_order_relaxed);
  atomic_signal_fence(memory_order_seq_cst);
}
static inline void hk_thread_announce_frame(hk_thread *t, unsigned d, uintptr_t point) {
  if (t->asymmetric) {
    atomic_store_explicit(&t->active[d], point, memory_order_relaxed);
    atomic_signal_fence(memory_order_seq_cst);
  } else {
    atomic_store_explicit(&t->active[d], point, memory_order_seq_cst);
  }
}

// Whether a frame at `depth`, past HK_SHALLOW_DEPTH (or while suppressed), is
// refused (asked out of line).
static inline int hk_thread_refused_deep(hk_thread *t, unsigned depth) {
  if (depth >= HK_MAX_DEPTH) {
    hk_thread_too_deep();
    return 1;
  }
  return !hk_thread_may_go_deeper(t, depth);
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
  if (__builtin_expect(d >= t->limit, 0) && hk_thread_refused_deep(t, d)) return -1;
  __builtin_assume(d < HK_MAX_DEPTH);
  if (__builtin_expect(d != 0, 0)) {  // (none at depth 0: the common case)
    for (unsigned i = d; i > 0; i--) {
      // Exact match only: a frame tagged with bit 0 is running its original, not a hook.
      if (atomic_load_explicit(&t->active[i - 1], memory_order_relaxed) == point) return -1;
    }
  }
  hk_thread_claim_frame(t, d);
  t->serial[d] = ++t->next_serial;
  hk_thread_announce_frame(t, d, point);
  return (int)d;
}

// hk_thread_enter for a call that makes no record (a lone typed after hook):
// the frame gets no serial. Its serial stays 0, as every frame left has, so
// no record is live in it. (Its test is hk_thread_enter's, written out again:
// a shared helper returning the depth made a typed call longer: call-counts.sh.)
static inline int hk_thread_enter_unrecorded(hk_thread *t, uintptr_t point) {
  unsigned d = (unsigned)atomic_load_explicit(&t->depth, memory_order_relaxed);
  if (__builtin_expect(d >= t->limit, 0) && hk_thread_refused_deep(t, d)) return -1;
  __builtin_assume(d < HK_MAX_DEPTH);
  if (__builtin_expect(d != 0, 0)) {
    for (unsigned i = d; i > 0; i--) {
      if (atomic_load_explicit(&t->active[i - 1], memory_order_relaxed) == point) return -1;
    }
  }
  hk_thread_claim_frame(t, d);
  hk_thread_announce_frame(t, d, point);
  return (int)d;
}


// Like enter, but also succeeds when the point is already active: used by
// `withoutHooks(on:)`, which only needs the point marked.
static inline int hk_thread_push(hk_thread *t, uintptr_t point) {
  int d = atomic_load_explicit(&t->depth, memory_order_relaxed);
  if (d >= HK_MAX_DEPTH || t->stand_in) return -1;
  if (d > t->deepest) t->deepest = d;
  hk_thread_claim_frame(t, (unsigned)d);
  t->serial[d] = ++t->next_serial;
  hk_thread_announce_frame(t, (unsigned)d, point);
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
  if (t->stand_in) return;  // suppressed already: limit 0 for good
  t->suppressed++;
  t->limit = 0;
}
static inline void hk_thread_unsuppress(hk_thread *t) {
  if (t->stand_in) return;
  t->suppressed--;
  if (t->suppressed == 0) t->limit = HK_SHALLOW_DEPTH;
}

// The pending key-path probe of the calling thread, or NULL.
static inline void *hk_thread_probe(void) {
  hk_thread *t = hk_current_thread;
  return t ? t->probe : 0;
}
static inline void hk_thread_set_probe(hk_thread *t, void *probe) { if (!t->stand_in) t->probe = probe; }


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
// Whether the calling thread has a record of its own (tests).
int hk_thread_is_registered(void);

#ifdef __cplusplus
}
#endif
#endif
