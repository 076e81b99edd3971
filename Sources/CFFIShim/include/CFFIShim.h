// CFFIShim: libffi for Swift, the native entries that replace its closures
// for integer signatures, and direct calls of integer-class originals.
// Nothing here knows about Swift.
#ifndef CFFISHIM_H
#define CFFISHIM_H

#include <ffi.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

// MARK: - libffi type descriptors

// The C scalar types, one number each, for Swift and C alike: `CType._scalarCode`
// (typed access compares types by it), the codes a hook point keeps per
// argument (hk_call_integer extends by them) and libffi's types (so Swift never
// touches libffi's mutable globals). 0: void, or no scalar.
typedef enum {
  HK_SCALAR_VOID = 0,
  HK_SCALAR_BOOL = 1, HK_SCALAR_INT8 = 2, HK_SCALAR_UINT8 = 3, HK_SCALAR_INT16 = 4, HK_SCALAR_UINT16 = 5,
  HK_SCALAR_INT32 = 6, HK_SCALAR_UINT32 = 7, HK_SCALAR_INT64 = 8, HK_SCALAR_UINT64 = 9,
  HK_SCALAR_FLOAT = 10, HK_SCALAR_DOUBLE = 11, HK_SCALAR_POINTER = 12,
} hk_scalar;

// libffi's type of a scalar (`bool` is uint8, as C passes it).
ffi_type *hk_ffi_scalar_type(hk_scalar kind);

// The ffi_abi values this libffi accepts, so the Swift side can name them.
int hk_ffi_default_abi(void);
int hk_ffi_first_abi(void);
int hk_ffi_last_abi(void);

// 1 where hk_call_integer can call a function (x86-64 System V), else 0.
int hk_direct_calls(void);

// Calls `fn` directly, without libffi, where every argument (at most 6) and
// the result are of the System V x86-64 INTEGER class (integers, bool,
// pointers): the arguments are read from `args` (libffi's view, a pointer to
// each value) by their scalar codes (hk_scalar: BOOL to UINT64, POINTER) and
// extended to a register as a C caller does; the result (code 0: void) is
// stored in `result` widened to 64 bits, as libffi stores a closure's result.
// Unused argument registers are passed as 0, which a callee ignores.
void hk_call_integer(const void *fn, void *const *args, const unsigned char *codes, int count,
                     unsigned char result_code, void *result);

// MARK: - Native entries

// A native entry: a C function of at most six INTEGER-class arguments (x86-64
// System V) that saves the six argument registers in order into six words on
// its stack and returns `handler(context, words)` in rax, without libffi. The
// code lies in a page that is written once and then made read-execute; the
// context and handler in a read-write page beside it (W^X-compatible). NULL
// when the system refuses the pages (errno says why) or off x86-64.
typedef uint64_t (*hk_native_handler)(void *context, uint64_t *registers);
void *hk_native_entry_make(hk_native_handler handler, void *context);
// Sets the context of an entry that no one calls yet.
void hk_native_entry_set_context(void *entry, void *context);
// Returns an entry to the pool; no call may be in flight.
void hk_native_entry_free(void *entry);

typedef uint64_t (*hk_register_function)(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t);

// Calls an INTEGER-class function with the six argument registers a native
// entry saved, unchanged (what the caller passed), and returns its rax.
static inline uint64_t hk_call_registers(const void *fn, const uint64_t *r) {
  return ((hk_register_function)fn)(r[0], r[1], r[2], r[3], r[4], r[5]);
}

// The address of libffi's ffi_call (where libffi is mapped).
const void *hk_ffi_call_address(void);

// The exported symbol that starts exactly at `address`, or NULL (dladdr).
const char *hk_symbol_name(const void *address);

#ifdef __cplusplus
}
#endif
#endif
