#define _GNU_SOURCE
#include "CFFIShim.h"
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <linux/membarrier.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

ffi_type *hk_ffi_scalar_type(hk_scalar kind) {
  switch (kind) {
  case HK_SCALAR_VOID: return &ffi_type_void;
  case HK_SCALAR_BOOL: return &ffi_type_uint8;
  case HK_SCALAR_INT8: return &ffi_type_sint8;
  case HK_SCALAR_UINT8: return &ffi_type_uint8;
  case HK_SCALAR_INT16: return &ffi_type_sint16;
  case HK_SCALAR_UINT16: return &ffi_type_uint16;
  case HK_SCALAR_INT32: return &ffi_type_sint32;
  case HK_SCALAR_UINT32: return &ffi_type_uint32;
  case HK_SCALAR_INT64: return &ffi_type_sint64;
  case HK_SCALAR_UINT64: return &ffi_type_uint64;
  case HK_SCALAR_FLOAT: return &ffi_type_float;
  case HK_SCALAR_DOUBLE: return &ffi_type_double;
  case HK_SCALAR_POINTER: return &ffi_type_pointer;
  }
  return NULL;
}

const void *hk_ffi_call_address(void) { return (const void *)ffi_call; }

int hk_ffi_default_abi(void) { return FFI_DEFAULT_ABI; }
int hk_ffi_first_abi(void) { return FFI_FIRST_ABI; }
int hk_ffi_last_abi(void) { return FFI_LAST_ABI; }

const char *hk_symbol_name(const void *address) {
  Dl_info info;
  if (dladdr(address, &info) && info.dli_sname && info.dli_saddr == address) return info.dli_sname;
  return 0;
}

// MARK: - Direct calls of integer-class functions

#if defined(__x86_64__) && !defined(_WIN32)
int hk_direct_calls(void) { return 1; }

// A value of scalar code `code` at `p`, extended to 64 bits as a caller
// passes it in a register (clang relies on bool, char and short arguments
// being extended to 32 bits; the rest is extended to 64 for simplicity).
static inline uint64_t hk_extend(uint64_t raw, unsigned char code) {
  switch (code) {
  case HK_SCALAR_BOOL: return (uint8_t)raw != 0;
  case HK_SCALAR_INT8: return (uint64_t)(int64_t)(int8_t)raw;
  case HK_SCALAR_UINT8: return (uint8_t)raw;
  case HK_SCALAR_INT16: return (uint64_t)(int64_t)(int16_t)raw;
  case HK_SCALAR_UINT16: return (uint16_t)raw;
  case HK_SCALAR_INT32: return (uint64_t)(int64_t)(int32_t)raw;
  case HK_SCALAR_UINT32: return (uint32_t)raw;
  default: return raw;
  }
}

static inline uint64_t hk_load_integer(const void *p, unsigned char code) {
  switch (code) {
  case HK_SCALAR_BOOL: case HK_SCALAR_INT8: case HK_SCALAR_UINT8: return hk_extend(*(const uint8_t *)p, code);
  case HK_SCALAR_INT16: case HK_SCALAR_UINT16: { uint16_t v; memcpy(&v, p, 2); return hk_extend(v, code); }
  case HK_SCALAR_INT32: case HK_SCALAR_UINT32: { uint32_t v; memcpy(&v, p, 4); return hk_extend(v, code); }
  default: { uint64_t v; memcpy(&v, p, 8); return v; }
  }
}

typedef uint64_t (*hk_integer_function)(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t);

void hk_call_integer(const void *fn, void *const *args, const unsigned char *codes, int count,
                     unsigned char result_code, void *result) {
  uint64_t a[6] = {0, 0, 0, 0, 0, 0};
  for (int i = 0; i < count; i++) a[i] = hk_load_integer(args[i], codes[i]);
  uint64_t r = ((hk_integer_function)fn)(a[0], a[1], a[2], a[3], a[4], a[5]);
  if (result_code) {
    r = hk_extend(r, result_code);
    memcpy(result, &r, 8);
  }
}

// MARK: - Native entries
//
// Memory: chunks of two pages. The first holds HK_NATIVE_PER_CHUNK copies of
// one 64-byte stub, written once and then made read-execute; the second, at
// the same offset as each stub, its context and handler (read-write). A stub
// reads its own data slot RIP-relatively, so no code is ever written after
// the page became executable. Entries are reused (a free list), never unmapped.

#define HK_PAGE 4096
#define HK_NATIVE_STUB 64
#define HK_NATIVE_PER_CHUNK (HK_PAGE / HK_NATIVE_STUB)

static pthread_mutex_t native_lock = PTHREAD_MUTEX_INITIALIZER;
static uint8_t *native_chunk;   // the chunk being handed out
static int native_used;         // stubs of it handed out
typedef struct native_free { struct native_free *next; } native_free;
static native_free *native_free_list;  // in the data slots of freed stubs

// The stub. On entry rsp is 8 mod 16; after push rbp and sub 48 it is 0 mod
// 16 at the call, as the ABI requires.
static size_t native_stub(uint8_t *code) {
  static const uint8_t save[] = {
    0x55,                               // push rbp
    0x48, 0x89, 0xE5,                   // mov rbp, rsp
    0x48, 0x83, 0xEC, 0x30,             // sub rsp, 48
    0x48, 0x89, 0x3C, 0x24,             // mov [rsp], rdi
    0x48, 0x89, 0x74, 0x24, 0x08,       // mov [rsp+8], rsi
    0x48, 0x89, 0x54, 0x24, 0x10,       // mov [rsp+16], rdx
    0x48, 0x89, 0x4C, 0x24, 0x18,       // mov [rsp+24], rcx
    0x4C, 0x89, 0x44, 0x24, 0x20,       // mov [rsp+32], r8
    0x4C, 0x89, 0x4C, 0x24, 0x28,       // mov [rsp+40], r9
    0x48, 0x89, 0xE6,                   // mov rsi, rsp
  };
  size_t n = 0;
  memcpy(code, save, sizeof save);
  n += sizeof save;
  // mov rdi, [rip + slot]: the context, at this stub's offset in the next page.
  int32_t disp = (int32_t)(HK_PAGE - (n + 7));
  code[n++] = 0x48; code[n++] = 0x8B; code[n++] = 0x3D;
  memcpy(code + n, &disp, 4); n += 4;
  // call [rip + slot + 8]: the handler.
  disp = (int32_t)(HK_PAGE + 8 - (n + 6));
  code[n++] = 0xFF; code[n++] = 0x15;
  memcpy(code + n, &disp, 4); n += 4;
  code[n++] = 0xC9;  // leave
  code[n++] = 0xC3;  // ret
  return n;
}

void *hk_native_entry_make(hk_native_handler handler, void *context) {
  pthread_mutex_lock(&native_lock);
  uint8_t *stub = NULL;
  if (native_free_list) {
    // A freed stub: its data slot held the list link.
    stub = (uint8_t *)native_free_list - HK_PAGE;
    native_free_list = native_free_list->next;
  } else {
    if (!native_chunk || native_used == HK_NATIVE_PER_CHUNK) {
      uint8_t *chunk = mmap(NULL, 2 * HK_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (chunk == MAP_FAILED) {
        pthread_mutex_unlock(&native_lock);
        return NULL;
      }
      for (int i = 0; i < HK_NATIVE_PER_CHUNK; i++) {
        size_t length = native_stub(chunk + i * HK_NATIVE_STUB);
        memset(chunk + i * HK_NATIVE_STUB + length, 0xCC, HK_NATIVE_STUB - length);
      }
      if (mprotect(chunk, HK_PAGE, PROT_READ | PROT_EXEC) != 0) {
        int saved = errno;
        munmap(chunk, 2 * HK_PAGE);
        pthread_mutex_unlock(&native_lock);
        errno = saved;
        return NULL;
      }
      native_chunk = chunk;
      native_used = 0;
    }
    stub = native_chunk + native_used++ * HK_NATIVE_STUB;
  }
  void **slot = (void **)(stub + HK_PAGE);
  __atomic_store_n(&slot[0], context, __ATOMIC_RELEASE);
  __atomic_store_n(&slot[1], (void *)handler, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&native_lock);
  return stub;
}

void hk_native_entry_set_context(void *entry, void *context) {
  __atomic_store_n((void **)((uint8_t *)entry + HK_PAGE), context, __ATOMIC_RELEASE);
}

void hk_native_entry_free(void *entry) {
  pthread_mutex_lock(&native_lock);
  native_free *link = (native_free *)((uint8_t *)entry + HK_PAGE);
  ((void **)link)[1] = NULL;
  link->next = native_free_list;
  native_free_list = link;
  pthread_mutex_unlock(&native_lock);
}
#else
void *hk_native_entry_make(hk_native_handler handler, void *context) {
  (void)handler; (void)context;
  errno = ENOTSUP;
  return NULL;
}
void hk_native_entry_set_context(void *entry, void *context) { (void)entry; (void)context; }
void hk_native_entry_free(void *entry) { (void)entry; }
int hk_direct_calls(void) { return 0; }
void hk_call_integer(const void *fn, void *const *args, const unsigned char *codes, int count,
                     unsigned char result_code, void *result) {
  (void)fn; (void)args; (void)codes; (void)count; (void)result_code; (void)result;
  abort();
}
#endif
