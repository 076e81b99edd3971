// Entry hooks (see CEntryHooks.h and the "Entry hooks" article).
#define _GNU_SOURCE
#include "CEntryHooks.h"

#if defined(__x86_64__) && defined(__linux__)

#include <Zydis/Zydis.h>
#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

int hk_entry_supported(void) { return 1; }

static void say(char *why, size_t size, const char *format, ...) __attribute__((format(printf, 3, 4)));
static void say(char *why, size_t size, const char *format, ...) {
  if (!why || !size) return;
  va_list list;
  va_start(list, format);
  vsnprintf(why, size, format, list);
  va_end(list);
}

// MARK: - Loaded objects and their symbol tables

typedef struct {
  char path[512];
  uintptr_t base;
} object_ref;

typedef struct {
  object_ref *objects;
  int count, capacity;
} object_list;

static int collect_object(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  object_list *list = data;
  if (list->count == list->capacity) {
    int capacity = list->capacity ? list->capacity * 2 : 64;
    object_ref *grown = realloc(list->objects, (size_t)capacity * sizeof(object_ref));
    if (!grown) return 1;
    list->objects = grown;
    list->capacity = capacity;
  }
  object_ref *ref = &list->objects[list->count];
  const char *name = info->dlpi_name;
  if (!name || !name[0]) {
    // The program: its file is /proc/self/exe's target.
    ssize_t n = readlink("/proc/self/exe", ref->path, sizeof ref->path - 1);
    if (n <= 0) return 0;
    ref->path[n] = 0;
  } else {
    snprintf(ref->path, sizeof ref->path, "%s", name);
  }
  ref->base = info->dlpi_addr;
  list->count++;
  return 0;
}

// A mapped ELF file and its two symbol tables.
typedef struct {
  void *map;
  size_t size;
  const Elf64_Sym *tables[2];   // .dynsym, .symtab
  size_t counts[2];
  const char *strings[2];
} elf_file;

static int elf_open(const char *path, elf_file *file) {
  memset(file, 0, sizeof *file);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_size < (off_t)sizeof(Elf64_Ehdr)) { close(fd); return -1; }
  void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (map == MAP_FAILED) return -1;
  file->map = map;
  file->size = (size_t)st.st_size;
  const Elf64_Ehdr *eh = map;
  if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
      eh->e_shoff == 0 || eh->e_shentsize != sizeof(Elf64_Shdr) ||
      eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr) > file->size) {
    return 0;  // no section headers: no tables
  }
  const Elf64_Shdr *sections = (const Elf64_Shdr *)((const char *)map + eh->e_shoff);
  for (int i = 0; i < eh->e_shnum; i++) {
    int which = sections[i].sh_type == SHT_DYNSYM ? 0 : sections[i].sh_type == SHT_SYMTAB ? 1 : -1;
    if (which < 0 || sections[i].sh_link >= eh->e_shnum) continue;
    const Elf64_Shdr *strings = &sections[sections[i].sh_link];
    if (sections[i].sh_offset + sections[i].sh_size > file->size || strings->sh_offset + strings->sh_size > file->size) continue;
    file->tables[which] = (const Elf64_Sym *)((const char *)map + sections[i].sh_offset);
    file->counts[which] = sections[i].sh_size / sizeof(Elf64_Sym);
    file->strings[which] = (const char *)map + strings->sh_offset;
  }
  return 0;
}

static void elf_close(elf_file *file) {
  if (file->map) munmap(file->map, file->size);
}

// Whether a symbol table name is `name` (or `name@...`, a versioned .symtab name).
static int name_matches(const char *symbol, const char *name, size_t length) {
  return strncmp(symbol, name, length) == 0 && (symbol[length] == 0 || symbol[length] == '@');
}

static void add_definition(hk_entry_definition *out, int max, int *count, const object_ref *object,
                           const Elf64_Sym *sym, int from_symtab) {
  const void *address = (const void *)(object->base + sym->st_value);
  for (int i = 0; i < *count && i < max; i++) {
    if (out[i].address == address && strcmp(out[i].object, object->path) == 0) {
      if (!from_symtab) out[i].from_symtab_only = 0;
      if (!out[i].size) out[i].size = sym->st_size;
      return;
    }
  }
  if (*count < max) {
    hk_entry_definition *d = &out[*count];
    memset(d, 0, sizeof *d);
    d->address = address;
    d->size = sym->st_size;
    d->type = ELF64_ST_TYPE(sym->st_info);
    d->from_symtab_only = from_symtab;
    d->is_local = ELF64_ST_BIND(sym->st_info) == STB_LOCAL;
    snprintf(d->object, sizeof d->object, "%s", object->path);
  }
  (*count)++;
}

static int versioned_lookup(const char *name, hk_entry_definition *out, int max) {
  const char *at = strchr(name, '@');
  char base[256];
  size_t length = (size_t)(at - name);
  if (length == 0 || length >= sizeof base) return 0;
  memcpy(base, name, length);
  base[length] = 0;
  const char *version = at + 1;
  if (*version == '@') version++;
  if (!*version) return 0;
  void *address = dlvsym(RTLD_DEFAULT, base, version);
  if (!address) return 0;
  Dl_info info;
  const Elf64_Sym *sym = NULL;
  if (!dladdr1(address, &info, (void **)&sym, RTLD_DL_SYMENT)) return 0;
  if (max > 0) {
    memset(&out[0], 0, sizeof out[0]);
    out[0].address = address;
    // dlvsym resolves an IFUNC: its implementation may have no symbol of
    // its own (libc keeps no .symtab), or the nearest one below it is
    // another's. A function of unknown size, then.
    const int exact = sym && info.dli_saddr == address;
    out[0].size = exact ? sym->st_size : 0;
    out[0].type = exact ? ELF64_ST_TYPE(sym->st_info) : STT_FUNC;
    snprintf(out[0].object, sizeof out[0].object, "%s", info.dli_fname ? info.dli_fname : "");
  }
  return 1;
}

int hk_entry_find(const char *name, hk_entry_definition *out, int max) {
  if (!name || !name[0]) return -1;
  if (strchr(name, '@')) return versioned_lookup(name, out, max);
  size_t length = strlen(name);
  object_list list = {0};
  dl_iterate_phdr(collect_object, &list);
  int count = 0;
  for (int o = 0; o < list.count; o++) {
    elf_file file;
    if (elf_open(list.objects[o].path, &file) != 0) continue;
    for (int t = 0; t < 2; t++) {
      for (size_t i = 0; i < file.counts[t]; i++) {
        const Elf64_Sym *sym = &file.tables[t][i];
        if (sym->st_shndx == SHN_UNDEF || sym->st_shndx == SHN_ABS || sym->st_value == 0) continue;
        if (!name_matches(file.strings[t] + sym->st_name, name, length)) continue;
        add_definition(out, max, &count, &list.objects[o], sym, t == 1);
      }
    }
    elf_close(&file);
  }
  free(list.objects);
  return count;
}

int hk_entry_find_address(const void *address, char *name, size_t name_size, hk_entry_definition *out) {
  Dl_info info;
  if (!dladdr(address, &info) || !info.dli_fname) return 0;
  object_list list = {0};
  dl_iterate_phdr(collect_object, &list);
  int found = 0;
  for (int o = 0; o < list.count && !found; o++) {
    if (list.objects[o].base != (uintptr_t)info.dli_fbase &&
        !(list.objects[o].base == 0 && strcmp(list.objects[o].path, info.dli_fname) == 0)) continue;
    elf_file file;
    if (elf_open(list.objects[o].path, &file) != 0) continue;
    for (int t = 0; t < 2 && !found; t++) {
      for (size_t i = 0; i < file.counts[t]; i++) {
        const Elf64_Sym *sym = &file.tables[t][i];
        int type = ELF64_ST_TYPE(sym->st_info);
        if (sym->st_shndx == SHN_UNDEF || (type != STT_FUNC && type != STT_GNU_IFUNC)) continue;
        uintptr_t start = list.objects[o].base + sym->st_value;
        if ((uintptr_t)address != start && !((uintptr_t)address > start && (uintptr_t)address < start + sym->st_size)) continue;
        int dummy = 0;
        add_definition(out, 1, &dummy, &list.objects[o], sym, t == 1);
        snprintf(name, name_size, "%s", file.strings[t] + sym->st_name);
        found = 1;
        break;
      }
    }
    elf_close(&file);
  }
  free(list.objects);
  return found;
}

typedef struct { const char *name; uintptr_t address; uint64_t size; } function_entry;

static int by_address(const void *a, const void *b) {
  uintptr_t x = ((const function_entry *)a)->address, y = ((const function_entry *)b)->address;
  return x < y ? -1 : x > y;
}

int hk_entry_each_function(const char *object,
                           int (*visit)(const char *name, const void *address, uint64_t size, void *context),
                           void *context) {
  object_list list = {0};
  dl_iterate_phdr(collect_object, &list);
  int result = -1;
  size_t suffix = strlen(object);
  for (int o = 0; o < list.count; o++) {
    size_t length = strlen(list.objects[o].path);
    if (length < suffix || strcmp(list.objects[o].path + length - suffix, object) != 0) continue;
    elf_file file;
    if (elf_open(list.objects[o].path, &file) != 0) break;
    size_t total = file.counts[0] + file.counts[1], n = 0;
    function_entry *entries = calloc(total ? total : 1, sizeof *entries);
    for (int t = 0; t < 2 && entries; t++) {
      for (size_t i = 0; i < file.counts[t]; i++) {
        const Elf64_Sym *sym = &file.tables[t][i];
        if (sym->st_shndx == SHN_UNDEF || ELF64_ST_TYPE(sym->st_info) != STT_FUNC || sym->st_size == 0) continue;
        entries[n++] = (function_entry){file.strings[t] + sym->st_name, list.objects[o].base + sym->st_value, sym->st_size};
      }
    }
    if (entries) qsort(entries, n, sizeof *entries, by_address);
    result = 0;
    for (size_t i = 0; entries && i < n; i++) {
      if (i > 0 && entries[i].address == entries[i - 1].address) continue;  // an alias, or both tables
      result++;
      if (visit(entries[i].name, (const void *)entries[i].address, entries[i].size, context)) break;
    }
    free(entries);
    elf_close(&file);
    break;
  }
  free(list.objects);
  return result;
}

// Whether `name` starts with one of the NUL-separated prefixes in `prefixes` (ended by an empty one).
static int has_prefix(const char *name, const char *prefixes) {
  if (!prefixes || !*prefixes) return 1;
  for (const char *p = prefixes; *p; p += strlen(p) + 1)
    if (strncmp(name, p, strlen(p)) == 0) return 1;
  return 0;
}

int hk_entry_each_object_function(const char *prefixes,
                                  int (*visit)(const char *object, const char *name, const void *address, uint64_t size, void *context),
                                  void *context) {
  object_list list = {0};
  dl_iterate_phdr(collect_object, &list);
  int result = 0, stop = 0;
  for (int o = 0; o < list.count && !stop; o++) {
    elf_file file;
    if (elf_open(list.objects[o].path, &file) != 0) continue;
    size_t total = file.counts[0] + file.counts[1], n = 0;
    function_entry *entries = calloc(total ? total : 1, sizeof *entries);
    for (int t = 0; t < 2 && entries; t++) {
      for (size_t i = 0; i < file.counts[t]; i++) {
        const Elf64_Sym *sym = &file.tables[t][i];
        if (sym->st_shndx == SHN_UNDEF || sym->st_value == 0) continue;
        // Functions, and Swift method descriptors (data: flags and the implementation's offset).
        int type = ELF64_ST_TYPE(sym->st_info);
        if (type == STT_FUNC ? sym->st_size == 0 : type != STT_OBJECT) continue;
        const char *name = file.strings[t] + sym->st_name;
        if (!has_prefix(name, prefixes)) continue;
        if (type == STT_OBJECT) {
          size_t length = strlen(name);
          if (length < 3 || name[length - 2] != 'T' || name[length - 1] != 'q') continue;
        }
        entries[n++] = (function_entry){name, list.objects[o].base + sym->st_value, sym->st_size};
      }
    }
    if (entries) qsort(entries, n, sizeof *entries, by_address);
    for (size_t i = 0; entries && i < n && !stop; i++) {
      if (i > 0 && entries[i].address == entries[i - 1].address) continue;
      result++;
      stop = visit(list.objects[o].path, entries[i].name, (const void *)entries[i].address, entries[i].size, context);
    }
    free(entries);
    elf_close(&file);
  }
  free(list.objects);
  return result;
}

// MARK: - Decoding and relocating

static ZydisDecoder decoder;
static pthread_once_t decoder_once = PTHREAD_ONCE_INIT;
static void decoder_init(void) { ZydisDecoderInit(&decoder, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64); }

static int decode(const uint8_t *code, size_t available, ZydisDecodedInstruction *instruction) {
  pthread_once(&decoder_once, decoder_init);
  if (available > ZYDIS_MAX_INSTRUCTION_LENGTH) available = ZYDIS_MAX_INSTRUCTION_LENGTH;
  return ZYAN_SUCCESS(ZydisDecoderDecodeInstruction(&decoder, ZYAN_NULL, code, available, instruction)) ? 0 : -1;
}

static int is_rip_relative(const ZydisDecodedInstruction *in) {
  return (in->attributes & ZYDIS_ATTRIB_HAS_MODRM) && in->raw.modrm.mod == 0 && in->raw.modrm.rm == 5;
}

// The target of a relative branch, or 0 if `in` is none.
static uintptr_t branch_target(const ZydisDecodedInstruction *in, uintptr_t at) {
  if (!(in->attributes & ZYDIS_ATTRIB_IS_RELATIVE)) return 0;
  for (int i = 0; i < 2; i++) {
    if (in->raw.imm[i].is_relative) return at + in->length + (uintptr_t)in->raw.imm[i].value.s;
  }
  return 0;
}

// The condition code of a Jcc (0-15), or -1.
static int condition_code(const ZydisDecodedInstruction *in) {
  if (in->opcode_map == ZYDIS_OPCODE_MAP_DEFAULT && in->opcode >= 0x70 && in->opcode <= 0x7F) return in->opcode & 0xF;
  if (in->opcode_map == ZYDIS_OPCODE_MAP_0F && in->opcode >= 0x80 && in->opcode <= 0x8F) return in->opcode & 0xF;
  return -1;
}

static int ends_flow(const ZydisDecodedInstruction *in) {
  switch (in->mnemonic) {
  case ZYDIS_MNEMONIC_RET: case ZYDIS_MNEMONIC_JMP: case ZYDIS_MNEMONIC_UD2: case ZYDIS_MNEMONIC_INT3: case ZYDIS_MNEMONIC_HLT:
    return 1;
  default:
    return 0;
  }
}

static void put_absolute(uint8_t *out, uint64_t value) { memcpy(out, &value, 8); }

// A relocated call whose return address lies past the patch (the call is
// the last displaced instruction) pushes that address in the function and
// jumps: the callee returns into the function, not into the stub. A return
// address in the stub, which has no unwind information, stopped every
// exception thrown through the call (the unwinder found no frame there and
// the program ended: a C++ function whose first instructions call the
// function that throws, traced by hook-trace or hooked at its entry), and
// cut backtraces short. `push imm32` (sign-extended), then the high half:
// 13 bytes.
static int push_return(uint8_t *out, uint64_t address) {
  const uint32_t low = (uint32_t)address, high = (uint32_t)(address >> 32);
  out[0] = 0x68;                                          // push imm32
  memcpy(out + 1, &low, 4);
  out[5] = 0xC7; out[6] = 0x44; out[7] = 0x24; out[8] = 0x04;  // mov dword [rsp+4], imm32
  memcpy(out + 9, &high, 4);
  return 13;
}

void hk_entry_keep_loaded(const void *address) {
  Dl_info info;
  if (!dladdr(address, &info) || !info.dli_fname) return;
  (void)dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);
}

// MARK: - Branches into the displaced bytes from elsewhere

// Code of other functions may branch into this one past its first
// instruction: glibc's mempcpy jumps 3 bytes into memmove (and memcpy, the
// same code), past its `mov %rdi,%rax`; once the jump is written there, it
// would land inside the jump's displacement. The function's own branches are
// decoded when its size is known (below); these are found here:
// - 32-bit relative calls, jumps and conditional jumps anywhere in the
//   object's executable segment: an index of every target the segment's
//   bytes could encode (each byte position read as E8/E9 rel32 or 0F 8x
//   rel32: a decoding of the whole segment is not needed, and a chance
//   match of an opcode byte and four bytes naming one of a few addresses
//   is about one in 10^11 a byte), made once per segment, sorted;
// - 8-bit relative branches within their reach: the bytes before the
//   function decoded from a point whose instructions reach its first byte
//   exactly, and, where the size is unknown, those after its start.

typedef struct { uintptr_t target, from; } hk_branch;
typedef struct {
  uintptr_t lo, hi;
  hk_branch *branches;
  size_t count;
  uintptr_t code[32];
  int code_count;
  // The object's file and its identity when indexed: another object loaded
  // at the same range later (after a dlclose) is indexed again.
  char path[256];
  dev_t device;
  ino_t inode;
} hk_text_index;
static pthread_mutex_t text_index_lock = PTHREAD_MUTEX_INITIALIZER;
static hk_text_index *text_indexes;
static size_t text_index_count;

struct hk_find_text { uintptr_t address, lo, hi, base; const char *path; };

static int find_text(struct dl_phdr_info *info, size_t size, void *data) {
  (void)size;
  struct hk_find_text *find = data;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *p = &info->dlpi_phdr[i];
    if (p->p_type != PT_LOAD || !(p->p_flags & PF_X)) continue;
    const uintptr_t lo = info->dlpi_addr + p->p_vaddr, hi = lo + p->p_memsz;
    if (find->address >= lo && find->address < hi) {
      find->lo = lo;
      find->hi = hi;
      find->base = info->dlpi_addr;
      find->path = info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name : "/proc/self/exe";
      return 1;
    }
  }
  return 0;
}

// The code sections (SHF_EXECINSTR: .text, .plt, .init...) of the object
// at `path` loaded at `base`, within [lo, hi), in `ranges` (pairs); their
// number, or -1 if its section headers cannot be read (then the whole
// segment is scanned). An executable segment may also hold read-only data
// (lld maps .rodata, .eh_frame and the symbol tables with the code), whose
// bytes are no branches.
static int code_sections(const char *path, uintptr_t base, uintptr_t lo, uintptr_t hi, uintptr_t *ranges, int capacity) {
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ElfW(Ehdr) header;
  int count = -1;
  if (pread(fd, &header, sizeof header, 0) == (ssize_t)sizeof header && memcmp(header.e_ident, ELFMAG, SELFMAG) == 0
      && header.e_shentsize == sizeof(ElfW(Shdr)) && header.e_shnum > 0 && header.e_shnum < 65535) {
    count = 0;
    for (int i = 0; i < header.e_shnum; i++) {
      ElfW(Shdr) section;
      if (pread(fd, &section, sizeof section, (off_t)(header.e_shoff + (uint64_t)i * sizeof section)) != (ssize_t)sizeof section) {
        count = -1;
        break;
      }
      if (!(section.sh_flags & SHF_EXECINSTR) || !(section.sh_flags & SHF_ALLOC) || section.sh_size == 0) continue;
      const uintptr_t from = base + section.sh_addr, to = from + section.sh_size;
      if (from < lo || to > hi) continue;
      if (count == capacity) {  // more than it keeps: the whole segment is scanned
        count = -1;
        break;
      }
      ranges[2 * count] = from;
      ranges[2 * count + 1] = to;
      count++;
    }
  }
  close(fd);
  return count;
}

static int compare_branches(const void *a, const void *b) {
  const hk_branch *x = a, *y = b;
  return x->target < y->target ? -1 : x->target > y->target;
}

// The index of the executable segment [lo, hi) (made on first use; kept:
// segments of unloaded objects are few, and one loaded again at the same
// range has the same code or is indexed again by its other range).
static const hk_text_index *text_index(const struct hk_find_text *find) {
  const uintptr_t lo = find->lo, hi = find->hi;
  struct stat file;
  if (stat(find->path, &file) != 0) memset(&file, 0, sizeof file);
  hk_text_index *index = NULL;
  for (size_t i = 0; i < text_index_count; i++) {
    hk_text_index *known = &text_indexes[i];
    if (known->lo != lo || known->hi != hi) continue;
    if (strcmp(known->path, find->path) == 0 && known->device == file.st_dev && known->inode == file.st_ino) return known;
    // Another object at the same range: indexed again, in place.
    free(known->branches);
    index = known;
    break;
  }
  if (!index) {
    hk_text_index *grown = realloc(text_indexes, (text_index_count + 1) * sizeof *grown);
    if (!grown) return NULL;
    text_indexes = grown;
    index = &text_indexes[text_index_count++];
  }
  memset(index, 0, sizeof *index);
  index->lo = lo;
  index->hi = hi;
  snprintf(index->path, sizeof index->path, "%s", find->path);
  index->device = file.st_dev;
  index->inode = file.st_ino;
  index->code_count = code_sections(find->path, find->base, lo, hi, index->code, 16);
  if (index->code_count < 0) {
    index->code[0] = lo;
    index->code[1] = hi;
    index->code_count = 1;
  }
  size_t count = 0, capacity = 1024;
  hk_branch *branches = malloc(capacity * sizeof *branches);
  if (!branches) {
    index->lo = index->hi = 0;  // no index: matches no range
    return NULL;
  }
  for (int r = 0; r < index->code_count; r++) {
  const uintptr_t code_lo = index->code[2 * r];
  const uint8_t *b = (const uint8_t *)code_lo;
  const size_t n = index->code[2 * r + 1] - code_lo;
  for (size_t i = 0; i + 5 <= n; i++) {
    size_t length;
    if ((b[i] & 0xFE) == 0xE8) {
      length = 5;
    } else if (b[i] == 0x0F && i + 6 <= n && (b[i + 1] & 0xF0) == 0x80) {
      length = 6;
    } else {
      continue;
    }
    int32_t rel;
    memcpy(&rel, b + i + length - 4, 4);
    const uintptr_t target = code_lo + i + length + (uintptr_t)(intptr_t)rel;
    if (target < lo || target >= hi) continue;
    if (count == capacity) {
      hk_branch *more = realloc(branches, 2 * capacity * sizeof *branches);
      if (!more) {
        free(branches);
        index->lo = index->hi = 0;
        return NULL;
      }
      branches = more;
      capacity *= 2;
    }
    branches[count++] = (hk_branch){target, code_lo + i};
  }
  }
  qsort(branches, count, sizeof *branches, compare_branches);
  index->branches = branches;
  index->count = count;
  return index;
}

// The code section holding `at`, its start and end (for a decoding's
// first byte and its bound).
static void code_section(const hk_text_index *index, uintptr_t at, uintptr_t *lo, uintptr_t *hi) {
  for (int r = 0; r < index->code_count; r++) {
    if (at >= index->code[2 * r] && at < index->code[2 * r + 1]) {
      *lo = index->code[2 * r];
      *hi = index->code[2 * r + 1];
      return;
    }
  }
  *lo = index->lo;
  *hi = index->hi;
}

// Whether an instruction starts at `at`, by the streams decoded from the
// points 160 to 130 bytes back (or the segment's start): most of them fall
// in step with the code's own within a few instructions. (A byte that only
// looks like a branch lies inside another instruction: zlib has
// `sub $0xfff2,%r8`, whose E8 F2 FF 00 00 reads as a call into gzgetc.)
static int starts_instruction(uintptr_t at, uintptr_t lo, uintptr_t hi) {
  int yes = 0, no = 0;
  const uintptr_t first = at - lo >= 160 ? at - 160 : lo;
  const uintptr_t last = at - lo >= 130 ? at - 130 : lo;
  const uintptr_t limit = at + 16 < hi ? at + 16 : hi;
  for (uintptr_t from = first; from <= last; from++) {
    uintptr_t p = from;
    while (p < at) {
      ZydisDecodedInstruction in;
      if (decode((const uint8_t *)p, (size_t)(limit - p), &in) != 0) break;
      p += in.length;
    }
    if (p == at) yes++; else no++;
  }
  return yes > no;
}

// The first 32-bit relative branch of f's segment, other than from
// [own_lo, own_hi), whose target is in (start, end); 0 if none.
static uintptr_t far_branch_into(uintptr_t start, uintptr_t end, uintptr_t own_lo, uintptr_t own_hi, uintptr_t *target) {
  struct hk_find_text find = {start, 0, 0, 0, NULL};
  if (!dl_iterate_phdr(find_text, &find)) return 0;   // not in a loaded object (generated code)
  pthread_mutex_lock(&text_index_lock);
  const hk_text_index *index = text_index(&find);
  uintptr_t found = 0;
  if (index) {
    // The first whose target is above start.
    size_t low = 0, high = index->count;
    while (low < high) {
      const size_t mid = low + (high - low) / 2;
      if (index->branches[mid].target <= start) low = mid + 1; else high = mid;
    }
    for (size_t i = low; i < index->count && index->branches[i].target < end; i++) {
      const uintptr_t from = index->branches[i].from;
      if (from >= own_lo && from < own_hi) continue;
      uintptr_t section_lo, section_hi;
      code_section(index, from, &section_lo, &section_hi);
      if (!starts_instruction(from, section_lo, section_hi)) continue;
      found = from;
      *target = index->branches[i].target;
      break;
    }
  }
  pthread_mutex_unlock(&text_index_lock);
  return found;
}

// An 8-bit (or any) relative branch decoded in [from, to), from a point
// whose instructions reach `to` exactly, whose target is in (start, end); 0
// if none. (The bytes before a function: a previous function's tail, its
// padding, which a linear decoding from the wrong byte reads as other
// instructions. Of the points 160 to 130 bytes back, those that reach `to`
// exactly agree on the last 128 bytes in practice: the first four are
// checked.)
static uintptr_t near_branch_before(uintptr_t to, uintptr_t lo, uintptr_t start, uintptr_t end, uintptr_t *target) {
  int agreeing = 0;
  // (Near the segment's start, from its start: a boundary too.)
  for (uintptr_t from = to - lo < 160 ? lo : to - 160; from < to - 129 || from == lo; from++) {
    if (from < lo || from >= to) break;
    uintptr_t at = from, hit = 0, hit_target = 0;
    while (at < to) {
      ZydisDecodedInstruction in;
      if (decode((const uint8_t *)at, (size_t)(to - at), &in) != 0) break;
      const uintptr_t t = branch_target(&in, at);
      if (!hit && t > start && t < end) { hit = at; hit_target = t; }
      at += in.length;
    }
    if (at != to) continue;   // out of step with the function's first byte
    if (hit) { *target = hit_target; return hit; }
    if (++agreeing == 4) break;
  }
  return 0;
}

// A relative branch decoded from `from` for `length` bytes whose target is in (start, end); 0 if none.
static uintptr_t branch_after(uintptr_t from, size_t length, uintptr_t hi, uintptr_t start, uintptr_t end, uintptr_t *target) {
  uintptr_t at = from;
  while (at < from + length && at < hi) {
    ZydisDecodedInstruction in;
    if (decode((const uint8_t *)at, (size_t)(hi - at), &in) != 0) break;
    const uintptr_t t = branch_target(&in, at);
    if (t > start && t < end) { *target = t; return at; }
    at += in.length;
  }
  return 0;
}

int hk_entry_plan_make(const void *function, uint64_t size, const void *stub_address,
                       hk_entry_plan *plan, char *why, size_t why_size) {
  static const uint8_t endbr64[4] = {0xF3, 0x0F, 0x1E, 0xFA};
  memset(plan, 0, sizeof *plan);
  const uint8_t *f = function;
  plan->function = f;
  int offset = (size == 0 || size >= 4) && memcmp(f, endbr64, 4) == 0 ? 4 : 0;
  plan->patch_offset = offset;
  if (size && size < (uint64_t)offset + HK_ENTRY_PATCH_SIZE) {
    say(why, why_size, "the function is %llu bytes, shorter than the %d-byte jump%s",
        (unsigned long long)size, HK_ENTRY_PATCH_SIZE, offset ? " after its endbr64" : "");
    return -1;
  }
  uint8_t *stub = plan->stub;
  int length = 0;
  if (offset) { memcpy(stub, endbr64, 4); length = 4; }
  plan->stub_body = length;
  const uintptr_t start = (uintptr_t)f + offset;
  int displaced = 0;
  while (displaced < HK_ENTRY_PATCH_SIZE) {
    if (plan->count == HK_ENTRY_MAX_DISPLACED) {
      say(why, why_size, "more than %d instructions in the first %d bytes", HK_ENTRY_MAX_DISPLACED, HK_ENTRY_PATCH_SIZE);
      return -1;
    }
    size_t available = size ? (size_t)(size - offset - displaced) : ZYDIS_MAX_INSTRUCTION_LENGTH;
    ZydisDecodedInstruction in;
    const uintptr_t at = start + displaced;
    if (decode((const uint8_t *)at, available, &in) != 0) {
      say(why, why_size, "the bytes at +%d do not decode as an instruction", offset + displaced);
      return -1;
    }
    if (ends_flow(&in) && displaced + in.length < HK_ENTRY_PATCH_SIZE) {
      say(why, why_size, "the function ends (%s at +%d) inside the %d bytes the jump displaces",
          ZydisMnemonicGetString(in.mnemonic), offset + displaced, HK_ENTRY_PATCH_SIZE);
      return -1;
    }
    if (length + 27 + 14 > HK_ENTRY_STUB_SIZE) {
      say(why, why_size, "the relocated instructions do not fit the stub");
      return -1;
    }
    plan->old_offset[plan->count] = (uint8_t)displaced;
    plan->new_offset[plan->count] = (uint16_t)length;
    uintptr_t target = branch_target(&in, at);
    // A branch back to a displaced instruction (to the function's first:
    // a loop of a few bytes) goes to its copy here, not to the patch, which
    // would make each turn a call of the hook.
    if (target && offset && target == (uintptr_t)f) target = (uintptr_t)stub_address;   // its endbr64
    for (int j = 0; target && j <= plan->count; j++) {
      if (target == start + plan->old_offset[j]) { target = (uintptr_t)stub_address + plan->new_offset[j]; break; }
    }
    if ((in.attributes & ZYDIS_ATTRIB_IS_RELATIVE) && !target && !is_rip_relative(&in)) {
      say(why, why_size, "%s at +%d: a relative operand the relocator does not handle",
          ZydisMnemonicGetString(in.mnemonic), offset + displaced);
      return -1;
    }
    if (target) {
      int cc = condition_code(&in);
      if (in.mnemonic == ZYDIS_MNEMONIC_CALL && displaced + in.length >= HK_ENTRY_PATCH_SIZE) {
        // The last displaced instruction: the callee returns into the
        // function, past the patch, not into the stub (see push_return).
        length += push_return(stub + length, at + in.length);
        const uint8_t code[6] = {0xFF, 0x25, 0x00, 0x00, 0x00, 0x00};
        memcpy(stub + length, code, 6);
        put_absolute(stub + length + 6, target);
        length += 14;
      } else if (in.mnemonic == ZYDIS_MNEMONIC_CALL) {
        // call [rip+2]; jmp +8; .quad target: returns to the jmp, which skips the address.
        const uint8_t code[8] = {0xFF, 0x15, 0x02, 0x00, 0x00, 0x00, 0xEB, 0x08};
        memcpy(stub + length, code, 8);
        put_absolute(stub + length + 8, target);
        length += 16;
      } else if (in.mnemonic == ZYDIS_MNEMONIC_JMP) {
        const uint8_t code[6] = {0xFF, 0x25, 0x00, 0x00, 0x00, 0x00};
        memcpy(stub + length, code, 6);
        put_absolute(stub + length + 6, target);
        length += 14;
      } else if (cc >= 0) {
        // The opposite condition skips the absolute jump that follows.
        stub[length] = (uint8_t)(0x70 | (cc ^ 1));
        stub[length + 1] = 14;
        const uint8_t code[6] = {0xFF, 0x25, 0x00, 0x00, 0x00, 0x00};
        memcpy(stub + length + 2, code, 6);
        put_absolute(stub + length + 8, target);
        length += 16;
      } else {
        say(why, why_size, "%s at +%d: a short branch with no long form (loop, jrcxz, xbegin)",
            ZydisMnemonicGetString(in.mnemonic), offset + displaced);
        return -1;
      }
    } else {
      // A call through a register or memory (`call *%rax`, `call
      // *slot(%rip)`, a call through the GOT as -fno-plt compiles it). Not
      // last among the displaced bytes, its return address lies inside the
      // jump: a thread in its callee while the entry is patched would return
      // there. The last one, as a direct call: its callee returns into the
      // function, past the patch (see push_return), by `jmp` with the same
      // operand (FF /2 becomes FF /4) after the push, unless that operand is
      // addressed from rsp, which the push moves.
      const int jumps = in.mnemonic == ZYDIS_MNEMONIC_CALL;
      if (jumps) {
        const int modrm = in.raw.modrm.offset;
        const int from_rsp = in.raw.modrm.rm == 4 && !in.raw.rex.B && (in.raw.modrm.mod == 3 || in.raw.sib.base == 4);
        if (displaced + in.length < HK_ENTRY_PATCH_SIZE) {
          say(why, why_size, "%s at +%d: a call inside the %d bytes the jump displaces (a thread in its callee would return into the jump)",
              ZydisMnemonicGetString(in.mnemonic), offset + displaced, HK_ENTRY_PATCH_SIZE);
          return -1;
        }
        if (((const uint8_t *)at)[modrm - 1] != 0xFF || in.raw.modrm.reg != 2 || from_rsp) {
          say(why, why_size, "%s at +%d: a call the relocator cannot turn into a jump (a far call, or an operand addressed from rsp)",
              ZydisMnemonicGetString(in.mnemonic), offset + displaced);
          return -1;
        }
        length += push_return(stub + length, at + in.length);
        memcpy(stub + length, (const void *)at, in.length);
        stub[length + modrm] = (uint8_t)((stub[length + modrm] & ~0x38) | 0x20);
      } else {
        memcpy(stub + length, (const void *)at, in.length);
      }
      const uintptr_t copy_at = (uintptr_t)stub_address + length;
      if (is_rip_relative(&in)) {
        if (in.address_width != 64 || in.raw.disp.size != 32) {
          say(why, why_size, "%s at +%d: an instruction-pointer-relative operand of an unusual form",
              ZydisMnemonicGetString(in.mnemonic), offset + displaced);
          return -1;
        }
        const uintptr_t referenced = at + in.length + (uintptr_t)in.raw.disp.value;
        const int64_t moved = (int64_t)(referenced - (copy_at + in.length));
        if (moved != (int32_t)moved) {
          say(why, why_size, "%s at +%d: its RIP-relative operand is out of the trampoline's reach",
              ZydisMnemonicGetString(in.mnemonic), offset + displaced);
          return -1;
        }
        const int32_t disp = (int32_t)moved;
        memcpy(stub + length + in.raw.disp.offset, &disp, 4);
      }
      length += in.length;
    }
    displaced += in.length;
    plan->count++;
  }
  plan->patch_length = displaced;
  memcpy(plan->original, (const void *)start, (size_t)displaced);
  // A branch of the function (or of the displaced instructions) into the
  // displaced bytes, other than to their start, would land inside the jump.
  // One back to its first instruction (a loop whose head it is) would make
  // each turn a call through the hooks, each a frame deeper.
  const uintptr_t end = start + displaced;
  if (size) {
    uintptr_t at = (uintptr_t)f;
    while (at < (uintptr_t)f + size) {
      ZydisDecodedInstruction in;
      if (decode((const uint8_t *)at, (size_t)((uintptr_t)f + size - at), &in) != 0) break;  // data, padding: no claim past it
      uintptr_t target = branch_target(&in, at);
      if (target > start && target < end) {
        say(why, why_size, "%s at +%lu branches to +%lu, inside the %d bytes the jump displaces",
            ZydisMnemonicGetString(in.mnemonic), (unsigned long)(at - (uintptr_t)f),
            (unsigned long)(target - (uintptr_t)f), displaced);
        return -1;
      }
      if ((target == start || target == (uintptr_t)f) && at >= end && in.mnemonic != ZYDIS_MNEMONIC_CALL) {
        say(why, why_size, "%s at +%lu branches back to the function's first instruction (a loop, or a tail call of itself: each turn would be a call of the hook, a frame deeper)",
            ZydisMnemonicGetString(in.mnemonic), (unsigned long)(at - (uintptr_t)f));
        return -1;
      }
      at += in.length;
    }
  }
  // Branches of other code into the displaced bytes (see far_branch_into).
  {
    uintptr_t target = 0, from;
    const uintptr_t own_hi = size ? (uintptr_t)f + size : end;
    struct hk_find_text find = {start, 0, 0, 0, NULL};
    const uintptr_t lo = dl_iterate_phdr(find_text, &find) ? find.lo : start;
    // (Outside any object, generated code: no further than the page of the
    // last displaced byte, which is mapped.)
    const uintptr_t hi = find.hi ? find.hi : ((end - 1) | (uintptr_t)4095) + 1;
    if ((from = far_branch_into(start, end, (uintptr_t)f, own_hi, &target)) == 0
        && (from = near_branch_before((uintptr_t)f, lo, start, end, &target)) == 0 && !size) {
      from = branch_after(start, 160, hi, start, end, &target);
    }
    if (from) {
      say(why, why_size, "code at %p (%+ld bytes from the function) branches to +%lu, inside the %d bytes the jump displaces",
          (const void *)from, (long)(from - (uintptr_t)f), (unsigned long)(target - (uintptr_t)f), displaced);
      return -1;
    }
  }
  // Back to the first instruction after the displaced ones.
  const uint8_t back[6] = {0xFF, 0x25, 0x00, 0x00, 0x00, 0x00};
  memcpy(stub + length, back, 6);
  put_absolute(stub + length + 6, end);
  length += 14;
  plan->stub_length = length;
  return 0;
}

// MARK: - Trampoline pages

#define PAGE 4096
#define THUNK_OFFSET HK_ENTRY_STUB_SIZE

static pthread_mutex_t page_lock = PTHREAD_MUTEX_INITIALIZER;

void *hk_entry_page_reserve(const void *near, char *why, size_t why_size) {
  // Static, not on the caller's stack (64 KB): callers are serialized by
  // EntryHook's registry lock, and the patch lock besides.
  static uintptr_t starts[4096], ends[4096];
  pthread_mutex_lock(&page_lock);
  void *found = NULL;
  const uintptr_t target = (uintptr_t)near & ~(uintptr_t)(PAGE - 1);
  const uintptr_t reach = 0x7FF00000;  // a little under 2 GB: the jump and the stub's operands both fit
  int readable = 1;
  for (int attempt = 0; attempt < 64 && !found; attempt++) {
    // The mappings as they are now: read again after a gap was taken
    // meanwhile (another thread's mmap: a thread's stack of 8 MB, which
    // marking the one page tried as taken crossed a page an attempt, and
    // 64 attempts gave up: "no free page within 2 GB").
    FILE *maps = fopen("/proc/self/maps", "re");
    if (!maps) { readable = 0; break; }
    int n = 0;
    char line[512];
    while (n < 4096 && fgets(line, sizeof line, maps)) {
      unsigned long s, e;
      if (sscanf(line, "%lx-%lx", &s, &e) == 2) { starts[n] = s; ends[n] = e; n++; }
    }
    fclose(maps);
    uintptr_t best = 0, best_distance = UINTPTR_MAX;
    // The gaps between mappings (and before the first), nearest first.
    uintptr_t previous_end = 0x10000;
    for (int i = 0; i <= n; i++) {
      uintptr_t gap_start = previous_end, gap_end = i < n ? starts[i] : 0x7FFFFFFFF000;
      if (i < n && ends[i] > previous_end) previous_end = ends[i];
      if (gap_end < gap_start + PAGE) continue;
      uintptr_t candidate = target < gap_start ? gap_start : target >= gap_end - PAGE ? gap_end - PAGE : target;
      uintptr_t distance = candidate > target ? candidate - target : target - candidate;
      if (distance < best_distance) { best = candidate; best_distance = distance; }
    }
    if (!best || best_distance > reach) break;
    void *page = mmap((void *)best, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (page == (void *)best) found = page;
    else if (page != MAP_FAILED) munmap(page, PAGE);
  }
  pthread_mutex_unlock(&page_lock);
  if (!readable) say(why, why_size, "/proc/self/maps could not be read");
  else if (!found) say(why, why_size, "no free page within 2 GB of %p for the trampoline", near);
  return found;
}

int hk_entry_page_fill(void *page, const hk_entry_plan *plan, const void *target, char *why, size_t why_size) {
  uint8_t *bytes = page;
  memset(bytes, 0xCC, PAGE);
  memcpy(bytes, plan->stub, (size_t)plan->stub_length);
  const uint8_t jump[6] = {0xFF, 0x25, 0x00, 0x00, 0x00, 0x00};
  memcpy(bytes + THUNK_OFFSET, jump, 6);
  put_absolute(bytes + THUNK_OFFSET + 6, (uint64_t)(uintptr_t)target);
  if (mprotect(page, PAGE, PROT_READ | PROT_EXEC) != 0) {
    say(why, why_size, "mprotect(PROT_READ | PROT_EXEC) of the trampoline page refused (errno %d)", errno);
    return -1;
  }
  return 0;
}

const void *hk_entry_page_thunk(const void *page) { return (const uint8_t *)page + THUNK_OFFSET; }

// MARK: - Patching

// Where a thread that meets the int3 on a patch's first byte is sent: the
// copy of the first displaced instruction in the stub. Entries are added
// under the patch lock, published by `site_count`, and never change.
typedef struct { uintptr_t at; uintptr_t resume; } trap_site;
#define MAX_SITES 65536
static trap_site sites[MAX_SITES];
static _Atomic int site_count;

// The install in progress, for the other threads' handlers (fixups).
typedef struct {
  uintptr_t start;
  int length;
  int count;
  const uint8_t *old_offset;
  const uint16_t *new_offset;
  uintptr_t stub;
  uint32_t generation;
} fixup_request;
static _Atomic(fixup_request *) active_fixup;
#define MAX_ACKS 4096
// Answers: the round's generation (high 32 bits) and the thread's id, so that
// a handler that read an earlier round's request never counts for this one.
static _Atomic uint64_t acks[MAX_ACKS];
static uint32_t generation;
static _Atomic int ack_count;
// Handlers between reading active_fixup and their answer: a round ends only
// when none is (the request lives on the patcher's stack, and a signal resent
// to a thread that already answered can arrive after the last answer came in).
static _Atomic int handlers_reading;

static struct sigaction previous_trap, previous_profile;
static pthread_mutex_t patch_lock = PTHREAD_MUTEX_INITIALIZER;
static int handler_installed;
static int sync_core = -1;  // 1: membarrier SYNC_CORE; 0: PRIVATE_EXPEDITED; -2: neither
// Tests: refuse this thread's next protection change (a thread's own, so a
// patch another thread makes meanwhile, another test's, does not take it).
static _Thread_local int refuse_write;
// Tests: the calling thread's next patch takes at most this many other
// threads (0: MAX_ACKS).
static _Thread_local int thread_limit;
// Tests: a thread whose signal mask only the patches of the thread that
// named it look at (a test's thread that blocks SIGTRAP would otherwise make
// every patch of the tests running beside it refuse; see
// hk_entry_test_private_thread).
static _Atomic pid_t test_private_thread;
static _Thread_local int sees_private_thread;

// The handlers make their system calls themselves, not through libc:
// getpid, syscall, sigaction and raise are functions like any other, and an
// entry hook may have patched one (its hooks, Swift code, would then run
// inside a signal handler, or a patch in progress send the handler through
// its int3 and stub). Up to four arguments; the kernel's result (-errno on
// failure; errno is left alone).
static inline long raw_syscall(long number, long a, long b, long c, long d) {
  register long r10 __asm__("r10") = d;
  long result;
  __asm__ volatile("syscall"
                   : "=a"(result)
                   : "0"(number), "D"(a), "S"(b), "d"(c), "r"(r10)
                   : "rcx", "r11", "memory");
  return result;
}

// SIGTRAP: an int3 on a patch's first byte (the instruction pointer is just
// past it) sends the thread on to the stub; any other goes to whoever
// handled SIGTRAP before.
static void chain(int signal, siginfo_t *info, void *context, const struct sigaction *previous) {
  if (previous->sa_flags & SA_SIGINFO) {
    if (previous->sa_sigaction) previous->sa_sigaction(signal, info, context);
    return;
  }
  if (previous->sa_handler == SIG_IGN) return;
  if (previous->sa_handler != SIG_DFL && previous->sa_handler) {
    previous->sa_handler(signal);
    return;
  }
  // The default action, as without this handler (SIGPROF's and SIGTRAP's
  // both end the process): the kernel's rt_sigaction (its struct: handler,
  // flags, restorer, mask; no restorer needed for SIG_DFL), then the signal
  // to this thread, delivered when the handler returns (it is blocked
  // while the handler runs, as raise's was).
  struct { void *handler; unsigned long flags; void *restorer; uint64_t mask; } fallback;
  fallback.handler = (void *)SIG_DFL;
  fallback.flags = 0;
  fallback.restorer = NULL;
  fallback.mask = 0;
  raw_syscall(SYS_rt_sigaction, signal, (long)&fallback, 0, sizeof fallback.mask);
  raw_syscall(SYS_tgkill, raw_syscall(SYS_getpid, 0, 0, 0, 0), raw_syscall(SYS_gettid, 0, 0, 0, 0), signal, 0);
}

static void trap_handler(int signal, siginfo_t *info, void *context) {
  ucontext_t *uc = context;
  greg_t *rip = &uc->uc_mcontext.gregs[REG_RIP];
  uintptr_t at = (uintptr_t)*rip - 1;
  int count = atomic_load_explicit(&site_count, memory_order_acquire);
  for (int i = 0; i < count; i++) {
    if (sites[i].at == at) {
      *rip = (greg_t)sites[i].resume;
      return;
    }
  }
  chain(signal, info, context, &previous_trap);
}

// SIGPROF sent by a patcher (tgkill, this process): a thread stopped between
// two displaced instructions moves to the next one's copy in the stub, then
// answers. A signal of its own, not SIGTRAP: two SIGTRAPs pending at once
// merge into one, and a patcher's could then hide an int3's. SIGPROF, because
// Dispatch's worker threads (Swift concurrency's) leave it unblocked. Any
// other SIGPROF (a profiler's timer) goes to whoever handled it before.
static void fixup_handler(int signal, siginfo_t *info, void *context) {
  if (info->si_code != SI_TKILL || info->si_pid != (pid_t)raw_syscall(SYS_getpid, 0, 0, 0, 0)) {
    chain(signal, info, context, &previous_profile);
    return;
  }
  atomic_fetch_add(&handlers_reading, 1);
  fixup_request *request = atomic_load(&active_fixup);
  if (!request) {  // a late answer to a round that ended
    atomic_fetch_sub(&handlers_reading, 1);
    return;
  }
  ucontext_t *uc = context;
  greg_t *rip = &uc->uc_mcontext.gregs[REG_RIP];
  uintptr_t pc = (uintptr_t)*rip;
  for (int i = 1; i < request->count; i++) {
    if (pc == request->start + request->old_offset[i]) {
      *rip = (greg_t)(request->stub + request->new_offset[i]);
      break;
    }
  }
  int slot = atomic_fetch_add(&ack_count, 1);
  if (slot < MAX_ACKS) {
    const uint32_t tid = (uint32_t)raw_syscall(SYS_gettid, 0, 0, 0, 0);
    atomic_store(&acks[slot], ((uint64_t)request->generation << 32) | tid);
  }
  atomic_fetch_sub(&handlers_reading, 1);
}

// No handler reads the request once this returns: a handler that counted
// itself in before the store below finishes first, one that counts itself in
// after it reads NULL (both sequentially consistent).
static void end_fixup_round(void) {
  atomic_store(&active_fixup, NULL);
  while (atomic_load(&handlers_reading) != 0) sched_yield();
}

static int install_handler(char *why, size_t why_size) {
  if (handler_installed) return 0;
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_sigaction = trap_handler;
  action.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&action.sa_mask);
  if (sigaction(SIGTRAP, &action, &previous_trap) != 0) {
    say(why, why_size, "sigaction(SIGTRAP) refused (errno %d)", errno);
    return -1;
  }
  action.sa_sigaction = fixup_handler;
  if (sigaction(SIGPROF, &action, &previous_profile) != 0) {
    sigaction(SIGTRAP, &previous_trap, NULL);
    say(why, why_size, "sigaction(SIGPROF) refused (errno %d)", errno);
    return -1;
  }
  handler_installed = 1;
  return 0;
}

// Every thread of the process: no core runs a stale copy of the code.
static void serialize_cores(void) {
  if (sync_core == -1) {
    if (syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0) == 0) sync_core = 1;
    else if (syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0) sync_core = 0;
    else sync_core = -2;
  }
  if (sync_core == 1) syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0);
  else if (sync_core == 0) syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
  atomic_thread_fence(memory_order_seq_cst);
}

static int thread_exists(pid_t tid) {
  char path[64];
  snprintf(path, sizeof path, "/proc/self/task/%d", (int)tid);
  return access(path, F_OK) == 0;
}

// 1 if thread `tid` is off its core at a known place outside [start, end)
// (in a system call, or stopped), or gone; 0 if that is not known: it runs
// ("running": on a core, or ready to be), or /proc does not say. Called
// once the int3 is on the first byte: from anywhere outside the displaced
// bytes a thread can come back into them only through that byte (no branch
// lands inside them, checked when planning; a displaced call is the last
// displaced instruction, so its return address is past them), so such a
// thread need not be interrupted.
static int thread_is_elsewhere(pid_t tid, uintptr_t start, uintptr_t end) {
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/self/task/%d/syscall", (int)tid);
  FILE *file = fopen(path, "re");
  if (!file) return !thread_exists(tid);
  int known = 0;
  // "nr arg1 ... arg6 sp pc" in a system call, "-1 sp pc" off its core
  // outside one (a fault, a stop), "running" otherwise.
  if (fgets(line, sizeof line, file) && ((line[0] >= '0' && line[0] <= '9') || line[0] == '-')) {
    const long number = strtol(line, NULL, 10);
    char *last = strrchr(line, ' ');
    if (last) {
      const uintptr_t pc = (uintptr_t)strtoull(last + 1, NULL, 16);
      // In a system call, pc is past the 2-byte `syscall`; a restarted call
      // (SA_RESTART, or a stop and continue) runs that instruction again,
      // at pc - 2: it must be outside too.
      const uintptr_t reach = number >= 0 ? 2 : 0;
      known = pc < start || pc >= end + reach;
    }
  }
  fclose(file);
  return known;
}

// Thread `tid`'s blocked signals (/proc's SigBlk: bit n - 1 for signal n),
// or 0 if it is gone.
static uint64_t blocked_signals(pid_t tid) {
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/self/task/%d/status", (int)tid);
  FILE *file = fopen(path, "re");
  if (!file) return 0;
  uint64_t mask = 0;
  while (fgets(line, sizeof line, file)) {
    if (strncmp(line, "SigBlk:", 7) == 0) {
      mask = (uint64_t)strtoull(line + 7, NULL, 16);
      break;
    }
  }
  fclose(file);
  return mask;
}

// A thread inside a signal handler blocks SIGTRAP for a moment (the trap
// handler itself, just after another patch's int3 sent the thread on; a
// handler whose sa_mask is full): one that still does after 1 s is taken to
// block it for good. (A test's private thread, named meanwhile, does not.)
static int blocks_trap_signal(pid_t tid) {
  // The calling thread's mask does not change while it waits: asked once.
  if (tid == (pid_t)syscall(SYS_gettid)) return (blocked_signals(tid) >> (SIGTRAP - 1)) & 1;
  struct timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  while ((blocked_signals(tid) >> (SIGTRAP - 1)) & 1) {
    if (tid == atomic_load(&test_private_thread) && !sees_private_thread) return 0;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000 >= 1000) return 1;
    struct timespec pause = {0, 200000};
    nanosleep(&pause, NULL);
  }
  return 0;
}

// A thread that blocks SIGTRAP and meets the int3 ends the process: the
// kernel does not leave a trap blocked, it unblocks it and restores the
// default action (status 133), whatever handler is installed. So, before
// an int3 is written (installing, restoring, uninstalling), no thread of the
// process may block SIGTRAP, the calling one included (it calls libc while
// the int3 is there, and the patched function may be one of those). 0, or
// -1 naming the first such thread (a thread that blocks it later, while the
// patch is written, is not seen).
static int refuse_trap_blockers(const void *at, char *why, size_t why_size) {
  DIR *tasks = opendir("/proc/self/task");
  if (!tasks) {
    say(why, why_size, "/proc/self/task could not be read: which threads block SIGTRAP (and would end the process at the int3 on the first byte) is not known; nothing was written");
    return -1;
  }
  struct dirent *entry;
  while ((entry = readdir(tasks))) {
    pid_t tid = (pid_t)atoi(entry->d_name);
    if (tid <= 0 || !blocks_trap_signal(tid)) continue;
    char path[64], name[32] = "?";
    snprintf(path, sizeof path, "/proc/self/task/%d/comm", (int)tid);
    FILE *file = fopen(path, "re");
    if (file) {
      if (fgets(name, sizeof name, file)) name[strcspn(name, "\n")] = 0;
      fclose(file);
    }
    closedir(tasks);
    say(why, why_size, "thread %d (\"%s\") blocks SIGTRAP: had it reached the int3 the patch puts on the first byte at %p, the kernel would have ended the process; nothing was written",
        (int)tid, name, at);
    return -1;
  }
  closedir(tasks);
  return 0;
}

// Interrupts every other thread that may be inside the displaced bytes once
// (SIGPROF); a thread stopped between two displaced instructions resumes at
// the copy of the next one in the stub. One that /proc shows elsewhere
// (thread_is_elsewhere: asleep in a system call, say) is left alone: a
// signal with a handler ends nanosleep, poll, epoll_wait, select early
// (EINTR, or the time left), SA_RESTART or not, and every install would cut
// short the sleeps and waits of unrelated threads. A thread that does not
// answer gets the signal again every 2 ms (two SIGPROFs pending merge into
// one), until it answers, exits or is seen elsewhere (one that blocks
// SIGPROF can only be seen elsewhere). 0 when every thread did.
static int fixup_round(const hk_entry_plan *plan, uintptr_t stub, char *why, size_t why_size) {
  fixup_request request = {
    (uintptr_t)plan->function + plan->patch_offset, plan->patch_length, plan->count,
    plan->old_offset, plan->new_offset, stub, ++generation,
  };
  const uintptr_t end = request.start + (uintptr_t)request.length;
  atomic_store(&ack_count, 0);
  atomic_store(&active_fixup, &request);
  pid_t self = (pid_t)syscall(SYS_gettid), pid = getpid();
  static pid_t pending[MAX_ACKS];  // under the patch lock
  int pending_count = 0;
  DIR *tasks = opendir("/proc/self/task");
  if (!tasks) {
    end_fixup_round();
    say(why, why_size, "/proc/self/task could not be read: the other threads cannot be moved off the displaced instructions");
    return -1;
  }
  // Every other thread, or a refusal: one left out could be stopped between
  // two displaced instructions and resume inside the jump. (Past MAX_ACKS
  // the list stopped, and the patch went on.)
  // Every other thread counts toward the limit, those left alone too (the
  // count the limit has always meant).
  const int most = thread_limit ? thread_limit : MAX_ACKS;
  int listed = 0;
  struct dirent *entry;
  while ((entry = readdir(tasks))) {
    pid_t tid = (pid_t)atoi(entry->d_name);
    if (tid <= 0 || tid == self) continue;
    if (listed++ == most) {
      closedir(tasks);
      end_fixup_round();
      thread_limit = 0;
      say(why, why_size, "the process has more than %d other threads, more than the patch can move off the displaced instructions; nothing was patched", most);
      return -1;
    }
    if (!thread_is_elsewhere(tid, request.start, end)) pending[pending_count++] = tid;
  }
  closedir(tasks);
  thread_limit = 0;
  for (int i = 0; i < pending_count; i++) syscall(SYS_tgkill, pid, pending[i], SIGPROF);
  int result = 0;
  struct timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  long last_send = 0;
  while (pending_count > 0) {
    int acked = atomic_load(&ack_count);
    for (int i = 0; i < pending_count;) {
      pid_t tid = pending[i];
      int done = 0;
      const uint64_t answer = ((uint64_t)request.generation << 32) | (uint32_t)tid;
      for (int a = 0; a < acked && a < MAX_ACKS && !done; a++) done = atomic_load(&acks[a]) == answer;
      // Once elsewhere, always safe (see thread_is_elsewhere); gone too.
      if (!done) done = thread_is_elsewhere(tid, request.start, end);
      if (done) pending[i] = pending[--pending_count]; else i++;
    }
    if (pending_count == 0) break;
    clock_gettime(CLOCK_MONOTONIC, &now);
    long elapsed = (now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000;
    if (elapsed >= 5000) {
      say(why, why_size, "thread %d did not answer SIGPROF within 5 s (it blocks the signal while it runs): nothing was patched",
          (int)pending[0]);
      result = -1;
      break;
    }
    if (elapsed - last_send >= 2) {
      for (int i = 0; i < pending_count; i++) syscall(SYS_tgkill, pid, pending[i], SIGPROF);
      last_send = elapsed;
    }
    struct timespec pause = {0, 20000};
    nanosleep(&pause, NULL);
  }
  end_fixup_round();
  return result;
}

static void store_byte(uint8_t *at, uint8_t value) { __atomic_store_n(at, value, __ATOMIC_SEQ_CST); }

// ThreadSanitizer delivers asynchronous signals late, at its next
// interception point, with the context of the moment they arrived: a thread
// could then never be moved off the displaced instructions (and a spinning
// thread never answers). Entry hooks refuse to patch under it.
static int under_thread_sanitizer(void) {
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
  return 1;
#endif
#endif
  return dlsym(RTLD_DEFAULT, "__tsan_init") != NULL;
}

int hk_entry_unavailable_under_sanitizer(void) { return under_thread_sanitizer(); }

int hk_entry_patch(const hk_entry_plan *plan, const void *stub, const void *thunk, char *why, size_t why_size) {
  if (under_thread_sanitizer()) {
    say(why, why_size, "entry hooks are unavailable under ThreadSanitizer, which delivers signals late: threads inside the function could not be moved off the bytes the jump displaces; nothing was written");
    return -1;
  }
  uint8_t *at = (uint8_t *)plan->function + plan->patch_offset;
  const int n = plan->patch_length;
  uint8_t desired[32];
  if (thunk) {
    int64_t rel = (int64_t)((uintptr_t)thunk - ((uintptr_t)at + HK_ENTRY_PATCH_SIZE));
    if (rel != (int32_t)rel) {
      say(why, why_size, "the trampoline is out of the jump's reach");
      return -1;
    }
    int32_t rel32 = (int32_t)rel;
    desired[0] = 0xE9;
    memcpy(desired + 1, &rel32, 4);
    memset(desired + 5, 0xCC, (size_t)(n - 5));
  } else {
    memcpy(desired, plan->original, (size_t)n);
  }
  pthread_mutex_lock(&patch_lock);
  if (memcmp(at, desired, (size_t)n) == 0) {
    pthread_mutex_unlock(&patch_lock);
    return 0;
  }
  // Every write below begins with the int3 (restoring as well).
  if (refuse_trap_blockers(at, why, why_size) != 0) {
    pthread_mutex_unlock(&patch_lock);
    return -1;
  }
  if (install_handler(why, why_size) != 0) {
    pthread_mutex_unlock(&patch_lock);
    return -1;
  }
  // The trap site, once per entry.
  uintptr_t resume = (uintptr_t)stub + (uintptr_t)plan->stub_body;
  int count = atomic_load(&site_count), known = 0;
  for (int i = 0; i < count; i++) known |= sites[i].at == (uintptr_t)at;
  if (!known) {
    if (count == MAX_SITES) {
      pthread_mutex_unlock(&patch_lock);
      say(why, why_size, "more than %d entries patched in this process", MAX_SITES);
      return -1;
    }
    sites[count] = (trap_site){(uintptr_t)at, resume};
    atomic_store_explicit(&site_count, count + 1, memory_order_release);
  }
  uintptr_t first = (uintptr_t)at & ~(uintptr_t)(PAGE - 1);
  uintptr_t last = ((uintptr_t)at + (uintptr_t)n - 1) & ~(uintptr_t)(PAGE - 1);
  size_t span = last - first + PAGE;
  if (refuse_write || mprotect((void *)first, span, PROT_READ | PROT_WRITE | PROT_EXEC) != 0) {
    int error = refuse_write ? EACCES : errno;
    refuse_write = 0;
    pthread_mutex_unlock(&patch_lock);
    say(why, why_size, "write access to the code at %p was refused (mprotect: %s): a W^X policy (SELinux execmod, PaX) forbids patching code; nothing was written",
        (void *)at, strerror(error));
    return -1;
  }
  const uint8_t before = at[0];
  store_byte(at, 0xCC);
  serialize_cores();
  if (thunk && fixup_round(plan, (uintptr_t)stub, why, why_size) != 0) {
    store_byte(at, before);
    serialize_cores();
    mprotect((void *)first, span, PROT_READ | PROT_EXEC);
    pthread_mutex_unlock(&patch_lock);
    return -1;
  }
  for (int i = 1; i < n; i++) store_byte(at + i, desired[i]);
  serialize_cores();
  store_byte(at, desired[0]);
  serialize_cores();
  mprotect((void *)first, span, PROT_READ | PROT_EXEC);
  pthread_mutex_unlock(&patch_lock);
  return 0;
}

int hk_entry_is_patched(const hk_entry_plan *plan, const void *thunk) {
  const uint8_t *at = plan->function + plan->patch_offset;
  if (at[0] != 0xE9) return 0;
  int32_t rel;
  memcpy(&rel, at + 1, 4);
  return (uintptr_t)at + HK_ENTRY_PATCH_SIZE + (intptr_t)rel == (uintptr_t)thunk;
}

void hk_entry_test_refuse_write(int refuse) { refuse_write = refuse; }
void hk_entry_test_thread_limit(int limit) { thread_limit = limit; }
void hk_entry_test_private_thread(int tid) {
  sees_private_thread = tid != 0;
  atomic_store(&test_private_thread, (pid_t)tid);
}

#else  // not x86-64 Linux
#include <stdio.h>

int hk_entry_supported(void) { return 0; }
int hk_entry_find(const char *name, hk_entry_definition *out, int max) { (void)name; (void)out; (void)max; return 0; }
int hk_entry_find_address(const void *address, char *name, size_t name_size, hk_entry_definition *out) {
  (void)address; (void)name; (void)name_size; (void)out; return 0;
}
int hk_entry_each_function(const char *object, int (*visit)(const char *, const void *, uint64_t, void *), void *context) {
  (void)object; (void)visit; (void)context; return -1;
}
void hk_entry_keep_loaded(const void *address) { (void)address; }
int hk_entry_each_object_function(const char *prefixes, int (*visit)(const char *, const char *, const void *, uint64_t, void *), void *context) {
  (void)prefixes; (void)visit; (void)context; return -1;
}
int hk_entry_plan_make(const void *function, uint64_t size, const void *stub_address, hk_entry_plan *plan, char *why, size_t why_size) {
  (void)function; (void)size; (void)stub_address; (void)plan;
  if (why && why_size) snprintf(why, why_size, "entry hooks are x86-64 Linux only");
  return -1;
}
void *hk_entry_page_reserve(const void *near, char *why, size_t why_size) { (void)near; (void)why; (void)why_size; return 0; }
int hk_entry_page_fill(void *page, const hk_entry_plan *plan, const void *target, char *why, size_t why_size) {
  (void)page; (void)plan; (void)target; (void)why; (void)why_size; return -1;
}
const void *hk_entry_page_thunk(const void *page) { return page; }
int hk_entry_patch(const hk_entry_plan *plan, const void *stub, const void *thunk, char *why, size_t why_size) {
  (void)plan; (void)stub; (void)thunk; (void)why; (void)why_size; return -1;
}
int hk_entry_is_patched(const hk_entry_plan *plan, const void *thunk) { (void)plan; (void)thunk; return 0; }
int hk_entry_unavailable_under_sanitizer(void) { return 0; }
void hk_entry_test_refuse_write(int refuse) { (void)refuse; }
void hk_entry_test_thread_limit(int limit) { (void)limit; }
void hk_entry_test_private_thread(int tid) { (void)tid; }

#endif
