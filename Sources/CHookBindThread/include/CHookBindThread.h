// CHookBindThread: HookBind's per-thread state, one initial-exec TLS load
// each (a pthread key would cost a call). Opaque here; HookBind owns all three.
#ifndef CHOOKBINDTHREAD_H
#define CHOOKBINDTHREAD_H

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

#ifdef __cplusplus
}
#endif
#endif
