#!/usr/bin/env bash
# scripts/fuzz.sh [SECONDS] [TARGET...]
# Builds libFuzzer targets (tests/fuzz/TARGET_fuzz.cpp) with clang++ and
# -fsanitize=fuzzer,address,undefined, then runs each for SECONDS / number-of-targets
# seconds, seeded from pcaps/. Exits non-zero if any target finds a crash, a leak, a
# sanitizer report or a timeout; the reproducer is left in $INSERT_FUZZ_DIR/artifacts/.
#
# Targets: proto (parser + ICRC), capture (pcap/pcapng reader), state (state engine),
# workers (multi-source traffic to shared QPs through 1 and 2-4 engines sharded as replay
# shards: the records must be the same, SPEC invariant 1).
# Default: every target whose tests/fuzz/TARGET_fuzz.cpp exists. 60 s default.
# The project builds with g++; the fuzzers are compiled here, directly, because libFuzzer
# and its sanitizer runtime come with clang (libclang-rt-14-dev).
#   scripts/fuzz.sh              # 60 s over the default targets (`meson test`: 40 s)
#   scripts/fuzz.sh 3600 proto   # an hour on the parser
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-60}
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    targets=(proto capture)
    for t in state workers; do
        [ -f "$root/tests/fuzz/${t}_fuzz.cpp" ] && targets+=("$t")
    done
fi
out=${INSERT_FUZZ_DIR:-$root/build-fuzz}
cxx=${FUZZ_CXX:-clang++}
mkdir -p "$out/artifacts"

if ! command -v "$cxx" >/dev/null; then
    echo "fuzz.sh: $cxx not found (scripts/setup.sh installs clang)" >&2
    exit 1
fi

# Generated headers (dataplane/common/version.hpp) live in a meson build directory:
# $INSERT_BUILD_ROOT (meson test sets it), else build/.
gen=${INSERT_BUILD_ROOT:-$root/build}
if [ ! -f "$gen/dataplane/common/version.hpp" ]; then
    echo "fuzz.sh: $gen/dataplane/common/version.hpp missing: build first (scripts/build.sh)" >&2
    exit 1
fi
flags=(-std=c++20 -O1 -g -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined
       -fno-sanitize-recover=undefined -I"$root" -I"$gen")
proto_sources=("$root"/dataplane/proto/*.cpp "$root"/dataplane/capture/*.cpp)

# Seed corpora: single frames for the parser, whole files for the capture reader.
seeds="$out/seeds"
if [ ! -d "$seeds/frames" ] || [ -n "$(find "$root/pcaps" -newer "$seeds/frames" -name '*.pcap*')" ]; then
    rm -rf "$seeds"
    mkdir -p "$seeds/frames" "$seeds/files"
    cp "$root"/pcaps/*.pcap* "$seeds/files/"
    python3 - "$seeds/frames" "$root"/pcaps/*.pcap* <<'PY'
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(sys.argv[2])), "..",
                                "tests", "differential"))
from decode_vs_tshark import read_capture
out = sys.argv[1]
n = 0
for path in sys.argv[2:]:
    for frame in read_capture(path):
        with open(os.path.join(out, f"frame{n:05d}"), "wb") as f:
            f.write(frame)
        n += 1
PY
fi

# Objects shared by every target: compiled once, again only when a source or header of
# dataplane/ changed since (a header change may affect any object).
obj="$out/obj"
stamp="$obj/.stamp"
if [ ! -f "$stamp" ] || [ -n "$(find "$root/dataplane" "$root/tests/fuzz" -newer "$stamp" \( -name '*.cpp' -o -name '*.hpp' \) | head -1)" ]; then
    rm -rf "$obj"
    mkdir -p "$obj"
fi
compile() {  # compile SRC: prints the object path
    local src=$1 o
    o="$obj/$(echo "${src#"$root"/}" | tr / _).o"
    if [ ! -f "$o" ]; then
        echo "fuzz.sh: compiling ${src#"$root"/}" >&2
        "$cxx" "${flags[@]}" -c "$src" -o "$o"
    fi
    echo "$o"
}

# The sources of a target, one path a line (its own file first).
target_sources() {
    printf '%s\n' "$root/tests/fuzz/$1_fuzz.cpp" "${proto_sources[@]}"
    case "$1" in
        state) printf '%s\n' "$root"/dataplane/state/*.cpp ;;
        workers) printf '%s\n' "$root"/dataplane/state/*.cpp "$root"/dataplane/export/*.cpp \
                     "$root"/dataplane/pipeline/shard.cpp ;;
    esac
}

# Every object first, on every CPU (sanitized objects are slow to compile; a failure shows
# again, with its message, when the loop below compiles what is missing).
for t in "${targets[@]}"; do
    [ -f "$root/tests/fuzz/${t}_fuzz.cpp" ] || { echo "fuzz.sh: no target $t" >&2; exit 2; }
done
mapfile -t all_sources < <(for t in "${targets[@]}"; do target_sources "$t"; done | sort -u)
for s in "${all_sources[@]}"; do
    while [ "$(jobs -rp | wc -l)" -ge "$(nproc)" ]; do wait -n || true; done
    compile "$s" >/dev/null &
done
wait
touch "$stamp"  # the objects are as new as the sources now (a missing one is made below)

per_target=$(( seconds / ${#targets[@]} ))
[ "$per_target" -lt 1 ] && per_target=1
status=0
for t in "${targets[@]}"; do
    seed="$seeds/frames"
    libs=(-lz)
    case "$t" in
        capture) seed="$seeds/files" ;;
        state) seed="" ;;
        workers) libs+=(-lfmt); seed="" ;;
    esac
    objects=()
    mapfile -t sources < <(target_sources "$t")
    for s in "${sources[@]}"; do objects+=("$(compile "$s")"); done
    bin="$out/${t}_fuzz"
    "$cxx" "${flags[@]}" "${objects[@]}" "${libs[@]}" -o "$bin"
    corpus="$out/corpus/$t"
    mkdir -p "$corpus"
    echo "fuzz.sh: running $t for ${per_target}s"
    if ! "$bin" -max_total_time="$per_target" -timeout=10 -rss_limit_mb=2048 \
            -print_final_stats=1 -artifact_prefix="$out/artifacts/${t}-" \
            "$corpus" ${seed:+"$seed"} >"$out/$t.log" 2>&1; then
        echo "fuzz.sh: $t FAILED (log: $out/$t.log)" >&2
        tail -40 "$out/$t.log" >&2
        status=1
    else
        grep -E '^stat::number_of_executed_units|Done [0-9]+ runs' "$out/$t.log" | tail -1 || true
        echo "fuzz.sh: $t ok"
    fi
done
exit $status
