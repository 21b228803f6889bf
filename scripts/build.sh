#!/usr/bin/env bash
# scripts/build.sh [BUILD_DIR]: configures and builds everything (default build/) with
# profile feedback (GCC -fprofile-use, meson's b_pgo), in three steps:
#   1. the programs that run the packet path - insert-pipeline-bench, insert-dp and
#      insert-gen - and insert-correlate with its benchmark built instrumented
#      (b_pgo=generate);
#   2. scripts/pgo-train.sh runs them on training traffic (the benchmark's two workload
#      shapes at small sizes, and insert-dp replay over insert-gen's impairment scenarios),
#      which writes the branch and call counts next to their objects (*.gcda);
#   3. everything rebuilt with those counts (b_pgo=use).
# The state engine's per-packet path is branchy code whose common case the compiler cannot
# guess; with the counts it lays the common case out straight. Measured: +8-15% packets per
# second per worker on line-rate traffic, +3% on small messages (docs/performance.md,
# "Profile feedback").
# Paths the training never ran keep their ordinary optimization (-fprofile-partial-training,
# meson.build). INSERT_PGO=off builds without any of this (b_pgo=off), in one step.
# Either way with link-time optimization (b_lto): the packet path inlined across files,
# ~14% fewer instructions a packet (docs/performance.md, "Link-time optimization");
# INSERT_LTO=off builds without it (scripts/test.sh: both change speed, not behaviour, and
# cost half the build).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build=${1:-${INSERT_BUILD_DIR:-build}}

# meson 1.0's `setup --reconfigure` ignores -D for base options such as b_pgo; `configure`
# applies them (ninja then regenerates the build files).
configure() {
    if [ -f "$build/build.ninja" ]; then
        meson configure "$build" "$@"
    else
        meson setup "$build" "$@"
    fi
}

# Link-time optimization (b_lto) is a default of meson.build, which a build directory
# configured before it was does not take: it is set here with every configure.
lto=true
[ "${INSERT_LTO:-on}" = off ] && lto=false
if [ "${INSERT_PGO:-on}" = off ]; then
    configure -Db_lto=$lto -Db_pgo=off
    ninja -C "$build"
    exit 0
fi

configure -Db_lto=$lto -Db_pgo=generate
# Counts from an earlier training would be added to the new ones (gcov merges): start over.
find "$build" -name '*.gcda' -delete
trained=(bench/micro/insert-pipeline-bench dataplane/tools/insert-dp bench/gen/insert-gen)
# insert-correlate and its benchmark, where their dependencies were found: the line scan
# and the join are branchy code too (one thread ~17% faster with counts, docs/performance.md,
# "Profile feedback").
for optional in correlator/insert-correlate bench/correlate/insert-correlate-bench; do
    if ninja -C "$build" -t targets all | grep -q "^$optional:"; then trained+=("$optional"); fi
done
ninja -C "$build" "${trained[@]}"
scripts/pgo-train.sh "$build"
configure -Db_lto=$lto -Db_pgo=use
ninja -C "$build"
