// Entries of Swift functions hooked by name (see CEntryHooks.h, "Swift entries").
#define _GNU_SOURCE
#include "CEntryHooks.h"
#include "CHookThreads.h"
#include <errno.h>
#include <stdlib.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#if defined(__x86_64__) && defined(__linux__)
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

static _Thread_local int trace_depth, trace_threw;

int hk_swift_trace_depth(int delta) {
  int before = trace_depth;
  trace_depth += delta;
  return before;
}

int hk_swift_trace_threw(int value) {
  if (value >= 0) trace_threw = value;
  return trace_threw;
}

#if defined(__x86_64__) && defined(__linux__)

_Static_assert(offsetof(hk_swift_frame, xmm) == 96, "frame layout");
_Static_assert(offsetof(hk_swift_frame, result) == 224, "frame layout");
_Static_assert(offsetof(hk_swift_frame, xresult) == 256, "frame layout");
_Static_assert(offsetof(hk_swift_frame, stack) == 320, "frame layout");
_Static_assert(sizeof(hk_swift_frame) == 528, "frame layout");
_Static_assert(offsetof(hk_swift_frame, scratch) == 336, "the scratch offset SwiftEntryHook.swift states");
_Static_assert(offsetof(hk_swift_point, handler) == 32, "point layout");
_Static_assert(offsetof(hk_swift_point, stack_bytes) == 40, "point layout");
_Static_assert(sizeof(hk_swift_point) <= 120, "a point and the entry's address fit a 128-byte slot");
_Static_assert(offsetof(hk_swift_point, typed) == 56, "point layout");

void hk_swift_entry(void);

// The entry's frame: rbp, rbx and r15 saved (rbx keeps the point across
// calls), then the frame (hk_swift_frame) with the argument registers.
#define HK_SWIFT_ENTER_FRAME \
  "  pushq %rbp\n" \
  "  movq %rsp, %rbp\n" \
  "  pushq %rbx\n" \
  "  pushq %r15\n" \
  "  subq $528, %rsp\n" \
  "  movq %rdi, 0(%rsp)\n" \
  "  movq %rsi, 8(%rsp)\n" \
  "  movq %rdx, 16(%rsp)\n" \
  "  movq %rcx, 24(%rsp)\n" \
  "  movq %r8, 32(%rsp)\n" \
  "  movq %r9, 40(%rsp)\n" \
  "  movq %rax, 48(%rsp)\n" \
  "  movq %r12, 56(%rsp)\n" \
  "  movq %r13, 64(%rsp)\n" \
  "  movq %r14, 72(%rsp)\n" \
  "  movq %r10, 80(%rsp)\n" \
  "  movdqu %xmm0, 96(%rsp)\n" \
  "  movdqu %xmm1, 112(%rsp)\n" \
  "  movdqu %xmm2, 128(%rsp)\n" \
  "  movdqu %xmm3, 144(%rsp)\n" \
  "  movdqu %xmm4, 160(%rsp)\n" \
  "  movdqu %xmm5, 176(%rsp)\n" \
  "  movdqu %xmm6, 192(%rsp)\n" \
  "  movdqu %xmm7, 208(%rsp)\n" \
  "  movq %r11, %rbx\n"

// r11: the point. The fast path touches no register but r11 and the flags.
__asm__(
  ".text\n"
  ".globl hk_swift_entry\n"
  ".hidden hk_swift_entry\n"
  ".type hk_swift_entry,@function\n"
  "hk_swift_entry:\n"
  "  cmpq $0, 8(%r11)\n"
  "  je 1f\n"
  "  cmpq $0, 16(%r11)\n"
  "  je 2f\n"
  "  cmpq %r13, 16(%r11)\n"
  "  je 2f\n"
  "1:\n"
  "  jmp *(%r11)\n"
  "2:\n"
  HK_SWIFT_ENTER_FRAME
  // A lone typed after hook: hk_swift_typed_enter (which keeps every
  // register but r11, rdi and rax) enters the thread's frame and returns
  // it, or NULL for the general path; the original then runs with the
  // caller's registers, and the hook after it, without the handler.
  "  cmpq $0, 56(%rbx)\n"
  "  je 3f\n"
  "  movq %rbx, %rdi\n"
  "  callq hk_swift_typed_enter\n"
  "  testq %rax, %rax\n"
  "  jz 3f\n"
  "  movq %rax, %r15\n"
  "  movq 0(%rsp), %rdi\n"
  "  movq 48(%rsp), %rax\n"
  "  callq *(%rbx)\n"
  "  movq %rax, 224(%rsp)\n"
  "  movq %rdx, 232(%rsp)\n"
  "  movq %rcx, 240(%rsp)\n"
  "  movq %r8, 248(%rsp)\n"
  "  movdqu %xmm0, 256(%rsp)\n"
  "  movdqu %xmm1, 272(%rsp)\n"
  "  movdqu %xmm2, 288(%rsp)\n"
  "  movdqu %xmm3, 304(%rsp)\n"
  "  movq %r12, 56(%rsp)\n"
  "  movq %rbx, %rdi\n"
  "  movq %rsp, %rsi\n"
  "  movq %r15, %rdx\n"
  "  callq hk_swift_typed_after\n"
  "  jmp 5f\n"
  // The general path: the point's handler.
  "3:\n"
  "  leaq 16(%rbp), %rax\n"
  "  movq %rax, 320(%rsp)\n"
  "  movq 40(%rbx), %rax\n"
  "  movq %rax, 328(%rsp)\n"
  "  movq %rbx, %rdi\n"
  "  movq %rsp, %rsi\n"
  "  callq *32(%rbx)\n"
  "5:\n"
  "  movq 224(%rsp), %rax\n"
  "  movq 232(%rsp), %rdx\n"
  "  movq 240(%rsp), %rcx\n"
  "  movq 248(%rsp), %r8\n"
  "  movdqu 256(%rsp), %xmm0\n"
  "  movdqu 272(%rsp), %xmm1\n"
  "  movdqu 288(%rsp), %xmm2\n"
  "  movdqu 304(%rsp), %xmm3\n"
  "  movq 56(%rsp), %r12\n"
  "  movq -8(%rbp), %rbx\n"
  "  movq -16(%rbp), %r15\n"
  "  leave\n"
  "  retq\n"
  ".size hk_swift_entry, .-hk_swift_entry\n"
);

// hk_swift_call(function: rdi, frame: rsi)
__asm__(
  ".text\n"
  ".globl hk_swift_call\n"
  ".type hk_swift_call,@function\n"
  "hk_swift_call:\n"
  "  pushq %rbp\n"
  "  movq %rsp, %rbp\n"
  "  pushq %rbx\n"
  "  pushq %r12\n"
  "  pushq %r13\n"
  "  pushq %r14\n"
  "  pushq %r15\n"
  "  subq $8, %rsp\n"
  "  movq %rdi, %r11\n"
  "  movq %rsi, %rbx\n"
  "  movq 328(%rbx), %rcx\n"
  "  testq %rcx, %rcx\n"
  "  jz 1f\n"
  "  subq %rcx, %rsp\n"
  "  movq 320(%rbx), %rsi\n"
  "  movq %rsp, %rdi\n"
  "  shrq $3, %rcx\n"
  "  cld\n"
  "  rep movsq\n"
  "1:\n"
  "  movdqu 96(%rbx), %xmm0\n"
  "  movdqu 112(%rbx), %xmm1\n"
  "  movdqu 128(%rbx), %xmm2\n"
  "  movdqu 144(%rbx), %xmm3\n"
  "  movdqu 160(%rbx), %xmm4\n"
  "  movdqu 176(%rbx), %xmm5\n"
  "  movdqu 192(%rbx), %xmm6\n"
  "  movdqu 208(%rbx), %xmm7\n"
  "  movq 0(%rbx), %rdi\n"
  "  movq 8(%rbx), %rsi\n"
  "  movq 16(%rbx), %rdx\n"
  "  movq 24(%rbx), %rcx\n"
  "  movq 32(%rbx), %r8\n"
  "  movq 40(%rbx), %r9\n"
  "  movq 48(%rbx), %rax\n"
  "  movq 56(%rbx), %r12\n"
  "  movq 64(%rbx), %r13\n"
  "  movq 72(%rbx), %r14\n"
  "  movq 80(%rbx), %r10\n"
  "  callq *%r11\n"
  "  movq %rax, 224(%rbx)\n"
  "  movq %rdx, 232(%rbx)\n"
  "  movq %rcx, 240(%rbx)\n"
  "  movq %r8, 248(%rbx)\n"
  "  movdqu %xmm0, 256(%rbx)\n"
  "  movdqu %xmm1, 272(%rbx)\n"
  "  movdqu %xmm2, 288(%rbx)\n"
  "  movdqu %xmm3, 304(%rbx)\n"
  "  movq %r12, 56(%rbx)\n"
  "  leaq -40(%rbp), %rsp\n"
  "  popq %r15\n"
  "  popq %r14\n"
  "  popq %r13\n"
  "  popq %r12\n"
  "  popq %rbx\n"
  "  popq %rbp\n"
  "  retq\n"
  ".size hk_swift_call, .-hk_swift_call\n"
);

// The typed path of hk_swift_entry. Entering: the thread's frame is entered
// for the point's id, tagged as running the original (its own recursive
// calls are hooked), and the point's `typed` read again in it (hook changes
// publish it before they retire the snapshot that keeps the hook, so a call
// that read it keeps that snapshot until it leaves). NULL, with nothing
// entered, for the general path: the thread is new, suppressed or already in
// a hooked call (the handler sorts those out), or the hooks changed.
// preserve_all: the caller's argument registers stay as they were (but rdi,
// the argument, and rax, the result); no call is made.
__attribute__((preserve_all, used, visibility("hidden")))
const hk_swift_typed *hk_swift_typed_enter(hk_swift_point *point) {
  hk_thread *t = hk_current_thread;
  if (!t || t->limit == 0 || atomic_load_explicit(&t->depth, memory_order_relaxed) != 0) return NULL;
  // (Frame 0 claimed before it is written: see hk_thread_claim_frame.)
  hk_thread_claim_frame(t, 0);
  hk_thread_announce_frame(t, 0, point->id | 1);
  const hk_swift_typed *typed = __atomic_load_n(&point->typed, __ATOMIC_SEQ_CST);
  if (!typed) hk_thread_leave_unrecorded(t, 0);
  return typed;
}

// After the original returned (its result registers in the frame): the
// frame untagged (calls the hook makes of this point run the original
// only), the hook unless the original threw, and the frame left.
typedef void *__attribute__((swiftcall)) (*hk_swift_typed_code)(hk_swift_frame *frame, void *__attribute__((swift_context)) context);

__attribute__((used, visibility("hidden")))
void hk_swift_typed_after(hk_swift_point *point, hk_swift_frame *frame, const hk_swift_typed *typed) {
  hk_thread *t = hk_current_thread;
  hk_frame_set_running_original(t, 0, point->id, 0);
  if (!point->can_throw || frame->r12 == 0) {
    void *error = ((hk_swift_typed_code)typed->code)(frame, (void *)typed->context);
    if (__builtin_expect(error != NULL, 0)) point->failed(point, error);
  }
  hk_thread_leave_unrecorded(t, 0);
}

// Points in chunks of two pages: the first holds one 16-byte stub per
// 128-byte slot (`lea r11, [rip + data]; jmp [rip + data + 120]`), written
// once and made read-execute; the second, at the same offset, the point
// and the address of hk_swift_entry. Never freed: a thread may be in a stub.
#define HK_PAGE 4096
#define HK_SLOT 128

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uint8_t *chunk;
static int used;

static void write_stub(uint8_t *code) {
  // lea r11, [rip + disp]: the data slot, HK_PAGE ahead of this stub.
  int32_t disp = HK_PAGE - 7;
  code[0] = 0x4C; code[1] = 0x8D; code[2] = 0x1D;
  memcpy(code + 3, &disp, 4);
  // jmp [rip + disp]: the entry's address, 120 bytes into the data slot.
  disp = HK_PAGE + 120 - 13;
  code[7] = 0xFF; code[8] = 0x25;
  memcpy(code + 9, &disp, 4);
  memset(code + 13, 0xCC, HK_SLOT - 13);
}

hk_swift_point *hk_swift_point_make(const void **entry) {
  pthread_mutex_lock(&lock);
  uint8_t *stub = NULL;
  {
    if (!chunk || used == HK_PAGE / HK_SLOT) {
      uint8_t *made = mmap(NULL, 2 * HK_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (made == MAP_FAILED) { pthread_mutex_unlock(&lock); return NULL; }
      for (int i = 0; i < HK_PAGE / HK_SLOT; i++) write_stub(made + i * HK_SLOT);
      if (mprotect(made, HK_PAGE, PROT_READ | PROT_EXEC) != 0) {
        int saved = errno;
        munmap(made, 2 * HK_PAGE);
        pthread_mutex_unlock(&lock);
        errno = saved;
        return NULL;
      }
      chunk = made;
      used = 0;
    }
    stub = chunk + used++ * HK_SLOT;
  }
  hk_swift_point *point = (hk_swift_point *)(stub + HK_PAGE);
  memset(point, 0, sizeof *point);
  *(void **)((uint8_t *)point + 120) = (void *)hk_swift_entry;
  pthread_mutex_unlock(&lock);
  *entry = stub;
  return point;
}

void hk_swift_point_set_typed(hk_swift_point *point, const hk_swift_typed *typed) {
  // Release: a call that reads it in its frame (hk_swift_typed_enter) sees the hook made.
  __atomic_store_n(&point->typed, typed, __ATOMIC_RELEASE);
}

void hk_swift_point_set(hk_swift_point *point, uintptr_t active, uintptr_t only) {
  // `only` first: a call that sees the new `active` sees it.
  __atomic_store_n(&point->only, only, __ATOMIC_RELEASE);
  __atomic_store_n(&point->active, active, __ATOMIC_RELEASE);
}

// MARK: - modify accesses
//
// A modify coroutine's ramp returns its continuation (rax) and the address
// of the value (rdx); the caller changes the value and calls the
// continuation (rdi: the caller's buffer, esi: 1 if unwinding) to end the
// access. A hooked ramp hands the caller `hk_swift_modify_resume` instead,
// after recording the access on a per-thread stack (accesses nest, and one
// ends on the thread that began it). The trampoline has the value copied
// (the point's `modify`, mode 0) into its frame, calls the real
// continuation, which ends the access (so hooks may access the property
// again), and then runs the hooks on the copy (mode 1, which destroys it).

typedef struct {
  void *buffer;
  const void *resume;
  void *address;
  hk_swift_point *point;
  uint64_t self;
} modify_access;

// The accesses open on this thread, innermost last: the first
// HK_MODIFY_DEPTH in a thread-local array, the rest in a buffer of the
// thread's allocated while there are more (an access nested past 64 was not
// observed, without a word), up to HK_MODIFY_MOST.
#define HK_MODIFY_DEPTH 64
#define HK_MODIFY_MOST 65536
static _Thread_local modify_access accesses[HK_MODIFY_DEPTH];
static _Thread_local modify_access *more_accesses;
static _Thread_local int more_capacity;
static _Thread_local int access_depth;

static modify_access *access_at(int i) {
  return i < HK_MODIFY_DEPTH ? &accesses[i] : &more_accesses[i - HK_MODIFY_DEPTH];
}

void hk_swift_modify_resume(void);

// Accesses begun inside an async task: the task may be suspended with the
// access open (an `inout` argument across `await`) and resumed on another
// thread, which ends the access there, where the thread's own stack does not
// have it (it aborted). Those are kept in a list of the process's, under a
// lock (in no order); a new one for a buffer that is listed replaces it (an
// access that unwound without calling back left it there until then).
static pthread_mutex_t task_lock = PTHREAD_MUTEX_INITIALIZER;
static modify_access *task_accesses;
static int task_count, task_capacity;

static int task_access_began(modify_access access) {
  pthread_mutex_lock(&task_lock);
  int i = task_count - 1;
  while (i >= 0 && task_accesses[i].buffer != access.buffer) i--;
  if (i < 0) {
    if (task_count == task_capacity) {
      int capacity = task_capacity ? 2 * task_capacity : 16;
      modify_access *grown = capacity > HK_MODIFY_MOST ? NULL : realloc(task_accesses, (size_t)capacity * sizeof *grown);
      if (!grown) {
        pthread_mutex_unlock(&task_lock);
        return 0;
      }
      task_accesses = grown;
      task_capacity = capacity;
    }
    i = task_count++;
  }
  task_accesses[i] = access;
  pthread_mutex_unlock(&task_lock);
  return 1;
}

static int task_access_ending(void *buffer, modify_access *access) {
  pthread_mutex_lock(&task_lock);
  int i = task_count - 1;
  while (i >= 0 && task_accesses[i].buffer != buffer) i--;
  if (i >= 0) {
    *access = task_accesses[i];
    task_accesses[i] = task_accesses[--task_count];
  }
  pthread_mutex_unlock(&task_lock);
  return i >= 0;
}

const void *hk_swift_modify_began(hk_swift_point *point, void *buffer, const void *resume, void *address, uint64_t self, int in_task) {
  if (in_task) {
    // (No memory: this one is not observed.)
    return task_access_began((modify_access){buffer, resume, address, point, self}) ? (const void *)hk_swift_modify_resume : resume;
  }
  if (access_depth >= HK_MODIFY_DEPTH) {
    int beyond = access_depth - HK_MODIFY_DEPTH;
    if (beyond == more_capacity) {
      int capacity = more_capacity ? 2 * more_capacity : HK_MODIFY_DEPTH;
      modify_access *grown = access_depth + 1 > HK_MODIFY_MOST ? NULL : realloc(more_accesses, (size_t)capacity * sizeof *grown);
      // (No memory, or as deep as it goes: this one is not observed.)
      if (!grown) return resume;
      more_accesses = grown;
      more_capacity = capacity;
    }
  }
  *access_at(access_depth++) = (modify_access){buffer, resume, address, point, self};
  return (const void *)hk_swift_modify_resume;
}

// The trampoline's scratch: what the access was, whether it is observed,
// and the copy of the value (HK_MODIFY_VALUE bytes, 16-aligned).
typedef struct {
  hk_swift_point *point;
  uint64_t self;
  uint64_t observed;
  uint64_t unused;
  unsigned char value[HK_MODIFY_VALUE];
} modify_scratch;
_Static_assert(sizeof(modify_scratch) == 160, "the trampoline reserves 160 bytes");

// The access of `buffer` ends: its value is copied if hooks are to see it,
// and the real continuation is returned.
const void *hk_swift_modify_ending(void *buffer, int unwinding, modify_scratch *scratch) {
  int i = access_depth - 1;
  while (i >= 0 && access_at(i)->buffer != buffer) i--;
  modify_access access;
  if (i < 0) {
    // Begun in a task (on this thread or another).
    if (!task_access_ending(buffer, &access)) abort();  // a continuation no ramp handed out: cannot happen
  } else {
    access = *access_at(i);
    // Accesses end in reverse order; one skipped (an unwind that never called back) goes too.
    access_depth = i;
    if (i <= HK_MODIFY_DEPTH && more_accesses) {
      // Back within the thread-local array: the buffer goes.
      free(more_accesses);
      more_accesses = NULL;
      more_capacity = 0;
    }
  }
  scratch->point = access.point;
  scratch->self = access.self;
  scratch->observed = !unwinding && access.point->modify &&
                      access.point->modify(access.point, 0, access.address, access.self, scratch->value);
  return access.resume;
}

void hk_swift_modify_ended(modify_scratch *scratch) {
  if (scratch->observed) scratch->point->modify(scratch->point, 1, NULL, scratch->self, scratch->value);
}

// hk_swift_modify_resume(buffer: rdi, unwinding: esi): the caller's call of
// the continuation, with its return address on the stack.
__asm__(
  ".text\n"
  ".globl hk_swift_modify_resume\n"
  ".hidden hk_swift_modify_resume\n"
  ".type hk_swift_modify_resume,@function\n"
  "hk_swift_modify_resume:\n"
  "  pushq %rbp\n"
  "  movq %rsp, %rbp\n"
  "  subq $176, %rsp\n"
  "  movq %rdi, 160(%rsp)\n"
  "  movq %rsi, 168(%rsp)\n"
  "  movq %rsp, %rdx\n"
  "  andl $1, %esi\n"
  "  callq hk_swift_modify_ending\n"
  "  movq 160(%rsp), %rdi\n"
  "  movq 168(%rsp), %rsi\n"
  "  callq *%rax\n"
  "  movq %rsp, %rdi\n"
  "  callq hk_swift_modify_ended\n"
  "  leave\n"
  "  retq\n"
  ".size hk_swift_modify_resume, .-hk_swift_modify_resume\n"
);

// MARK: - Symbols of an object (merged functions, async accessors)

// Calls `visit` with each defined symbol of the loaded object that holds
// `inside` (.dynsym and .symtab, read from its file) and its address in
// memory; -1 if the object or its file cannot be read, else how many.
// (EntryHooks.c's walks take every object, or one by the end of its path;
// this one, for a function already found, takes its object by an address.)
static int each_symbol(const void *inside,
                       int (*visit)(const char *name, const Elf64_Sym *sym, uintptr_t address, void *context),
                       void *context) {
  Dl_info info;
  struct link_map *map = NULL;
  if (!dladdr1(inside, &info, (void **)&map, RTLD_DL_LINKMAP) || !map) return -1;
  char path[4096];
  if (map->l_name && map->l_name[0]) {
    snprintf(path, sizeof path, "%s", map->l_name);
  } else {
    // The program: its file is /proc/self/exe's target.
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
    if (n <= 0) return -1;
    path[n] = 0;
  }
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_size < (off_t)sizeof(Elf64_Ehdr)) {
    close(fd);
    return -1;
  }
  size_t size = (size_t)st.st_size;
  const uint8_t *file = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (file == MAP_FAILED) return -1;
  const Elf64_Ehdr *eh = (const Elf64_Ehdr *)file;
  int count = 0, stop = 0;
  if (memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0 && eh->e_ident[EI_CLASS] == ELFCLASS64 && eh->e_shoff != 0 &&
      eh->e_shentsize == sizeof(Elf64_Shdr) && eh->e_shoff <= size && (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr) <= size - eh->e_shoff) {
    const Elf64_Shdr *sections = (const Elf64_Shdr *)(file + eh->e_shoff);
    for (int i = 0; i < eh->e_shnum && !stop; i++) {
      if ((sections[i].sh_type != SHT_DYNSYM && sections[i].sh_type != SHT_SYMTAB) || sections[i].sh_link >= eh->e_shnum) continue;
      const Elf64_Shdr *strings = &sections[sections[i].sh_link];
      // (Compared without a sum that could wrap: a file is not trusted.)
      if (sections[i].sh_offset > size || sections[i].sh_size > size - sections[i].sh_offset ||
          strings->sh_offset > size || strings->sh_size > size - strings->sh_offset) continue;
      const Elf64_Sym *symbols = (const Elf64_Sym *)(file + sections[i].sh_offset);
      const char *names = (const char *)file + strings->sh_offset;
      size_t n = sections[i].sh_size / sizeof(Elf64_Sym);
      for (size_t s = 0; s < n && !stop; s++) {
        const Elf64_Sym *sym = &symbols[s];
        if (sym->st_shndx == SHN_UNDEF || sym->st_shndx == SHN_ABS || sym->st_value == 0 || sym->st_name >= strings->sh_size) continue;
        const char *name = names + sym->st_name;
        if (!memchr(name, 0, strings->sh_size - sym->st_name)) continue;
        count++;
        stop = visit(name, sym, map->l_addr + sym->st_value, context);
      }
    }
  }
  munmap((void *)file, size);
  return count;
}

// Where the `size` bytes of code at `code` jump, if a jump is all they do, else 0.
static uintptr_t jump_target(const uint8_t *code, uint64_t size) {
  uint64_t at = 0;
  if (size >= at + 4 && memcmp(code + at, "\xF3\x0F\x1E\xFA", 4) == 0) at += 4;      // endbr64
  if (size >= at + 5 && memcmp(code + at, "\x55\x48\x89\xE5\x5D", 5) == 0) at += 5;  // push rbp; mov rbp, rsp; pop rbp
  if (size >= at + 5 && code[at] == 0xE9) {
    int32_t relative;
    memcpy(&relative, code + at + 1, 4);
    return (uintptr_t)code + at + 5 + (intptr_t)relative;
  }
  if (size >= at + 2 && code[at] == 0xEB) return (uintptr_t)code + at + 2 + (intptr_t)(int8_t)code[at + 1];
  return 0;
}

typedef struct {
  int (*jump)(const char *name, const void *address, const void *target, void *context);
  int (*pointer)(const char *name, size_t length, void *context);
  void *context;
  const void *code;  // a code_ranges, for the jumps
} symbol_walk;

// The executable segments of the object `inside` is in, as loaded (the
// symbols come from its file, which may have been replaced since it was
// loaded: an address they give is read only inside these).
typedef struct {
  uintptr_t bias;
  uintptr_t start[16], end[16];
  int count;
} code_ranges;

static int collect_code(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  code_ranges *ranges = data;
  if (info->dlpi_addr != ranges->bias) return 0;
  for (int i = 0; i < info->dlpi_phnum && ranges->count < 16; i++) {
    const ElfW(Phdr) *p = &info->dlpi_phdr[i];
    if (p->p_type != PT_LOAD || !(p->p_flags & PF_X)) continue;
    ranges->start[ranges->count] = info->dlpi_addr + p->p_vaddr;
    ranges->end[ranges->count] = info->dlpi_addr + p->p_vaddr + p->p_memsz;
    ranges->count++;
  }
  return 1;
}

static int in_code(const code_ranges *ranges, uintptr_t address, uint64_t size) {
  for (int i = 0; i < ranges->count; i++) {
    if (address >= ranges->start[i] && address + size <= ranges->end[i]) return 1;
  }
  return 0;
}

static int visit_jump(const char *name, const Elf64_Sym *sym, uintptr_t address, void *context) {
  const symbol_walk *walk = context;
  if (ELF64_ST_TYPE(sym->st_info) != STT_FUNC || sym->st_size == 0 || sym->st_size > 16 || strncmp(name, "$s", 2) != 0) return 0;
  if (!in_code((const code_ranges *)walk->code, address, sym->st_size)) return 0;
  uintptr_t target = jump_target((const uint8_t *)address, sym->st_size);
  return target ? walk->jump(name, (const void *)address, (const void *)target, walk->context) : 0;
}

int hk_swift_each_jump(const void *inside,
                       int (*visit)(const char *name, const void *address, const void *target, void *context),
                       void *context) {
  Dl_info info;
  struct link_map *map = NULL;
  if (!dladdr1(inside, &info, (void **)&map, RTLD_DL_LINKMAP) || !map) return -1;
  code_ranges code = {.bias = (uintptr_t)map->l_addr};
  dl_iterate_phdr(collect_code, &code);
  symbol_walk walk = {visit, NULL, context, &code};
  return each_symbol(inside, visit_jump, &walk);
}

const void *hk_swift_jump_target(const void *code, uint64_t size) {
  return size > 0 && size <= 16 ? (const void *)jump_target(code, size) : NULL;
}

static int visit_async_pointer(const char *name, const Elf64_Sym *sym, uintptr_t address, void *context) {
  (void)address;
  const symbol_walk *walk = context;
  if (ELF64_ST_TYPE(sym->st_info) != STT_OBJECT || strncmp(name, "$s", 2) != 0) return 0;
  size_t length = strlen(name);
  if (length < 5 || name[length - 2] != 'T' || name[length - 1] != 'u') return 0;
  return walk->pointer(name, length - 2, walk->context);
}

int hk_swift_each_async_pointer(const void *inside,
                                int (*visit)(const char *name, size_t length, void *context),
                                void *context) {
  symbol_walk walk = {NULL, visit, context, NULL};
  return each_symbol(inside, visit_async_pointer, &walk);
}

#else  // not x86-64 Linux

hk_swift_point *hk_swift_point_make(const void **entry) { *entry = NULL; errno = ENOTSUP; return NULL; }
void hk_swift_point_set_typed(hk_swift_point *point, const hk_swift_typed *typed) { (void)point; (void)typed; }
void hk_swift_point_set(hk_swift_point *point, uintptr_t active, uintptr_t only) { (void)point; (void)active; (void)only; }
void hk_swift_call(const void *function, hk_swift_frame *frame) { (void)function; (void)frame; }
int hk_swift_each_jump(const void *inside, int (*visit)(const char *, const void *, const void *, void *), void *context) {
  (void)inside; (void)visit; (void)context;
  return -1;
}
int hk_swift_each_async_pointer(const void *inside, int (*visit)(const char *, size_t, void *), void *context) {
  (void)inside; (void)visit; (void)context;
  return -1;
}
const void *hk_swift_jump_target(const void *code, uint64_t size) { (void)code; (void)size; return NULL; }
const void *hk_swift_modify_began(hk_swift_point *point, void *buffer, const void *resume, void *address, uint64_t self) {
  (void)point; (void)buffer; (void)address; (void)self;
  return resume;
}

#endif
