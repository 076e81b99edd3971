// Import slots: the GOT entries (and the defining symbol-table entry) through
// which loaded ELF objects reach an imported function. See the declarations in
// CFFIShim.h and ImportHook.swift for the policy; this file only finds and
// writes slots.
//
// Every write happens inside a dl_iterate_phdr callback, for an object the
// loader still lists: dl_iterate_phdr holds the loader's write lock, and
// dlclose removes an object from the list under that lock before unmapping
// it, so an object being closed is never written to.
#define _GNU_SOURCE
#include "CFFIShim.h"

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

typedef struct {
  uintptr_t base;
  const char *name;
  const ElfW(Phdr) *phdr;
  int phnum;
  const ElfW(Dyn) *dynamic;
  const ElfW(Sym) *symtab;
  const char *strtab;
  const ElfW(Versym) *versym;
  const ElfW(Rela) *jmprel;
  size_t jmprel_size;
  const ElfW(Rela) *rela;
  size_t rela_size;
  size_t rela_entry;
  const uint32_t *gnu_hash;
  const uint32_t *sysv_hash;
  uintptr_t relro_start, relro_end;
} hk_object;

// glibc relocates most d_ptr values of a loaded object in place; the vDSO's
// and some other loaders' are left as file addresses.
static uintptr_t dyn_address(const hk_object *o, uintptr_t value) {
  return value < o->base ? value + o->base : value;
}

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
  if (!o->dynamic) return 0;
  if (strncmp(o->name, "linux-vdso", 10) == 0 || strncmp(o->name, "linux-gate", 10) == 0) return 0;
  for (const ElfW(Dyn) *d = o->dynamic; d->d_tag != DT_NULL; d++) {
    switch (d->d_tag) {
      case DT_SYMTAB: o->symtab = (const ElfW(Sym) *)dyn_address(o, d->d_un.d_ptr); break;
      case DT_STRTAB: o->strtab = (const char *)dyn_address(o, d->d_un.d_ptr); break;
      case DT_VERSYM: o->versym = (const ElfW(Versym) *)dyn_address(o, d->d_un.d_ptr); break;
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

static int object_is(const hk_object *o, uintptr_t base, const void *dynamic) {
  return o->base == base && (const void *)o->dynamic == dynamic;
}

static const char *base_name(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
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
  if (fd < 0) return -1;
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
} hk_walk;

static void fail(hk_walk *w, const hk_object *o, uintptr_t address, int error) {
  if (w->outcome->error) return;
  w->outcome->error = error;
  w->outcome->error_address = (void *)address;
  strncpy(w->outcome->error_object, o->name, sizeof w->outcome->error_object - 1);
}

// Stores `value` at `address` (8 bytes, atomically), making the page writable
// for the store if it is not, and putting its protection back after.
// Returns 1 if the page had to be unprotected, 0 if it was writable, -1 on failure.
static int store_word(hk_walk *w, const hk_object *o, uintptr_t address, uintptr_t value) {
  const ElfW(Phdr) *segment = segment_of(o, address, sizeof(uintptr_t));
  int in_relro = address >= o->relro_start && address < o->relro_end;
  int writable = segment && (segment->p_flags & PF_W) && !in_relro;
  int protection = PROT_READ | PROT_WRITE;
  if (!writable) {
    protection = mapped_protection(address);
    if (protection < 0) {
      fail(w, o, address, ENOENT);
      return -1;
    }
    writable = (protection & PROT_WRITE) != 0;
  }
  if (writable) {
    __atomic_store_n((uintptr_t *)address, value, __ATOMIC_RELEASE);
    return 0;
  }
  uintptr_t page = address & ~(uintptr_t)(page_size() - 1);
  if (w->request->refuse_protection_change || mprotect((void *)page, page_size(), protection | PROT_WRITE) != 0) {
    fail(w, o, address, w->request->refuse_protection_change ? EACCES : errno);
    return -1;
  }
  __atomic_store_n((uintptr_t *)address, value, __ATOMIC_RELEASE);
  if (mprotect((void *)page, page_size(), protection) != 0) {
    fail(w, o, address, errno);
    return -1;
  }
  return 1;
}

static int record(hk_walk *w, const hk_object *o, uintptr_t address, uintptr_t previous, unsigned previous_info,
                  int kind, int unprotected) {
  hk_import_outcome *out = w->outcome;
  if (out->count == out->capacity) {
    size_t capacity = out->capacity ? out->capacity * 2 : 16;
    hk_import_slot *slots = (hk_import_slot *)realloc(out->slots, capacity * sizeof *slots);
    if (!slots) return -1;
    out->slots = slots;
    out->capacity = capacity;
  }
  char *name = strdup(o->name);
  if (!name) return -1;
  hk_import_slot *s = &out->slots[out->count++];
  memset(s, 0, sizeof *s);
  s->address = (void *)address;
  s->previous = (void *)previous;
  s->previous_info = (unsigned char)previous_info;
  s->object_base = o->base;
  s->object_dynamic = o->dynamic;
  s->object_name = name;
  s->kind = kind;
  s->unprotected = unprotected;
  s->live = 1;
  return 0;
}

// MARK: - Which objects a request covers

static int excluded(const hk_import_request *r, const hk_object *o) {
  for (size_t i = 0; i < r->excluded_count; i++) {
    if (r->excluded_bases[i] == o->base) return 1;
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
  }
  return 0;
}

// MARK: - Relocations

typedef int (*relocation_visitor)(hk_walk *w, const hk_object *o, uintptr_t slot, int kind);

// Calls `visit` for every JUMP_SLOT, GLOB_DAT and R_X86_64_64 (addend 0)
// relocation of `o` that names the request's symbol. Stops at a negative result.
static int each_relocation(hk_walk *w, const hk_object *o, relocation_visitor visit) {
  const char *symbol = w->request->symbol;
  const ElfW(Rela) *tables[2] = {o->jmprel, o->rela};
  size_t sizes[2] = {o->jmprel_size, o->rela_size};
  for (int t = 0; t < 2; t++) {
    if (!tables[t] || !sizes[t]) continue;
    size_t stride = t == 0 ? sizeof(ElfW(Rela)) : o->rela_entry;
    for (size_t offset = 0; offset + sizeof(ElfW(Rela)) <= sizes[t]; offset += stride) {
      const ElfW(Rela) *r = (const ElfW(Rela) *)((const char *)tables[t] + offset);
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
      if (visit(w, o, slot, kind) < 0) return -1;
    }
  }
  return 0;
}

static int patch_slot(hk_walk *w, const hk_object *o, uintptr_t slot, int kind) {
  const hk_import_request *r = w->request;
  int mine = !excluded(r, o) && in_scope(r, o);
  if (mine) w->outcome->imports++;
  uintptr_t current = __atomic_load_n((uintptr_t *)slot, __ATOMIC_ACQUIRE);
  uintptr_t original = (uintptr_t)r->original, replacement = (uintptr_t)r->replacement;
  if (r->dry_run) return mine && current == replacement ? record(w, o, slot, current, 0, kind, 0) : 0;
  if (current == replacement) return 0;
  // Only a slot bound to the original, or a lazy slot not bound yet (it holds
  // an address in the object's own PLT), is ours to take over: a slot bound to
  // another definition, or rewritten by the program, is left alone.
  int lazy = kind == HK_SLOT_JUMP && segment_of(o, current, 1) != 0;
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

typedef int (*symbol_visitor)(hk_walk *w, const hk_object *o, ElfW(Sym) *sym);

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
  w->outcome->objects++;
  if (w->request->patch_definition && !w->request->dry_run && w->request->definition_base == o.base) {
    if (each_definition(w, &o, w->request->symbol, patch_definition) < 0) return 1;
  }
  if (in_scope(w->request, &o) && !excluded(w->request, &o)) w->outcome->objects_in_scope++;
  return each_relocation(w, &o, patch_slot) < 0 ? 1 : 0;
}

int hk_import_patch(const hk_import_request *request, hk_import_outcome *outcome) {
  hk_walk w = {request, outcome};
  dl_iterate_phdr(patch_object, &w);
  return outcome->error ? -1 : 0;
}

// MARK: - Restoring

typedef struct {
  hk_walk walk;
  hk_import_slot *slots;
  size_t count;
  int symbols;  // 1: the walk that restores symbol-table entries; 0: the one for slots
} hk_restore;

static int restore_unrecorded(hk_walk *w, const hk_object *o, uintptr_t slot, int kind) {
  (void)kind;
  // A slot the loader bound to the entry (an object loaded while the symbol
  // table named the entry) goes back to the original.
  if (__atomic_load_n((uintptr_t *)slot, __ATOMIC_ACQUIRE) != (uintptr_t)w->request->replacement) return 0;
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
  for (size_t i = 0; i < r->count; i++) {
    hk_import_slot *s = &r->slots[i];
    if ((s->kind == HK_SLOT_SYMBOL) != r->symbols || !object_is(&o, s->object_base, s->object_dynamic)) continue;
    uintptr_t address = (uintptr_t)s->address;
    if (!segment_of(&o, address, sizeof(uintptr_t))) continue;
    s->live = 1;
    uintptr_t expected = (uintptr_t)w->request->replacement;
    if (s->kind == HK_SLOT_SYMBOL) expected -= o.base;
    if (__atomic_load_n((uintptr_t *)address, __ATOMIC_ACQUIRE) != expected) continue;
    if (store_word(w, &o, address, (uintptr_t)s->previous) < 0) return 1;
    s->restored = 1;
  }
  if (!r->symbols && !excluded(w->request, &o) && each_relocation(w, &o, restore_unrecorded) < 0) return 1;
  return 0;
}

int hk_import_restore(const hk_import_request *request, hk_import_slot *slots, size_t count,
                      hk_import_outcome *outcome) {
  for (size_t i = 0; i < count; i++) {
    slots[i].live = 0;
    slots[i].restored = 0;
  }
  // The symbol tables first, in a walk of their own, so that no new binding
  // to the entry is made while the slots are put back.
  hk_restore r = {{request, outcome}, slots, count, 1};
  dl_iterate_phdr(restore_object, &r);
  if (outcome->error) return -1;
  r.symbols = 0;
  dl_iterate_phdr(restore_object, &r);
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
  for (size_t i = 0; i < l->count; i++) {
    hk_import_slot *s = &l->slots[i];
    if (object_is(&o, s->object_base, s->object_dynamic) && segment_of(&o, (uintptr_t)s->address, sizeof(uintptr_t))) {
      s->live = 1;
      s->current = (void *)__atomic_load_n((uintptr_t *)s->address, __ATOMIC_ACQUIRE);
    }
  }
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
  if (!dladdr1(address, &info, (void **)&sym, RTLD_DL_SYMENT)) return 0;
  *base = (uintptr_t)info.dli_fbase;
  *type = sym && info.dli_saddr == address ? (int)ELF64_ST_TYPE(sym->st_info) : -1;
  return 1;
}

uintptr_t hk_import_image_base(const void *address) {
  Dl_info info;
  return dladdr(address, &info) ? (uintptr_t)info.dli_fbase : 0;
}

uintptr_t hk_import_own_image_base(void) { return hk_import_image_base((const void *)hk_import_patch); }

uintptr_t hk_import_libffi_base(void) { return hk_import_image_base((const void *)ffi_call); }

void *hk_import_lookup(const char *symbol) { return dlsym(RTLD_DEFAULT, symbol); }

void *hk_import_lookup_version(const char *symbol, const char *version) {
  return dlvsym(RTLD_DEFAULT, symbol, version);
}
