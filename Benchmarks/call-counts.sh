#!/bin/bash
# Instructions per call of each case under callgrind: the difference of runs of
# 10,000 and 110,000 calls, over 100,000. valgrind 3.19 cannot read this
# compiler's DWARF, so it runs a copy without debug info.
#   ./call-counts.sh [CASE ...]   (no case: all of them)
set -e
cd "$(dirname "$0")"
swift build -c release --product call-counts > /dev/null
strip --strip-debug -o /tmp/call-counts.stripped .build/release/call-counts
cases=("$@")
[ ${#cases[@]} -eq 0 ] && cases=(closure-plain closure-floor closure-none closure-after closure-typed property-idle property-after property-read property-typed c-direct c-none c-typed c-both binding observable)
count() { valgrind --tool=callgrind --callgrind-out-file=/tmp/call-counts.$1.$2.out /tmp/call-counts.stripped "$1" "$2" 2>&1 | awk '/Collected/ {print $4}'; }
for c in "${cases[@]}"; do
  small=$(count "$c" 10000); large=$(count "$c" 110000)
  echo "$c: $(( (large - small) / 100000 )) instructions per call"
done
