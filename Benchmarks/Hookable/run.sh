#!/usr/bin/env bash
# The no-hook cost of @Hookable members, optimized: builds main.swift with -O
# against the package's debug build (run `swift build` at the root first),
# whose macro plug-in expands it and whose Hook module's inlinable call path
# is optimized here. A release build of swift-syntax (about 11 minutes on two
# cores) is not needed. Usage: Benchmarks/Hookable/run.sh [iterations]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
debug="$root/.build/debug"
out="${TMPDIR:-/tmp}/hookable-overhead"
swiftc -O -module-name HookableOverhead "$root/Benchmarks/Hookable/main.swift" \
  -I "$debug/Modules" -Xcc -fmodule-map-file="$debug/CFFIShim.build/module.modulemap" -I "$root/Sources/CFFIShim/include" \
  -load-plugin-executable "$debug/HookMacrosPlugin-tool#HookMacrosPlugin" \
  "$debug"/Hook.build/*.swift.o "$debug"/CFFIShim.build/*.c.o -lffi -o "$out"
"$out" "$@"
