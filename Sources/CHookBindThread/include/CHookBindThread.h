// CHookBindThread: HookBind's per-thread state, one initial-exec TLS load
// each (a pthread key would cost a call). Opaque here; HookBind owns them all.
#ifndef CHOOKBINDTHREAD_H
#define CHOOKBINDTHREAD_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// The change a binding is delivering on this thread, or NULL: owned by the
// outermost delivery's stack frame.
extern _Thread_local void *hkb_binding_change __attribute__((tls_model("initial-exec")));
static inline void *hkb_binding_change_get(void) { return hkb_binding_change; }
static inline void hkb_binding_change_set(void *change) { hkb_binding_change = change; }

// HookBind's record of the calling thread (its held locks and graph state), or
// NULL. HookBind clears it when the thread's record is released at exit.
extern _Thread_local void *hkb_lock_thread __attribute__((tls_model("initial-exec")));
static inline void *hkb_lock_thread_get(void) { return hkb_lock_thread; }
static inline void hkb_lock_thread_set(void *record) { hkb_lock_thread = record; }

// The computed evaluating innermost on this thread (its core), or NULL: set
// and restored by the evaluation's stack frame. A word of its own, not a field
// of the thread's record: a read inside an evaluation finds it in one load.
extern _Thread_local void *hkb_evaluating __attribute__((tls_model("initial-exec")));
static inline void *hkb_evaluating_get(void) { return hkb_evaluating; }
static inline void hkb_evaluating_set(void *core) { hkb_evaluating = core; }

// The value the innermost evaluation on this thread read last (its source's
// address), or NULL: cleared when an evaluation begins and ends, so a read of
// the same value again is known in one compare (a computed that reads one
// value many times). Set only to a value the evaluation knows it read.
// (An integer, 0 for none: as a pointer, Swift compared it as an optional.)
extern _Thread_local uintptr_t hkb_last_read __attribute__((tls_model("initial-exec")));
static inline uintptr_t hkb_last_read_get(void) { return hkb_last_read; }
static inline void hkb_last_read_set(uintptr_t source) { hkb_last_read = source; }

// The address below which the calling thread's stack is too near its end for
// HookBind's marking to recurse further (it lists what is left instead), or 0
// where unknown. Set with the thread's record (hkb_stack_floor_set).
extern _Thread_local uintptr_t hkb_stack_floor __attribute__((tls_model("initial-exec")));
// Whether the caller's frame is below the floor (one thread-local load).
static inline int hkb_stack_is_low(void) {
    return (uintptr_t)__builtin_frame_address(0) < hkb_stack_floor;
}
// Sets the floor of the calling thread: the end of its stack (pthread's
// attributes) plus a margin, a quarter of the stack up to 64 KiB.
void hkb_stack_floor_set(void);

#ifdef __cplusplus
}
#endif
#endif
