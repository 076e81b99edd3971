#!/usr/bin/env bash
# The no-hook cost of @Hookable members, optimized: builds main.swift with -O
# against a release build of the Hook target alone and the macro plug-in of
# the package's debug build (a release build of swift-syntax, about 11
# minutes on two cores, is not needed). From the package root:
#   swift build --target HookMacrosPlugin && swift build -c release --target Hook
#   Benchmarks/Hookable/run.sh [iterations]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
debug="$root/.build/debug"
release="$root/.build/release"
out="${TMPDIR:-/tmp}/hookable-overhead"
swiftc -O -module-name HookableOverhead "$root/Benchmarks/Hookable/main.swift" \
  -I "$release/Modules" -I "$debug/Modules" -Xcc -fmodule-map-file="$release/CFFIShim.build/module.modulemap" -I "$root/Sources/CFFIShim/include" \
  -load-plugin-executable "$debug/HookMacrosPlugin-tool#HookMacrosPlugin" \
  "$release"/Hook.build/*.swift.o "$release"/CFFIShim.build/*.c.o -lffi -o "$out"
"$out" "$@"
