// Entry hooks: finding a function by symbol in every loaded object, and
// rewriting its first instructions into a jump, safely while other threads
// run it. C, so that the patching protocol (signal handler, membarrier,
// instruction decoding with Zydis) is in one place; `EntryHook` in Hook is
// its Swift face. x86-64 Linux only.
#ifndef CENTRYHOOKS_H
#define CENTRYHOOKS_H
#include <stddef.h>
#include <stdint.h>

// 1 where this file can patch entries (x86-64 Linux), else 0.
int hk_entry_supported(void);

// MARK: - Finding a function

// One definition of a symbol.
typedef struct {
  const void *address;     // where it starts in memory
  uint64_t size;           // st_size (0: unknown)
  int type;                // ELF symbol type (STT_FUNC = 2, STT_GNU_IFUNC = 10, STT_OBJECT = 1, ...)
  int from_symtab_only;    // found in .symtab, not in .dynsym (a local or non-exported one)
  int is_local;            // STB_LOCAL (a `static` function)
  char object[512];        // the defining object's path ("" never: the program's is /proc/self/exe's target)
} hk_entry_definition;

// Every definition named `name` in the loaded objects' .dynsym, and .symtab
// read from the object's file (so the program's own functions and a
// library's `static` ones, where the file keeps its symbol table). A name
// `base@VERSION` (or `@@`) is looked up with dlvsym. Definitions at the same
// address in the same object count once. Fills at most `max` of `out` and
// returns how many there are (0: none), or -1 if the name is empty.
int hk_entry_find(const char *name, hk_entry_definition *out, int max);

// The definition that contains `address` (a function's entry or anywhere in
// its body, by its size), found the same way; 1 if found, else 0.
int hk_entry_find_address(const void *address, char *name, size_t name_size, hk_entry_definition *out);

// Keeps the object that holds `address` loaded for the life of the process
// (RTLD_NODELETE, set by a dlopen that loads nothing; nothing for the program
// itself, which is never unloaded).
void hk_entry_keep_loaded(const void *address);

// Calls `visit` for each function symbol (STT_FUNC, defined, non-zero size)
// of the loaded object whose path ends with `object` (its file name, say
// "libz.so.1"), .dynsym and .symtab; returns how many, or -1 if no loaded
// object matches. `visit` returning non-zero stops the walk.
int hk_entry_each_function(const char *object,
                           int (*visit)(const char *name, const void *address, uint64_t size, void *context),
                           void *context);

// MARK: - Relocating the displaced instructions

// Calls `visit` for each function symbol (STT_FUNC, defined, non-zero size)
// and each Swift method descriptor (a data symbol ending in `Tq`, whose
// `address` is the descriptor's) of every loaded object whose name starts
// with one of `prefixes` (each
// ended by a NUL, the list by an empty one; all if NULL or ""), with the
// object's path; returns how many were visited. `visit` returning non-zero
// stops the walk.
int hk_entry_each_object_function(const char *prefixes,
                                  int (*visit)(const char *object, const char *name, const void *address, uint64_t size, void *context),
                                  void *context);

// MARK: - Swift entries
//
// The entry of a Swift function hooked by name jumps to a per-point stub
// that loads the point's address into r11 and jumps to `hk_swift_entry`:
// with no hooks, or hooks for one object that r13 (`self`) is not, it jumps
// straight to `original` with every register and the stack as the caller
// left them; otherwise it saves the Swift convention's registers in a frame
// (`hk_swift_frame`), calls `handler(point, frame)`, and returns the result
// registers the handler left in the frame. `hk_swift_call` calls a function
// with a frame's registers (and `stack_bytes` of the caller's stack
// arguments) and stores its result registers back.

typedef struct {
  uint64_t gp[6];        // rdi, rsi, rdx, rcx, r8, r9
  uint64_t rax;          // the indirect result's address at entry
  uint64_t r12;          // the error (out), swifterror
  uint64_t r13;          // self, swiftself
  uint64_t r14;          // the async context
  uint64_t r10;
  uint64_t unused;
  uint64_t xmm[8][2];    // xmm0-7
  uint64_t result[4];    // rax, rdx, rcx, r8 on return
  uint64_t xresult[4][2];  // xmm0-3 on return
  const void *stack;     // the caller's stack arguments
  uint64_t stack_bytes;  // how many of them hk_swift_call copies (a multiple of 16)
  uint64_t scratch[24];  // a typed after hook's values put together (six of 32 bytes)
} hk_swift_frame;

typedef struct hk_swift_point {
  const void *original;        // the relocated entry (EntryHook's stub)
  uintptr_t active;            // non-zero: hooks are attached
  uintptr_t only;              // non-zero: they are all for this `self` (r13)
  void *context;               // the Swift hook point, unretained
  void (*handler)(struct hk_swift_point *point, hk_swift_frame *frame);
  uint64_t stack_bytes;        // copied into each frame
  // A modify coroutine's point: when an access its ramp began ends, mode 0
  // (before the real continuation) copies the value at `address` into
  // `value` (HK_MODIFY_VALUE bytes; a box's address if larger) and returns
  // whether hooks are to run; mode 1 (after it) runs them on the copy and
  // destroys it. See hk_swift_modify_began.
  int (*modify)(struct hk_swift_point *point, int mode, void *address, uint64_t self, void *value);
  // A lone typed after hook the stub runs itself (see hk_swift_entry), or
  // NULL: read once a call has entered its thread's frame for `id`.
  const struct hk_swift_typed *typed;
  uintptr_t id;                // the hook point's id in the threads' frames
  uintptr_t can_throw;         // the function throws: r12 set after it is an error
  // Reports what a typed hook threw (`any Error`, +1, taken over).
  void (*failed)(struct hk_swift_point *point, void *error);
} hk_swift_point;

// A lone typed after hook as the stub runs it: its Swift closure, of type
// `(UnsafeMutableRawPointer) -> (any Error)?`, as two words (code and
// context, kept by the hook, which its snapshot keeps while a call is in
// its frame), called as Swift calls a closure: the frame in rdi, the
// context in r13 (swiftcall), what it threw in rax (or 0).
typedef struct hk_swift_typed {
  const void *code;
  const void *context;
} hk_swift_typed;

#define HK_MODIFY_VALUE 128

// A new point and its stub (`*entry`: where the function's patch leads);
// NULL if memory is refused. Never freed: a thread may still be in a stub.
hk_swift_point *hk_swift_point_make(const void **entry);
void hk_swift_point_set(hk_swift_point *point, uintptr_t active, uintptr_t only);
// Publishes the point's lone typed after hook for the stub (or NULL).
void hk_swift_point_set_typed(hk_swift_point *point, const hk_swift_typed *typed);
void hk_swift_call(const void *function, hk_swift_frame *frame);

// A modify ramp's call that returned `resume` and `address`: recorded, and
// the continuation to hand the caller instead returned (the point's
// `modify_ended` runs when the caller ends the access).
// `in_task`: the access began inside an async task, which may be suspended
// with it open (an `inout` across `await`) and end it on another thread.
const void *hk_swift_modify_began(hk_swift_point *point, void *buffer, const void *resume, void *address, uint64_t self, int in_task);

// SwiftTrace's per-thread state: the depth of traced calls (adds `delta`,
// returns the depth before), and whether the last traced call threw (sets
// it if `value` >= 0; returns it).
int hk_swift_trace_depth(int delta);
int hk_swift_trace_threw(int value);

// Symbols of the loaded object that holds `inside` (a function of it found
// by name), read from its file's .dynsym and .symtab; each walk returns how
// many defined symbols it read (one in both tables is visited twice), or -1
// if the object or its file cannot be read. `visit` returning non-zero stops it.
//
// Swift functions whose code only jumps to another (`jmp rel32` or `jmp
// rel8`, after an `endbr64` and the frame pointer's `push rbp; mov rbp, rsp;
// pop rbp` a build with frame pointers wraps it in): `$s` function symbols
// of at most 16 bytes, with where they jump. What the optimizer leaves of a
// function it merged into an identical one (and of one that only calls
// another with the same arguments).
int hk_swift_each_jump(const void *inside,
                       int (*visit)(const char *name, const void *address, const void *target, void *context),
                       void *context);
// Where the `size` bytes of code at `code` jump, if that is all they do as
// above (NULL if not): read before a patch replaces the jump.
const void *hk_swift_jump_target(const void *code, uint64_t size);
// Swift async function pointers: the `$s...Tu` data symbol an async
// function has beside its own, with the length of the function's name
// (`length`: the symbol's without `Tu`).
int hk_swift_each_async_pointer(const void *inside,
                                int (*visit)(const char *name, size_t length, void *context),
                                void *context);

#define HK_ENTRY_PATCH_SIZE 5
#define HK_ENTRY_MAX_DISPLACED 8   // instructions displaced by the patch at most
#define HK_ENTRY_STUB_SIZE 256

// What patching a function's entry takes: where the jump goes, which bytes it
// displaces, and the stub that runs them relocated and jumps back.
typedef struct {
  const uint8_t *function;   // the entry
  int patch_offset;          // 4 after an `endbr64`, else 0: the jump starts here
  int patch_length;          // bytes displaced (whole instructions, >= 5)
  uint8_t original[32];      // their bytes
  int count;                 // displaced instructions
  uint8_t old_offset[HK_ENTRY_MAX_DISPLACED];   // each one's offset from the patch start
  uint16_t new_offset[HK_ENTRY_MAX_DISPLACED];  // and its copy's offset in the stub
  uint8_t stub[HK_ENTRY_STUB_SIZE];  // endbr64 (if the function has one), the relocated instructions, a jump back
  int stub_length;
  int stub_body;             // offset in the stub of the first relocated instruction
} hk_entry_plan;

// Plans the patch of the function at `function` (`size` bytes if known, else
// 0) with its stub at `stub_address`. Returns 0, or -1 with the reason in
// `why`: a function shorter than the patch, an instruction the relocator does
// not handle, a branch of the function into the displaced bytes, an operand
// out of the stub's reach, undecodable bytes. Reads the function's code only.
int hk_entry_plan_make(const void *function, uint64_t size, const void *stub_address,
                       hk_entry_plan *plan, char *why, size_t why_size);

// MARK: - Trampoline pages

// A page of executable memory within +-2 GB of `near`, holding `plan`'s stub at
// its start and, after it, a thunk that jumps to `target` (an absolute
// indirect jump, so `target` may be anywhere). Written while the page is
// read-write, then made read-execute; never freed (a thread may be inside).
// Returns the page (the stub's address), or NULL with the reason in `why`.
// `reserve_only`: map the page and return it without writing (for planning
// against its address first); then call hk_entry_page_fill.
void *hk_entry_page_reserve(const void *near, char *why, size_t why_size);
int hk_entry_page_fill(void *page, const hk_entry_plan *plan, const void *target, char *why, size_t why_size);
// The thunk's address in a filled page.
const void *hk_entry_page_thunk(const void *page);

// MARK: - Patching

// Points the entry of `plan`'s function at `thunk` (installs: a `jmp rel32`,
// the rest of the displaced bytes int3) or puts its original bytes back
// (`thunk` NULL), while other threads may be running it. The order is the
// kernel's text_poke_bp: an int3 on the first byte, a core-serializing
// membarrier, the other bytes, another, the first byte, another. A thread
// that reaches the int3 meanwhile is sent on to the stub (the original) by a
// SIGTRAP handler; when installing, each other thread that may be inside the
// displaced bytes (running; not one /proc shows asleep elsewhere) is also
// interrupted once (SIGPROF by tgkill) before the other bytes are written,
// and one that stopped between two displaced instructions resumes at that
// instruction's copy in the stub. Nothing is written while a thread of the
// process blocks SIGTRAP (at the int3 the kernel would end the process).
// `stub` is the page's stub. Returns 0, or -1 with the reason in `why`
// (write access to the code refused, a thread that never answered, a thread
// that blocks SIGTRAP, named): then the entry is as it was.
int hk_entry_patch(const hk_entry_plan *plan, const void *stub, const void *thunk, char *why, size_t why_size);

// 1 in a process run under ThreadSanitizer, where hk_entry_patch refuses.
int hk_entry_unavailable_under_sanitizer(void);

// 1 if the bytes at the entry are the jump of an installed patch to `thunk`.
int hk_entry_is_patched(const hk_entry_plan *plan, const void *thunk);

// Tests: refuse the calling thread's next protection change of code (as a
// W^X policy would).
void hk_entry_test_refuse_write(int refuse);

// Tests: the calling thread's next patch takes at most `limit` other threads
// (as if the process had more than the patch can move).
void hk_entry_test_thread_limit(int limit);

// Tests: thread `tid`'s signal mask counts in the calling thread's patches
// only, until called again (0: no such thread). A test's thread that blocks
// SIGTRAP would otherwise refuse the patches of every test running beside
// it; it must call nothing those patch.
void hk_entry_test_private_thread(int tid);

#endif
