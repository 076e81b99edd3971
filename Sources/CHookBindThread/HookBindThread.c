#include "CHookBindThread.h"
#include "CHookThreads.h"

_Thread_local void *hkb_binding_change __attribute__((tls_model("initial-exec"))) = 0;
_Thread_local void *hkb_lock_thread __attribute__((tls_model("initial-exec"))) = 0;
_Thread_local void *hkb_evaluating __attribute__((tls_model("initial-exec"))) = 0;
_Thread_local uintptr_t hkb_last_read __attribute__((tls_model("initial-exec"))) = 0;
_Thread_local uintptr_t hkb_stack_floor __attribute__((tls_model("initial-exec"))) = 0;

void hkb_stack_floor_set(void) {
  uintptr_t low;
  size_t size;
  if (hk_stack_bounds(&low, &size)) hkb_stack_floor = low + (size / 4 < 64 * 1024 ? size / 4 : 64 * 1024);
}
