// CHookTrace: the library `hook-trace` preloads (libHookTrace.so). Loaded
// into a program (LD_PRELOAD), it reads its settings from the environment the
// launcher sets, points the matching functions at a tracing stub (their
// entries through CEntryHooks, or their import slots through CImportSlots),
// and writes a line per call, or a summary at exit. x86-64 Linux only.
//
// The environment (set by the `hook-trace` launcher; documented in the README):
//   HOOK_TRACE_PATTERNS        symbol patterns (fnmatch globs) joined by '+'; unset: every import
//   HOOK_TRACE_SUMMARY=1       count and time calls, print a table at exit (`-c`)
//   HOOK_TRACE_OUTPUT=FILE     append there instead of writing to standard error (`-o`)
//   HOOK_TRACE_FD=N            without -o: the launcher's stderr, copied at N (>= 1000), so
//                              that a program's own redirection of its fd 2 keeps the trace out
//   HOOK_TRACE_LIBRARY_CALLS=1 import slots only: calls from one object to another (`-L`)
#ifndef CHOOKTRACE_H
#define CHOOKTRACE_H
#include <stddef.h>

// Writes out what this process has traced so far: every thread's buffered
// lines (the summary is written at exit). Called before exec and _exit.
void hook_trace_flush(void);

// The number of functions being traced (0 before the library has started, or
// when it is not loaded through the launcher's environment).
size_t hook_trace_function_count(void);

#endif
