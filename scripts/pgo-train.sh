#!/usr/bin/env bash
# scripts/pgo-train.sh BUILD_DIR: the training run of a profile-feedback build
# (scripts/build.sh, step 2). Runs the instrumented programs of BUILD_DIR on traffic that
# exercises the packet path the way it is used:
#   - insert-pipeline-bench, both workload shapes (small messages one at a time; long
#     messages interleaved at line rate), 1 and 2 workers, at sizes that take seconds;
#   - insert-dp replay, 1 and 2 workers, over captures insert-gen makes of every built-in
#     scenario (losses, reordering, congestion, pairing, IPv6, malformed frames, ...) and
#     of the stress scenario files, so that retransmission, reordering and NAK handling
#     are counted too, not only the benchmark's clean traffic;
#   - insert-correlate (when built) over each scenario's wire records, and its benchmark's
#     run (host and wire records of 1,024 QPs, every message joined; 100 messages a QP) in
#     one and two threads: the line scan, the record readers, the join and the writers.
# Each program writes its counts (*.gcda) next to its objects when it exits.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:?usage: pgo-train.sh BUILD_DIR}
gen=$build/bench/gen/insert-gen
dp=$build/dataplane/tools/insert-dp
bench=$build/bench/micro/insert-pipeline-bench
correlate=$build/correlator/insert-correlate
correlate_bench=$build/bench/correlate/insert-correlate-bench
work=$(mktemp -d /tmp/insert-pgo.XXXXXX)
trap 'rm -rf "$work"' EXIT

started=$SECONDS
echo "pgo-train: the pipeline benchmark's workloads"
"$bench" --endpoints 1000,20000 --workers 1,2 --repeat 1 >/dev/null
"$bench" --endpoints 1000,20000 --workers 1,2 --repeat 1 \
    --message-packets 64 --active 64 --messages-per-endpoint 8 >/dev/null

echo "pgo-train: insert-dp replay over insert-gen's scenarios"
for scenario in $("$gen" --list-scenarios) "$root"/bench/gen/scenarios/stress_*.json; do
    extra=()
    [ "$scenario" = large ] && extra=(--qps 20000 --packets 200000)
    name=$(basename "$scenario" .json)
    "$gen" --scenario "$scenario" --seed 1 "${extra[@]}" --quiet \
        --out "$work/$name.pcap" --truth "$work/$name.truth.json"
    for workers in 1 2; do
        "$dp" replay "$work/$name.pcap" --workers "$workers" --quiet \
            --records "$work/$name.jsonl" >/dev/null 2>&1
    done
    if [ -x "$correlate" ]; then
        "$correlate" "$work/$name.jsonl" --quiet --records /dev/null
    fi
done

if [ -x "$correlate_bench" ]; then
    echo "pgo-train: insert-correlate's benchmark run"
    INSERT_CORRELATE_BENCH_MSGS=100 "$correlate_bench" --benchmark_filter='BM_CorrelateRun/[12]/' \
        --benchmark_min_time=0.01 >/dev/null
fi
echo "pgo-train: done in $((SECONDS - started)) s"
