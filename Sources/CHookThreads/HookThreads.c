#define _GNU_SOURCE
#include "CHookThreads.h"
#include <linux/membarrier.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

_Thread_local hk_thread *hk_current_thread __attribute__((tls_model("initial-exec"))) = 0;

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static hk_thread *registry_head = 0;
static int registry_count = 0;
static pthread_key_t exit_key;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;

// Records of exited threads, kept for the next thread that registers (linked
// through `next`). A record is never freed: a CallBack kept past its call
// names its record by address and its frame by serial, and a thread's serials
// continue where the record's previous thread left them. So (record, serial)
// names one frame for the life of the process, and a later thread whose
// record has the same address never takes a dead thread's CallBack for one of
// its own calls (whose memory, on the dead thread's stack, is gone). The pool
// holds at most as many records as threads ever ran hooks at once.
static hk_thread *free_records = 0;

// Set once the calling thread's record went (its key's destructor ran): a
// hooked call made later while the thread exits (a later key's destructor,
// glibc freeing the thread's caches through a hooked `free`) gets the stand-in
// record and runs its original only. (It registered the thread again, and no
// destructor was left to run: the record stayed registered for good, one a
// thread that exited so.)
static _Thread_local int exited __attribute__((tls_model("initial-exec")));

static void thread_exited(void *value) {
  hk_thread *t = (hk_thread *)value;
  if (hk_current_thread == t) {
    hk_current_thread = 0;
    exited = 1;
  }
  pthread_mutex_lock(&registry_lock);
  if (t->prev) t->prev->next = t->next; else registry_head = t->next;
  if (t->next) t->next->prev = t->prev;
  registry_count--;
  t->prev = 0;
  t->next = free_records;
  free_records = t;
  pthread_mutex_unlock(&registry_lock);
}

static void make_exit_key(void) { pthread_key_create(&exit_key, thread_exited); }

int hk_asymmetric_fence = 0;
static pthread_once_t membarrier_once = PTHREAD_ONCE_INIT;

// Registers for expedited private membarrier (Linux 4.14+). If the kernel or a
// seccomp filter refuses, announcements stay seq_cst stores.
static void register_membarrier(void) {
  if (getenv("HOOK_NO_MEMBARRIER")) return;
  long supported = syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
  if (supported < 0 || !(supported & MEMBARRIER_CMD_PRIVATE_EXPEDITED)) return;
  if (syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) != 0) return;
  __atomic_store_n(&hk_asymmetric_fence, 1, __ATOMIC_SEQ_CST);
}

// A record with a frame limit of 0: every hook point called with it runs its
// original only (hk_thread_enter returns -1 before writing anything). What a
// thread gets while it registers: registering calls libc (pthread_once,
// getenv, mmap), and an entry hook on one of those functions would otherwise
// enter this function again, on the same thread, inside pthread_once.
static hk_thread registering_record = {.stand_in = 1};  // depth 0, limit 0
static _Thread_local int registering __attribute__((tls_model("initial-exec")));

hk_thread *hk_thread_register(void) {
  if (hk_current_thread) return hk_current_thread;
  if (registering || exited) return &registering_record;
  registering = 1;
  pthread_once(&exit_key_once, make_exit_key);
  // Before this thread can announce a frame: the choice of fence is made once,
  // before any thread uses the plain-store announcement.
  pthread_once(&membarrier_once, register_membarrier);
  // Whole cache lines of its own: records allocated one after the other
  // would otherwise share a line, and each thread's calls write its record
  // (a frame's point, serial and depth) while the other's read theirs.
  size_t size = (sizeof(hk_thread) + 63) & ~(size_t)63;
  pthread_mutex_lock(&registry_lock);
  hk_thread *t = free_records;
  uint64_t next_serial = 0;
  int kept = t != 0;
  if (t) {
    // An exited thread's record: every frame of it was left (serials 0);
    // its serials go on from where they stopped.
    free_records = t->next;
    next_serial = t->next_serial;
  } else {
    // mmap, not malloc: an entry hook on malloc runs this on a thread's first
    // call, and a malloc here would call that hook again before the thread
    // has a record (whose frames are what stops reentry). Page-aligned, so
    // the record has whole cache lines of its own.
    void *memory = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED) abort(); // 16 KiB once per thread (two pages touched by most); nothing sensible to do without them
    t = (hk_thread *)memory;
  }
  // A fresh mapping is zero; a kept record is cleared where it was used: its
  // scalars and the frames its threads entered (every page of it touched
  // otherwise, 16 KiB a thread where most calls nest a few frames deep).
  if (kept) {
    size_t used = (size_t)(t->deepest > HK_SHALLOW_DEPTH ? t->deepest + 1 : HK_SHALLOW_DEPTH);
    memset(t, 0, offsetof(hk_thread, active));
    memset((void *)t->active, 0, used * sizeof t->active[0]);
    memset(t->serial, 0, used * sizeof t->serial[0]);
  }
  t->next_serial = next_serial;
  t->limit = HK_SHALLOW_DEPTH;
  t->asymmetric = (uint8_t)__atomic_load_n(&hk_asymmetric_fence, __ATOMIC_RELAXED);
  t->next = registry_head;
  if (registry_head) registry_head->prev = t;
  registry_head = t;
  registry_count++;
  pthread_mutex_unlock(&registry_lock);
  hk_current_thread = t;
  pthread_setspecific(exit_key, t);
  registering = 0;
  return t;
}


// Says once, on stderr, that a call ran without its hooks for its depth.
static void say_too_deep(int near_end) {
  static _Atomic int said = 0;
  if (atomic_exchange(&said, 1)) return;
  static const char deep[] = "Hook: a call nested deeper than 1024 hook points on one thread ran without its hooks (so do all calls that deep)\n";
  static const char low[] = "Hook: a call nested past 64 hook points, near the end of its thread's stack, ran without its hooks (so do all calls there)\n";
  ssize_t ignored = near_end ? write(2, low, sizeof low - 1) : write(2, deep, sizeof deep - 1);
  (void)ignored;
}

int hk_stack_bounds(uintptr_t *low, size_t *size) {
  pthread_attr_t attributes;
  if (pthread_getattr_np(pthread_self(), &attributes) != 0) return 0;
  void *start = 0;
  size_t length = 0;
  int known = pthread_attr_getstack(&attributes, &start, &length) == 0 && start;
  pthread_attr_destroy(&attributes);
  if (!known) return 0;
  *low = (uintptr_t)start;
  *size = length;
  return 1;
}

// Whether the caller's stack is within a quarter of its size (at most 256
// KiB) of its end. The bounds are asked once per thread, the first time a
// call nests past HK_SHALLOW_DEPTH (pthread_getattr_np may allocate: calls
// it makes meanwhile take the stack as far from its end). A frame outside
// the thread's stack (a signal's alternate stack, a fiber) compares as
// anywhere else: below the floor, its deep calls run without hooks.
static int stack_near_end(hk_thread *t) {
  if (t->floor_state == 0) {
    t->floor_state = 1;
    uintptr_t low;
    size_t size;
    if (hk_stack_bounds(&low, &size)) t->stack_floor = low + (size / 4 < 256 * 1024 ? size / 4 : 256 * 1024);
    t->floor_state = 2;
  }
  return (uintptr_t)__builtin_frame_address(0) < t->stack_floor;
}

void hk_thread_too_deep(void) { say_too_deep(0); }

// Where every level of a recursion is a hook's (subscribers that each write
// the next observable: about 2 KiB a level in a debug build; a chain of
// bindings about 10), refusing the call ends the recursion: the calls past
// the floor run their originals only, where they would otherwise overflow
// the stack. (An entry-hooked function recursing takes about as much stack a
// level with its hooks refused as with them running, about 540 bytes in a
// release build, the hook's call path: there the floor keeps the hooks'
// own frames off the stack's last quarter, no more.)
int hk_thread_may_go_deeper(hk_thread *t, unsigned depth) {
  if (t->limit == 0) return 0;  // suppressed, or the record of a thread registering
  if (stack_near_end(t)) {
    say_too_deep(1);
    return 0;
  }
  if ((int)depth > t->deepest) t->deepest = (int)depth;
  return 1;
}

int hk_points_active(const uintptr_t *points, int count, unsigned char *active) {
  int found = 0;
  for (int j = 0; j < count; j++) active[j] = 0;
  if (count == 0) return 0;
  if (hk_asymmetric_fence) syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
  pthread_mutex_lock(&registry_lock);
  for (hk_thread *t = registry_head; t; t = t->next) {
    int d = atomic_load_explicit(&t->depth, memory_order_seq_cst);
    for (int i = 0; i < d && i < HK_MAX_DEPTH; i++) {
      uintptr_t p = atomic_load_explicit(&t->active[i], memory_order_acquire) & ~(uintptr_t)1;
      if (!p) continue;
      for (int j = 0; j < count; j++) {
        if (!active[j] && points[j] == p) { active[j] = 1; found++; }
      }
    }
  }
  pthread_mutex_unlock(&registry_lock);
  return found;
}

// Returns `object` retained, or NULL if it is deinitializing.
void *swift_tryRetain(void *object);

void *hk_object_try_retain(void *object) { return swift_tryRetain(object); }

void swift_unownedRetain(void *object);
void swift_unownedRelease(void *object);
void hk_object_keep_memory(void *object) { swift_unownedRetain(object); }
void hk_object_drop_memory(void *object) { swift_unownedRelease(object); }


int hk_thread_is_registered(void) { return hk_current_thread != 0; }

int hk_registered_thread_count(void) {
  pthread_mutex_lock(&registry_lock);
  int n = registry_count;
  pthread_mutex_unlock(&registry_lock);
  return n;
}

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define HK_TSAN 1
void __tsan_acquire(void *address);
void __tsan_release(void *address);
#endif
#endif

void hk_tsan_acquire(void *address) {
#ifdef HK_TSAN
  __tsan_acquire(address);
#else
  (void)address;
#endif
}

void hk_tsan_release(void *address) {
#ifdef HK_TSAN
  __tsan_release(address);
#else
  (void)address;
#endif
}
