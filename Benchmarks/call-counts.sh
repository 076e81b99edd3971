#!/bin/bash
# Instructions per call of each case under callgrind: the difference of runs of
# 10,000 and 30,000 calls, over 20,000 (1,000 and 3,000 for the larger, 100
# and 300 for the graphs of 1,000 values).
# valgrind 3.19 cannot read this compiler's DWARF, so it runs a copy without
# debug info. Instruction counts do not move with the machine's noise, so they
# guard the hot paths in CI.
#
#   ./call-counts.sh [CASE ...]   print the counts (no case: every case)
#   ./call-counts.sh --check      every case against Thresholds/call-counts.json:
#                                 fails when one is more than 5% (and 2
#                                 instructions) above its reference
#   ./call-counts.sh --update     write the counts measured now as the references
set -e
cd "$(dirname "$0")"
thresholds=Thresholds/call-counts.json
mode=print
case "$1" in
  --check) mode=check; shift ;;
  --update) mode=update; shift ;;
esac
# A folder of this run's own: two runs at once must not share their files.
work=$(mktemp -d /tmp/call-counts.XXXXXX)
# CALL_COUNTS_KEEP=1 keeps it (callgrind's files, for callgrind_annotate).
if [ -n "${CALL_COUNTS_KEEP:-}" ]; then echo "call-counts: files in $work"; else trap 'rm -rf "$work"' EXIT; fi
swift build -c release --product call-counts > "$work/build.log" 2>&1 || { tail -20 "$work/build.log"; exit 1; }
strip --strip-debug -o "$work/call-counts" .build/release/call-counts
cases=("$@")
all=$([ ${#cases[@]} -eq 0 ] && echo yes || echo no)
[ ${#cases[@]} -eq 0 ] && cases=(closure-plain closure-floor closure-none closure-after closure-typed property-idle property-after property-read property-typed c-direct c-none c-typed c-both binding observable observable-read subscribe-1k array-1k bind-300 first-300 release-1k bag-1k diamond deep broad repeated unstable unstable-wide fan-toggle triangle mux swift-entry-plain swift-entry-none swift-entry-typed swift-entry-other)
# Swift entry cases patch code: valgrind must see the patch (--smc-check=all).
count() { valgrind --tool=callgrind $([[ "$1" == swift-entry-* ]] && echo --smc-check=all) --callgrind-out-file="$work/$1.$2.out" "$work/call-counts" "$1" "$2" 2>&1 | awk '/Collected/ {print $4}' > "$work/$1.$2.count"; }
export -f count
export work
: > "$work/measured"
# The graph's larger shapes (over 10,000 instructions a call) are counted over
# 2,000 calls (1,000 and 3,000), the rest over 20,000: the same figure, in a
# tenth of the time under callgrind. (Counts are exact, so 20,000 calls give
# the figure 100,000 did, to within one instruction of rounding, in about a
# third of valgrind's time.)
base() { case "$1" in unstable-wide|fan-toggle|bind-300|first-300|release-1k|bag-1k) echo 100 ;; deep|broad|mux|subscribe-1k|array-1k) echo 1000 ;; *) echo 10000 ;; esac; }
# Each run is one process under valgrind, which uses one core: as many at once
# as there are cores (CALL_COUNTS_JOBS to choose). Counts do not depend on it.
for c in "${cases[@]}"; do b=$(base "$c"); echo "$c $b"; echo "$c $((b * 3))"; done |
  xargs -P "${CALL_COUNTS_JOBS:-$(nproc)}" -n 2 bash -c 'count "$0" "$1"'
for c in "${cases[@]}"; do
  b=$(base "$c")
  small=$(cat "$work/$c.$b.count"); large=$(cat "$work/$c.$((b * 3)).count")
  [ -n "$small" ] && [ -n "$large" ] || { echo "call-counts: $c did not run under valgrind"; exit 1; }
  per=$(( (large - small) / (b * 2) ))
  echo "$c $per" >> "$work/measured"
  [ "$mode" = print ] && echo "$c: $per instructions per call"
done
[ "$mode" = print ] && exit 0
python3 - "$mode" "$thresholds" "$work/measured" "$all" <<'PY'
import json, sys
mode, path, measured_path, all_cases = sys.argv[1:5]
measured = {}
for line in open(measured_path):
    name, count = line.split()
    measured[name] = int(count)
if mode == "update":
    if all_cases != "yes":
        measured = {**json.load(open(path)), **measured}
    json.dump(measured, open(path, "w"), indent=2, sort_keys=True)
    open(path, "a").write("\n")
    print(f"call-counts: wrote {len(measured)} references to {path}")
    sys.exit(0)
references = json.load(open(path))
failed = []
print("| case | reference | now | limit |")
print("| --- | ---: | ---: | ---: |")
for name, count in measured.items():
    reference = references.get(name)
    if reference is None:
        failed.append(f"{name}: no reference in {path} (run call-counts.sh --update)")
        continue
    limit = max(int(reference * 1.05), reference + 2)
    print(f"| {name} | {reference} | {count} | {limit} |")
    if count > limit:
        failed.append(f"{name}: {count} instructions per call, reference {reference}, limit {limit}")
for name in references:
    if all_cases == "yes" and name not in measured:
        failed.append(f"{name}: in {path} but not measured")
if failed:
    print("call-counts: regressions (a faster path: lower its reference with --update in the same commit):")
    for line in failed:
        print("  " + line)
    sys.exit(1)
print(f"call-counts: {len(measured)} cases within 5% of their references")
PY
