// Real C functions whose ABI the Hook tests exercise, and a malloc counter.
//
// Every function records the arguments it saw in thread-local storage (tests
// run in parallel; a hooked call runs on the caller's thread), readable with
// the matching abi_seen_* accessor.
#ifndef CHOOKTESTSUPPORT_H
#define CHOOKTESTSUPPORT_H
#include <stdbool.h>
#include <stdint.h>
// System libraries whose imported calls the ImportHook tests observe.
#include <sqlite3.h>
#include <zlib.h>
#include <stddef.h>

// malloc_usable_size, which <malloc.h> declares only for C.
size_t hk_test_usable_size(void *pointer);
// Bytes of the heap this thread's allocations hold, in glibc's chunks
// (usable size + 8), less those it freed (0 under a sanitizer).
int64_t hk_test_thread_heap_bytes(void);

// MARK: scalars: T abi_NAME(T a, T b), recording a and b.
#define ABI_SCALAR_DECL(NAME, T) \
  T abi_##NAME(T a, T b); \
  T abi_seen_##NAME(int index);
ABI_SCALAR_DECL(bool, bool)
ABI_SCALAR_DECL(i8, int8_t)
ABI_SCALAR_DECL(u8, uint8_t)
ABI_SCALAR_DECL(i16, int16_t)
ABI_SCALAR_DECL(u16, uint16_t)
ABI_SCALAR_DECL(i32, int32_t)
ABI_SCALAR_DECL(u32, uint32_t)
ABI_SCALAR_DECL(i64, int64_t)
ABI_SCALAR_DECL(u64, uint64_t)
ABI_SCALAR_DECL(float, float)
ABI_SCALAR_DECL(double, double)
ABI_SCALAR_DECL(ptr, void *)

// Integer-class arguments of every width, six (all in registers) and seven
// (one on the stack): the sum, each extended by its own type.
int64_t abi_six_ints(int8_t a, uint16_t b, int32_t c, bool d, const void *e, int64_t f);
int64_t abi_seven_ints(int8_t a, uint16_t b, int32_t c, bool d, const void *e, int64_t f, int16_t g);
int8_t abi_narrow_result(int32_t a);
// Calls `fn`, of abi_six_ints's type, leaving garbage in bits 32-63 of the narrow arguments' registers.
int64_t abi_call_six_ints_dirty(const void *fn, int8_t a, uint16_t b, int32_t c, bool d, const void *e, int64_t f);

// MARK: structs by value, 1 to 64 bytes, mixed integer and floating members.
typedef struct { int8_t a; } S1;
typedef struct { uint8_t b[3]; } S3;
typedef struct { int8_t a; uint8_t b; int16_t c; } S4;
typedef struct { float f; int32_t i; } S8;
typedef struct { float x; float y; } S8F;
typedef struct { float x, y, z; } S12F;
typedef struct { int16_t a[3]; uint8_t b; float c; } S12A;
typedef struct { int32_t a; float b; double c; } S16;
typedef struct { double d; int64_t i; } S16DI;
typedef struct { S8F p; S8F q; } S16N;
typedef struct { int64_t a; double b; int8_t c; } S24;
typedef struct { S8 inner; double d; int16_t s; } S24N;
typedef struct { uint16_t u; S12F f; int64_t l; uint8_t t[5]; double d; } S40;
typedef struct { double d[4]; int64_t i[3]; float f; uint32_t u; } S64;

// S abi_struct_S(S a, int32_t tag, S b): records a, tag and b; returns b (so a
// caller that swapped a and b, or lost the tag between them, is caught).
#define ABI_STRUCT_DECL(S) \
  S abi_struct_##S(S a, int32_t tag, S b); \
  S abi_seen_##S(int index); \
  int32_t abi_seen_##S##_tag(void);
ABI_STRUCT_DECL(S1)
ABI_STRUCT_DECL(S3)
ABI_STRUCT_DECL(S4)
ABI_STRUCT_DECL(S8)
ABI_STRUCT_DECL(S8F)
ABI_STRUCT_DECL(S12F)
ABI_STRUCT_DECL(S12A)
ABI_STRUCT_DECL(S16)
ABI_STRUCT_DECL(S16DI)
ABI_STRUCT_DECL(S16N)
ABI_STRUCT_DECL(S24)
ABI_STRUCT_DECL(S24N)
ABI_STRUCT_DECL(S40)
ABI_STRUCT_DECL(S64)

// MARK: 16 arguments: 7 integers and 9 floating values, so some go on the stack.
typedef struct {
  int32_t a0; double a1; float a2; int64_t a3; uint8_t a4; double a5; float a6; int16_t a7;
  double a8; int32_t a9; float a10; double a11; uint64_t a12; double a13; float a14; int8_t a15;
} Many;
double abi_many(int32_t a0, double a1, float a2, int64_t a3, uint8_t a4, double a5, float a6, int16_t a7,
                double a8, int32_t a9, float a10, double a11, uint64_t a12, double a13, float a14, int8_t a15);
Many abi_seen_many(void);

// MARK: libffi 3.4.4 x86-64 ffi_call bug (fixed upstream in d21881f5): a struct
// {INTEGER, SSE} in the sixth integer register after a double overwrote xmm0.
typedef struct { int64_t i; double d; } SID;
double abi_sixth_register(uint8_t a, uint8_t b, uint8_t c, uint8_t d, uint8_t e, double x, SID m);
double abi_seen_sixth_register_x(void);
SID abi_seen_sixth_register_m(void);

// MARK: void result, pointers.
void abi_void(int32_t a, double b);
int32_t abi_seen_void_a(void);
double abi_seen_void_b(void);
int abi_void_calls(void);

// Returns base + strlen(text); records both.
const char *abi_pointer_offset(const char *base, const char *text);

// MARK: the Microsoft x64 calling convention (ABI.win64).
__attribute__((ms_abi)) int64_t abi_ms_mix(int32_t a, double b, S24 s, int64_t c, float d);

// MARK: plain functions for behaviour tests.
int32_t test_add(int32_t a, int32_t b);
int64_t test_counter_calls(void);
int32_t test_counted_add(int32_t a, int32_t b); // counts its calls (thread-local)

// MARK: malloc counting (per thread). Unavailable under ASan/TSan, which own malloc.
bool hk_test_malloc_counting_available(void);
uint64_t hk_test_malloc_count(void);
uint64_t hk_test_free_count(void);  // frees of non-null pointers on this thread

// MARK: errno
// Fails as a libc call does: errno = code, -1.
int32_t hk_errno_fail(int32_t code);
// Succeeds and leaves errno alone (as strtol does): x + 1.
int32_t hk_errno_keep(int32_t x);
// hk_errno_fail through libffi's entry (a double argument).
double hk_errno_fail_double(double code);
// hk_errno_fail for an entry hook (of its own: other tests call hk_errno_fail meanwhile).
int32_t hk_errno_fail_entry(int32_t code);
// Calls hk_errno_fail_entry(code) directly (no pointer) and returns the errno it saw after.
int32_t hk_errno_call_fail(int32_t code);

// MARK: thread exit
// Runs a thread that calls call(1), then, from the destructor of a key made
// now (after the hook machinery's own), call(2) as it exits; returns what
// registered() said right after that last call.
int32_t hk_test_call_at_thread_exit(int32_t (*call)(int32_t), int32_t (*registered)(void));

// MARK: signal storm
// Installs a SIGUSR2 handler that calls call(0) and starts a thread that
// sends SIGUSR2 to `target` (a thread id, gettid) as fast as it can, until
// hk_test_signal_storm_stop, which returns how many times the handler ran.
// Call it on the target thread (it unblocks SIGUSR2 there).
void hk_test_signal_storm_start(int32_t target, int32_t (*call)(int32_t));
int64_t hk_test_signal_storm_stop(void);
int64_t hk_test_signal_storm_handled(void);
// The calling thread's id (gettid).
int32_t hk_test_thread_id(void);

// MARK: entry hooks
// Calls a `static` function of the same file directly (x * 3 + 1, then + 1000).
int64_t entry_call_static_scale(int64_t x);
// x * 2 + 1, counting every run of its body.
int64_t entry_target(int64_t x);
int64_t entry_target_run_count(void);
// Calls entry_target(from ..< from + count) directly; returns how many results were wrong.
int64_t entry_call_target_loop(int64_t from, int64_t count);
// Calls entry_target(0 ..< count) while a 100 µs timer's handler calls it too (this thread's);
// returns the wrong results, and in *handled the handler's calls.
int64_t entry_call_target_under_signals(int64_t count, int64_t *handled);
// Functions the relocator must refuse, and one it must relocate (in assembly).
int32_t entry_too_short(void);
int64_t entry_with_loop(int64_t n);
int32_t entry_branch_inside(int32_t n);
// Two functions, one jumping 3 bytes into the other's body (as mempcpy into memmove).
int64_t entry_second_door(int64_t a, int64_t b, int64_t c);  // a + b (c < 64), else c
int64_t entry_two_doors(int64_t a, int64_t b, int64_t c);    // a (c < 64), else c
int64_t entry_far_target(int64_t x);            // x + 1
int64_t entry_far_door(int64_t x, int64_t y);   // y + 1, by a 32-bit jump into entry_far_target
int64_t entry_spin(int64_t n, int64_t y);       // a loop in its first 5 bytes; y
int64_t entry_loop_head(int64_t n, int64_t y, int64_t z);  // z + n * y, a loop back to its first instruction
int64_t entry_rip_relative(int64_t x);   // entry_global + x
int32_t entry_calls_first(int32_t x);    // x + 1, by a call its first bytes make
const void *entry_call_returns_to(void); // where that call's callee last returned to
int32_t entry_calls_through_slot(int32_t x);  // the same, by `call *slot(%rip)`
// callee(x), by `call *%rax` after a 3-byte move: the last displaced instruction.
int32_t entry_calls_through_register(int32_t x, int32_t (*callee)(int32_t));
// callee(x), by `call *%rsi` at the entry: the jump would split it.
int32_t entry_calls_first_through_register(int32_t x, int32_t (*callee)(int32_t));
typedef struct { int32_t cells[2][3]; } grid;
// The sum of cells[i][j] * (3i + j + 1).
int32_t grid_sum(grid g);
// x * 3: hooked, restored and hooked again with other types.
int64_t entry_replaced_target(int64_t x);
// The callee entry_calls_first calls (x + 1; records its return address).
int32_t entry_call_callee(int32_t x);
extern int64_t entry_global;
// Returns x; hooked at its entry by HookBind's tests.
int64_t entry_for_binding(int64_t x);

// MARK: the model tests' originals (HookModelTests)
// Both report each run to `log` and return 2x + 1 (wrapping), or, for a
// positive multiple of 7 (three levels deep at most), themselves at x - 1,
// plus 1: `hk_model_original` through `recurse` (a hooked entry),
// `hk_model_patched` by a direct call (its entry is hooked).
void hk_model_set(void (*log)(int64_t), int64_t (*recurse)(int64_t));
int64_t hk_model_original(int64_t x);
int64_t hk_model_patched(int64_t x);
// The threaded model's originals: 2x + 1 (wrapping), through a hooked entry
// and hooked at their entry; and a log of the calling thread (up to 64).
int64_t hk_threads_original(int64_t x);
int64_t hk_threads_patched(int64_t x);
void hk_thread_log_push(int64_t value);
// Copies the calling thread's log to `out` (room for 64), empties it, and
// returns how many values it held.
int hk_thread_log_take(int64_t *out);

// MARK: patch round
// The entry patch's protocol with other threads (EntryPatchRoundTests).

// x * 5 + 2: what those tests hook.
int64_t patch_round_target(int64_t x);
// Starts a thread named `name` (15 bytes at most) that blocks
// every signal, then calls a function of its own (never hooked) every
// millisecond, asleep in between; returns its thread id once it blocks them.
// Its signal mask counts in the calling thread's patches only, until it
// stops (hk_entry_test_private_thread): it would refuse the patches of the
// tests running beside. Call both on the same thread.
int patch_round_blocker_start(const char *name);
// Stops it and waits for it; returns how many turns it made.
int64_t patch_round_blocker_stop(void);
// Starts a thread that sleeps `milliseconds` in one nanosleep (blocking
// every signal but SIGPROF and those an instruction raises); returns once it
// is about to sleep (0), or -1.
int patch_round_sleeper_start(int64_t milliseconds);
// Waits for it; returns 0 if the sleep ran its course, else nanosleep's
// errno (EINTR: a signal cut it short, with `*left_ns` of it left).
int patch_round_sleeper_join(int64_t *left_ns);

#endif
