#include "CBenchSupport.h"
#include <malloc.h>
#include <ffi.h>
#include <stdlib.h>

__attribute__((noinline)) int64_t bench_add(int64_t a, int64_t b) { return a + b; }

// The same function, for the entry-hook cases: patching its entry changes no other case.
// (Padded past the 5-byte jump: `add` alone compiles to 4 bytes in release.)
__attribute__((noinline)) int64_t bench_add_entry(int64_t a, int64_t b) {
  __asm__ volatile("nop; nop; nop; nop");
  return a + b;
}

__attribute__((noinline)) int64_t bench_mix(int64_t a, double b, bench_triple t, int32_t c, int64_t d) {
  return a + (int64_t)b + t.x + (int64_t)t.y + t.z + c + d;
}

typedef struct {
  ffi_cif cif;
  ffi_type *args[5];
  ffi_type triple;
  ffi_type *triple_elements[4];
  void (*original)(void);
} passthrough;

static void passthrough_handler(ffi_cif *cif, void *ret, void **args, void *user_data) {
  passthrough *p = (passthrough *)user_data;
  ffi_call(&p->cif, p->original, ret, args);
}

static void *make_closure(passthrough *p, unsigned count) {
  if (ffi_prep_cif(&p->cif, FFI_DEFAULT_ABI, count, &ffi_type_sint64, p->args) != FFI_OK) return NULL;
  void *code = NULL;
  ffi_closure *closure = ffi_closure_alloc(sizeof(ffi_closure), &code);
  if (!closure) return NULL;
  if (ffi_prep_closure_loc(closure, &p->cif, passthrough_handler, p, code) != FFI_OK) return NULL;
  return code;
}

void *bench_make_add_passthrough(void *original) {
  passthrough *p = calloc(1, sizeof(passthrough));
  if (!p) return NULL;
  p->args[0] = &ffi_type_sint64;
  p->args[1] = &ffi_type_sint64;
  p->original = (void (*)(void))original;
  return make_closure(p, 2);
}

void *bench_make_mix_passthrough(void *original) {
  passthrough *p = calloc(1, sizeof(passthrough));
  if (!p) return NULL;
  p->triple.type = FFI_TYPE_STRUCT;
  p->triple_elements[0] = &ffi_type_sint64;
  p->triple_elements[1] = &ffi_type_double;
  p->triple_elements[2] = &ffi_type_sint32;
  p->triple_elements[3] = NULL;
  p->triple.elements = p->triple_elements;
  p->args[0] = &ffi_type_sint64;
  p->args[1] = &ffi_type_double;
  p->args[2] = &p->triple;
  p->args[3] = &ffi_type_sint32;
  p->args[4] = &ffi_type_sint64;
  p->original = (void (*)(void))original;
  return make_closure(p, 5);
}

int64_t bench_call_loop(bench_binary_op fn, int64_t iterations) {
  int64_t sum = 0;
  for (int64_t i = 0; i < iterations; i++) sum += fn(i, 1);
  return sum;
}

int64_t bench_call_mix_loop(bench_mix_fn fn, int64_t iterations) {
  int64_t sum = 0;
  bench_triple t = {1, 2.0, 3};
  for (int64_t i = 0; i < iterations; i++) sum += fn(i, 0.5, t, 4, 5);
  return sum;
}

size_t bench_heap_in_use(void) { return mallinfo2().uordblks; }
