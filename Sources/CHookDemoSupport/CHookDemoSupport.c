#include "CHookDemoSupport.h"
#include <ffi.h>
#include <stdlib.h>

__attribute__((noinline)) int64_t demo_add(int64_t a, int64_t b) { return a + b; }

demo_binary_op demo_operations[1] = { demo_add };

int64_t demo_apply(int index, int64_t a, int64_t b) { return demo_operations[index](a, b); }

demo_binary_op demo_set_operation(int index, demo_binary_op op) {
  demo_binary_op old = demo_operations[index];
  demo_operations[index] = op;
  return old;
}

typedef struct {
  ffi_cif cif;
  ffi_type *args[2];
  void (*original)(void);
} passthrough;

static void passthrough_handler(ffi_cif *cif, void *ret, void **args, void *user_data) {
  passthrough *p = (passthrough *)user_data;
  ffi_call(&p->cif, p->original, ret, args);
}

void *demo_make_passthrough(void *original) {
  passthrough *p = calloc(1, sizeof(passthrough));
  if (!p) return NULL;
  p->args[0] = &ffi_type_sint64;
  p->args[1] = &ffi_type_sint64;
  p->original = (void (*)(void))original;
  if (ffi_prep_cif(&p->cif, FFI_DEFAULT_ABI, 2, &ffi_type_sint64, p->args) != FFI_OK) return NULL;
  void *code = NULL;
  ffi_closure *closure = ffi_closure_alloc(sizeof(ffi_closure), &code);
  if (!closure) return NULL;
  if (ffi_prep_closure_loc(closure, &p->cif, passthrough_handler, p, code) != FFI_OK) return NULL;
  return code;  // lives for the process, as the demo needs
}

int64_t demo_call_loop(demo_binary_op fn, int64_t iterations) {
  int64_t sum = 0;
  for (int64_t i = 0; i < iterations; i++) sum += fn(i, 1);
  return sum;
}
