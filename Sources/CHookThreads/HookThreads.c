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

static void thread_exited(void *value) {
  hk_thread *t = (hk_thread *)value;
  if (hk_current_thread == t) hk_current_thread = 0;
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
static hk_thread registering_record;  // zero: depth 0, limit 0
static _Thread_local int registering __attribute__((tls_model("initial-exec")));

hk_thread *hk_thread_register(void) {
  if (hk_current_thread) return hk_current_thread;
  if (registering) return &registering_record;
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
    if (memory == MAP_FAILED) abort(); // a few hundred bytes once per thread; nothing sensible to do without them
    t = (hk_thread *)memory;
  }
  memset(t, 0, size);
  t->next_serial = next_serial;
  t->limit = HK_MAX_DEPTH;
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
