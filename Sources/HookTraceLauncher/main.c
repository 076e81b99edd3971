// hook-trace: runs a program with libHookTrace.so preloaded, which prints the
// program's calls of the functions named by the patterns (or, with -c, a
// summary table at exit). Checks what it is given first: a bad pattern, a
// program that cannot be run and an output file that cannot be written each
// end it with a message and a non-zero status before the program starts.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <elf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static const char usage[] =
    "usage: hook-trace [-e PATTERN]... [-c] [-L] [-o FILE] [--] PROGRAM [ARGUMENT]...\n"
    "  -e PATTERN  trace the functions whose symbol matches PATTERN, a glob (str*, sqlite3_*);\n"
    "              several joined by '+' (strdup+strlen+free) or given as several -e;\n"
    "              default: every function the program imports\n"
    "  -c          count and time the calls; print a table at exit instead of each call\n"
    "  -L          library calls only: take calls at the import slots (calls from one object\n"
    "              to another, as ltrace does), not at the functions' entries\n"
    "  -o FILE     write the trace to FILE instead of standard error (emptied first; the\n"
    "              program's children that are traced add to it)\n"
    "  -h, --help  print this\n"
    "Exit status: the program's own (128 + N if signal N ended it); 2 for bad input;\n"
    "126 if the program cannot be run, 127 if it is not found.\n";

// A pattern names symbols: letters, digits, '_', '$', '.', '@' and the glob
// characters '*', '?', '[...]'.
static int check_pattern(const char *pattern) {
  if (*pattern == 0) {
    fprintf(stderr, "hook-trace: an empty pattern (-e ''): name a symbol or a glob such as 'str*'\n");
    return 0;
  }
  int open_bracket = 0;
  for (const char *c = pattern; *c; c++) {
    if (*c == '[') {
      if (open_bracket) {
        fprintf(stderr, "hook-trace: bad pattern '%s': '[' inside '[...]'\n", pattern);
        return 0;
      }
      open_bracket = 1;
    } else if (*c == ']') {
      if (!open_bracket) {
        fprintf(stderr, "hook-trace: bad pattern '%s': ']' without '['\n", pattern);
        return 0;
      }
      open_bracket = 0;
    } else if ((*c == '-' || *c == '!') && !open_bracket) {
      // (A range or a negation inside '[...]' only: no symbol has either,
      // and `-e -c` took the option for a pattern that matched nothing.)
      fprintf(stderr, "hook-trace: bad pattern '%s': '%c' is part of a glob only inside '[...]'\n", pattern, *c);
      return 0;
    } else if (!(*c == '_' || *c == '$' || *c == '.' || *c == '@' || *c == '*' || *c == '?' || *c == '!' ||
                 *c == '-' || (*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z'))) {
      fprintf(stderr, "hook-trace: bad pattern '%s': '%c' is not part of a symbol name or a glob\n", pattern, *c);
      return 0;
    }
  }
  if (open_bracket) {
    fprintf(stderr, "hook-trace: bad pattern '%s': '[' is never closed\n", pattern);
    return 0;
  }
  return 1;
}

// Whether the file at `path` names Swift's runtime library (a Swift program
// linked with it: its dynamic section's strings hold the name).
static int names_swift_runtime(const char *path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  struct stat st;
  int found = 0;
  if (fstat(fd, &st) == 0 && st.st_size > 0) {
    void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map != MAP_FAILED) {
      found = memmem(map, (size_t)st.st_size, "libswiftCore.so", 15) != NULL;
      munmap(map, (size_t)st.st_size);
    }
  }
  close(fd);
  return found;
}

// Whether the file at `path` is an ELF program with no interpreter
// (PT_INTERP): statically linked, so no LD_PRELOAD reaches it (it ran
// untraced, without a word). Anything else (a script, a dynamic program,
// a file it cannot read) is not.
static int is_static_elf(const char *path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  int result = 0;
  Elf64_Ehdr header;
  if (pread(fd, &header, sizeof header, 0) == (ssize_t)sizeof header && memcmp(header.e_ident, ELFMAG, SELFMAG) == 0 &&
      header.e_ident[EI_CLASS] == ELFCLASS64 && (header.e_type == ET_EXEC || header.e_type == ET_DYN) &&
      header.e_phentsize == sizeof(Elf64_Phdr) && header.e_phnum > 0) {
    result = 1;
    for (int k = 0; k < header.e_phnum; k++) {
      Elf64_Phdr segment;
      if (pread(fd, &segment, sizeof segment, (off_t)(header.e_phoff + (Elf64_Off)k * sizeof segment)) != (ssize_t)sizeof segment) {
        result = 0;
        break;
      }
      if (segment.p_type == PT_INTERP) {
        result = 0;
        break;
      }
    }
    // (A shared library run as a program has no interpreter either, but is
    // not a program: only ET_EXEC, or ET_DYN with an entry, counts.)
    if (result && header.e_type == ET_DYN && header.e_entry == 0) result = 0;
  }
  close(fd);
  return result;
}

// The program as execvp would find it (into `found`): 0, or why not. A name
// without '/' is looked for in each entry of PATH, an empty one (leading,
// trailing or '::') meaning the current folder.
static int runnable(const char *program, char *found, size_t size) {
  if (strchr(program, '/')) {
    if ((size_t)snprintf(found, size, "%s", program) >= size) return ENAMETOOLONG;
    struct stat info;
    if (stat(program, &info) == 0 && S_ISDIR(info.st_mode)) return EISDIR;
    return access(program, X_OK) == 0 ? 0 : errno;
  }
  const char *path = getenv("PATH");
  if (path == NULL) path = "/usr/local/bin:/usr/bin:/bin";
  int error = ENOENT;
  for (const char *p = path;;) {
    const char *end = strchrnul(p, ':');
    int length = (int)(end - p);
    int n = length ? snprintf(found, size, "%.*s/%s", length, p, program) : snprintf(found, size, "./%s", program);
    struct stat info;
    if (n >= 0 && (size_t)n < size && stat(found, &info) == 0 && S_ISREG(info.st_mode)) {
      if (access(found, X_OK) == 0) return 0;
      error = EACCES;
    }
    if (*end == 0) break;
    p = end + 1;
  }
  return error;
}

int main(int argc, char **argv) {
#if !defined(__x86_64__) || !defined(__linux__)
  fprintf(stderr, "hook-trace: x86-64 Linux only (its tracing stub is x86-64 code)\n");
  return 2;
#endif
  char patterns[8192] = "";
  int summary = 0, library_calls = 0;
  const char *output = NULL;
  int i = 1;
  for (; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--") == 0) {
      i++;
      break;
    }
    if (a[0] != '-') break;
    if (strcmp(a, "-c") == 0) {
      summary = 1;
    } else if (strcmp(a, "-L") == 0) {
      library_calls = 1;
    } else if (strcmp(a, "-e") == 0 || strcmp(a, "-o") == 0) {
      if (i + 1 >= argc) {
        fprintf(stderr, "hook-trace: %s needs a value\n%s", a, usage);
        return 2;
      }
      const char *value = argv[++i];
      if (a[1] == 'o') {
        output = value;
        continue;
      }
      // One pattern or several joined by '+'.
      char copy[4096];
      if (strlen(value) >= sizeof copy) {
        fprintf(stderr, "hook-trace: a pattern of %zu characters is too long\n", strlen(value));
        return 2;
      }
      snprintf(copy, sizeof copy, "%s", value);
      // Nothing but '+' (or nothing) names no pattern, and no pattern at all
      // would mean every function: the opposite of what was asked.
      if (copy[strspn(copy, "+")] == 0) {
        fprintf(stderr, "hook-trace: an empty pattern (-e '%s'): name a symbol or a glob such as 'str*'\n", copy);
        return 2;
      }
      char *save = NULL;
      for (char *p = strtok_r(copy, "+", &save); p; p = strtok_r(NULL, "+", &save)) {
        if (!check_pattern(p)) return 2;
        if (strlen(patterns) + strlen(p) + 2 >= sizeof patterns) {
          fprintf(stderr, "hook-trace: too many patterns\n");
          return 2;
        }
        if (*patterns) strcat(patterns, "+");
        strcat(patterns, p);
      }
    } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      fputs(usage, stdout);
      return 0;
    } else {
      fprintf(stderr, "hook-trace: unknown option '%s'\n%s", a, usage);
      return 2;
    }
  }
  if (i >= argc) {
    fprintf(stderr, "hook-trace: no program to run\n%s", usage);
    return 2;
  }
  const char *program = argv[i];
  char found[PATH_MAX];
  int error = runnable(program, found, sizeof found);
  if (error) {
    // As a shell: 127 for a program not found, 126 for one found that
    // cannot be run (a directory, no permission).
    fprintf(stderr, "hook-trace: cannot run '%s': %s\n", program, strerror(error));
    return error == ENOENT || error == ENOTDIR || error == ENAMETOOLONG ? 127 : 126;
  }
  if (is_static_elf(found)) {
    fprintf(stderr, "hook-trace: '%s' is statically linked: nothing can be preloaded into it, so none of its calls can be traced\n",
            program);
    return 2;
  }

  // The library beside this executable (or HOOK_TRACE_LIBRARY, made
  // absolute: a child that changes its folder still finds it).
  char library[PATH_MAX];
  const char *given = getenv("HOOK_TRACE_LIBRARY");
  if (given && *given && *given != '/') {
    if (!realpath(given, library)) {
      fprintf(stderr, "hook-trace: cannot read its library '%s': %s (build it: swift build --product HookTrace)\n",
              given, strerror(errno));
      return 2;
    }
  } else if (given && *given) {
    if (strlen(given) >= sizeof library) {
      fprintf(stderr, "hook-trace: the library path '%s' is too long\n", given);
      return 2;
    }
    snprintf(library, sizeof library, "%s", given);
  } else {
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
      fprintf(stderr, "hook-trace: cannot find its own path: %s\n", strerror(errno));
      return 2;
    }
    self[n] = 0;
    if ((size_t)snprintf(library, sizeof library, "%s/libHookTrace.so", dirname(self)) >= sizeof library) {
      fprintf(stderr, "hook-trace: the library path '%s/libHookTrace.so' is too long\n", self);
      return 2;
    }
  }
  if (access(library, R_OK) != 0) {
    fprintf(stderr, "hook-trace: cannot read its library '%s': %s (build it: swift build --product HookTrace)\n",
            library, strerror(errno));
    return 2;
  }
  // ld.so splits LD_PRELOAD at spaces and colons, with no escape: such a
  // path would be dropped ("cannot be preloaded ... ignored") and the
  // program run untraced.
  if (strpbrk(library, " :")) {
    fprintf(stderr,
            "hook-trace: the library path '%s' has a space or ':', which LD_PRELOAD cannot carry; "
            "move it or set HOOK_TRACE_LIBRARY to a path without\n",
            library);
    return 2;
  }

  // The library is built with Swift's runtime, whose start-up installs
  // handlers of fatal signals (its backtracer): a C program traced got them
  // (a crash printed a Swift backtrace, not the program's own ending). Off,
  // unless the program is a Swift one (it names libswiftCore) or the
  // environment says otherwise.
  if (getenv("SWIFT_BACKTRACE") == NULL && !names_swift_runtime(found)) setenv("SWIFT_BACKTRACE", "enable=no", 1);

  // The library first, then what LD_PRELOAD held (whole, however long).
  const char *preload = getenv("LD_PRELOAD");
  if (preload == NULL) preload = "";
  size_t size = strlen(library) + 1 + strlen(preload) + 1;
  char *value = malloc(size);
  if (value == NULL) {
    fprintf(stderr, "hook-trace: no memory for LD_PRELOAD (%zu bytes)\n", size);
    return 2;
  }
  snprintf(value, size, "%s%s%s", library, *preload ? ":" : "", preload);
  if (setenv("LD_PRELOAD", value, 1) != 0) {
    fprintf(stderr, "hook-trace: cannot set LD_PRELOAD: %s\n", strerror(errno));
    return 2;
  }
  free(value);
  setenv("HOOK_TRACE", "1", 1);
  if (*patterns) setenv("HOOK_TRACE_PATTERNS", patterns, 1);
  else unsetenv("HOOK_TRACE_PATTERNS");
  if (summary) setenv("HOOK_TRACE_SUMMARY", "1", 1);
  else unsetenv("HOOK_TRACE_SUMMARY");
  if (library_calls) setenv("HOOK_TRACE_LIBRARY_CALLS", "1", 1);
  else unsetenv("HOOK_TRACE_LIBRARY_CALLS");
  // The trace goes to the -o file or to this stderr, through a descriptor
  // at a high number that the program inherits (HOOK_TRACE_FD): a program
  // that points its own fd 2 at a log file does not get the trace in it.
  // The file is opened here, once every check has passed (a run that
  // never started emptied it), and only once: opened here and again by
  // the library, a named pipe's reader saw the end at the first close
  // and the library's open then waited for a reader for ever. It is
  // still named (HOOK_TRACE_OUTPUT) for the program's children that do
  // not inherit the descriptor; everything appends to it.
  int copy = -1;
  if (output) {
    int fd = open(output, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) {
      fprintf(stderr, "hook-trace: cannot write the trace to '%s': %s\n", output, strerror(errno));
      return 2;
    }
    copy = fcntl(fd, F_DUPFD, 1000);
    if (copy < 0) {
      // (No descriptor free at 1000 or above: this one, passed on as it is,
      // rather than opened again by name, which a named pipe does not take.)
      fcntl(fd, F_SETFD, 0);
      copy = fd;
    } else {
      close(fd);
    }
    char absolute[PATH_MAX];
    setenv("HOOK_TRACE_OUTPUT", realpath(output, absolute) ? absolute : output, 1);
  } else {
    unsetenv("HOOK_TRACE_OUTPUT");
    copy = fcntl(2, F_DUPFD, 1000);
  }
  {
    struct stat st;
    if (copy >= 0 && fstat(copy, &st) == 0) {
      // With the file's identity: a process that inherits the setting
      // without the descriptor (a shell that system() or popen() runs,
      // started with glibc's own exec, which closes it) finds another file
      // or none at that number, and writes nothing there.
      char number[64];
      snprintf(number, sizeof number, "%d:%llu:%llu", copy, (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
      setenv("HOOK_TRACE_FD", number, 1);
    } else {
      unsetenv("HOOK_TRACE_FD");
    }
  }
  execv(found, argv + i);
  if (errno == ENOEXEC) {
    // As execvp: a file the kernel does not run (no '#!' line) is a script
    // of /bin/sh, run with its path and the arguments.
    int count = argc - i;   // the program and its arguments
    char **shell = malloc((size_t)(count + 2) * sizeof *shell);
    if (shell) {
      shell[0] = "/bin/sh";
      shell[1] = found;
      memcpy(shell + 2, argv + i + 1, (size_t)count * sizeof *shell);   // the arguments and argv's NULL
      execv(shell[0], shell);
      int shell_error = errno;
      free(shell);
      errno = shell_error;
    }
  }
  int exec_error = errno;
  fprintf(stderr, "hook-trace: cannot run '%s': %s\n", program, strerror(exec_error));
  return exec_error == ENOENT || exec_error == ENOTDIR ? 127 : 126;
}
