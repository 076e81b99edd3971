// The C side of the benchmarks: what is hooked, the floor, and the callers.
#ifndef CBENCHSUPPORT_H
#define CBENCHSUPPORT_H
#include <stddef.h>
#include <stdint.h>

// int64_t add(int64_t, int64_t): the function every C case calls.
int64_t bench_add(int64_t a, int64_t b);
typedef int64_t (*bench_binary_op)(int64_t, int64_t);
// The same, hooked at its entry by the entry/ cases only.
int64_t bench_add_entry(int64_t a, int64_t b);

// A 24-byte struct passed by value, and a 5-argument function taking it.
typedef struct { int64_t x; double y; int32_t z; } bench_triple;
int64_t bench_mix(int64_t a, double b, bench_triple t, int32_t c, int64_t d);
typedef int64_t (*bench_mix_fn)(int64_t, double, bench_triple, int32_t, int64_t);

// The floor of any libffi hook design: a libffi closure with the original's
// signature whose handler only calls the original with ffi_call. NULL if
// libffi refuses. Lives for the process.
void *bench_make_add_passthrough(void *original);
void *bench_make_mix_passthrough(void *original);

// Call `fn` `iterations` times from C and return the sum, so that every
// pointer is called the same way.
int64_t bench_call_loop(bench_binary_op fn, int64_t iterations);
int64_t bench_call_mix_loop(bench_mix_fn fn, int64_t iterations);

// Bytes of the heap in use (glibc's mallinfo2), for the footprint cases.
size_t bench_heap_in_use(void);

#endif
