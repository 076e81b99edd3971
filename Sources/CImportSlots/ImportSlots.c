// Import slots: the GOT entries (and the defining symbol-table entry) through
// which loaded ELF objects reach an imported function. See the declarations in
// CFFIShim.h and ImportHook.swift for the policy; this file only finds and
// writes slots.
//
// Every write happens inside a dl_iterate_phdr callback, for an object the
// loader still lists: dl_iterate_phdr holds the loader's write lock, and
// dlclose removes an object from the list under that lock before unmapping
// it, so an object being closed is never written to.
//
// Nothing is allocated inside a callback: with a hook on malloc, an allocation
// there (glibc's strdup reaches malloc through libc's own GOT) would run the
// program's hooks while the loader's lock is held. Records go into buffers
// allocated before the walk; a walk that finds them full stops, they are grown
// outside it, and the walk runs again (written slots hold the replacement by
// then and are not taken twice). Object names are copied into a buffer of
// their own during the walk and duplicated after it.
#define _GNU_SOURCE
#include "CImportSlots.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

// MARK: - Reading one object

// A DT_VERSYM entry: a version index, and a bit set for a hidden (non-default) definition.
#ifndef VERSYM_HIDDEN
#define VERSYM_HIDDEN 0x8000
#define VERSYM_VERSION 0x7fff
#endif

typedef struct {
  uintptr_t base;
  const char *name;
  // DT_SONAME's offset in the string table (0: none), read with the rest.
  size_t soname;
  const ElfW(Phdr) *phdr;
  int phnum;
  const ElfW(Dyn) *dynamic;
  const ElfW(Sym) *symtab;
  const char *strtab;
  const ElfW(Versym) *versym;
  const ElfW(Verneed) *verneed;
  const ElfW(Verdef) *verdef;
  size_t verneed_count, verdef_count;
  const ElfW(Rela) *jmprel;
  size_t jmprel_size;
  const ElfW(Rela) *rela;
  size_t rela_size;
  size_t rela_entry;
  const uint32_t *gnu_hash;
  const uint32_t *sysv_hash;
  uintptr_t relro_start, relro_end;
} hk_object;

// Set while this thread is inside one of this file's dl_iterate_phdr callbacks.
static __thread int walking;

int hk_import_walking(void) { return walking; }

// glibc relocates most d_ptr values of a loaded object in place; the vDSO's
// and some other loaders' are left as file addresses.
static uintptr_t dyn_address(const hk_object *o, uintptr_t value) {
  return value < o->base ? value + o->base : value;
}

static int read_dynamic(hk_object *o);

static int read_object(const struct dl_phdr_info *info, hk_object *o) {
  memset(o, 0, sizeof *o);
  o->base = info->dlpi_addr;
  o->name = info->dlpi_name ? info->dlpi_name : "";
  o->phdr = info->dlpi_phdr;
  o->phnum = info->dlpi_phnum;
  o->rela_entry = sizeof(ElfW(Rela));
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *p = &info->dlpi_phdr[i];
    if (p->p_type == PT_DYNAMIC) o->dynamic = (const ElfW(Dyn) *)(o->base + p->p_vaddr);
    if (p->p_type == PT_GNU_RELRO) {
      o->relro_start = o->base + p->p_vaddr;
      o->relro_end = o->relro_start + p->p_memsz;
    }
  }
  return read_dynamic(o);
}

// Reads the dynamic section of `o` (base, name and dynamic set). 0 for the
// vDSO and for an object without a symbol table.
static int read_dynamic(hk_object *o) {
  if (!o->dynamic) return 0;
  if (strncmp(o->name, "linux-vdso", 10) == 0 || strncmp(o->name, "linux-gate", 10) == 0) return 0;
  for (const ElfW(Dyn) *d = o->dynamic; d->d_tag != DT_NULL; d++) {
    switch (d->d_tag) {
      case DT_SYMTAB: o->symtab = (const ElfW(Sym) *)dyn_address(o, d->d_un.d_ptr); break;
      case DT_STRTAB: o->strtab = (const char *)dyn_address(o, d->d_un.d_ptr); break;
      case DT_SONAME: o->soname = d->d_un.d_val; break;
      case DT_VERSYM: o->versym = (const ElfW(Versym) *)dyn_address(o, d->d_un.d_ptr); break;
      case DT_VERNEED: o->verneed = (const ElfW(Verneed) *)dyn_address(o, d->d_un.d_ptr); break;
      case DT_VERNEEDNUM: o->verneed_count = d->d_un.d_val; break;
      case DT_VERDEF: o->verdef = (const ElfW(Verdef) *)dyn_address(o, d->d_un.d_ptr); break;
      case DT_VERDEFNUM: o->verdef_count = d->d_un.d_val; break;
      case DT_JMPREL: o->jmprel = (const ElfW(Rela) *)dyn_address(o, d->d_un.d_ptr); break;
      case DT_PLTRELSZ: o->jmprel_size = d->d_un.d_val; break;
      case DT_RELA: o->rela = (const ElfW(Rela) *)dyn_address(o, d->d_un.d_ptr); break;
      case DT_RELASZ: o->rela_size = d->d_un.d_val; break;
      case DT_RELAENT: if (d->d_un.d_val) o->rela_entry = d->d_un.d_val; break;
      case DT_GNU_HASH: o->gnu_hash = (const uint32_t *)dyn_address(o, d->d_un.d_ptr); break;
      case DT_HASH: o->sysv_hash = (const uint32_t *)dyn_address(o, d->d_un.d_ptr); break;
      case DT_PLTREL: if (d->d_un.d_val != DT_RELA) return 0; break;  // x86-64 uses RELA only
      default: break;
    }
  }
  return o->symtab && o->strtab;
}

// The PT_LOAD segment of `o` that holds [address, address + size), or NULL.
static const ElfW(Phdr) *segment_of(const hk_object *o, uintptr_t address, size_t size) {
  for (int i = 0; i < o->phnum; i++) {
    const ElfW(Phdr) *p = &o->phdr[i];
    if (p->p_type != PT_LOAD) continue;
    uintptr_t start = o->base + p->p_vaddr;
    if (address >= start && address + size <= start + p->p_memsz) return p;
  }
  return 0;
}

// An object's identity: its load bias (dlpi_addr, l_addr) and its PT_DYNAMIC (l_ld).
static int object_is(const hk_object *o, uintptr_t base, const void *dynamic) {
  return o->base == base && (const void *)o->dynamic == dynamic;
}

static const char *base_name(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

// The name of version index `index` (a DT_VERSYM entry less its hidden bit)
// of `o`: a version it needs (DT_VERNEED, vna_other) or one it defines
// (DT_VERDEF, vd_ndx: a relocation may name a symbol of its own object).
// NULL if neither lists it.
static const char *version_name(const hk_object *o, unsigned index) {
  const ElfW(Verneed) *need = o->verneed;
  for (size_t i = 0; need && i < o->verneed_count; i++) {
    const ElfW(Vernaux) *aux = (const ElfW(Vernaux) *)((const char *)need + need->vn_aux);
    for (unsigned j = 0; j < need->vn_cnt; j++) {
      if ((aux->vna_other & VERSYM_VERSION) == index) return o->strtab + aux->vna_name;
      if (!aux->vna_next) break;
      aux = (const ElfW(Vernaux) *)((const char *)aux + aux->vna_next);
    }
    if (!need->vn_next) break;
    need = (const ElfW(Verneed) *)((const char *)need + need->vn_next);
  }
  const ElfW(Verdef) *def = o->verdef;
  for (size_t i = 0; def && i < o->verdef_count; i++) {
    if ((def->vd_ndx & VERSYM_VERSION) == index && def->vd_cnt) {
      return o->strtab + ((const ElfW(Verdaux) *)((const char *)def + def->vd_aux))->vda_name;
    }
    if (!def->vd_next) break;
    def = (const ElfW(Verdef) *)((const char *)def + def->vd_next);
  }
  return 0;
}

// MARK: - Page protection

static size_t page_size(void) {
  static size_t size;
  if (!size) size = (size_t)sysconf(_SC_PAGESIZE);
  return size;
}

// The protection of the mapping that holds `address`, from /proc/self/maps, or -1.
static int mapped_protection(uintptr_t address) {
  int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -2;   // not known (no /proc): not "in no mapping"
  char buffer[8192];
  size_t filled = 0;
  int result = -1;
  for (;;) {
    ssize_t n = read(fd, buffer + filled, sizeof buffer - 1 - filled);
    if (n <= 0) break;
    filled += (size_t)n;
    buffer[filled] = 0;
    char *line = buffer;
    char *end;
    while ((end = strchr(line, '\n')) != 0) {
      *end = 0;
      char *cursor;
      unsigned long start = strtoul(line, &cursor, 16);
      unsigned long stop = *cursor == '-' ? strtoul(cursor + 1, &cursor, 16) : 0;
      if (address >= start && address < stop && cursor[0] == ' ' && cursor[1]) {
        result = (cursor[1] == 'r' ? PROT_READ : 0) | (cursor[2] == 'w' ? PROT_WRITE : 0) |
                 (cursor[3] == 'x' ? PROT_EXEC : 0);
        close(fd);
        return result;
      }
      line = end + 1;
    }
    filled = (size_t)(buffer + filled - line);
    memmove(buffer, line, filled);
  }
  close(fd);
  return result;
}

int hk_import_page_protection(const void *address) { return mapped_protection((uintptr_t)address); }

typedef struct {
  const hk_import_request *request;
  hk_import_outcome *outcome;
  // Allocated outside the walk, never inside it. name_offsets[i] is where
  // outcome->slots[i]'s object name starts in names.
  size_t *name_offsets;
  char *names;
  size_t names_used, names_capacity;
  int full;  // a record found no room: the walk stopped, to be grown and run again
  // The definition `original` is, found by hk_import_patch before its walks
  // (find_original: dladdr1 takes the loader's lock, which a dl_iterate_phdr
  // callback must not take), for the lazy slots (binds_original).
  uintptr_t original_base;       // the object holding original: l_addr
  const void *original_dynamic;  // and l_ld; 0 if no object holds it
  int original_known;            // that object's definition of the symbol was found
  const char *original_version;  // its version (in that object's strings); NULL if unversioned
  hk_object original_object;     // that object, read (find_original), for versions at the same address
  const char *wanted_version;    // set by binds_original for same_address_version
  int wanted_found;
  int own_definition;            // set by own_definition
} hk_walk;

static void fail(hk_walk *w, const hk_object *o, uintptr_t address, int error, int kind) {
  if (w->outcome->error) return;
  w->outcome->error = error;
  w->outcome->error_kind = kind;
  w->outcome->error_address = (void *)address;
  if (o) strncpy(w->outcome->error_object, o->name, sizeof w->outcome->error_object - 1);
}

// Stores `value` at `address` (8 bytes, atomically). A page inside the
// object's PT_GNU_RELRO range is always made writable for the store and given
// back the protection /proc/self/maps listed (even one listed writable:
// dlopen may protect RELRO after it added the object to the list); any other
// page that is not writable is treated the same way.
// Returns 1 if the page was read-only, 0 if it was writable, -1 on failure.
static int store_word(hk_walk *w, const hk_object *o, uintptr_t address, uintptr_t value) {
  const ElfW(Phdr) *segment = segment_of(o, address, sizeof(uintptr_t));
  int in_relro = address >= o->relro_start && address < o->relro_end;
  if (segment && (segment->p_flags & PF_W) && !in_relro) {
    __atomic_store_n((uintptr_t *)address, value, __ATOMIC_RELEASE);
    return 0;
  }
  int protection = mapped_protection(address);
  if (protection < 0) {
    fail(w, o, address, ENOENT, HK_IMPORT_ERROR_UNMAPPED);
    return -1;
  }
  if (!in_relro && (protection & PROT_WRITE)) {
    __atomic_store_n((uintptr_t *)address, value, __ATOMIC_RELEASE);
    return 0;
  }
  uintptr_t page = address & ~(uintptr_t)(page_size() - 1);
  if (w->request->refuse_protection_change || mprotect((void *)page, page_size(), protection | PROT_WRITE) != 0) {
    fail(w, o, address, w->request->refuse_protection_change ? EACCES : errno, HK_IMPORT_ERROR_PROTECTION);
    return -1;
  }
  __atomic_store_n((uintptr_t *)address, value, __ATOMIC_RELEASE);
  if (mprotect((void *)page, page_size(), protection) != 0) {
    fail(w, o, address, errno, HK_IMPORT_ERROR_PROTECTION);
    return -1;
  }
  return (protection & PROT_WRITE) ? 0 : 1;
}

// Whether the last record is of `o`: its name is in the buffer already.
static int named_last(const hk_walk *w, const hk_object *o) {
  const hk_import_outcome *out = w->outcome;
  if (!out->count) return 0;
  const hk_import_slot *last = &out->slots[out->count - 1];
  return last->object_base == o->base && last->object_dynamic == (const void *)o->dynamic;
}

// Whether one more record of `o` fits; if not, marks the walk full, and the
// caller stops before writing anything.
static int room(hk_walk *w, const hk_object *o) {
  size_t name = named_last(w, o) ? 0 : strlen(o->name) + 1;
  if (w->outcome->count < w->outcome->capacity && w->names_used + name <= w->names_capacity) return 0;
  w->full = 1;
  return -1;
}

// Records a slot; room() has said it fits. Allocates nothing.
static int record(hk_walk *w, const hk_object *o, uintptr_t address, uintptr_t previous, unsigned previous_info,
                  int kind, int unprotected) {
  hk_import_outcome *out = w->outcome;
  size_t name;
  if (named_last(w, o)) {
    name = w->name_offsets[out->count - 1];
  } else {
    size_t length = strlen(o->name) + 1;
    name = w->names_used;
    memcpy(w->names + name, o->name, length);
    w->names_used += length;
  }
  w->name_offsets[out->count] = name;
  hk_import_slot *s = &out->slots[out->count++];
  memset(s, 0, sizeof *s);
  s->address = (void *)address;
  s->previous = (void *)previous;
  s->previous_info = (unsigned char)previous_info;
  s->object_base = o->base;
  s->object_dynamic = o->dynamic;
  s->object_name = 0;  // duplicated from names after the walk
  s->kind = kind;
  s->unprotected = unprotected;
  s->live = 1;
  return 0;
}

// Grows the record buffers, outside any walk. -1 (ENOMEM in outcome) if memory ran out.
static int grow(hk_walk *w) {
  hk_import_outcome *out = w->outcome;
  size_t capacity = out->capacity ? out->capacity * 2 : 32;
  hk_import_slot *slots = (hk_import_slot *)realloc(out->slots, capacity * sizeof *slots);
  if (slots) out->slots = slots;
  size_t *offsets = slots ? (size_t *)realloc(w->name_offsets, capacity * sizeof *offsets) : 0;
  if (offsets) w->name_offsets = offsets;
  size_t names_capacity = w->names_capacity ? w->names_capacity * 2 : 4096;
  char *names = offsets ? (char *)realloc(w->names, names_capacity) : 0;
  if (!names) {
    fail(w, 0, 0, ENOMEM, HK_IMPORT_ERROR_MEMORY);
    return -1;
  }
  w->names = names;
  w->names_capacity = names_capacity;
  out->capacity = capacity;
  return 0;
}

typedef int (*walk_callback)(struct dl_phdr_info *info, size_t size, void *data);

// Runs `callback` over the loaded objects until no record found its buffers
// full, growing them between walks. With `keep_records` 0 (a dry run) each
// walk starts its records over; a writing walk keeps them: what it wrote
// holds the replacement now and is not taken again.
static void walk_objects(hk_walk *w, walk_callback callback, void *data, int keep_records) {
  hk_import_outcome *out = w->outcome;
  if (!out->capacity && grow(w) < 0) return;
  for (;;) {
    out->objects = out->objects_in_scope = out->imports = out->bound_elsewhere = 0;
    w->full = 0;
    dl_iterate_phdr(callback, data);
    if (!w->full || out->error) return;
    if (!keep_records) {
      out->count = 0;
      w->names_used = 0;
    }
    if (grow(w) < 0) return;
  }
}

// Gives each record written by the walks its own copy of its object's name,
// and frees the walk's buffers. A name that cannot be copied stays NULL.
static void finish_walk(hk_walk *w, size_t first) {
  hk_import_outcome *out = w->outcome;
  for (size_t i = first; i < out->count; i++) {
    if (!out->slots[i].object_name) out->slots[i].object_name = strdup(w->names + w->name_offsets[i]);
  }
  free(w->names);
  free(w->name_offsets);
  w->names = 0;
  w->name_offsets = 0;
}

// MARK: - Which objects a request covers

static int excluded(const hk_import_request *r, const hk_object *o) {
  for (size_t i = 0; i < r->excluded_count; i++) {
    if (object_is(o, r->excluded_bases[i], r->excluded_dynamics[i])) return 1;
  }
  return 0;
}

static const char *program_name(void) {
  static char path[4096];
  static int done;
  if (!done) {
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
    path[n > 0 ? n : 0] = 0;
    done = 1;
  }
  return path;
}

static int in_scope(const hk_import_request *r, const hk_object *o) {
  if (!r->scope) return 1;
  const char *name = o->name[0] ? o->name : program_name();
  for (size_t i = 0; i < r->scope_count; i++) {
    const char *wanted = r->scope[i];
    if (strcmp(name, wanted) == 0 || strcmp(base_name(name), wanted) == 0) return 1;
    // Its soname too: loaded through a link or another path (a plug-in's
    // copy of libbz2 as libbzlink.so), the loader's name is that path, and
    // dlopen(RTLD_NOLOAD), which said it is loaded, matched the soname.
    if (o->soname && o->strtab && strcmp(o->strtab + o->soname, wanted) == 0) return 1;
  }
  return 0;
}

// MARK: - Relocations

// `plt_index` is the relocation's index in DT_JMPREL (what its lazy PLT stub
// pushes), or -1 for one from DT_RELA.
typedef int (*relocation_visitor)(hk_walk *w, const hk_object *o, uintptr_t slot, int kind, long plt_index);

// Calls `visit` once for every JUMP_SLOT, GLOB_DAT and R_X86_64_64 (addend 0)
// relocation of `o` that names the request's symbol (DT_RELASZ may cover
// DT_JMPREL too: those are visited as DT_JMPREL's only). Stops at a negative result.
static int each_relocation(hk_walk *w, const hk_object *o, relocation_visitor visit) {
  const char *symbol = w->request->symbol;
  const ElfW(Rela) *tables[2] = {o->jmprel, o->rela};
  size_t sizes[2] = {o->jmprel_size, o->rela_size};
  for (int t = 0; t < 2; t++) {
    if (!tables[t] || !sizes[t]) continue;
    size_t stride = t == 0 ? sizeof(ElfW(Rela)) : o->rela_entry;
    for (size_t offset = 0; offset + sizeof(ElfW(Rela)) <= sizes[t]; offset += stride) {
      const ElfW(Rela) *r = (const ElfW(Rela) *)((const char *)tables[t] + offset);
      if (t == 1 && o->jmprel && (const char *)r >= (const char *)o->jmprel &&
          (const char *)r < (const char *)o->jmprel + o->jmprel_size) continue;
      unsigned type = (unsigned)ELF64_R_TYPE(r->r_info);
      int kind;
      if (type == R_X86_64_JUMP_SLOT) kind = HK_SLOT_JUMP;
      else if (type == R_X86_64_GLOB_DAT) kind = HK_SLOT_GLOB_DAT;
      else if (type == R_X86_64_64 && r->r_addend == 0) kind = HK_SLOT_ABSOLUTE;
      else continue;
      size_t index = ELF64_R_SYM(r->r_info);
      if (index == 0) continue;
      if (strcmp(o->strtab + o->symtab[index].st_name, symbol) != 0) continue;
      uintptr_t slot = o->base + r->r_offset;
      if (!segment_of(o, slot, sizeof(uintptr_t))) continue;
      if (visit(w, o, slot, kind, t == 0 ? (long)(offset / sizeof(ElfW(Rela))) : -1) < 0) return -1;
    }
  }
  return 0;
}

// Whether a JUMP_SLOT holding `value` is not bound yet: it holds the address
// of its own lazy PLT stub, in an executable segment of `o`, which pushes the
// slot's relocation index (`push $index`, after an `endbr64` with IBT). A
// slot bound to a definition inside `o` (RTLD_DEEPBIND, a self-call) is not.
// Whether the loader would bind it to the original is binds_original's question.
static int unbound_lazy(const hk_object *o, uintptr_t value, long plt_index) {
  if (plt_index < 0) return 0;
  const ElfW(Phdr) *segment = segment_of(o, value, 9);
  if (!segment || !(segment->p_flags & PF_X) || !(segment->p_flags & PF_R)) return 0;
  const unsigned char *code = (const unsigned char *)value;
  static const unsigned char endbr64[4] = {0xf3, 0x0f, 0x1e, 0xfa};
  if (memcmp(code, endbr64, 4) == 0) code += 4;
  if (code[0] != 0x68) return 0;
  int32_t pushed;
  memcpy(&pushed, code + 1, sizeof pushed);
  return pushed == plt_index;
}

typedef int (*symbol_visitor)(hk_walk *w, const hk_object *o, ElfW(Sym) *sym);
static int each_definition(hk_walk *w, const hk_object *o, const char *name, symbol_visitor visit);

// A definition in the original's object of the version an import wants
// (w->wanted_version) at the original's address.
static int same_address_version(hk_walk *w, const hk_object *o, ElfW(Sym) *sym) {
  if (!o->versym || sym->st_shndx == SHN_UNDEF) return 0;
  if (o->base + sym->st_value != (uintptr_t)w->request->original) return 0;
  const char *name = version_name(o, o->versym[sym - o->symtab] & VERSYM_VERSION);
  if (name && strcmp(name, w->wanted_version) == 0) w->wanted_found = 1;
  return 0;
}

static int own_definition(hk_walk *w, const hk_object *o, ElfW(Sym) *sym) {
  uintptr_t address = o->base + sym->st_value;
  if (sym->st_shndx != SHN_UNDEF && address != (uintptr_t)w->request->original &&
      address != (uintptr_t)w->request->replacement) w->own_definition = 1;
  return 0;
}

// Whether the loader, binding the lazy slot of `o`'s DT_JMPREL entry
// `plt_index`, would pick the original. Not when the import asks for another
// version than the original's: a library built against realpath@GLIBC_2.2.5
// gets that one (EINVAL for a NULL buffer), not the default
// realpath@@GLIBC_2.3 that dlsym found. (An unversioned import, or an
// unversioned original, which satisfies any version, is the original's; so is
// any import when the original's definition was not found, as for an IFUNC
// whose implementation lies in the vDSO.) Not when `o` defines the symbol
// itself, other than the original: loaded with RTLD_DEEPBIND it binds its own
// definition. Loaded without, it would have bound the global one, and its
// slot is missed: how an object was loaded cannot be read from it, and a slot
// missed is the safe way round, where one taken over changes what it calls.
// Reads `o` only: no lookup, no lock, no allocation inside the walk.
static int binds_original(hk_walk *w, const hk_object *o, long plt_index) {
  size_t index = ELF64_R_SYM(o->jmprel[plt_index].r_info);
  if (w->original_known && w->original_version && o->versym) {
    unsigned version = o->versym[index] & VERSYM_VERSION;
    if (version > VER_NDX_GLOBAL) {
      const char *wanted = version_name(o, version);
      if (!wanted) return 0;
      // Another version's name, but glibc defines several versions at one
      // address (pthread_create@GLIBC_2.2.5 and @@GLIBC_2.34): the same
      // function. (Compared by name, a library built before 2.34 had its
      // slot missed, and Hook's own lazy slots were not bound first.)
      if (strcmp(wanted, w->original_version) != 0) {
        w->wanted_version = wanted;
        w->wanted_found = 0;
        each_definition(w, &w->original_object, w->request->symbol, same_address_version);
        if (!w->wanted_found) return 0;
      }
    }
  }
  if (object_is(o, w->original_base, w->original_dynamic)) return 1;
  w->own_definition = 0;
  each_definition(w, o, w->request->symbol, own_definition);
  return !w->own_definition;
}

static int patch_slot(hk_walk *w, const hk_object *o, uintptr_t slot, int kind, long plt_index) {
  const hk_import_request *r = w->request;
  int mine = !excluded(r, o) && in_scope(r, o);
  if (mine) w->outcome->imports++;
  uintptr_t current = __atomic_load_n((uintptr_t *)slot, __ATOMIC_ACQUIRE);
  uintptr_t original = (uintptr_t)r->original, replacement = (uintptr_t)r->replacement;
  if (r->dry_run) {
    if (!mine || current != replacement) return 0;
    return room(w, o) < 0 ? -1 : record(w, o, slot, current, 0, kind, 0);
  }
  if (current == replacement) return 0;
  // Only a slot bound to the original, or a lazy slot not bound yet (it holds
  // an address in the object's own PLT) that the loader would bind to the
  // original, is ours to take over: a slot bound to another definition, one
  // that would be (another version, the object's own definition), or one
  // rewritten by the program, is left alone.
  int lazy = kind == HK_SLOT_JUMP && unbound_lazy(o, current, plt_index) && binds_original(w, o, plt_index);
  if (current != original && !lazy) {
    if (mine) w->outcome->bound_elsewhere++;
    return 0;
  }
  if (excluded(r, o)) {
    // Hook's own image and libffi keep calling the original; bind a lazy slot
    // now, so that it cannot later be resolved to the hook's entry.
    if (lazy && store_word(w, o, slot, original) < 0) return -1;
    return 0;
  }
  if (!mine) return 0;
  if (room(w, o) < 0) return -1;
  int unprotected = store_word(w, o, slot, replacement);
  if (unprotected < 0) return -1;
  return record(w, o, slot, current, 0, kind, unprotected);
}

// MARK: - The definition in the symbol table

static uint32_t gnu_hash(const char *name) {
  uint32_t h = 5381;
  for (const unsigned char *c = (const unsigned char *)name; *c; c++) h = h * 33 + *c;
  return h;
}

static unsigned long sysv_hash(const char *name) {
  unsigned long h = 0, g;
  for (const unsigned char *c = (const unsigned char *)name; *c; c++) {
    h = (h << 4) + *c;
    if ((g = h & 0xf0000000)) h ^= g >> 24;
    h &= ~g;
  }
  return h;
}

// Calls `visit` for every defined dynamic symbol of `o` named `name`.
static int each_definition(hk_walk *w, const hk_object *o, const char *name, symbol_visitor visit) {
  if (o->gnu_hash) {
    const uint32_t *h = o->gnu_hash;
    uint32_t nbuckets = h[0], symoffset = h[1], bloom_size = h[2];
    const uint32_t *buckets = (const uint32_t *)((const ElfW(Addr) *)(h + 4) + bloom_size);
    const uint32_t *chain = buckets + nbuckets;
    uint32_t hash = gnu_hash(name);
    if (nbuckets == 0) return 0;
    uint32_t index = buckets[hash % nbuckets];
    if (index < symoffset) return 0;
    for (;; index++) {
      uint32_t entry = chain[index - symoffset];
      ElfW(Sym) *sym = (ElfW(Sym) *)&o->symtab[index];
      if ((entry | 1) == (hash | 1) && strcmp(o->strtab + sym->st_name, name) == 0) {
        if (visit(w, o, sym) < 0) return -1;
      }
      if (entry & 1) break;
    }
    return 0;
  }
  if (o->sysv_hash) {
    uint32_t nbuckets = o->sysv_hash[0];
    const uint32_t *buckets = o->sysv_hash + 2, *chain = buckets + nbuckets;
    if (nbuckets == 0) return 0;
    for (uint32_t index = buckets[sysv_hash(name) % nbuckets]; index != STN_UNDEF; index = chain[index]) {
      ElfW(Sym) *sym = (ElfW(Sym) *)&o->symtab[index];
      if (sym->st_shndx != SHN_UNDEF && strcmp(o->strtab + sym->st_name, name) == 0) {
        if (visit(w, o, sym) < 0) return -1;
      }
    }
  }
  return 0;
}

static int patch_definition(hk_walk *w, const hk_object *o, ElfW(Sym) *sym) {
  // Only a plain function whose address is the original: an IFUNC's entry
  // names its resolver, and its type and value cannot change in one store.
  if (ELF64_ST_TYPE(sym->st_info) != STT_FUNC) return 0;
  if (o->base + sym->st_value != (uintptr_t)w->request->original) return 0;
  uintptr_t value = (uintptr_t)w->request->replacement - o->base;  // wraps: base + value == entry
  uintptr_t previous = sym->st_value;
  if (room(w, o) < 0) return -1;
  int unprotected = store_word(w, o, (uintptr_t)&sym->st_value, value);
  if (unprotected < 0) return -1;
  return record(w, o, (uintptr_t)&sym->st_value, previous, sym->st_info, HK_SLOT_SYMBOL, unprotected);
}

// MARK: - Patching

static int patch_object(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  hk_walk *w = (hk_walk *)data;
  hk_object o;
  if (!read_object(info, &o)) return 0;
  walking = 1;
  int stop = 0;
  w->outcome->objects++;
  if (w->request->patch_definition && !w->request->dry_run &&
      object_is(&o, w->request->definition_base, w->request->definition_dynamic)) {
    stop = each_definition(w, &o, w->request->symbol, patch_definition) < 0;
  }
  if (!stop && in_scope(w->request, &o) && !excluded(w->request, &o)) w->outcome->objects_in_scope++;
  if (!stop) stop = each_relocation(w, &o, patch_slot) < 0;
  walking = 0;
  return stop;
}

// The definition dlsym(RTLD_DEFAULT) returned `original` for, in the object
// holding it: a visible one (dlsym takes no hidden version) that is the
// original (or the entry, once the symbol table was patched), or an IFUNC
// (the original is what its resolver chose).
static int default_definition(hk_walk *w, const hk_object *o, ElfW(Sym) *sym) {
  if (w->original_known || sym->st_shndx == SHN_UNDEF) return 0;
  ElfW(Versym) version = o->versym ? o->versym[sym - o->symtab] : VER_NDX_GLOBAL;
  if (version & VERSYM_HIDDEN) return 0;
  uintptr_t address = o->base + sym->st_value;
  if (ELF64_ST_TYPE(sym->st_info) != STT_GNU_IFUNC && address != (uintptr_t)w->request->original &&
      address != (uintptr_t)w->request->replacement) return 0;
  const char *name = 0;
  if ((version & VERSYM_VERSION) > VER_NDX_GLOBAL && !(name = version_name(o, version & VERSYM_VERSION))) return 0;
  w->original_version = name;
  w->original_known = 1;
  return 0;
}

// Finds the object holding the original and the version of its definition,
// once a request, outside any walk. The object stays loaded: dlsym found the
// original there, and glibc never unloads an object dlsym(RTLD_DEFAULT) used.
static void find_original(hk_walk *w) {
  Dl_info info;
  struct link_map *map = 0;
  if (!dladdr1(w->request->original, &info, (void **)&map, RTLD_DL_LINKMAP) || !map) return;
  w->original_base = (uintptr_t)map->l_addr;
  w->original_dynamic = map->l_ld;
  hk_object *o = &w->original_object;
  memset(o, 0, sizeof *o);
  o->base = (uintptr_t)map->l_addr;
  o->name = map->l_name ? map->l_name : "";
  o->dynamic = map->l_ld;
  if (read_dynamic(o)) each_definition(w, o, w->request->symbol, default_definition);
}

int hk_import_patch(const hk_import_request *request, hk_import_outcome *outcome) {
  hk_walk w = {.request = request, .outcome = outcome};
  if (!request->dry_run) find_original(&w);
  walk_objects(&w, patch_object, &w, !request->dry_run);
  finish_walk(&w, 0);
  return outcome->error ? -1 : 0;
}

// MARK: - Restoring

typedef struct {
  hk_walk walk;
  hk_import_slot *slots;
  size_t count;
  int symbols;  // 1: the walk that restores symbol-table entries; 0: the one for slots
} hk_restore;

static int restore_unrecorded(hk_walk *w, const hk_object *o, uintptr_t slot, int kind, long plt_index) {
  (void)plt_index;
  // A slot the loader bound to the entry (an object loaded while the symbol
  // table named the entry) goes back to the original.
  if (__atomic_load_n((uintptr_t *)slot, __ATOMIC_ACQUIRE) != (uintptr_t)w->request->replacement) return 0;
  if (room(w, o) < 0) return -1;
  int unprotected = store_word(w, o, slot, (uintptr_t)w->request->original);
  if (unprotected < 0) return -1;
  return record(w, o, slot, (uintptr_t)w->request->replacement, 0, kind, unprotected);
}

static int restore_object(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  hk_restore *r = (hk_restore *)data;
  hk_walk *w = &r->walk;
  hk_object o;
  if (!read_object(info, &o)) return 0;
  walking = 1;
  int stop = 0;
  for (size_t i = 0; i < r->count && !stop; i++) {
    hk_import_slot *s = &r->slots[i];
    if ((s->kind == HK_SLOT_SYMBOL) != r->symbols || !object_is(&o, s->object_base, s->object_dynamic)) continue;
    uintptr_t address = (uintptr_t)s->address;
    if (!segment_of(&o, address, sizeof(uintptr_t))) continue;
    s->live = 1;
    uintptr_t expected = (uintptr_t)w->request->replacement;
    if (s->kind == HK_SLOT_SYMBOL) expected -= o.base;
    if (__atomic_load_n((uintptr_t *)address, __ATOMIC_ACQUIRE) != expected) continue;
    if (store_word(w, &o, address, (uintptr_t)s->previous) < 0) {
      stop = 1;
      break;
    }
    s->restored = 1;
  }
  // Only when the hook point ends: then no slot anywhere should hold the entry.
  if (!stop && !r->symbols && w->request->restore_loader_bound && !excluded(w->request, &o)) {
    stop = each_relocation(w, &o, restore_unrecorded) < 0;
  }
  walking = 0;
  return stop;
}

int hk_import_restore(const hk_import_request *request, hk_import_slot *slots, size_t count,
                      hk_import_outcome *outcome) {
  for (size_t i = 0; i < count; i++) {
    slots[i].live = 0;
    slots[i].restored = 0;
  }
  // The symbol tables first, in a walk of their own, so that no new binding
  // to the entry is made while the slots are put back.
  hk_restore r = {{.request = request, .outcome = outcome}, slots, count, 1};
  walk_objects(&r.walk, restore_object, &r, 1);
  if (!outcome->error) {
    r.symbols = 0;
    walk_objects(&r.walk, restore_object, &r, 1);
  }
  finish_walk(&r.walk, 0);
  return outcome->error ? -1 : 0;
}

// MARK: - Liveness and reading back

typedef struct {
  hk_import_slot *slots;
  size_t count;
} hk_liveness;

static int mark_live(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  hk_liveness *l = (hk_liveness *)data;
  hk_object o;
  if (!read_object(info, &o)) return 0;
  walking = 1;
  for (size_t i = 0; i < l->count; i++) {
    hk_import_slot *s = &l->slots[i];
    if (object_is(&o, s->object_base, s->object_dynamic) && segment_of(&o, (uintptr_t)s->address, sizeof(uintptr_t))) {
      s->live = 1;
      s->current = (void *)__atomic_load_n((uintptr_t *)s->address, __ATOMIC_ACQUIRE);
    }
  }
  walking = 0;
  return 0;
}

void hk_import_read(hk_import_slot *slots, size_t count) {
  for (size_t i = 0; i < count; i++) {
    slots[i].live = 0;
    slots[i].current = 0;
  }
  hk_liveness l = {slots, count};
  dl_iterate_phdr(mark_live, &l);
}

void hk_import_outcome_free(hk_import_outcome *outcome) {
  for (size_t i = 0; i < outcome->count; i++) free((void *)outcome->slots[i].object_name);
  free(outcome->slots);
  memset(outcome, 0, sizeof *outcome);
}

void hk_import_slot_free_name(hk_import_slot *slot) {
  free((void *)slot->object_name);
  slot->object_name = 0;
}

// MARK: - Finding the definition

int hk_import_describe(const void *address, uintptr_t *base, int *type) {
  Dl_info info;
  const ElfW(Sym) *sym = 0;
  const void *dynamic = 0;
  if (!dladdr1(address, &info, (void **)&sym, RTLD_DL_SYMENT)) return 0;
  if (!hk_import_image(address, base, &dynamic)) return 0;
  *type = sym && info.dli_saddr == address ? (int)ELF64_ST_TYPE(sym->st_info) : -1;
  return 1;
}

// The link map's l_addr (the load bias, what dl_iterate_phdr calls dlpi_addr)
// and l_ld, not dladdr's dli_fbase (the start of the first mapping), which
// differs from the bias for an object whose first segment is not at address 0
// (a non-PIE program).
int hk_import_image(const void *address, uintptr_t *base, const void **dynamic) {
  Dl_info info;
  struct link_map *map = 0;
  if (!dladdr1(address, &info, (void **)&map, RTLD_DL_LINKMAP) || !map) return 0;
  *base = (uintptr_t)map->l_addr;
  *dynamic = map->l_ld;
  return 1;
}

uintptr_t hk_import_image_base(const void *address) {
  uintptr_t base = 0;
  const void *dynamic = 0;
  return hk_import_image(address, &base, &dynamic) ? base : 0;
}

int hk_import_own_image(uintptr_t *base, const void **dynamic) {
  return hk_import_image((const void *)hk_import_patch, base, dynamic);
}

uintptr_t hk_import_own_image_base(void) { return hk_import_image_base((const void *)hk_import_patch); }

void *hk_import_lookup(const char *symbol) { return dlsym(RTLD_DEFAULT, symbol); }

void *hk_import_lookup_version(const char *symbol, const char *version) {
  return dlvsym(RTLD_DEFAULT, symbol, version);
}
