// CImportSlots: the GOT slots and symbol-table entries through which loaded
// ELF objects reach an imported function, read and written for ImportHook.
#ifndef CIMPORTSLOTS_H
#define CIMPORTSLOTS_H

#include <stdint.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

// MARK: - Import slots
//
// The places through which loaded ELF objects reach an imported function: GOT
// slots (R_X86_64_JUMP_SLOT, R_X86_64_GLOB_DAT, and R_X86_64_64 data pointers
// with addend 0) and the defining object's dynamic symbol-table entry, which
// dlsym, dlvsym and the relocation of objects loaded later read. Every write is
// one atomic 8-byte store, made inside dl_iterate_phdr for an object the loader
// still lists; a page in the object's RELRO range (or any page that is not
// writable) is made writable for the store and given back the protection
// /proc/self/maps listed. Nothing is allocated inside dl_iterate_phdr.

enum {
  HK_SLOT_SYMBOL = 0,     // st_value of the definition in the dynamic symbol table
  HK_SLOT_ABSOLUTE = 1,   // R_X86_64_64: a function pointer in data
  HK_SLOT_GLOB_DAT = 6,   // R_X86_64_GLOB_DAT: an address-taken import
  HK_SLOT_JUMP = 7        // R_X86_64_JUMP_SLOT: a PLT call
};

typedef struct {
  void *address;               // the 8-byte slot
  void *previous;              // what it held before (for HK_SLOT_SYMBOL: st_value)
  void *current;               // filled by hk_import_read
  uintptr_t object_base;       // dlpi_addr (l_addr) of the object that holds it
  const void *object_dynamic;  // and its PT_DYNAMIC (l_ld): together, the object's identity
  const char *object_name;     // malloc'd copy of dlpi_name ("" for the program; NULL if out of memory)
  int kind;                    // HK_SLOT_*
  unsigned char previous_info; // st_info of a symbol entry
  unsigned char unprotected;   // the page was read-only and made writable for the store
  unsigned char live;          // the object was loaded at the last walk
  unsigned char restored;      // hk_import_restore put the previous value back
} hk_import_slot;

typedef struct {
  const char *symbol;
  void *original;                  // the real function (dlsym)
  void *replacement;               // the hook's entry
  const uintptr_t *excluded_bases; // objects never patched (Hook's image, libffi): l_addr
  const void *const *excluded_dynamics; // and l_ld of each
  size_t excluded_count;
  const char *const *scope;        // object names (full path or file name); NULL: every object
  size_t scope_count;
  int patch_definition;            // also point the definition's symbol-table entry at replacement
  uintptr_t definition_base;       // the object that defines original: l_addr
  const void *definition_dynamic;  // and l_ld
  int refuse_protection_change;    // test seam: mprotect fails with EACCES
  int dry_run;                     // write nothing: count imports, list the slots holding replacement
  int restore_loader_bound;        // hk_import_restore: also every unlisted slot holding replacement
} hk_import_request;

enum {
  HK_IMPORT_ERROR_PROTECTION = 1, // mprotect refused (error: its errno)
  HK_IMPORT_ERROR_UNMAPPED = 2,   // /proc/self/maps could not be read or lists no mapping there
  HK_IMPORT_ERROR_MEMORY = 3      // malloc failed outside the walk (error: ENOMEM)
};

typedef struct {
  hk_import_slot *slots;   // slots written by the operation (malloc'd)
  size_t count, capacity;
  size_t objects;          // loaded objects with a dynamic section
  size_t objects_in_scope; // of those, in scope and not excluded
  size_t imports;          // relocations naming the symbol in the objects in scope
  size_t bound_elsewhere;  // slots bound to another definition, left alone
  int error;               // errno of the failure (0: none)
  int error_kind;          // HK_IMPORT_ERROR_*
  void *error_address;
  char error_object[256];
} hk_import_outcome;

// Points every slot naming request->symbol in the objects in scope at
// replacement, and records what each held. -1 if a page could not be unprotected
// (outcome->error); the slots written before stay in outcome.
int hk_import_patch(const hk_import_request *request, hk_import_outcome *outcome);

// Puts back the previous value of each of `slots` that still holds the
// replacement in an object still loaded (sets live and restored); with
// request->restore_loader_bound, then points every other slot (outside the
// excluded objects) that holds the replacement back at the original (those
// are added to outcome). Scope is ignored.
int hk_import_restore(const hk_import_request *request, hk_import_slot *slots, size_t count,
                      hk_import_outcome *outcome);

// Sets live and current of each slot (current only when live).
void hk_import_read(hk_import_slot *slots, size_t count);

void hk_import_outcome_free(hk_import_outcome *outcome);
void hk_import_slot_free_name(hk_import_slot *slot);

// The protection (PROT_*) of the mapping holding `address`, from /proc/self/maps; -1 if unmapped,
// -2 if /proc/self/maps cannot be read.
int hk_import_page_protection(const void *address);

// The base of the object holding `address`, and the ELF type (STT_*) of the
// symbol that starts exactly there or -1. 0 if no object holds it.
int hk_import_describe(const void *address, uintptr_t *base, int *type);
// The identity of the object holding `address`, as dl_iterate_phdr sees it:
// its link map's l_addr (the load bias, dlpi_addr) and l_ld. 0 if none holds it.
int hk_import_image(const void *address, uintptr_t *base, const void **dynamic);
uintptr_t hk_import_image_base(const void *address);
// The object holding this shim (and the Hook code linked with it), and libffi.
int hk_import_own_image(uintptr_t *base, const void **dynamic);
uintptr_t hk_import_own_image_base(void);
// Nonzero while this thread is inside a dl_iterate_phdr callback of the shim (tests).
int hk_import_walking(void);
// dlsym(RTLD_DEFAULT, symbol) and dlvsym(RTLD_DEFAULT, symbol, version).
void *hk_import_lookup(const char *symbol);
void *hk_import_lookup_version(const char *symbol, const char *version);

#ifdef __cplusplus
}
#endif
#endif
