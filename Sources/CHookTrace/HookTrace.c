// hook-trace's preloaded library: finds the functions a program calls whose
// names match the patterns, sends each call through a tracing stub, and writes
// a line per call (or, with a summary, counts and times them).
//
// How a call is traced. Each traced function gets a 24-byte stub: it loads the
// function's record into r11 and jumps to `hk_trace_entry` (assembly, below),
// which saves every argument register (rdi..r9, rax for variadic calls, r10,
// xmm0-7), calls `trace_enter`, restores them, and jumps to the original with
// the caller's stack untouched: stack arguments, variadic calls and floating
// point all reach it as they were. `trace_enter` records the call on this
// thread's shadow stack and replaces the return address with
// `hk_trace_return`, so that the original returns there; that saves the
// result registers (rax, rdx, xmm0, xmm1), calls `trace_exit`, which pops the
// record, writes the line or the counts, and returns the real return address.
// (uftrace and the Linux kernel's function-graph tracer work the same way.)
//
// Nothing on the call path locks, allocates, or writes memory another
// thread's calls write: a thread's shadow stack, output buffer and counters
// are its own (one mmap per thread, on its first traced call). Lines go out
// in whole chunks with one write(2), when a thread's buffer is full, when the
// thread ends, before exec and at exit.
//
// Where calls are taken. By default each matching function's entry is
// patched (CEntryHooks: every call, from any object, the function's own
// library included); a function whose entry cannot be patched, and every
// function with HOOK_TRACE_LIBRARY_CALLS, is taken at its import slots
// (CImportSlots: the GOT slots of every loaded object but this library, as
// ltrace and `uftrace --force` do). After each dlopen the loaded objects are
// searched again for new matching imports.
#define _GNU_SOURCE
#include "CHookTrace.h"

#include "../CEntryHooks/include/CEntryHooks.h"
#include "../CImportSlots/include/CImportSlots.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <link.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <unwind.h>

// The stubs are x86-64 System V code: elsewhere the library builds as the two
// functions of its header, and the launcher refuses to run (see the
// Architecture article on an arm64 port).
#if defined(__x86_64__) && defined(__linux__)
#include <x86intrin.h>

// MARK: - Prototypes: how to print a function's arguments and result

// Argument and result kinds, one letter each in a prototype string:
// i int, l long/ssize_t, u size_t/unsigned, x int in hex, p pointer,
// s C string (quoted), f double (next xmm register), v void (results only);
// n a size_t and m an int that bound the string arguments' lengths (m: a
// negative one bounds none, as SQLite's nByte), printed as u and i. (A field
// with no NUL at a page's end, the next page unreadable, was read as a C
// string past its length: the traced program ended with SIGSEGV.)
// Error rules (for the summary's errors column): how a result says "failed".
enum { ERR_NONE, ERR_NEG1, ERR_NULL, ERR_NONZERO, ERR_SQLITE };

typedef struct {
  const char *name;
  const char *result;   // one kind
  const char *args;     // kinds, in order; "" none
  int error;            // ERR_*
  int variadic;         // print "..." after the fixed arguments
} prototype;

static const prototype prototypes[] = {
  // strings and memory
  {"strlen", "u", "s", ERR_NONE, 0}, {"strnlen", "u", "sn", ERR_NONE, 0},
  {"strdup", "p", "s", ERR_NULL, 0}, {"strndup", "p", "sn", ERR_NULL, 0},
  {"strcmp", "i", "ss", ERR_NONE, 0}, {"strncmp", "i", "ssn", ERR_NONE, 0},
  {"strcasecmp", "i", "ss", ERR_NONE, 0}, {"strcpy", "p", "ps", ERR_NONE, 0},
  {"strncpy", "p", "psn", ERR_NONE, 0}, {"strcat", "p", "ps", ERR_NONE, 0},
  {"strchr", "p", "si", ERR_NONE, 0}, {"strrchr", "p", "si", ERR_NONE, 0},
  {"strstr", "p", "ss", ERR_NONE, 0}, {"strtol", "l", "spi", ERR_NONE, 0},
  {"strtoul", "u", "spi", ERR_NONE, 0}, {"strtod", "f", "sp", ERR_NONE, 0},
  {"atoi", "i", "s", ERR_NONE, 0}, {"atol", "l", "s", ERR_NONE, 0},
  {"memcpy", "p", "ppu", ERR_NONE, 0}, {"memmove", "p", "ppu", ERR_NONE, 0},
  {"memset", "p", "piu", ERR_NONE, 0}, {"memcmp", "i", "ppu", ERR_NONE, 0},
  {"memchr", "p", "piu", ERR_NONE, 0},
  {"malloc", "p", "u", ERR_NULL, 0}, {"calloc", "p", "uu", ERR_NULL, 0},
  {"realloc", "p", "pu", ERR_NULL, 0}, {"free", "v", "p", ERR_NONE, 0},
  {"posix_memalign", "i", "puu", ERR_NONZERO, 0}, {"aligned_alloc", "p", "uu", ERR_NULL, 0},
  // standard I/O
  {"puts", "i", "s", ERR_NEG1, 0}, {"putchar", "i", "i", ERR_NEG1, 0},
  {"printf", "i", "s", ERR_NEG1, 1}, {"fprintf", "i", "ps", ERR_NEG1, 1},
  {"sprintf", "i", "ps", ERR_NEG1, 1}, {"snprintf", "i", "pus", ERR_NEG1, 1},
  {"fputs", "i", "sp", ERR_NEG1, 0}, {"fputc", "i", "ip", ERR_NEG1, 0},
  {"fwrite", "u", "puup", ERR_NONE, 0}, {"fread", "u", "puup", ERR_NONE, 0},
  {"fopen", "p", "ss", ERR_NULL, 0}, {"fdopen", "p", "is", ERR_NULL, 0},
  {"fclose", "i", "p", ERR_NEG1, 0}, {"fflush", "i", "p", ERR_NEG1, 0},
  {"fgets", "p", "pip", ERR_NONE, 0}, {"perror", "v", "s", ERR_NONE, 0},
  {"ferror", "i", "p", ERR_NONE, 0}, {"feof", "i", "p", ERR_NONE, 0},
  {"fgetc", "i", "p", ERR_NONE, 0}, {"fileno", "i", "p", ERR_NEG1, 0},
  // files, processes, the environment
  {"open", "i", "sx", ERR_NEG1, 1}, {"openat", "i", "isx", ERR_NEG1, 1},
  {"close", "i", "i", ERR_NEG1, 0}, {"read", "l", "ipu", ERR_NEG1, 0},
  {"write", "l", "ipu", ERR_NEG1, 0}, {"pread64", "l", "ipul", ERR_NEG1, 0},
  {"pwrite64", "l", "ipul", ERR_NEG1, 0}, {"lseek", "l", "ili", ERR_NEG1, 0},
  {"lseek64", "l", "ili", ERR_NEG1, 0}, {"fsync", "i", "i", ERR_NEG1, 0},
  {"unlink", "i", "s", ERR_NEG1, 0}, {"access", "i", "si", ERR_NEG1, 0},
  {"stat", "i", "sp", ERR_NEG1, 0}, {"fstat", "i", "ip", ERR_NEG1, 0},
  {"mkdir", "i", "sx", ERR_NEG1, 0}, {"rename", "i", "ss", ERR_NEG1, 0},
  {"dup", "i", "i", ERR_NEG1, 0}, {"dup2", "i", "ii", ERR_NEG1, 0},
  {"pipe", "i", "p", ERR_NEG1, 0}, {"fork", "i", "", ERR_NEG1, 0},
  {"waitpid", "i", "ipi", ERR_NEG1, 0}, {"getpid", "i", "", ERR_NONE, 0},
  {"getenv", "s", "s", ERR_NONE, 0}, {"setenv", "i", "ssi", ERR_NEG1, 0},
  {"unsetenv", "i", "s", ERR_NEG1, 0}, {"sleep", "u", "u", ERR_NONE, 0},
  {"usleep", "i", "u", ERR_NEG1, 0}, {"nanosleep", "i", "pp", ERR_NEG1, 0},
  {"time", "l", "p", ERR_NEG1, 0}, {"clock_gettime", "i", "ip", ERR_NEG1, 0},
  {"gettimeofday", "i", "pp", ERR_NEG1, 0}, {"qsort", "v", "puup", ERR_NONE, 0},
  {"bsearch", "p", "ppuup", ERR_NONE, 0}, {"rand", "i", "", ERR_NONE, 0},
  {"srand", "v", "u", ERR_NONE, 0}, {"abs", "i", "i", ERR_NONE, 0},
  {"sqrt", "f", "f", ERR_NONE, 0}, {"pow", "f", "ff", ERR_NONE, 0},
  {"sin", "f", "f", ERR_NONE, 0}, {"cos", "f", "f", ERR_NONE, 0},
  {"exp", "f", "f", ERR_NONE, 0}, {"log", "f", "f", ERR_NONE, 0},
  {"socket", "i", "iii", ERR_NEG1, 0}, {"connect", "i", "ipu", ERR_NEG1, 0},
  {"bind", "i", "ipu", ERR_NEG1, 0}, {"listen", "i", "ii", ERR_NEG1, 0},
  {"accept", "i", "ipp", ERR_NEG1, 0}, {"send", "l", "ipui", ERR_NEG1, 0},
  {"recv", "l", "ipui", ERR_NEG1, 0},
  {"pthread_create", "i", "pppp", ERR_NONZERO, 0}, {"pthread_join", "i", "xp", ERR_NONZERO, 0},
  {"pthread_mutex_lock", "i", "p", ERR_NONZERO, 0}, {"pthread_mutex_unlock", "i", "p", ERR_NONZERO, 0},
  // SQLite (its result codes: 0 OK, 100 ROW and 101 DONE are not errors)
  {"sqlite3_open", "i", "sp", ERR_SQLITE, 0}, {"sqlite3_open_v2", "i", "spxs", ERR_SQLITE, 0},
  {"sqlite3_close", "i", "p", ERR_SQLITE, 0}, {"sqlite3_close_v2", "i", "p", ERR_SQLITE, 0},
  {"sqlite3_exec", "i", "pspp", ERR_SQLITE, 0}, {"sqlite3_prepare_v2", "i", "psmpp", ERR_SQLITE, 0},
  {"sqlite3_step", "i", "p", ERR_SQLITE, 0}, {"sqlite3_reset", "i", "p", ERR_SQLITE, 0},
  {"sqlite3_finalize", "i", "p", ERR_SQLITE, 0}, {"sqlite3_bind_int", "i", "pii", ERR_SQLITE, 0},
  {"sqlite3_bind_text", "i", "pismp", ERR_SQLITE, 0}, {"sqlite3_column_int", "i", "pi", ERR_NONE, 0},
  {"sqlite3_column_text", "s", "pi", ERR_NONE, 0}, {"sqlite3_errmsg", "s", "p", ERR_NONE, 0},
  {"sqlite3_libversion_number", "i", "", ERR_NONE, 0}, {"sqlite3_free", "v", "p", ERR_NONE, 0},
};

static const prototype *prototype_named(const char *name) {
  for (size_t i = 0; i < sizeof prototypes / sizeof prototypes[0]; i++)
    if (strcmp(prototypes[i].name, name) == 0) return &prototypes[i];
  return NULL;
}

// Functions whose return address must not be replaced: they return twice
// (setjmp, vfork), never return, switch stacks or contexts, or are part of
// starting and ending the process, unwinding, or the loader.
static int never_traced(const char *name) {
  static const char *const names[] = {
    "setjmp", "_setjmp", "__sigsetjmp", "sigsetjmp", "longjmp", "_longjmp", "siglongjmp",
    "__longjmp_chk", "vfork", "__vfork", "getcontext", "setcontext", "swapcontext", "makecontext",
    "__libc_start_main", "__libc_start_call_main", "exit", "_exit", "_Exit", "abort", "quick_exit",
    "pthread_exit", "__stack_chk_fail", "__fortify_fail", "__assert_fail", "__tls_get_addr",
    "__cxa_finalize", "__cxa_atexit", "__cxa_throw", "__cxa_rethrow", "__cxa_begin_catch",
    "__cxa_end_catch", "__gxx_personality_v0", "_Unwind_Resume", "_Unwind_RaiseException",
    "__register_atfork", "clone", "clone3", "syscall", "dlopen", "dlmopen", "dlclose", "dlsym", "dlvsym",
    "execve", "execv", "execvp", "execvpe", "execl", "execlp", "execle", "fexecve",
    "hook_trace_flush", "hook_trace_function_count",
    NULL};
  for (int i = 0; names[i]; i++)
    if (strcmp(names[i], name) == 0) return 1;
  if (strncmp(name, "_dl_", 4) == 0 || strncmp(name, "_Unwind_", 8) == 0) return 1;
  if (strncmp(name, "__libc_", 7) == 0 || strncmp(name, "swift_task_", 11) == 0) return 1;
  return 0;
}

// MARK: - Traced functions

#define MAX_FUNCTIONS 4096
#define MAX_STRINGS 4            // string arguments and result of a prototype, at most

typedef struct traced_function {
  const void *original;     // where the stub jumps on: the function, or its relocated entry
  const prototype *proto;   // NULL: raw words
  const char *name;         // as printed (demangled Swift names)
  const char *symbol;       // as the object names it
  uint32_t index;           // in the counters
  uint32_t name_length;
  int by_entry;             // its entry is patched (else its import slots)
  const void *entry;        // the entry it patched (by_entry)
  const struct traced_function *alias_of;   // another name of it, patched at its entry
  uint32_t integer_words;     // words of integer arguments a record keeps (6 without a prototype)
  uint32_t real_words;        // and of floating-point ones (at most 2)
  uint32_t string_arguments;  // its prototype's C string arguments
  uint32_t string_result;     // 1 if it returns one
  uint32_t real_result;       // 1 if its result is in xmm0
  uint8_t string_word[MAX_STRINGS];  // which integer argument each string argument is
  char bound_kind;            // 'n' or 'm' if an argument bounds the string arguments' lengths; else 0
  uint8_t bound_word;         // which integer argument that is
  void *stub;               // the 24-byte stub
} traced_function;

static traced_function functions[MAX_FUNCTIONS];
static _Atomic uint32_t function_count;

size_t hook_trace_function_count(void) { return atomic_load(&function_count); }

// MARK: - Per-thread state

#define MAX_DEPTH 8192           // traced calls a thread may be inside (uftrace: 65,535); pages touched as used
#define RING_SIZE (1024 * 1024)  // a thread's records not yet written (a power of two; pages touched as used)
#define OUT_SIZE (64 * 1024)     // the writer's buffer of lines
#define LINE_ROOM 4096           // a line never needs more (names are cut at NAME_LIMIT)
#define NAME_LIMIT 400
#define STRING_LIMIT 32

typedef struct {
  uint64_t calls, errors, ticks;
} counter;

// A C string argument or result, copied when the call is made (or returns):
// the memory may be freed or changed by the time the line is written.
enum { TEXT_WHOLE, TEXT_CUT, TEXT_NULL, TEXT_WORD };
typedef struct {
  uint8_t length, kind;   // TEXT_*
  char bytes[STRING_LIMIT];
} text;

typedef struct {
  uintptr_t return_address;
  const struct traced_function *function;
  uint64_t start;
  uintptr_t stack;          // the caller's stack pointer after the call returns
  uint64_t words[6];        // the integer argument registers
  double reals[2];          // xmm0 and xmm1 (the first two floating-point arguments)
} frame;

// One traced call, complete, as the call path leaves it for the writer:
// only the words its prototype prints (a record is one or two cache lines,
// each of which the writer's core must fetch).
typedef struct {
  uint32_t size;            // bytes, a multiple of 8 (the ring's end: a skip record with no function)
  uint32_t tid;
  const struct traced_function *function;
  uint64_t ticks;
  uint64_t result;          // rax, or xmm0's bits for a floating-point result
  uint16_t depth;           // traced calls of this thread it is inside
  uint16_t texts;           // how many texts follow the words
  uint32_t unused;
  uint64_t words[];         // the integer arguments, then the floating-point ones' bits; then the texts
} record;

typedef struct thread_state {
  struct thread_state *next;   // every thread's, for the writer and the flush at exit
  _Atomic int unused;          // its thread ended: the next new thread takes it (counters and all)
  pid_t tid;
  int depth;
  uint64_t too_deep;           // calls not traced: MAX_DEPTH traced calls of the thread were under way
  // The ring's ends, each on a cache line of its own (the thread and the
  // writer each write one), and the thread's last look at the writer's.
  _Alignas(64) _Atomic uint64_t head;   // the end of the records the writer may read (published)
  _Alignas(64) _Atomic uint64_t head_local;  // the end of the thread's records (it publishes in batches;
                                             // the writer reads this only when idle)
  uint64_t published_at;                // the time-stamp counter when it last published
  uint64_t tail_seen;
  _Alignas(64) _Atomic uint64_t tail;   // written by the writer: the end of what it has written out
  _Alignas(64) frame frames[MAX_DEPTH];
  counter counters[MAX_FUNCTIONS];
  char ring[RING_SIZE];
} thread_state;

static _Thread_local thread_state *state_here __attribute__((tls_model("initial-exec")));
static _Thread_local int inside __attribute__((tls_model("initial-exec")));  // in the tracer itself
// Set once the thread's state was given up (state_ends, its key's
// destructor): the calls it makes while it exits (glibc freeing its caches
// through a traced free) are not traced. (They took a state again, which no
// destructor gave back: every exited thread kept one, 1.9 MB of address
// space, and 2,000 threads made 3.9 GB.)
static _Thread_local int state_ended __attribute__((tls_model("initial-exec")));
static _Atomic(thread_state *) all_states;
static pthread_key_t state_key;

// Settings.
static int summary_mode;
static int output_fd = 2;
static int started;
// The process whose image this state is: a child of vfork (or of clone
// with shared memory) runs on the parent's memory, whose records,
// counters and writer thread are the parent's (see image_ends).
static pid_t image_pid;
static double ns_per_tick = 1.0;
static uint64_t ns_per_tick_q32 = 1ull << 32;   // ns_per_tick in 32.32 fixed point
static uint64_t publish_ticks = 3000000;         // about a millisecond
static uint64_t start_ticks;
static struct timespec start_time;

static void state_ends(void *value) {
  thread_state *s = value;
  inside++;
  atomic_store_explicit(&s->head, atomic_load(&s->head_local), memory_order_release);
  s->depth = 0;
  state_here = NULL;
  state_ended = 1;
  // Its records stay for the writer, its counters for the summary; a later
  // thread takes the state over and adds to them.
  atomic_store(&s->unused, 1);
  inside--;
}

static thread_state *state_make(void) {
  for (thread_state *s = atomic_load(&all_states); s; s = s->next) {
    int expected = 1;
    if (atomic_load(&s->unused) && atomic_compare_exchange_strong(&s->unused, &expected, 0)) {
      s->tid = (pid_t)syscall(SYS_gettid);
      pthread_setspecific(state_key, s);
      state_here = s;
      return s;
    }
  }
  thread_state *s = mmap(NULL, sizeof(thread_state), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (s == MAP_FAILED) return NULL;
  s->tid = (pid_t)syscall(SYS_gettid);
  thread_state *head = atomic_load(&all_states);
  do {
    s->next = head;
  } while (!atomic_compare_exchange_weak(&all_states, &head, s));
  pthread_setspecific(state_key, s);
  state_here = s;
  return s;
}

// MARK: - Formatting (no stdio: nothing here allocates or locks)

// Short copies inline (a call of memcpy per piece of a line costs more than the piece).
static inline char *put(char *p, const char *text, size_t length) {
  if (length >= 8 && length <= 16) {
    uint64_t a, b;
    memcpy(&a, text, 8);
    memcpy(&b, text + length - 8, 8);
    memcpy(p, &a, 8);
    memcpy(p + length - 8, &b, 8);
  } else if (length >= 4 && length < 8) {
    uint32_t a, b;
    memcpy(&a, text, 4);
    memcpy(&b, text + length - 4, 4);
    memcpy(p, &a, 4);
    memcpy(p + length - 4, &b, 4);
  } else if (length > 0 && length < 4) {
    p[0] = text[0];
    p[length / 2] = text[length / 2];
    p[length - 1] = text[length - 1];
  } else if (length > 16) {
    memcpy(p, text, length);
  }
  return p + length;
}

static const char digit_pairs[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

static char *put_unsigned(char *p, uint64_t value) {
  char digits[20];
  char *end = digits + 20, *d = end;
  while (value >= 100) {
    unsigned pair = (unsigned)(value % 100);
    value /= 100;
    d -= 2;
    memcpy(d, digit_pairs + 2 * pair, 2);
  }
  if (value >= 10) {
    d -= 2;
    memcpy(d, digit_pairs + 2 * value, 2);
  } else {
    *--d = (char)('0' + value);
  }
  return put(p, d, (size_t)(end - d));
}

static char *put_signed(char *p, int64_t value) {
  if (value < 0) {
    *p++ = '-';
    return put_unsigned(p, (uint64_t)0 - (uint64_t)value);
  }
  return put_unsigned(p, (uint64_t)value);
}

static char *put_hex(char *p, uint64_t value) {
  static const char hex[] = "0123456789abcdef";
  int nibbles = value ? (67 - __builtin_clzll(value)) / 4 : 1;
  *p++ = '0';
  *p++ = 'x';
  for (int i = nibbles - 1; i >= 0; i--) {
    p[i] = hex[value & 15];
    value >>= 4;
  }
  return p + nibbles;
}

static char *put_pointer(char *p, uint64_t value) {
  if (value == 0) return put(p, "NULL", 4);
  return put_hex(p, value);
}

static char *put_text(char *p, const text *t, uint64_t word) {
  if (t->kind == TEXT_NULL) return put(p, "NULL", 4);
  if (t->kind == TEXT_WORD) return put_hex(p, word);
  static const char hex[] = "0123456789abcdef";
  *p++ = '"';
  for (int i = 0; i < t->length; i++) {
    unsigned char c = (unsigned char)t->bytes[i];
    if (c >= 32 && c < 127 && c != '"' && c != '\\') {
      *p++ = (char)c;
    } else if (c == '"' || c == '\\') {
      *p++ = '\\';
      *p++ = (char)c;
    } else if (c == '\n') {
      p = put(p, "\\n", 2);
    } else if (c == '\t') {
      p = put(p, "\\t", 2);
    } else {
      p = put(p, "\\x", 2);
      *p++ = hex[c >> 4];
      *p++ = hex[c & 15];
    }
  }
  *p++ = '"';
  if (t->kind == TEXT_CUT) p = put(p, "...", 3);
  return p;
}

// Copies the C string at `word`, at most STRING_LIMIT bytes, and no byte at
// or past `most` (the length its function was given: a field of that many
// bytes need not end with a NUL, and the byte after it may be unreadable;
// TEXT_UNBOUNDED for a C string). (A pointer below the first page is
// printed as a number, not read.)
#define TEXT_UNBOUNDED UINT64_MAX
static inline void text_take(text *t, uint64_t word, uint64_t most) {
  const char *s = (const char *)(uintptr_t)word;
  t->length = 0;
  if (s == NULL) {
    t->kind = TEXT_NULL;
    return;
  }
  if (word < 4096) {
    t->kind = TEXT_WORD;
    return;
  }
  // Eight bytes at a time where they lie in one page (a string's NUL may be
  // the last byte of its page, and the next page unmapped), in the bound,
  // and in the buffer (after bytes taken one by one near a page's end,
  // eight from an odd offset wrote up to seven past it, into the next
  // record).
  const int limit = most < STRING_LIMIT ? (int)most : STRING_LIMIT;
  int n = 0;
  while (n < limit) {
    uintptr_t at = (uintptr_t)(s + n);
    if ((at & 4095) <= 4096 - 8 && n + 8 <= limit) {
      uint64_t chunk;
      memcpy(&chunk, s + n, 8);
      memcpy(t->bytes + n, &chunk, 8);
      uint64_t zero = (chunk - 0x0101010101010101ull) & ~chunk & 0x8080808080808080ull;
      if (zero) {
        n += __builtin_ctzll(zero) / 8;
        t->length = (uint8_t)n;
        t->kind = TEXT_WHOLE;
        return;
      }
      n += 8;
    } else {
      if (s[n] == 0) break;
      t->bytes[n] = s[n];
      n++;
    }
  }
  if (n > STRING_LIMIT) n = STRING_LIMIT;
  t->length = (uint8_t)n;
  // Cut if it goes on: the byte after the limit, read only where the bound
  // reaches it (a field of exactly STRING_LIMIT bytes is whole).
  t->kind = n == STRING_LIMIT && most > STRING_LIMIT && s[n] ? TEXT_CUT : TEXT_WHOLE;
}

// The bound of `f`'s string arguments, from the call's arguments: its n
// (strncmp's, strnlen's), or SQLite's nByte where it is not negative.
static inline uint64_t text_bound(const traced_function *f, const uint64_t *words) {
  if (f->bound_kind == 0) return TEXT_UNBOUNDED;
  uint64_t word = words[f->bound_word];
  if (f->bound_kind == 'm') return (int32_t)word < 0 ? TEXT_UNBOUNDED : (uint32_t)word;
  return word;
}

static char *put_double(char *p, double value) {
  // Enough for a trace: sign, integer part, six decimals (no libc formatting).
  if (value != value) return put(p, "nan", 3);
  if (value < 0) {
    *p++ = '-';
    value = -value;
  }
  if (value > 1e18) return put(p, "inf-ish", 7);
  uint64_t whole = (uint64_t)value;
  uint64_t fraction = (uint64_t)((value - (double)whole) * 1e6 + 0.5);
  if (fraction >= 1000000) {
    whole++;
    fraction -= 1000000;
  }
  p = put_unsigned(p, whole);
  *p++ = '.';
  char digits[6];
  for (int i = 5; i >= 0; i--) {
    digits[i] = (char)('0' + fraction % 10);
    fraction /= 10;
  }
  return put(p, digits, 6);
}

static char *put_value(char *p, char kind, uint64_t word, double real, const text *t) {
  switch (kind) {
  case 'i': return put_signed(p, (int32_t)word);
  case 'l': return put_signed(p, (int64_t)word);
  case 'u':
  case 'n': return put_unsigned(p, word);
  case 'm': return put_signed(p, (int32_t)word);
  case 'x': return put_hex(p, (uint32_t)word);
  case 's': return put_text(p, t, word);
  case 'f': return put_double(p, real);
  default: return put_pointer(p, word);
  }
}

// The saved registers, as hk_trace_entry lays them out.
typedef struct {
  double xmm[8][2];
  uint64_t rdi, rsi, rdx, rcx, r8, r9, rax, r10;
} entry_registers;

typedef struct {
  union {
    double xmm0[2];
    uint64_t xmm0_bits;
  };
  double xmm1[2];
  uint64_t rax, rdx;
} return_registers;

static int failed(const traced_function *f, uint64_t rax) {
  if (f->proto == NULL) return 0;
  switch (f->proto->error) {
  case ERR_NEG1: return f->proto->result[0] == 'i' ? (int32_t)rax == -1 : (int64_t)rax == -1;
  case ERR_NULL: return rax == 0;
  case ERR_NONZERO: return (int32_t)rax != 0;
  case ERR_SQLITE: {
    int32_t code = (int32_t)rax;
    return code != 0 && code != 100 && code != 101;
  }
  default: return 0;
  }
}

// The text at `cursor` in a record, and the cursor moved past it.
static const text *text_next(const uint8_t **cursor) {
  const text *t = (const text *)*cursor;
  *cursor += 2 + t->length;
  return t;
}

// A record's line: "[tid] name(arguments) = result <duration ns>", indented
// by the traced calls it was made inside.
static char *put_line(char *p, const record *r) {
  const traced_function *f = r->function;
  *p++ = '[';
  p = put_unsigned(p, r->tid);
  *p++ = ']';
  *p++ = ' ';
  for (uint32_t i = 0; i < r->depth && i < 32; i++) p = put(p, "  ", 2);
  p = put(p, f->name, f->name_length);
  *p++ = '(';
  // The texts, packed: each its two bytes and then its length of bytes.
  const uint8_t *cursor = (const uint8_t *)(r->words + f->integer_words + f->real_words);
  if (f->proto == NULL) {
    for (int i = 0; i < 6; i++) {
      if (i) p = put(p, ", ", 2);
      p = put_hex(p, r->words[i]);
    }
  } else {
    uint32_t integer = 0, real = 0;
    const char *a = f->proto->args;
    for (int i = 0; a[i]; i++) {
      if (i) p = put(p, ", ", 2);
      if (a[i] == 'f') {
        double value;
        memcpy(&value, &r->words[f->integer_words + real], 8);
        p = real < f->real_words ? put_double(p, value) : put(p, "?", 1);
        real++;
      } else if (integer < f->integer_words) {
        p = put_value(p, a[i], r->words[integer], 0, a[i] == 's' ? text_next(&cursor) : NULL);
        integer++;
      } else {
        p = put(p, "?", 1);
      }
    }
    if (f->proto->variadic) p = put(p, a[0] ? ", ..." : "...", a[0] ? 5 : 3);
  }
  *p++ = ')';
  char kind = f->proto ? f->proto->result[0] : 'p';
  if (kind != 'v') {
    double real;
    memcpy(&real, &r->result, 8);
    p = put(p, " = ", 3);
    p = put_value(p, kind, r->result, real, kind == 's' ? text_next(&cursor) : NULL);
  }
  p = put(p, " <", 2);
  p = put_unsigned(p, (uint64_t)(((unsigned __int128)r->ticks * ns_per_tick_q32) >> 32));
  return put(p, " ns>\n", 5);
}

// MARK: - The writer

// Lines are made and written by a thread of the tracer's own, so that a
// traced call only copies what it saw into its thread's ring. Where there is
// no writer thread (a child of fork, after a failed exec, or if it could not
// be made), a thread whose ring is full writes it out itself, and what is
// left is written at exit.
static pthread_mutex_t drain_lock = PTHREAD_MUTEX_INITIALIZER;
static char out[OUT_SIZE];
static size_t out_length;
static pthread_t writer;
static _Atomic int writer_running, writer_stop, writer_asleep;
static _Atomic uint32_t writer_wakeups;

// All of it. The trace's descriptor may be non-blocking: HOOK_TRACE_FD is a
// copy of the launcher's stderr, sharing its file status flags, and a
// program that sets O_NONBLOCK on its own fd 2 (node.js does, on a pipe or
// a tty) sets it on the trace's too. A write the reader is not ready for
// waits until it is (it was given up: the rest of the chunk was lost, and
// the trace had lines missing and lines cut in two).
static void write_all(int fd, const char *data, size_t length) {
  if (fd < 0) return;   // no output (see hook_trace_start)
  while (length > 0) {
    ssize_t n = write(fd, data, length);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        struct pollfd ready = {.fd = fd, .events = POLLOUT};
        if (poll(&ready, 1, -1) >= 0 || errno == EINTR) continue;
      }
      return;
    }
    data += n;
    length -= (size_t)n;
  }
}

static void out_flush(void) {
  if (out_length == 0) return;
  int saved = errno;
  write_all(output_fd, out, out_length);
  out_length = 0;
  errno = saved;
}

// Writes out one thread's records (under drain_lock). 1 if there were any.
// `late`: also what the thread has not published yet (the writer, idle, so
// that a thread's last calls before it goes quiet are written soon).
static int drain_state(thread_state *s, int late) {
  uint64_t head = atomic_load_explicit(late ? &s->head_local : &s->head, memory_order_acquire);
  uint64_t tail = atomic_load_explicit(&s->tail, memory_order_relaxed);
  if ((int64_t)(head - tail) <= 0) return 0;   // (a late drain may have read past the published end)
  while (tail != head) {
    const record *r = (const record *)(s->ring + (tail & (RING_SIZE - 1)));
    if (r->function) {
      if (out_length > OUT_SIZE - LINE_ROOM) out_flush();
      out_length = (size_t)(put_line(out + out_length, r) - out);
    }
    tail += r->size;
  }
  atomic_store_explicit(&s->tail, tail, memory_order_release);
  return 1;
}

static int drain_all(int late) {
  int any = 0;
  for (thread_state *s = atomic_load(&all_states); s; s = s->next) any |= drain_state(s, late);
  return any;
}

static void *writer_main(void *unused) {
  (void)unused;
  inside = 1;   // nothing the writer calls is traced
  sigset_t all;
  sigfillset(&all);
  // The program's signals go to its own threads; not those an instruction
  // raises: the writer runs libc's code, whose entry a patch may be writing
  // (the int3 on its first byte, which the patch's SIGTRAP handler sends
  // on; blocked, the kernel ended the process with SIGTRAP).
  sigdelset(&all, SIGTRAP);
  sigdelset(&all, SIGSEGV);
  sigdelset(&all, SIGBUS);
  sigdelset(&all, SIGILL);
  sigdelset(&all, SIGFPE);
  pthread_sigmask(SIG_BLOCK, &all, NULL);
  int idle = 0;
  while (!atomic_load(&writer_stop)) {
    pthread_mutex_lock(&drain_lock);
    int any = drain_all(idle >= 64);
    if (!any || out_length > OUT_SIZE / 2) out_flush();
    pthread_mutex_unlock(&drain_lock);
    if (any) {
      idle = 0;
    } else if (++idle < 64) {
      // A thread that is tracing publishes every few microseconds: look
      // again soon before going to sleep.
      struct timespec pause = {0, 20000};
      nanosleep(&pause, NULL);
    } else {
      // Nothing to write for a while: sleep a millisecond, or until a thread's ring is half full.
      uint32_t seen = atomic_load(&writer_wakeups);
      atomic_store(&writer_asleep, 1);
      struct timespec pause = {0, 1000000};
      syscall(SYS_futex, &writer_wakeups, FUTEX_WAIT_PRIVATE, seen, &pause, NULL, 0);
      atomic_store(&writer_asleep, 0);
    }
  }
  return NULL;
}

static void writer_wake(void) {
  atomic_fetch_add(&writer_wakeups, 1);
  syscall(SYS_futex, &writer_wakeups, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static void writer_start(void) {
  atomic_store(&writer_stop, 0);
  if (pthread_create(&writer, NULL, writer_main, NULL) == 0) atomic_store(&writer_running, 1);
}

static void writer_end(void) {
  if (!atomic_load(&writer_running)) return;
  atomic_store(&writer_stop, 1);
  writer_wake();
  pthread_join(writer, NULL);
  atomic_store(&writer_running, 0);
}

// Room for `size` more bytes in this thread's ring: waits for the writer, or
// writes the ring out itself where there is none.
static void ring_make_room(thread_state *s, uint64_t size) {
  atomic_store_explicit(&s->head, atomic_load(&s->head_local), memory_order_release);
  for (;;) {
    uint64_t used = atomic_load_explicit(&s->head, memory_order_relaxed) -
                    atomic_load_explicit(&s->tail, memory_order_acquire);
    if (RING_SIZE - used >= size) return;
    if (atomic_load(&writer_running)) {
      writer_wake();
      sched_yield();
    } else {
      pthread_mutex_lock(&drain_lock);
      drain_state(s, 0);
      out_flush();
      pthread_mutex_unlock(&drain_lock);
    }
  }
}

void hook_trace_flush(void) {
  inside++;
  // Every thread's records, those not yet published too (the image is
  // ending: a thread still running may lose the call it is making).
  for (thread_state *s = atomic_load(&all_states); s; s = s->next)
    atomic_store_explicit(&s->head, atomic_load(&s->head_local), memory_order_release);
  pthread_mutex_lock(&drain_lock);
  drain_all(1);
  out_flush();
  pthread_mutex_unlock(&drain_lock);
  inside--;
}

// MARK: - The call path

extern void hk_trace_entry(void);
extern void hk_trace_return(void);

static const void *trace_enter(const traced_function *f, const entry_registers *r, uintptr_t *return_slot);
static uintptr_t trace_exit(const return_registers *r, uintptr_t stack);

// Called by hk_trace_entry: returns where to go on (the original).
//
// The tracer's work on a call, here and in hk_trace_exit, is `inside`: a
// signal handler that interrupts it and makes traced calls of its own runs
// them untraced. (Traced, they took the frame being filled or read, and
// the record being written: the interrupted call returned to the handler
// call's return address, and the program crashed.) A handler that
// interrupts the traced function itself is traced as any code.
__attribute__((used)) const void *hk_trace_enter(const traced_function *f, const entry_registers *r,
                                                  uintptr_t *return_slot) {
  if (inside || !started) return f->original;
  inside++;
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  const void *next = trace_enter(f, r, return_slot);
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  inside--;
  return next;
}

// Called by hk_trace_return: returns the real return address.
__attribute__((used)) uintptr_t hk_trace_exit(const return_registers *r, uintptr_t stack) {
  inside++;
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  uintptr_t back = trace_exit(r, stack);
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  inside--;
  return back;
}

__attribute__((always_inline)) static inline const void *trace_enter(const traced_function *f, const entry_registers *r,
                                                                     uintptr_t *return_slot) {
  thread_state *s = state_here;
  if (s == NULL) {
    s = state_ended ? NULL : state_make();
    if (s == NULL) return f->original;
  }
  // Frames a longjmp skipped (to a setjmp outside any traced call, so no
  // traced call returned past them) lie below this call's stack, or at it
  // where the same caller calls again; a caller's frame is above it, and a
  // frame at the same place whose return slot holds this tracer's return
  // is the caller of a tail call, which is live. Dropped here too (they
  // stayed for good, indenting every later line, and 8,192 of them stopped
  // the tracing).
  // A frame below whose slot still holds this tracer's return is a call
  // under way on another stack (a fiber's, or one a handler on a higher
  // signal stack interrupted): kept, as __cxa_begin_catch keeps it.
  const uintptr_t here = (uintptr_t)(return_slot + 1);
  while (s->depth > 0) {
    const uintptr_t stack = s->frames[s->depth - 1].stack;
    const int below = stack < here && *(const uintptr_t *)(stack - sizeof(uintptr_t)) != (uintptr_t)hk_trace_return;
    const int replaced = stack == here && *return_slot != (uintptr_t)hk_trace_return;
    if (!below && !replaced) break;
    s->depth--;
  }
  if (s->depth >= MAX_DEPTH) {
    s->too_deep++;  // said at the image's end (too_deep_print)
    return f->original;
  }
  frame *fr = &s->frames[s->depth];
  fr->return_address = *return_slot;
  fr->function = f;
  fr->stack = (uintptr_t)(return_slot + 1);
  if (!summary_mode) {
    const uint64_t *saved = &r->rdi;   // rdi, rsi, rdx, rcx, r8, r9 in order
    for (uint32_t i = 0; i < f->integer_words; i++) fr->words[i] = saved[i];
    if (f->real_words) {
      fr->reals[0] = r->xmm[0][0];
      fr->reals[1] = r->xmm[1][0];
    }
  }
  s->depth++;
  *return_slot = (uintptr_t)hk_trace_return;
  fr->start = __rdtsc();
  return f->original;
}

__attribute__((always_inline)) static inline uintptr_t trace_exit(const return_registers *r, uintptr_t stack) {
  uint64_t end = __rdtsc();
  thread_state *s = state_here;
  // Frames a longjmp skipped lie below the caller's stack: drop them.
  while (s->depth > 1 && s->frames[s->depth - 1].stack < stack) s->depth--;
  if (s->depth == 0) {
    // No record of the call returning here: its real return address is
    // lost. Said, rather than returning to an address read out of bounds.
    static const char message[] = "hook-trace: a traced call returned with no record of it; the program cannot go on\n";
    write_all(output_fd, message, sizeof message - 1);
    abort();
  }
  frame *fr = &s->frames[--s->depth];
  const traced_function *f = fr->function;
  uint64_t ticks = end - fr->start;
  if (summary_mode) {
    counter *c = &s->counters[f->index];
    c->calls++;
    c->ticks += ticks;
    c->errors += (uint64_t)failed(f, r->rax);
    return fr->return_address;
  }
  uint32_t texts = f->string_arguments + f->string_result, words = f->integer_words + f->real_words;
  // Room for the longest such record; it takes what its strings need.
  uint64_t most = (sizeof(record) + words * 8 + texts * sizeof(text) + 7) & ~(uint64_t)7;
  uint64_t head = atomic_load_explicit(&s->head_local, memory_order_relaxed);
  uint64_t to_end = RING_SIZE - (head & (RING_SIZE - 1));
  uint64_t need = most + (to_end < most ? to_end : 0);
  uint64_t used = head - s->tail_seen;
  if (RING_SIZE - used < need) {
    s->tail_seen = atomic_load_explicit(&s->tail, memory_order_acquire);
    used = head - s->tail_seen;
    if (RING_SIZE - used < need) {
      inside++;
      ring_make_room(s, need);
      inside--;
      s->tail_seen = atomic_load_explicit(&s->tail, memory_order_acquire);
    }
  }
  if (to_end < most) {
    // The record may not fit before the ring's end: a skip record to there.
    record *skip = (record *)(s->ring + (head & (RING_SIZE - 1)));
    skip->size = (uint32_t)to_end;
    skip->function = NULL;
    head += to_end;
  }
  record *rec = (record *)(s->ring + (head & (RING_SIZE - 1)));
  rec->tid = (uint32_t)s->tid;
  rec->function = f;
  rec->ticks = ticks;
  rec->result = f->real_result ? r->xmm0_bits : r->rax;
  rec->depth = (uint16_t)s->depth;
  rec->texts = (uint16_t)texts;
  for (uint32_t i = 0; i < f->integer_words; i++) rec->words[i] = fr->words[i];
  for (uint32_t i = 0; i < f->real_words; i++) memcpy(&rec->words[f->integer_words + i], &fr->reals[i], 8);
  // The C strings, read now, straight into the record (every string argument
  // of the prototypes is one the function reads and leaves as it was).
  uint8_t *kept = (uint8_t *)(rec->words + words);
  if (f->string_arguments) {
    const uint64_t most = text_bound(f, fr->words);
    for (uint32_t i = 0; i < f->string_arguments; i++) {
      text *t = (text *)kept;
      text_take(t, fr->words[f->string_word[i]], most);
      kept += 2 + t->length;
    }
  }
  if (f->string_result) {
    text *t = (text *)kept;
    text_take(t, r->rax, TEXT_UNBOUNDED);
    kept += 2 + t->length;
  }
  uint64_t size = ((uint64_t)(kept - (uint8_t *)rec) + 7) & ~(uint64_t)7;
  rec->size = (uint32_t)size;
  atomic_store_explicit(&s->head_local, head + size, memory_order_release);   // (a plain store on x86-64)
  // Published in batches, so that the writer's reads and the thread's
  // writes of the ring's end do not pass its cache line back and forth on
  // every call: every 4 KiB, or once a millisecond or so has passed (a
  // thread that makes a call now and then has its lines written soon).
  if (head + size - atomic_load_explicit(&s->head, memory_order_relaxed) >= 4096 ||
      end - s->published_at > publish_ticks) {
    atomic_store_explicit(&s->head, head + size, memory_order_release);
    s->published_at = end;
  }
  // Half full and the writer asleep: wake it (once: the first to see it asleep).
  if (used + need > RING_SIZE / 2 && atomic_load_explicit(&writer_asleep, memory_order_relaxed) &&
      atomic_exchange(&writer_asleep, 0)) {
    inside++;
    writer_wake();
    inside--;
  }
  return fr->return_address;
}

// The stubs' common entry and the return landing. See the top of the file.
__asm__(
    ".text\n"
    ".globl hk_trace_entry\n"
    ".hidden hk_trace_entry\n"
    ".type hk_trace_entry,@function\n"
    "hk_trace_entry:\n"
    "  subq $200, %rsp\n"            // 192 bytes of registers + 8: aligned to 16
    "  movaps %xmm0, 0(%rsp)\n"
    "  movaps %xmm1, 16(%rsp)\n"
    "  movaps %xmm2, 32(%rsp)\n"
    "  movaps %xmm3, 48(%rsp)\n"
    "  movaps %xmm4, 64(%rsp)\n"
    "  movaps %xmm5, 80(%rsp)\n"
    "  movaps %xmm6, 96(%rsp)\n"
    "  movaps %xmm7, 112(%rsp)\n"
    "  movq %rdi, 128(%rsp)\n"
    "  movq %rsi, 136(%rsp)\n"
    "  movq %rdx, 144(%rsp)\n"
    "  movq %rcx, 152(%rsp)\n"
    "  movq %r8, 160(%rsp)\n"
    "  movq %r9, 168(%rsp)\n"
    "  movq %rax, 176(%rsp)\n"
    "  movq %r10, 184(%rsp)\n"
    "  movq %r11, %rdi\n"            // the function's record
    "  movq %rsp, %rsi\n"            // the saved registers
    "  leaq 200(%rsp), %rdx\n"       // the return address's slot
    "  call hk_trace_enter\n"
    "  movq %rax, %r11\n"
    "  movaps 0(%rsp), %xmm0\n"
    "  movaps 16(%rsp), %xmm1\n"
    "  movaps 32(%rsp), %xmm2\n"
    "  movaps 48(%rsp), %xmm3\n"
    "  movaps 64(%rsp), %xmm4\n"
    "  movaps 80(%rsp), %xmm5\n"
    "  movaps 96(%rsp), %xmm6\n"
    "  movaps 112(%rsp), %xmm7\n"
    "  movq 128(%rsp), %rdi\n"
    "  movq 136(%rsp), %rsi\n"
    "  movq 144(%rsp), %rdx\n"
    "  movq 152(%rsp), %rcx\n"
    "  movq 160(%rsp), %r8\n"
    "  movq 168(%rsp), %r9\n"
    "  movq 176(%rsp), %rax\n"
    "  movq 184(%rsp), %r10\n"
    "  addq $200, %rsp\n"
    "  jmp *%r11\n"
    ".size hk_trace_entry, .-hk_trace_entry\n"
    "\n"
    ".globl hk_trace_return\n"
    ".hidden hk_trace_return\n"
    ".type hk_trace_return,@function\n"
    "hk_trace_return:\n"
    "  subq $64, %rsp\n"             // the real return address's slot at 56, 48 bytes below: aligned
    "  movaps %xmm0, 0(%rsp)\n"
    "  movaps %xmm1, 16(%rsp)\n"
    "  movq %rax, 32(%rsp)\n"
    "  movq %rdx, 40(%rsp)\n"
    "  movq %rsp, %rdi\n"            // the result registers
    "  leaq 64(%rsp), %rsi\n"        // the caller's stack
    "  call hk_trace_exit\n"
    "  movq %rax, 56(%rsp)\n"
    "  movaps 0(%rsp), %xmm0\n"
    "  movaps 16(%rsp), %xmm1\n"
    "  movq 32(%rsp), %rax\n"
    "  movq 40(%rsp), %rdx\n"
    "  addq $56, %rsp\n"
    "  ret\n"
    ".size hk_trace_return, .-hk_trace_return\n");

// MARK: - Stubs

// 24 bytes a function: movabs $record, %r11; jmp *0(%rip); .quad hk_trace_entry.
//
// A page that holds a live stub is never made writable again: while it was
// (to add the next stub), a traced function whose stub is on it faulted, and
// the tracer's own mprotect back to read-execute is such a function when
// mprotect is traced (`hook-trace -- /bin/true`, every import traced, spun in
// the fault handler). Stubs are written through a second, writable mapping
// of the same memory (a memfd mapped twice); where memfd_create is refused,
// each stub gets a fresh page, made read-execute before it is used.
#define STUB_SIZE 24
static uint8_t *stub_write, *stub_exec;
static size_t stub_used, stub_capacity;

static void *stub_make(const traced_function *f) {
  uint8_t code[STUB_SIZE];
  uint64_t record = (uint64_t)(uintptr_t)f, target = (uint64_t)(uintptr_t)hk_trace_entry;
  code[0] = 0x49;
  code[1] = 0xbb;
  memcpy(code + 2, &record, 8);
  code[10] = 0xff;
  code[11] = 0x25;
  memset(code + 12, 0, 4);
  memcpy(code + 16, &target, 8);
  if (stub_exec == NULL || stub_used + STUB_SIZE > stub_capacity) {
    size_t size = 64 * 1024;
    int fd = (int)syscall(SYS_memfd_create, "hook-trace-stubs", MFD_CLOEXEC);
    void *writable = MAP_FAILED, *executable = MAP_FAILED;
    if (fd >= 0 && ftruncate(fd, (off_t)size) == 0) {
      writable = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      executable = mmap(NULL, size, PROT_READ | PROT_EXEC, MAP_SHARED, fd, 0);
    }
    if (fd >= 0) close(fd);
    if (writable == MAP_FAILED || executable == MAP_FAILED) {
      if (writable != MAP_FAILED) munmap(writable, size);
      if (executable != MAP_FAILED) munmap(executable, size);
      // A page of its own, never written once it is executable.
      uint8_t *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (page == MAP_FAILED) return NULL;
      memcpy(page, code, STUB_SIZE);
      if (mprotect(page, 4096, PROT_READ | PROT_EXEC) != 0) return NULL;
      return page;
    }
    stub_write = writable;
    stub_exec = executable;
    stub_used = 0;
    stub_capacity = size;
  }
  // Not executed yet: written through the other mapping, no protection changed.
  memcpy(stub_write + stub_used, code, STUB_SIZE);
  uint8_t *p = stub_exec + stub_used;
  stub_used += STUB_SIZE;
  __builtin___clear_cache((char *)p, (char *)p + STUB_SIZE);
  return p;
}

// MARK: - Finding the imports that match

static char **patterns;
static size_t pattern_count;
static int library_calls_only;

static int matches(const char *name) {
  if (pattern_count == 0) return 1;
  for (size_t i = 0; i < pattern_count; i++)
    if (fnmatch(patterns[i], name, 0) == 0) return 1;
  return 0;
}

static traced_function *traced_named(const char *symbol) {
  uint32_t n = atomic_load(&function_count);
  for (uint32_t i = 0; i < n; i++)
    if (strcmp(functions[i].symbol, symbol) == 0) return &functions[i];
  return NULL;
}

// Names collected by a walk (malloc'd outside the walk's callback).
typedef struct {
  const char **names;
  size_t count, capacity;
  int full;
} name_list;

static uintptr_t own_base;
static const void *own_dynamic;

static int collect_imports(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  name_list *list = data;
  if (info->dlpi_addr == own_base) return 0;
  const ElfW(Dyn) *dynamic = NULL;
  for (int i = 0; i < info->dlpi_phnum; i++)
    if (info->dlpi_phdr[i].p_type == PT_DYNAMIC) dynamic = (const void *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
  if (dynamic == NULL || dynamic == own_dynamic) return 0;
  const char *name = info->dlpi_name;
  if (name && (strstr(name, "/ld-linux") || strstr(name, "linux-vdso"))) return 0;
  const ElfW(Sym) *symtab = NULL;
  const char *strtab = NULL;
  const ElfW(Rela) *tables[2] = {NULL, NULL};
  size_t sizes[2] = {0, 0};
  for (const ElfW(Dyn) *d = dynamic; d->d_tag != DT_NULL; d++) {
    uintptr_t value = d->d_un.d_ptr;
    uintptr_t address = value < info->dlpi_addr ? value + info->dlpi_addr : value;
    switch (d->d_tag) {
    case DT_SYMTAB: symtab = (const void *)address; break;
    case DT_STRTAB: strtab = (const void *)address; break;
    case DT_JMPREL: tables[0] = (const void *)address; break;
    case DT_PLTRELSZ: sizes[0] = d->d_un.d_val; break;
    case DT_RELA: tables[1] = (const void *)address; break;
    case DT_RELASZ: sizes[1] = d->d_un.d_val; break;
    }
  }
  if (symtab == NULL || strtab == NULL) return 0;
  for (int t = 0; t < 2; t++) {
    if (tables[t] == NULL) continue;
    size_t count = sizes[t] / sizeof(ElfW(Rela));
    for (size_t i = 0; i < count; i++) {
      uint32_t type = ELF64_R_TYPE(tables[t][i].r_info), index = ELF64_R_SYM(tables[t][i].r_info);
      if (index == 0 || (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT)) continue;
      const ElfW(Sym) *sym = &symtab[index];
      int kind = ELF64_ST_TYPE(sym->st_info);
      if (sym->st_shndx != SHN_UNDEF) continue;
      if (kind != STT_FUNC && kind != STT_NOTYPE && kind != STT_GNU_IFUNC) continue;
      const char *symbol = strtab + sym->st_name;
      if (symbol[0] == 0 || never_traced(symbol) || !matches(symbol)) continue;
      int seen = 0;
      for (size_t k = 0; k < list->count && !seen; k++) seen = strcmp(list->names[k], symbol) == 0;
      if (seen) continue;
      if (list->count == list->capacity) {
        list->full = 1;
        return 1;
      }
      list->names[list->count++] = symbol;
    }
  }
  return 0;
}

static const char *demangled(const char *symbol) {
  const char *mangled = symbol;
  if (strncmp(mangled, "_$s", 3) == 0) mangled++;
  if (strncmp(mangled, "$s", 2) != 0 && strncmp(mangled, "$S", 2) != 0) return strdup(symbol);
  char *(*demangle)(const char *, size_t, char *, size_t *, uint32_t) = dlsym(RTLD_DEFAULT, "swift_demangle");
  if (demangle == NULL) return strdup(symbol);
  char *text = demangle(mangled, strlen(mangled), NULL, NULL, 0);
  return text ? text : strdup(symbol);
}

static int import_patch(traced_function *f) {
  hk_import_request request;
  memset(&request, 0, sizeof request);
  // Calls from one object to another: not this library's, and not the
  // defining object's calls of its own function through its own slots.
  uintptr_t bases[2] = {own_base, 0};
  const void *dynamics[2] = {own_dynamic, NULL};
  request.symbol = f->symbol;
  request.original = (void *)f->original;
  request.replacement = f->stub;
  request.excluded_bases = bases;
  request.excluded_dynamics = dynamics;
  request.excluded_count = hk_import_image(f->original, &bases[1], &dynamics[1]) ? 2 : 1;
  hk_import_outcome outcome;
  memset(&outcome, 0, sizeof outcome);
  int result = hk_import_patch(&request, &outcome);
  hk_import_outcome_free(&outcome);
  return result;
}

// Patches `f`'s entry; -1 with the reason in `why` if it cannot be.
static int entry_patch(traced_function *f, char *why, size_t why_size) {
  if (!hk_entry_supported() || hk_entry_unavailable_under_sanitizer()) {
    snprintf(why, why_size, "entry hooks are unavailable here");
    return -1;
  }
  char name[256];
  hk_entry_definition definition;
  // Only the start of an exported definition. An IFUNC's implementation
  // (memcpy's __memcpy_avx512_unaligned_erms) has no exported symbol of its
  // own, and glibc's implementations share code: mempcpy's jumps to the
  // third byte of memcpy's, inside the patch (SIGILL, tracing every import).
  // Those are traced at the import slots (said in ObservingCalls), silently.
  if (!hk_entry_find_address(f->original, name, sizeof name, &definition) || definition.address != f->original ||
      definition.from_symtab_only) {
    why[0] = 0;
    return -1;
  }
  uint64_t size = definition.size;
  // Another name of a function already patched (an alias at the same
  // address): its patch is there; this one goes by its import slots.
  uint32_t n = atomic_load(&function_count);
  for (uint32_t i = 0; i < n; i++) {
    if (functions[i].by_entry && functions[i].entry == f->original) {
      // Its stub goes on to the relocated entry, not through the patch:
      // a call by this name is traced once, under it.
      f->alias_of = &functions[i];
      why[0] = 0;
      return -1;
    }
  }
  void *page = hk_entry_page_reserve(f->original, why, why_size);
  if (page == NULL) return -1;
  static hk_entry_plan plan;   // large; made and used under the setup's single thread of control
  if (hk_entry_plan_make(f->original, size, page, &plan, why, why_size) != 0) return -1;
  if (hk_entry_page_fill(page, &plan, f->stub, why, why_size) != 0) return -1;
  const void *entry = f->original;
  f->original = page;   // the relocated entry: calls the function as it was
  if (hk_entry_patch(&plan, page, hk_entry_page_thunk(page), why, why_size) != 0) {
    f->original = entry;
    return -1;
  }
  f->by_entry = 1;
  f->entry = entry;
  return 0;
}

static pthread_mutex_t setup_lock = PTHREAD_MUTEX_INITIALIZER;

// Finds matching imports not yet traced, in every loaded object, and traces them.
static void trace_new_imports(void) {
  pthread_mutex_lock(&setup_lock);
  inside++;
  name_list list = {0};
  list.capacity = 1024;
  for (;;) {
    list.names = malloc(list.capacity * sizeof(char *));
    if (list.names == NULL) goto done;
    list.count = 0;
    list.full = 0;
    dl_iterate_phdr(collect_imports, &list);
    if (!list.full) break;
    free(list.names);
    list.capacity *= 4;
  }
  for (size_t i = 0; i < list.count; i++) {
    const char *symbol = list.names[i];
    traced_function *known = traced_named(symbol);
    if (known) {
      // A newly loaded object importing a traced function: its slots too.
      if (!known->by_entry) import_patch(known);
      continue;
    }
    uint32_t n = atomic_load(&function_count);
    if (n == MAX_FUNCTIONS) {
      // Said once in the trace: the functions matched past the table go untraced.
      static int said;
      if (!said) {
        said = 1;
        char line[256];
        int length = snprintf(line, sizeof line, "hook-trace: more than %d functions match; '%s' and those after it are not traced (narrow -e)\n",
                              MAX_FUNCTIONS, symbol);
        if (length > 0) write_all(output_fd, line, (size_t)length < sizeof line ? (size_t)length : sizeof line - 1);
      }
      break;
    }
    void *entry_target = dlsym(RTLD_NEXT, symbol);           // the definition after this library's
    void *import_target = dlsym(RTLD_DEFAULT, symbol);       // what the program's slots are bound to
    if (import_target == NULL) continue;
    // Not a variable an object imports (Python's extension modules import
    // _Py_NoneStruct and the like with no type on their side): its slots
    // would have held the stub's address, and the first increment of its
    // count wrote into the stub (python3 ended with SIGSEGV).
    Dl_info where;
    const Elf64_Sym *definition = NULL;
    if (dladdr1(import_target, &where, (void **)&definition, RTLD_DL_SYMENT) && definition &&
        ELF64_ST_TYPE(definition->st_info) != STT_FUNC && ELF64_ST_TYPE(definition->st_info) != STT_GNU_IFUNC)
      continue;
    traced_function *f = &functions[n];
    memset(f, 0, sizeof *f);
    f->symbol = strdup(symbol);
    f->name = demangled(symbol);
    size_t length = strlen(f->name);
    f->name_length = (uint32_t)(length > NAME_LIMIT ? NAME_LIMIT : length);
    f->proto = prototype_named(symbol);
    f->integer_words = 6;
    if (f->proto) {
      f->integer_words = 0;
      for (const char *a = f->proto->args; *a; a++) {
        if (*a == 's' && f->integer_words < 6 && f->string_arguments < MAX_STRINGS - 1)
          f->string_word[f->string_arguments++] = (uint8_t)f->integer_words;
        if ((*a == 'n' || *a == 'm') && f->integer_words < 6) {
          f->bound_kind = *a;
          f->bound_word = (uint8_t)f->integer_words;
        }
        if (*a == 'f') f->real_words += f->real_words < 2;
        else f->integer_words += f->integer_words < 6;
      }
      f->string_result = f->proto->result[0] == 's';
      f->real_result = f->proto->result[0] == 'f';
    }
    f->index = n;
    f->stub = stub_make(f);
    if (f->stub == NULL || f->symbol == NULL || f->name == NULL) break;
    f->original = entry_target && entry_target == import_target ? entry_target : import_target;
    int done = 0;
    if (!library_calls_only && entry_target == import_target) {
      char why[256] = "";
      done = entry_patch(f, why, sizeof why) == 0;
      if (!done && why[0]) {
        // Said in the trace: its calls from inside its own library go unseen.
        char line[512];
        int n = snprintf(line, sizeof line, "hook-trace: %s: its entry could not be patched (%s); library calls only\n",
                         f->name, why);
        if (n > 0) write_all(output_fd, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
      }
    }
    atomic_store(&function_count, n + 1);
    if (!done) {
      f->original = f->alias_of ? f->alias_of->original : import_target;
      import_patch(f);
    }
  }
  free(list.names);
done:
  inside--;
  pthread_mutex_unlock(&setup_lock);
}

static void summary_print(void);
static void refine_calibration(void);
static void too_deep_print(void);

// Before exec or _exit: what this process image traced goes out now (the
// lines, and with -c its table), since no destructor will run.
static void image_ends(void) {
  // A child of vfork that execs or exits: the memory is the parent's, which
  // goes on tracing once the child is gone (writing the parent's summary
  // and ending its writer here lost the parent's later calls, and printed
  // its calls so far as the child's).
  if (!started || (pid_t)syscall(SYS_getpid) != image_pid) return;
  inside++;
  writer_end();
  inside--;
  refine_calibration();
  hook_trace_flush();
  if (summary_mode) summary_print();
  too_deep_print();
}

// MARK: - Interposed: dlopen (new objects), exec and _exit (write out first)

// The definition after this library's (its own calls untraced).
static void *next_definition(const char *name) {
  inside++;
  void *found = dlsym(RTLD_NEXT, name);
  inside--;
  return found;
}

// glibc's dlopen searches its caller's RUNPATH (or RPATH) and expands
// $ORIGIN from the caller's object, and the caller of the real dlopen is
// this wrapper, in this library: a program that loads a plug-in by its
// RUNPATH (`-rpath '$ORIGIN/plug'`) failed to, traced. The wrapper finds
// such a name in its caller's paths itself and hands the real dlopen the
// path found; anything else goes on as given.
static const char *caller_dynamic_string(const struct link_map *object, Elf64_Sxword tag) {
  const char *strings = NULL;
  Elf64_Xword offset = 0;
  int found = 0;
  for (const Elf64_Dyn *d = object->l_ld; d && d->d_tag != DT_NULL; d++) {
    // (An address the loader left unrelocated, in a read-only dynamic
    // section, is relative to the object's base, as in collect_imports.)
    uintptr_t value = d->d_un.d_ptr;
    if (d->d_tag == DT_STRTAB) strings = (const char *)(value < object->l_addr ? value + object->l_addr : value);
    if (d->d_tag == tag) { offset = d->d_un.d_val; found = 1; }
  }
  return found && strings ? strings + offset : NULL;
}

// `text` with $ORIGIN (or ${ORIGIN}) read as `origin`, into `out`; 0 if it does not fit.
static int expand_origin(const char *text, size_t length, const char *origin, char *out, size_t size) {
  size_t used = 0;
  for (size_t i = 0; i < length;) {
    size_t skip = strncmp(text + i, "${ORIGIN}", 9) == 0 ? 9 : strncmp(text + i, "$ORIGIN", 7) == 0 ? 7 : 0;
    const char *piece = skip ? origin : text + i;
    size_t n = skip ? strlen(origin) : 1;
    if (used + n >= size) return 0;
    memcpy(out + used, piece, n);
    used += n;
    i += skip ? skip : 1;
  }
  out[used] = 0;
  return 1;
}

// The path `file` names from `caller`'s RUNPATH or RPATH, or with $ORIGIN
// expanded, if the caller's object has one and the file is there; else NULL.
static const char *caller_path(const char *file, const void *caller, char *out, size_t size) {
  if (file == NULL || caller == NULL) return NULL;
  Dl_info info;
  struct link_map *object = NULL;
  if (!dladdr1(caller, &info, (void **)&object, RTLD_DL_LINKMAP) || object == NULL) return NULL;
  // The object's folder, for $ORIGIN (the program's own: /proc/self/exe).
  char origin[4096];
  const char *path = object->l_name && *object->l_name ? object->l_name : NULL;
  char self[4096];
  if (path == NULL) {
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) return NULL;
    self[n] = 0;
    path = self;
  }
  const char *slash = strrchr(path, '/');
  if (slash == NULL || (size_t)(slash - path) >= sizeof origin) return NULL;
  memcpy(origin, path, (size_t)(slash - path));
  origin[slash - path] = 0;
  if (strchr(file, '/')) {
    // A path: only $ORIGIN is the caller's to expand.
    if (strstr(file, "$ORIGIN") == NULL && strstr(file, "${ORIGIN}") == NULL) return NULL;
    return expand_origin(file, strlen(file), origin, out, size) ? out : NULL;
  }
  const char *paths = caller_dynamic_string(object, DT_RUNPATH);
  // LD_LIBRARY_PATH comes before a RUNPATH (not before an RPATH): a file
  // there is the one the search finds, and the real dlopen finds it too.
  if (paths) {
    const char *library_path = getenv("LD_LIBRARY_PATH");
    for (const char *p = library_path; p && *p;) {
      const char *end = strchr(p, ':');
      size_t length = end ? (size_t)(end - p) : strlen(p);
      if (length > 0 && (size_t)snprintf(out, size, "%.*s/%s", (int)length, p, file) < size && access(out, F_OK) == 0) return NULL;
      if (!end) break;
      p = end + 1;
    }
  } else {
    paths = caller_dynamic_string(object, DT_RPATH);
  }
  if (paths == NULL) return NULL;
  for (const char *p = paths; *p;) {
    const char *end = strchr(p, ':');
    size_t length = end ? (size_t)(end - p) : strlen(p);
    char folder[4096];
    if (length > 0 && expand_origin(p, length, origin, folder, sizeof folder) &&
        (size_t)snprintf(out, size, "%s/%s", folder, file) < size && access(out, F_OK) == 0)
      return out;
    if (!end) break;
    p = end + 1;
  }
  return NULL;
}

void *dlopen(const char *file, int mode) {
  static void *(*real)(const char *, int);
  if (real == NULL) real = next_definition("dlopen");
  char found[4096];
  // (Loaded already under that name: the real dlopen's answer, as given.)
  const char *path = NULL;
  void *loaded = file ? real(file, mode | RTLD_NOLOAD) : NULL;
  if (loaded) {
    dlclose(loaded);
  } else {
    if (file) (void)dlerror();   // the probe's error is not the program's
    path = caller_path(file, __builtin_return_address(0), found, sizeof found);
  }
  void *handle = real(path ? path : file, mode);
  if (handle && started) trace_new_imports();
  return handle;
}

// The launcher's stderr copy (HOOK_TRACE_FD) is close-on-exec, so that
// the program's children that are not traced (a daemon holding a pipe
// open) do not keep it; an image this library execs gets it.
static int output_inherited;
static void output_to_next_image(int keep) {
  if (output_inherited) fcntl(output_fd, F_SETFD, keep ? 0 : FD_CLOEXEC);
}

// An exec that fails returns, and the image goes on: its writer, ended for
// the exec, is started again (it stayed ended: the image's later lines were
// written only when a ring filled or at its exit). A path that cannot be
// executed (`tried`: access(X_OK) fails) is passed on without ending the
// image: a program that tries each PATH entry itself, as Python's
// os.execvp does, printed its -c table once a failed attempt.
#define FORWARD_EXEC(name, params, args, tried)             \
  int name params {                                         \
    static int(*real) params;                               \
    if (real == NULL) real = next_definition(#name);        \
    inside++;                                               \
    int runnable = (tried);                                 \
    inside--;                                               \
    if (!runnable) return real args;                        \
    int writing = atomic_load(&writer_running);             \
    image_ends();                                           \
    int ended = writing && !atomic_load(&writer_running);   \
    output_to_next_image(1);                                \
    int failed = real args;                                 \
    int error = errno;                                      \
    output_to_next_image(0);                                \
    inside++;                                               \
    if (ended) writer_start();                              \
    inside--;                                               \
    errno = error;                                          \
    return failed;                                          \
  }

FORWARD_EXEC(execve, (const char *path, char *const argv[], char *const envp[]), (path, argv, envp), access(path, X_OK) == 0)
FORWARD_EXEC(execv, (const char *path, char *const argv[]), (path, argv), access(path, X_OK) == 0)
FORWARD_EXEC(execvp, (const char *file, char *const argv[]), (file, argv), 1)
FORWARD_EXEC(execvpe, (const char *file, char *const argv[], char *const envp[]), (file, argv, envp), 1)
FORWARD_EXEC(fexecve, (int fd, char *const argv[], char *const envp[]), (fd, argv, envp), 1)

// A process with more than one thread may not enter a new user namespace
// (unshare(CLONE_NEWUSER), setns to one: EINVAL), and the writer is a thread
// of the tracer's: `unshare -U`, bwrap and rootless containers failed when
// traced. The writer is ended for the call (its lines written) and started
// again after it. (setns with nstype 0 may be a user namespace: ended too;
// setns to a mount namespace wants the thread's fs its own, which the
// writer shares.) The writer is joined when its tid is cleared, a moment
// before the kernel takes it off the thread group: a call refused with
// EINVAL then is made again, for up to 20 ms (2 in 100 failed at once).
static int with_writer_paused(int single_thread, int (*call)(int, int), int a, int b) {
  int ended = 0;
  if (single_thread && started && (pid_t)syscall(SYS_getpid) == image_pid && atomic_load(&writer_running)) {
    inside++;
    writer_end();
    inside--;
    ended = 1;
  }
  int result = call(a, b);
  for (int tries = 0; ended && result != 0 && errno == EINVAL && tries < 200; tries++) {
    struct timespec pause = {0, 100000};
    nanosleep(&pause, NULL);
    result = call(a, b);
  }
  int error = errno;
  if (ended) {
    inside++;
    writer_start();
    inside--;
  }
  errno = error;
  return result;
}

static int (*real_unshare)(int);
static int (*real_setns)(int, int);
static int call_unshare(int flags, int unused) { (void)unused; return real_unshare(flags); }
static int call_setns(int fd, int type) { return real_setns(fd, type); }

int unshare(int flags) {
  if (real_unshare == NULL) real_unshare = next_definition("unshare");
  return with_writer_paused((flags & CLONE_NEWUSER) != 0, call_unshare, flags, 0);
}

int setns(int fd, int nstype) {
  if (real_setns == NULL) real_setns = next_definition("setns");
  return with_writer_paused(nstype == 0 || (nstype & (CLONE_NEWUSER | CLONE_NEWNS)) != 0, call_setns, fd, nstype);
}

// The image ends, then the process. (_Exit too: glibc's _Exit, quick_exit
// and execl family reach _exit and execve inside libc, past these wrappers,
// and the image's trace and table were lost; quick_exit is seen by
// at_quick_exit, the execl family below.)
#define FORWARD_EXIT(name)                                  \
  void name(int status) {                                   \
    static void (*real)(int);                               \
    if (real == NULL) real = next_definition(#name);        \
    image_ends();                                           \
    real(status);                                           \
    __builtin_unreachable();                                \
  }

FORWARD_EXIT(_exit)
FORWARD_EXIT(_Exit)

// The arguments after `first` up to the NULL, as an argv on the stack, sized
// by a first count (va_copy); with `envp`, the array after that NULL too
// (execle). More than 65,536 arguments: E2BIG, as the kernel would say.
#define EXECL_MOST 65536
#define COLLECT_ARGS(first, argv, envp)                                   \
  size_t count_##argv = 1;                                                \
  {                                                                       \
    va_list ap;                                                           \
    va_start(ap, first);                                                  \
    if (first != NULL)                                                    \
      while (va_arg(ap, const char *) != NULL && count_##argv <= EXECL_MOST) count_##argv++; \
    va_end(ap);                                                           \
  }                                                                       \
  if (count_##argv > EXECL_MOST) {                                        \
    errno = E2BIG;                                                        \
    return -1;                                                            \
  }                                                                       \
  const char *argv[count_##argv + 1];                                     \
  {                                                                       \
    va_list ap;                                                           \
    va_start(ap, first);                                                  \
    argv[0] = first;                                                      \
    for (size_t i = 1; i <= count_##argv && argv[i - 1] != NULL; i++)     \
      argv[i] = va_arg(ap, const char *);                                 \
    argv[count_##argv] = NULL;                                            \
    if (envp) *(envp) = va_arg(ap, char *const *);                        \
    va_end(ap);                                                           \
  }

int execl(const char *path, const char *arg, ...) {
  COLLECT_ARGS(arg, argv, (char *const **)NULL);
  return execv(path, (char *const *)argv);
}

int execlp(const char *file, const char *arg, ...) {
  COLLECT_ARGS(arg, argv, (char *const **)NULL);
  return execvp(file, (char *const *)argv);
}

int execle(const char *path, const char *arg, ...) {
  char *const *envp = NULL;
  COLLECT_ARGS(arg, argv, &envp);
  return execve(path, (char *const *)argv, envp);
}

// MARK: - Interposed: exceptions and forced unwinds

// An exception (or pthread_exit's forced unwind) walks the thread's stack
// by its unwind tables, and a return address
// replaced by hk_trace_return has none: the unwinder gives up and the
// program ends (std::terminate). So before an unwinder walks, every return
// address of the thread that the tracer replaced is put back: the calls it
// unwinds are not reported (their records are dropped at the thread's next
// traced return, as after a longjmp); and once a handler catches the
// exception, those of the calls still under way (the handler's and its
// callers') are replaced again. (uftrace does the same.) Not handled: a
// thread cancelled (pthread_cancel) inside a traced call, whose forced
// unwind glibc starts from its own code, with no entry point to interpose:
// its destructors above the traced call are skipped, as they were for
// pthread_exit; and a catch that does not call __cxa_begin_catch (Rust's
// catch_unwind), after which the calls still under way go unreported.

// Calls `body` on each live frame of this thread whose return slot lies at
// or above `floor`, newest first. A frame a longjmp or an unwind skipped,
// still recorded, lies below a newer live one (a caller's frame is above
// its callee's): left out.
static void frames_each(uintptr_t floor, void (*body)(frame *, uintptr_t *)) {
  thread_state *s = state_here;
  if (s == NULL) return;
  uintptr_t newest = floor;
  for (int i = s->depth - 1; i >= 0; i--) {
    frame *fr = &s->frames[i];
    uintptr_t *slot = (uintptr_t *)(fr->stack - sizeof(uintptr_t));
    if ((uintptr_t)slot < newest) continue;
    newest = (uintptr_t)slot + 1;
    body(fr, slot);
  }
}

static void frame_restore(frame *fr, uintptr_t *slot) {
  if (*slot == (uintptr_t)hk_trace_return) *slot = fr->return_address;
}

static void frame_replace(frame *fr, uintptr_t *slot) {
  if (*slot == fr->return_address) *slot = (uintptr_t)hk_trace_return;
}

// Every replaced return address of this thread put back (all of them lie
// above this function's frame).
__attribute__((noinline)) static void frames_restore(void) {
  frames_each((uintptr_t)__builtin_frame_address(0), frame_restore);
}

_Unwind_Reason_Code _Unwind_RaiseException(struct _Unwind_Exception *exception) {
  static _Unwind_Reason_Code (*real)(struct _Unwind_Exception *);
  if (real == NULL) real = next_definition("_Unwind_RaiseException");
  frames_restore();
  return real(exception);
}

_Unwind_Reason_Code _Unwind_Resume_or_Rethrow(struct _Unwind_Exception *exception) {
  static _Unwind_Reason_Code (*real)(struct _Unwind_Exception *);
  if (real == NULL) real = next_definition("_Unwind_Resume_or_Rethrow");
  frames_restore();
  return real(exception);
}

// (After a cleanup: a handler that caught another exception meanwhile, in
// a destructor, replaced the addresses of the calls this one unwinds.)
void _Unwind_Resume(struct _Unwind_Exception *exception) {
  static void (*real)(struct _Unwind_Exception *);
  if (real == NULL) real = next_definition("_Unwind_Resume");
  frames_restore();
  real(exception);
  __builtin_unreachable();
}

_Unwind_Reason_Code _Unwind_ForcedUnwind(struct _Unwind_Exception *exception, _Unwind_Stop_Fn stop, void *argument) {
  static _Unwind_Reason_Code (*real)(struct _Unwind_Exception *, _Unwind_Stop_Fn, void *);
  if (real == NULL) real = next_definition("_Unwind_ForcedUnwind");
  frames_restore();
  return real(exception, stop, argument);
}

// glibc's pthread_exit reaches libgcc's unwinder by a dlsym of its own,
// past the definitions above.
void pthread_exit(void *value) {
  static void (*real)(void *);
  if (real == NULL) real = next_definition("pthread_exit");
  frames_restore();
  real(value);
  __builtin_unreachable();
}

// The handler's frame and its callers' are the calls still under way: their
// return addresses are replaced again (the handler called this, so they lie
// above the caller's stack pointer: this frame's address + 16).
void *__cxa_begin_catch(void *exception) {
  static void *(*real)(void *);
  if (real == NULL) real = next_definition("__cxa_begin_catch");
  void *object = real(exception);
  const uintptr_t floor = (uintptr_t)__builtin_frame_address(0) + 16;
  // The calls the exception unwound are over: their records go now (a
  // handler in a loop that no traced call returns to would pile them up).
  thread_state *s = state_here;
  // (Not one whose slot still holds hk_trace_return: a call under way on
  // another stack, a fiber's or the signal stack, that frames_restore left.)
  while (s && s->depth > 0 && s->frames[s->depth - 1].stack - sizeof(uintptr_t) < floor &&
         *(uintptr_t *)(s->frames[s->depth - 1].stack - sizeof(uintptr_t)) != (uintptr_t)hk_trace_return)
    s->depth--;
  frames_each(floor, frame_replace);
  return object;
}

// MARK: - Start and end

// Says how many calls went untraced for their depth, if any (and counts on from zero).
static void too_deep_print(void) {
  uint64_t untraced = 0;
  for (thread_state *s = atomic_load(&all_states); s; s = s->next) {
    untraced += s->too_deep;
    s->too_deep = 0;
  }
  if (untraced == 0) return;
  char line[160];
  int n = snprintf(line, sizeof line, "hook-trace: %llu calls in process %d were not traced: %d traced calls of their thread were under way\n",
                   (unsigned long long)untraced, (int)getpid(), MAX_DEPTH);
  if (n > 0) write_all(output_fd, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

static void summary_print(void) {
  inside++;
  uint32_t n = atomic_load(&function_count);
  counter *totals = calloc(n ? n : 1, sizeof(counter));
  if (totals == NULL) goto done;
  for (thread_state *s = atomic_load(&all_states); s; s = s->next)
    for (uint32_t i = 0; i < n; i++) {
      totals[i].calls += s->counters[i].calls;
      totals[i].errors += s->counters[i].errors;
      totals[i].ticks += s->counters[i].ticks;
    }
  uint64_t all_ticks = 0, all_calls = 0, all_errors = 0;
  for (uint32_t i = 0; i < n; i++) {
    all_ticks += totals[i].ticks;
    all_calls += totals[i].calls;
    all_errors += totals[i].errors;
  }
  // Made in memory and written by write_all (a stdio stream on the
  // descriptor gave up on a non-blocking one, as write_all did).
  char *text = NULL;
  size_t text_size = 0;
  FILE *table = output_fd < 0 ? NULL : open_memstream(&text, &text_size);
  if (table == NULL) goto done;
  fprintf(table, "hook-trace: %llu calls traced in process %d\n", (unsigned long long)all_calls, (int)getpid());
  fprintf(table, "%% time     seconds  usecs/call     calls    errors function\n");
  fprintf(table, "------ ----------- ----------- --------- --------- --------------------\n");
  // Largest total time first.
  for (;;) {
    int best = -1;
    for (uint32_t i = 0; i < n; i++)
      if (totals[i].calls && (best < 0 || totals[i].ticks > totals[best].ticks)) best = (int)i;
    if (best < 0) break;
    counter c = totals[best];
    double seconds = (double)c.ticks * ns_per_tick / 1e9;
    fprintf(table, "%6.2f %11.6f %11.3f %9llu %9llu %s\n",
            all_ticks ? 100.0 * (double)c.ticks / (double)all_ticks : 0.0, seconds,
            seconds * 1e6 / (double)c.calls, (unsigned long long)c.calls, (unsigned long long)c.errors,
            functions[best].name);
    totals[best].calls = 0;
  }
  fprintf(table, "------ ----------- ----------- --------- --------- --------------------\n");
  fprintf(table, "100.00 %11.6f             %9llu %9llu total\n", (double)all_ticks * ns_per_tick / 1e9,
          (unsigned long long)all_calls, (unsigned long long)all_errors);
  if (fclose(table) == 0) write_all(output_fd, text, text_size);
  free(text);
  // Printed: an exec that fails goes on counting from zero.
  for (thread_state *s = atomic_load(&all_states); s; s = s->next) memset(s->counters, 0, sizeof s->counters);
done:
  free(totals);
  inside--;
}

static void calibrate(void) {
  // Ticks of the time-stamp counter per nanosecond, over 2 ms; refined at exit.
  clock_gettime(CLOCK_MONOTONIC, &start_time);
  start_ticks = __rdtsc();
  struct timespec now;
  do {
    clock_gettime(CLOCK_MONOTONIC, &now);
  } while ((now.tv_sec - start_time.tv_sec) * 1000000000LL + (now.tv_nsec - start_time.tv_nsec) < 2000000);
  uint64_t ticks = __rdtsc() - start_ticks;
  double ns = (double)((now.tv_sec - start_time.tv_sec) * 1000000000LL + (now.tv_nsec - start_time.tv_nsec));
  if (ticks) ns_per_tick = ns / (double)ticks;
  ns_per_tick_q32 = (uint64_t)(ns_per_tick * 4294967296.0);
  publish_ticks = (uint64_t)(1000000.0 / ns_per_tick);
}

static void refine_calibration(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  uint64_t ticks = __rdtsc() - start_ticks;
  double ns = (double)((now.tv_sec - start_time.tv_sec) * 1000000000LL + (now.tv_nsec - start_time.tv_nsec));
  if (ticks > 1000000) {
    ns_per_tick = ns / (double)ticks;
    ns_per_tick_q32 = (uint64_t)(ns_per_tick * 4294967296.0);
  }
}

// fork: no drain is under way while the process is copied (so the rings
// are whole in the child), and no search for new imports (a thread of the
// parent inside dlopen's held setup_lock: the child's first dlopen waited
// on it for good). setup_lock first: it is the outer one (nothing takes it
// under drain_lock).
static void before_fork(void) {
  pthread_mutex_lock(&setup_lock);
  pthread_mutex_lock(&drain_lock);
}

static void after_fork_in_parent(void) {
  pthread_mutex_unlock(&drain_lock);
  pthread_mutex_unlock(&setup_lock);
}

static void after_fork_in_child(void) {
  pthread_mutex_unlock(&drain_lock);
  pthread_mutex_unlock(&setup_lock);
  // The child has no writer thread: its threads write their rings out
  // themselves, when full and at exit. Its copies of the parent's records
  // and counters are the parent's to write: dropped, so that each process
  // reports its own calls. So are the lines the parent's writer had made
  // and not yet written (the child's flush at its exit wrote them again).
  out_length = 0;
  atomic_store(&writer_running, 0);
  // The stub memory is shared with the parent (a memfd): the child's next
  // stub goes in a block of its own, or it would write where the parent's
  // next one goes.
  stub_exec = NULL;
  for (thread_state *s = atomic_load(&all_states); s; s = s->next) {
    atomic_store(&s->head, atomic_load(&s->head_local));
    atomic_store(&s->tail, atomic_load(&s->head_local));
    s->tail_seen = atomic_load(&s->head_local);
    memset(s->counters, 0, sizeof s->counters);
    s->too_deep = 0;
    if (s != state_here) {
      s->depth = 0;
      atomic_store(&s->unused, 1);   // their threads are not in the child
    }
  }
  if (state_here) state_here->tid = (pid_t)syscall(SYS_gettid);
  image_pid = (pid_t)syscall(SYS_getpid);   // (not getpid: it may be traced)
}

__attribute__((constructor)) static void hook_trace_start(void) {
  const char *pattern_text = getenv("HOOK_TRACE_PATTERNS");
  if (getenv("HOOK_TRACE") == NULL) return;   // loaded but not by the launcher: do nothing
  inside++;
  hk_import_own_image(&own_base, &own_dynamic);
  summary_mode = getenv("HOOK_TRACE_SUMMARY") != NULL;
  library_calls_only = getenv("HOOK_TRACE_LIBRARY_CALLS") != NULL;
  // Where the lines go: the -o file, or the launcher's stderr through the
  // copy it made at a high number (HOOK_TRACE_FD), both kept out of the
  // program's way (a program that points its fd 2 at its own log, or
  // opens a file as fd 3 after closing it, got the trace in its file);
  // fd 2 if neither is there.
  const char *output = getenv("HOOK_TRACE_OUTPUT");
  const char *inherited = getenv("HOOK_TRACE_FD");
  if (inherited && *inherited) {
    // `fd:device:inode`: the descriptor, if it is still that file. A process
    // started by glibc's own exec (system, popen, posix_spawn: not through
    // the wrappers below, which keep it open) inherits the setting without
    // the descriptor: its trace went to its fd 2 (which system("cmd > out
    // 2>&1") points at the command's output file) or into whatever file it
    // had opened at that number. It writes nothing then, or, with a -o
    // file, opens that by its name (below).
    int fd = -1;
    unsigned long long device = 0, inode = 0;
    int fields = sscanf(inherited, "%d:%llu:%llu", &fd, &device, &inode);
    struct stat st;
    if (fd > 2 && fstat(fd, &st) == 0 && (fields < 3 || ((unsigned long long)st.st_dev == device && (unsigned long long)st.st_ino == inode)) &&
        fcntl(fd, F_SETFD, FD_CLOEXEC) == 0) {
      output_fd = fd;
      output_inherited = 1;
    } else {
      output_fd = -1;
    }
  }
  if (!output_inherited && output && *output) {
    // (The launcher opened the -o file and passed it on; opened again by
    // its name only where that descriptor did not come along. Never for
    // the launcher's own image: a named pipe opened a second time waits
    // for a reader.)
    int fd = open(output, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0) {
      int high = fcntl(fd, F_DUPFD_CLOEXEC, 1000);
      if (high >= 0) {
        close(fd);
        fd = high;
      }
      output_fd = fd;
    }
  }
  if (pattern_text && *pattern_text) {
    char *copy = strdup(pattern_text);
    size_t count = 1;
    for (const char *c = copy; *c; c++) count += *c == '+';
    patterns = calloc(count, sizeof(char *));
    for (char *save = NULL, *p = strtok_r(copy, "+", &save); p; p = strtok_r(NULL, "+", &save))
      patterns[pattern_count++] = p;
  }
  pthread_key_create(&state_key, state_ends);
  pthread_atfork(before_fork, after_fork_in_parent, after_fork_in_child);
  // quick_exit reaches _exit inside libc: the image's end, after the
  // program's own at_quick_exit handlers (registered later, run first).
  at_quick_exit(image_ends);
  calibrate();
  if (!summary_mode) writer_start();
  image_pid = (pid_t)syscall(SYS_getpid);   // (not getpid: it may be traced)
  started = 1;
  trace_new_imports();
  inside--;
}

__attribute__((destructor)) static void hook_trace_end(void) { image_ends(); }

#else

void hook_trace_flush(void) {}
size_t hook_trace_function_count(void) { return 0; }

#endif
