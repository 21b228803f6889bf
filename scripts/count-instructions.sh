#!/usr/bin/env bash
# scripts/count-instructions.sh [line|small] [BENCH_BINARY]: instructions and simulated
# branch mispredictions per frame inside a pipeline worker, counted by valgrind's callgrind.
#
# Why: this machine's speed drifts by a third from minute to minute, so two builds timed
# minutes apart cannot be compared closely; an instruction count is the same on every run of
# the same binary and input, whatever else the machine is doing. It says nothing about cache
# misses - time both builds too (docs/performance.md, "The machine's two speeds") - but the
# worker's per-packet path is mostly instruction-bound once its state is cached
# (docs/performance.md, "Instructions per frame").
#
# Without BENCH_BINARY it builds insert-pipeline-bench in build-valgrind/ (no profile
# feedback; -march=x86-64-v3, as valgrind 3.19 does not decode AVX-512) and counts that.
# The workload is small (1000 endpoints) so that the run takes ~20-40 s under valgrind:
#   line   messages of up to 64 packets, 64 on the wire at once (~0.9M frames)
#   small  the default shape, small messages one at a time (~0.3M frames)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
shape=${1:-line}
bench=${2:-}
command -v valgrind >/dev/null || { echo "count-instructions: needs valgrind" >&2; exit 2; }
case "$shape" in
    line) args=(--endpoints 1000 --message-packets 64 --active 64 --messages-per-endpoint 40) ;;
    small) args=(--endpoints 1000 --messages-per-endpoint 100) ;;
    *) echo "count-instructions: shape must be line or small, not '$shape'" >&2; exit 2 ;;
esac

if [ -z "$bench" ]; then
    build=$root/build-valgrind
    if [ ! -f "$build/build.ninja" ]; then
        meson setup "$build" "$root" -Db_pgo=off -Dfuzz=disabled -Dmarch=x86-64-v3 >/dev/null
    fi
    ninja -C "$build" bench/micro/insert-pipeline-bench >/dev/null
    bench=$build/bench/micro/insert-pipeline-bench
fi

work=$(mktemp -d /tmp/insert-count.XXXXXX)
trap 'rm -rf "$work"' EXIT
# Only what runs inside a worker lcore is counted, not building the workload.
valgrind --tool=callgrind --branch-sim=yes --toggle-collect='insert::pipeline::worker_main*' \
    --callgrind-out-file="$work/callgrind.out" "$bench" "${args[@]}" --workers 1 --repeat 1 \
    -- --no-huge --no-pci -m 512 --file-prefix "count$$" >"$work/run.log" 2>&1 || {
    tail -20 "$work/run.log" >&2
    exit 1
}
frames=$(awk '$1 ~ /^[0-9]+$/ && NF >= 7 {f = $3} END {print f}' "$work/run.log")
instr=$(sed -n 's/.*I *refs: *//p' "$work/run.log" | tr -d ,)
mispred=$(sed -n 's/.*Mispredicts: *\([0-9,]*\).*/\1/p' "$work/run.log" | tr -d ,)
echo "$shape: $frames frames, $(awk -v i="$instr" -v f="$frames" 'BEGIN {printf "%.1f", i / f}') instructions" \
    "and $(awk -v m="$mispred" -v f="$frames" 'BEGIN {printf "%.2f", m / f}') branch mispredictions a frame"
echo "per frame, by function (self):"
callgrind_annotate --auto=no --show-percs=no "$work/callgrind.out" 2>/dev/null |
    awk -v f="$frames" '$1 ~ /^[0-9,]+$/ && NF >= 2 && !/PROGRAM TOTALS/ {
        n = $1; gsub(",", "", n); name = $0
        sub(/^( *([0-9,]+|\.))+ +/, "", name)         # the event columns
        sub(/^[^:]*:/, "", name)                         # the file
        gsub(/\(anonymous namespace\)/, "{anon}", name)
        sub(/\(.*/, "", name)                            # the parameter list
        sum[name] += n } END { for (k in sum) if (sum[k] / f >= 2) printf "%8.1f  %s\n", sum[k] / f, k }' |
    sort -rn | head -20
