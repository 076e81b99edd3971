#define _GNU_SOURCE
#include "CHookTestSupport.h"
#include <pthread.h>
#include <signal.h>
#include <sys/time.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <stdatomic.h>

#define ABI_SCALAR_DEF(NAME, T, EXPR) \
  static _Thread_local T seen_##NAME[2]; \
  __attribute__((noinline)) T abi_##NAME(T a, T b) { seen_##NAME[0] = a; seen_##NAME[1] = b; return EXPR; } \
  T abi_seen_##NAME(int index) { return seen_##NAME[index]; }

ABI_SCALAR_DEF(bool, bool, a != b)
ABI_SCALAR_DEF(i8, int8_t, (int8_t)(a - b))
ABI_SCALAR_DEF(u8, uint8_t, (uint8_t)(a - b))
ABI_SCALAR_DEF(i16, int16_t, (int16_t)(a - b))
ABI_SCALAR_DEF(u16, uint16_t, (uint16_t)(a - b))
ABI_SCALAR_DEF(i32, int32_t, (int32_t)((uint32_t)a - (uint32_t)b))
ABI_SCALAR_DEF(u32, uint32_t, a - b)
ABI_SCALAR_DEF(i64, int64_t, (int64_t)((uint64_t)a - (uint64_t)b))
ABI_SCALAR_DEF(u64, uint64_t, a - b)
ABI_SCALAR_DEF(float, float, a - b)
ABI_SCALAR_DEF(double, double, a - b)
ABI_SCALAR_DEF(ptr, void *, (void *)((char *)b + 1))

// Structs: return b, so a caller that mixed up a and b (or the tag) is caught.
#define ABI_STRUCT_DEF(S) \
  static _Thread_local S seen_##S[2]; \
  static _Thread_local int32_t seen_##S##_tag; \
  __attribute__((noinline)) S abi_struct_##S(S a, int32_t tag, S b) { \
    seen_##S[0] = a; seen_##S[1] = b; seen_##S##_tag = tag; return b; } \
  S abi_seen_##S(int index) { return seen_##S[index]; } \
  int32_t abi_seen_##S##_tag(void) { return seen_##S##_tag; }

ABI_STRUCT_DEF(S1)
ABI_STRUCT_DEF(S3)
ABI_STRUCT_DEF(S4)
ABI_STRUCT_DEF(S8)
ABI_STRUCT_DEF(S8F)
ABI_STRUCT_DEF(S12F)
ABI_STRUCT_DEF(S12A)
ABI_STRUCT_DEF(S16)
ABI_STRUCT_DEF(S16DI)
ABI_STRUCT_DEF(S16N)
ABI_STRUCT_DEF(S24)
ABI_STRUCT_DEF(S24N)
ABI_STRUCT_DEF(S40)
ABI_STRUCT_DEF(S64)

static _Thread_local Many seen_many;
__attribute__((noinline)) double abi_many(int32_t a0, double a1, float a2, int64_t a3, uint8_t a4, double a5, float a6, int16_t a7,
                double a8, int32_t a9, float a10, double a11, uint64_t a12, double a13, float a14, int8_t a15) {
  Many m = { a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15 };
  seen_many = m;
  return a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11 + (double)a12 + a13 + a14 + a15;
}
Many abi_seen_many(void) { return seen_many; }

static _Thread_local double seen_sixth_x;
static _Thread_local SID seen_sixth_m;
__attribute__((noinline)) double abi_sixth_register(uint8_t a, uint8_t b, uint8_t c, uint8_t d, uint8_t e, double x, SID m) {
  seen_sixth_x = x; seen_sixth_m = m; return x + m.d + (double)m.i + a + b + c + d + e;
}
double abi_seen_sixth_register_x(void) { return seen_sixth_x; }
SID abi_seen_sixth_register_m(void) { return seen_sixth_m; }

static _Thread_local int32_t seen_void_a;
static _Thread_local double seen_void_b;
static _Thread_local int void_calls;
__attribute__((noinline)) void abi_void(int32_t a, double b) { seen_void_a = a; seen_void_b = b; void_calls++; }
int32_t abi_seen_void_a(void) { return seen_void_a; }
double abi_seen_void_b(void) { return seen_void_b; }
int abi_void_calls(void) { return void_calls; }

__attribute__((noinline)) const char *abi_pointer_offset(const char *base, const char *text) { return base + strlen(text); }

__attribute__((ms_abi, noinline)) int64_t abi_ms_mix(int32_t a, double b, S24 s, int64_t c, float d) {
  return a + (int64_t)b + s.a + (int64_t)s.b + s.c + c + (int64_t)d;
}

__attribute__((noinline)) int32_t test_add(int32_t a, int32_t b) { return a + b; }

static _Thread_local int64_t counted_calls;
__attribute__((noinline)) int32_t test_counted_add(int32_t a, int32_t b) { counted_calls++; return a + b; }
int64_t test_counter_calls(void) { return counted_calls; }

// MARK: malloc counting

#if defined(__has_feature)
#  if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#    define HK_SANITIZED 1
#  endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#  define HK_SANITIZED 1
#endif

#include <malloc.h>
#ifndef HK_SANITIZED
// Replaces glibc's allocator entry points (glibc documents this as supported)
// and forwards to glibc's own implementation, counting calls per thread.
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

static _Thread_local uint64_t malloc_count __attribute__((tls_model("initial-exec")));
static _Thread_local uint64_t free_count __attribute__((tls_model("initial-exec")));
// The heap this thread's allocations hold, in glibc's chunks (usable size + 8),
// less what it freed: unlike mallinfo2, other threads' allocations do not count.
static _Thread_local int64_t heap_bytes __attribute__((tls_model("initial-exec")));

static inline int64_t chunk_of(void *p) { return p ? (int64_t)malloc_usable_size(p) + 8 : 0; }
static inline void *counted(void *p) {
  heap_bytes += chunk_of(p);
  return p;
}

void *malloc(size_t size) { malloc_count++; return counted(__libc_malloc(size)); }
void *calloc(size_t n, size_t size) { malloc_count++; return counted(__libc_calloc(n, size)); }
void *realloc(void *p, size_t size) {
  malloc_count++;
  int64_t before = chunk_of(p);
  void *q = __libc_realloc(p, size);
  if (q || size == 0) heap_bytes -= before;
  return counted(q);
}
void free(void *p) {
  if (p) free_count++;
  heap_bytes -= chunk_of(p);
  __libc_free(p);
}
void *memalign(size_t alignment, size_t size) { malloc_count++; return counted(__libc_memalign(alignment, size)); }
void *aligned_alloc(size_t alignment, size_t size) { malloc_count++; return counted(__libc_memalign(alignment, size)); }
int posix_memalign(void **out, size_t alignment, size_t size) {
  if (alignment % sizeof(void *) != 0 || (alignment & (alignment - 1)) != 0) return EINVAL;
  malloc_count++;
  void *p = counted(__libc_memalign(alignment, size));
  if (!p) return ENOMEM;
  *out = p;
  return 0;
}
int64_t hk_test_thread_heap_bytes(void) { return heap_bytes; }
bool hk_test_malloc_counting_available(void) { return true; }
uint64_t hk_test_malloc_count(void) { return malloc_count; }
uint64_t hk_test_free_count(void) { return free_count; }
#else
bool hk_test_malloc_counting_available(void) { return false; }
uint64_t hk_test_malloc_count(void) { return 0; }
uint64_t hk_test_free_count(void) { return 0; }
int64_t hk_test_thread_heap_bytes(void) { return 0; }
#endif

#include <malloc.h>
size_t hk_test_usable_size(void *pointer) { return pointer ? malloc_usable_size(pointer) : 0; }

__attribute__((noinline)) int64_t abi_six_ints(int8_t a, uint16_t b, int32_t c, bool d, const void *e, int64_t f) {
  return (int64_t)a + (int64_t)b + (int64_t)c + (int64_t)d + (int64_t)(intptr_t)e + f;
}
__attribute__((noinline)) int64_t abi_seven_ints(int8_t a, uint16_t b, int32_t c, bool d, const void *e, int64_t f, int16_t g) {
  return abi_six_ints(a, b, c, d, e, f) + (int64_t)g;
}
// A narrow result computed so that the register's upper bits are not its sign.
__attribute__((noinline)) int8_t abi_narrow_result(int32_t a) { return (int8_t)(a * 3); }

// MARK: errno

__attribute__((noinline)) int32_t hk_errno_fail(int32_t code) {
  errno = code;
  return -1;
}
__attribute__((noinline)) int32_t hk_errno_keep(int32_t x) { return x + 1; }
__attribute__((noinline)) double hk_errno_fail_double(double code) {
  errno = (int)code;
  return -1;
}
__attribute__((noinline)) int32_t hk_errno_fail_entry(int32_t code) {
  errno = code;
  return -1;
}
int32_t hk_errno_call_fail(int32_t code) {
  errno = 0;
  hk_errno_fail_entry(code);
  return errno;
}

// MARK: thread exit

static pthread_key_t exit_test_key;
static int32_t (*exit_test_call)(int32_t);
static int32_t (*exit_test_registered)(void);
static int32_t exit_test_result;

static void exit_test_destructor(void *value) {
  (void)value;
  exit_test_call(2);
  exit_test_result = exit_test_registered();
}

static void *exit_test_thread(void *argument) {
  (void)argument;
  exit_test_call(1);
  pthread_setspecific(exit_test_key, (void *)1);
  return NULL;
}

int32_t hk_test_call_at_thread_exit(int32_t (*call)(int32_t), int32_t (*registered)(void)) {
  exit_test_call = call;
  exit_test_registered = registered;
  exit_test_result = -1;
  if (pthread_key_create(&exit_test_key, exit_test_destructor) != 0) return -2;
  pthread_t thread;
  if (pthread_create(&thread, NULL, exit_test_thread, NULL) != 0) return -3;
  pthread_join(thread, NULL);
  pthread_key_delete(exit_test_key);
  return exit_test_result;
}

// MARK: signal storm

static int32_t (*storm_call)(int32_t);
static _Atomic int64_t storm_handled;
static _Atomic int storm_running;
static _Atomic int32_t storm_target;
static pthread_t storm_thread;

static void storm_handler(int signal) {
  (void)signal;
  int saved = errno;
  storm_call(0);
  atomic_fetch_add_explicit(&storm_handled, 1, memory_order_relaxed);
  errno = saved;
}

static void *storm_sender(void *argument) {
  (void)argument;
  pid_t pid = getpid();
  while (atomic_load_explicit(&storm_running, memory_order_relaxed)) {
    syscall(SYS_tgkill, pid, atomic_load(&storm_target), SIGUSR2);
  }
  return NULL;
}

void hk_test_signal_storm_start(int32_t target, int32_t (*call)(int32_t)) {
  storm_call = call;
  atomic_store(&storm_handled, 0);
  atomic_store(&storm_target, target);
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = storm_handler;
  action.sa_flags = SA_RESTART;
  sigaction(SIGUSR2, &action, NULL);
  // (The target is the calling thread, which may have it blocked.)
  sigset_t unblocked;
  sigemptyset(&unblocked);
  sigaddset(&unblocked, SIGUSR2);
  pthread_sigmask(SIG_UNBLOCK, &unblocked, NULL);
  atomic_store(&storm_running, 1);
  pthread_create(&storm_thread, NULL, storm_sender, NULL);
}

int64_t hk_test_signal_storm_stop(void) {
  atomic_store(&storm_running, 0);
  pthread_join(storm_thread, NULL);
  // Signals still pending are dropped: the entry the handler calls may go.
  signal(SIGUSR2, SIG_IGN);
  return atomic_load(&storm_handled);
}

int64_t hk_test_signal_storm_handled(void) { return atomic_load(&storm_handled); }

int32_t hk_test_thread_id(void) { return (int32_t)syscall(SYS_gettid); }

// MARK: entry hooks

// A `static` function, called directly by another function of this file: no
// PLT, no GOT, no export. An entry hook finds it by name in the program's
// .symtab. (`used`, `noinline`: the compiler keeps it a function of its own.)
static __attribute__((noinline, used)) int64_t entry_static_scale(int64_t x) {
  int64_t y = x * 3;
  return y + 1;
}
int64_t entry_call_static_scale(int64_t x) { return entry_static_scale(x) + 1000; }

// Counts every run of its body (all threads): a call that went through a
// hook and one that did not each run it once.
static _Atomic int64_t entry_target_runs;
__attribute__((noinline)) int64_t entry_target(int64_t x) {
  atomic_fetch_add_explicit(&entry_target_runs, 1, memory_order_relaxed);
  return x * 2 + 1;
}
int64_t entry_target_run_count(void) { return atomic_load(&entry_target_runs); }

// Calls entry_target in a loop from C (a direct call: no pointer); returns
// how many results were wrong.
int64_t entry_call_target_loop(int64_t from, int64_t count) {
  int64_t wrong = 0;
  for (int64_t i = from; i < from + count; i++) {
    if (entry_target(i) != i * 2 + 1) wrong++;
  }
  return wrong;
}

// Calls entry_target(0 ..< count) directly while a timer's signal every
// 100 µs calls it too, from its handler; returns how many results were
// wrong, and in *handled how many calls the handler made. The timer signals
// this thread only (SIGEV_THREAD_ID: the test process's other threads run
// other tests), and a signal still pending when it stops is discarded
// (SIG_IGN) before the old action comes back: the default action of
// SIGALRM ends the process.
static volatile int64_t signal_wrong, signal_calls;
static void signal_calls_target(int signal) {
  (void)signal;
  int64_t x = 1000000 + signal_calls;
  if (entry_target(x) != x * 2 + 1) signal_wrong++;
  signal_calls++;
}
int64_t entry_call_target_under_signals(int64_t count, int64_t *handled) {
  struct sigaction action, old, ignore;
  memset(&action, 0, sizeof action);
  action.sa_handler = signal_calls_target;
  sigaction(SIGALRM, &action, &old);
  sigset_t alarm_only;
  sigemptyset(&alarm_only);
  sigaddset(&alarm_only, SIGALRM);
  pthread_sigmask(SIG_UNBLOCK, &alarm_only, NULL);
  signal_wrong = 0;
  signal_calls = 0;
  struct sigevent event;
  memset(&event, 0, sizeof event);
  event.sigev_notify = SIGEV_THREAD_ID;
  event.sigev_signo = SIGALRM;
  event._sigev_un._tid = (pid_t)syscall(SYS_gettid);
  timer_t timer;
  int64_t wrong = 0;
  if (timer_create(CLOCK_MONOTONIC, &event, &timer) != 0) {
    sigaction(SIGALRM, &old, NULL);
    *handled = 0;
    return -1;
  }
  struct itimerspec every = {{0, 100000}, {0, 100000}};
  timer_settime(timer, 0, &every, NULL);
  for (int64_t i = 0; i < count; i++) {
    if (entry_target(i) != i * 2 + 1) wrong++;
  }
  timer_delete(timer);
  memset(&ignore, 0, sizeof ignore);
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGALRM, &ignore, NULL);
  sigaction(SIGALRM, &old, NULL);
  *handled = signal_calls;
  return wrong + signal_wrong;
}

// Shorter than the 5-byte jump (a `ret` at +1 after `xor eax, eax`), in
// assembly so that no compiler setting gives it a prologue.
__asm__(".text\n.globl entry_too_short\n.type entry_too_short, @function\n"
        "entry_too_short:\n xorl %eax, %eax\n ret\n.size entry_too_short, .-entry_too_short\n");

// A `loop` in its first bytes: a short branch with no long form.
__asm__(".text\n.globl entry_with_loop\n.type entry_with_loop, @function\n"
        "entry_with_loop:\n movq %rdi, %rcx\n1:\n loop 1b\n movq %rdi, %rax\n ret\n"
        ".size entry_with_loop, .-entry_with_loop\n");

// A branch back into its first 5 bytes: the jump would split an instruction it lands on.
__asm__(".text\n.globl entry_branch_inside\n.type entry_branch_inside, @function\n"
        "entry_branch_inside:\n xorl %eax, %eax\n2:\n incl %eax\n incl %eax\n cmpl %edi, %eax\n jl 2b\n ret\n"
        ".size entry_branch_inside, .-entry_branch_inside\n");

// Two doors into one body, as glibc's mempcpy jumps 3 bytes into memmove:
// entry_second_door(a, b, c) = a + b (c < 64, else c) by a short jump past
// entry_two_doors' first instruction; entry_two_doors(a, b, c) = a (or c).
__asm__(".text\n.globl entry_second_door\n.type entry_second_door, @function\n"
        "entry_second_door:\n movq %rdi, %rax\n addq %rsi, %rax\n jmp entry_two_doors_in\n"
        ".size entry_second_door, .-entry_second_door\n"
        ".p2align 4\n.globl entry_two_doors\n.type entry_two_doors, @function\n"
        "entry_two_doors:\n movq %rdi, %rax\nentry_two_doors_in:\n cmpq $0x40, %rdx\n jb 1f\n movq %rdx, %rax\n1:\n ret\n"
        ".size entry_two_doors, .-entry_two_doors\n");

// The same from 300 bytes away (a 32-bit jump): entry_far_target(x) = x + 1,
// entry_far_door(x, y) = y + 1 through its second instruction.
__asm__(".text\n.p2align 4\n.globl entry_far_target\n.type entry_far_target, @function\n"
        "entry_far_target:\n movq %rdi, %rax\nentry_far_target_in:\n addq $1, %rax\n ret\n"
        ".size entry_far_target, .-entry_far_target\n"
        ".skip 300, 0xcc\n"
        ".globl entry_far_door\n.type entry_far_door, @function\n"
        "entry_far_door:\n movq %rsi, %rax\n jmp entry_far_target_in\n"
        ".size entry_far_door, .-entry_far_door\n");

// A loop in its first 5 bytes, back to its first instruction:
// entry_spin(n, y) counts n down, then returns y.
__asm__(".text\n.globl entry_spin\n.type entry_spin, @function\n"
        "entry_spin:\n decq %rdi\n jnz entry_spin\n movq %rsi, %rax\n ret\n"
        ".size entry_spin, .-entry_spin\n");

// A loop whose head is its first instruction, closed past the displaced
// bytes: entry_loop_head(n, y, z) = z + n * y (n >= 1).
__asm__(".text\n.globl entry_loop_head\n.type entry_loop_head, @function\n"
        "entry_loop_head:\n addq %rsi, %rdx\n decq %rdi\n jnz entry_loop_head\n movq %rdx, %rax\n ret\n"
        ".size entry_loop_head, .-entry_loop_head\n");

// The first instruction is RIP-relative (a load of a global), the second a
// call: both relocated into the stub.
int64_t entry_global = 40;
__asm__(".text\n.globl entry_rip_relative\n.type entry_rip_relative, @function\n"
        "entry_rip_relative:\n movq entry_global(%rip), %rax\n addq %rdi, %rax\n ret\n"
        ".size entry_rip_relative, .-entry_rip_relative\n");

// Its displaced bytes end with a call (as -O1 compiles a function that only
// calls another: push, call, pop, ret): the callee sees where it returns.
static const void *entry_call_return;
__attribute__((noinline, used)) int32_t entry_call_callee(int32_t x) {
  entry_call_return = __builtin_return_address(0);
  return x + 1;
}
__asm__(".text\n.globl entry_calls_first\n.type entry_calls_first, @function\n"
        "entry_calls_first:\n pushq %rax\n call entry_call_callee\n popq %rcx\n ret\n"
        ".size entry_calls_first, .-entry_calls_first\n");
const void *entry_call_returns_to(void) { return entry_call_return; }

// The same through a pointer in memory (`call *slot(%rip)`, a call through
// the GOT as -fno-plt compiles it).
int32_t (*entry_call_slot)(int32_t) = entry_call_callee;
__asm__(".text\n.globl entry_calls_through_slot\n.type entry_calls_through_slot, @function\n"
        "entry_calls_through_slot:\n pushq %rax\n call *entry_call_slot(%rip)\n popq %rcx\n ret\n"
        ".size entry_calls_through_slot, .-entry_calls_through_slot\n");

// A call through a register as the last displaced instruction (mov, 3
// bytes; call *%rax, 2), and one the jump would split (call *%rsi first).
__asm__(".text\n.globl entry_calls_through_register\n.type entry_calls_through_register, @function\n"
        "entry_calls_through_register:\n movq %rsi, %rax\n call *%rax\n ret\n"
        ".size entry_calls_through_register, .-entry_calls_through_register\n");
__asm__(".text\n.globl entry_calls_first_through_register\n.type entry_calls_first_through_register, @function\n"
        "entry_calls_first_through_register:\n call *%rsi\n nop\n nop\n nop\n ret\n"
        ".size entry_calls_first_through_register, .-entry_calls_first_through_register\n");

// A struct of an array of arrays, by value (24 bytes: in memory, not registers).
int32_t grid_sum(grid g) {
  int32_t total = 0;
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 3; j++) total += g.cells[i][j] * (i * 3 + j + 1);
  return total;
}

// Hooked, restored, and hooked again with other types (EntryHookTests).
__attribute__((noinline)) int64_t entry_replaced_target(int64_t x) {
  int64_t y = x * 3;
  return y + 0;
}

// For HookBind's entry-hook fish (a function of its own: one hook point per function).
__attribute__((noinline)) int64_t entry_for_binding(int64_t x) {
  int64_t y = x + 1;
  return y - 1;
}

// MARK: native entries

// Calls `fn` (abi_six_ints's type) with bits 32-63 of every narrow argument's
// register set to garbage, which the ABI allows a caller to leave (clang only
// relies on bool, char and short being extended to 32 bits).
typedef int64_t (*six_words)(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t);
__attribute__((noinline)) int64_t abi_call_six_ints_dirty(const void *fn, int8_t a, uint16_t b, int32_t c, bool d, const void *e, int64_t f) {
  const uint64_t garbage = 0xA5A5A5A500000000ULL;
  return ((six_words)fn)(garbage | (uint32_t)(int32_t)a, garbage | b, garbage | (uint32_t)c, garbage | d, (uint64_t)(uintptr_t)e, (uint64_t)f);
}

// MARK: the model tests' originals

static void (*hk_model_log)(int64_t);
static int64_t (*hk_model_recurse)(int64_t);
static int hk_model_depth;

void hk_model_set(void (*log)(int64_t), int64_t (*recurse)(int64_t)) {
  hk_model_log = log;
  hk_model_recurse = recurse;
  hk_model_depth = 0;
}

int64_t hk_model_original(int64_t x) {
  hk_model_log(x);
  if (x > 0 && x % 7 == 0 && hk_model_depth < 3) {
    hk_model_depth++;
    uint64_t r = (uint64_t)hk_model_recurse(x - 1) + 1;
    hk_model_depth--;
    return (int64_t)r;
  }
  return (int64_t)((uint64_t)x * 2 + 1);
}

// Not optimized: the recursion stays a call of its own entry.
__attribute__((noinline, optnone)) int64_t hk_model_patched(int64_t x) {
  hk_model_log(x);
  if (x > 0 && x % 7 == 0 && hk_model_depth < 3) {
    hk_model_depth++;
    uint64_t r = (uint64_t)hk_model_patched(x - 1) + 1;
    hk_model_depth--;
    return (int64_t)r;
  }
  return (int64_t)((uint64_t)x * 2 + 1);
}

// MARK: the threaded model's originals and log

int64_t hk_threads_original(int64_t x) { return (int64_t)((uint64_t)x * 2 + 1); }

__attribute__((noinline, optnone)) int64_t hk_threads_patched(int64_t x) {
  return (int64_t)((uint64_t)x * 2 + 1);
}

static _Thread_local int64_t hk_thread_log[64];
static _Thread_local int hk_thread_log_count;

void hk_thread_log_push(int64_t value) {
  if (hk_thread_log_count < 64) hk_thread_log[hk_thread_log_count] = value;
  hk_thread_log_count++;
}

int hk_thread_log_take(int64_t *out) {
  int count = hk_thread_log_count < 64 ? hk_thread_log_count : 64;
  for (int i = 0; i < count; i++) out[i] = hk_thread_log[i];
  int all = hk_thread_log_count;
  hk_thread_log_count = 0;
  return all;
}

// MARK: patch round

#include <pthread.h>
#include <sched.h>
#include <stdio.h>

// The entry hooks' test knob (CEntryHooks.h), linked into every test
// bundle through Hook; declared here, where CEntryHooks' header is not on
// the include path.
void hk_entry_test_private_thread(int tid);

// What the patch-round tests hook: x * 5 + 2, longer than the jump.
__attribute__((noinline)) int64_t patch_round_target(int64_t x) {
  volatile int64_t y = x * 5;
  return y + 2;
}

// What the blocking thread calls, never hooked: the thread blocks SIGTRAP,
// and the int3 of a patch of a function it calls would end the process.
__attribute__((noinline)) static int64_t patch_round_blocker_work(int64_t x) {
  volatile int64_t y = x * 7;
  return y - 1;
}

static pthread_t patch_round_blocker;
static char patch_round_blocker_name[16];  // a thread's name: 15 bytes at most
static _Atomic int patch_round_blocker_stop_now, patch_round_blocker_tid, patch_round_blocker_go;
static _Atomic int64_t patch_round_blocker_turns;

static void *patch_round_blocker_main(void *unused) {
  (void)unused;
  pthread_setname_np(pthread_self(), patch_round_blocker_name);
  atomic_store(&patch_round_blocker_tid, (int)syscall(SYS_gettid));
  // Blocked only once it is private to the test's thread.
  while (!atomic_load(&patch_round_blocker_go)) sched_yield();
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  while (!atomic_load(&patch_round_blocker_stop_now)) {
    patch_round_blocker_work(atomic_fetch_add(&patch_round_blocker_turns, 1));
    // Mostly asleep: the other tests' patches, which do not look at its
    // mask (patch_round_private_thread), leave a thread asleep elsewhere
    // alone, and this one, blocking SIGPROF, would never answer theirs.
    struct timespec pause = {0, 1000000};
    nanosleep(&pause, NULL);
  }
  // Unblocked before it ends: the thread's exit runs libc (free), which
  // another test may be patching.
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return NULL;
}

int patch_round_blocker_start(const char *name) {
  atomic_store(&patch_round_blocker_stop_now, 0);
  atomic_store(&patch_round_blocker_tid, 0);
  atomic_store(&patch_round_blocker_turns, 0);
  atomic_store(&patch_round_blocker_go, 0);
  snprintf(patch_round_blocker_name, sizeof patch_round_blocker_name, "%s", name);
  if (pthread_create(&patch_round_blocker, NULL, patch_round_blocker_main, NULL) != 0) return -1;
  while (atomic_load(&patch_round_blocker_tid) == 0) sched_yield();
  const int tid = atomic_load(&patch_round_blocker_tid);
  hk_entry_test_private_thread(tid);
  atomic_store(&patch_round_blocker_go, 1);
  while (atomic_load(&patch_round_blocker_turns) == 0) sched_yield();
  return tid;
}

int64_t patch_round_blocker_stop(void) {
  atomic_store(&patch_round_blocker_stop_now, 1);
  pthread_join(patch_round_blocker, NULL);
  hk_entry_test_private_thread(0);
  return atomic_load(&patch_round_blocker_turns);
}

static pthread_t patch_round_sleeper;
static _Atomic int patch_round_sleeper_started;
static int64_t patch_round_sleep_ms, patch_round_sleep_left_ns;
static int patch_round_sleep_result;

static void *patch_round_sleeper_main(void *unused) {
  (void)unused;
  // Only the patch's SIGPROF may reach it (and the signals an instruction
  // raises): a signal of another test (a child's SIGCHLD) would cut the
  // sleep short too.
  sigset_t others;
  sigfillset(&others);
  sigdelset(&others, SIGPROF);
  sigdelset(&others, SIGTRAP);
  sigdelset(&others, SIGSEGV);
  sigdelset(&others, SIGBUS);
  sigdelset(&others, SIGILL);
  sigdelset(&others, SIGFPE);
  pthread_sigmask(SIG_SETMASK, &others, NULL);
  struct timespec pause = {patch_round_sleep_ms / 1000, (patch_round_sleep_ms % 1000) * 1000000}, left = {0, 0};
  atomic_store(&patch_round_sleeper_started, 1);
  patch_round_sleep_result = nanosleep(&pause, &left) == 0 ? 0 : errno;
  patch_round_sleep_left_ns = (int64_t)left.tv_sec * 1000000000 + left.tv_nsec;
  return NULL;
}

int patch_round_sleeper_start(int64_t milliseconds) {
  patch_round_sleep_ms = milliseconds;
  patch_round_sleep_result = -1;
  patch_round_sleep_left_ns = 0;
  atomic_store(&patch_round_sleeper_started, 0);
  if (pthread_create(&patch_round_sleeper, NULL, patch_round_sleeper_main, NULL) != 0) return -1;
  while (!atomic_load(&patch_round_sleeper_started)) sched_yield();
  return 0;
}

int patch_round_sleeper_join(int64_t *left_ns) {
  pthread_join(patch_round_sleeper, NULL);
  if (left_ns) *left_ns = patch_round_sleep_left_ns;
  return patch_round_sleep_result;
}
