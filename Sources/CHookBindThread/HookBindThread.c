#include "CHookBindThread.h"

_Thread_local void *hkb_binding_change __attribute__((tls_model("initial-exec"))) = 0;
_Thread_local void *hkb_lock_thread __attribute__((tls_model("initial-exec"))) = 0;
_Thread_local void *hkb_evaluating __attribute__((tls_model("initial-exec"))) = 0;
