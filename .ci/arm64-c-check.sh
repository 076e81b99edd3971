#!/usr/bin/env bash
# The C modules compile for arm64 Linux (syntax and types, against Debian's
# aarch64 C library headers: libc6-dev-arm64-cross), so that their
# architecture fences (#if __x86_64__ ... #else) keep building where the
# package is not run: entry hooks, import slots and hook-trace refuse at run
# time there. CFFIShim is left out: it needs an aarch64 <ffi.h>. The Swift
# code's `#if arch` branches are not compiled here: the toolchain ships the
# x86-64 standard library only.
set -euo pipefail
cd "$(dirname "$0")/.."
sysroot=/usr/aarch64-linux-gnu
[ -d "$sysroot/include" ] || { echo "arm64-c-check: $sysroot/include is missing (apt-get install libc6-dev-arm64-cross)"; exit 1; }
status=0
for file in Sources/CHookThreads/HookThreads.c Sources/CImportSlots/ImportSlots.c Sources/CEntryHooks/EntryHooks.c \
            Sources/CHookBindThread/HookBindThread.c Sources/CHookTrace/HookTrace.c Sources/HookTraceLauncher/main.c; do
  include="$(dirname "$file")/include"
  # (CHookBindThread includes CHookThreads.h: its dependency.)
  if ! clang --target=aarch64-linux-gnu --sysroot="$sysroot" -isystem "$sysroot/include" -I"$include" -ISources/CHookThreads/include \
       -Wall -Werror -fsyntax-only "$file"; then
    echo "arm64-c-check: $file does not compile for aarch64"
    status=1
  fi
done
[ "$status" = 0 ] && echo "arm64-c-check: the C modules compile for aarch64"
exit "$status"
