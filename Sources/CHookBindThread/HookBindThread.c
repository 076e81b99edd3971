#define _GNU_SOURCE
#include <pthread.h>

#include "CHookBindThread.h"

_Thread_local void *hkb_binding_change __attribute__((tls_model("initial-exec"))) = 0;
_Thread_local void *hkb_lock_thread __attribute__((tls_model("initial-exec"))) = 0;
_Thread_local void *hkb_evaluating __attribute__((tls_model("initial-exec"))) = 0;
_Thread_local uintptr_t hkb_stack_floor __attribute__((tls_model("initial-exec"))) = 0;

void hkb_stack_floor_set(void) {
    pthread_attr_t attributes;
    if (pthread_getattr_np(pthread_self(), &attributes) != 0) return;
    void *low = 0;
    size_t size = 0;
    if (pthread_attr_getstack(&attributes, &low, &size) == 0 && low != 0) {
        size_t margin = size / 4 < 64 * 1024 ? size / 4 : 64 * 1024;
        hkb_stack_floor = (uintptr_t)low + margin;
    }
    pthread_attr_destroy(&attributes);
}
