#!/usr/bin/env bash
# SPEC invariants 1 and 3: every built-in insert-gen scenario (small seeds) and every
# scenario file in bench/gen/scenarios/, replayed by `insert-dp replay` with 1 and 2
# workers, gives exactly the generator's ground truth (messages, latencies, counters,
# pairing, summary), and both worker counts agree.
# Usage: ground_truth_test.sh BUILD_ROOT SOURCE_ROOT [SEED | SCENARIO:SEED ...]
#   SEED: every scenario with that seed; SCENARIO:SEED (a built-in name or a file name under
#   bench/gen/scenarios/, without .json): that scenario only (a seed that once showed a
#   defect in it).
set -euo pipefail
build=$1
src=$2
shift 2
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(1 2 3)
gen=$build/bench/gen/insert-gen
dp=$build/dataplane/tools/insert-dp
compare=$src/tests/integration/compare_records.py
work=$(mktemp -d /tmp/insert-truth.XXXXXX)
trap 'rm -rf "$work"' EXIT

failed=0
passed=0
# The runs, as "scenario seed" lines: every scenario for a plain seed, one for SCENARIO:SEED.
scenarios=($("$gen" --list-scenarios) "$src"/bench/gen/scenarios/*.json)
runs=()
for arg in "${args[@]}"; do
    if [[ $arg == *:* ]]; then
        name=${arg%%:*}
        [ -f "$src/bench/gen/scenarios/$name.json" ] && name=$src/bench/gen/scenarios/$name.json
        runs+=("$name ${arg##*:}")
    else
        for scenario in "${scenarios[@]}"; do runs+=("$scenario $arg"); done
    fi
done

for run in "${runs[@]}"; do
    read -r scenario seed <<<"$run"
    extra=()
    # The benchmark scenario, scaled down to test size.
    [ "$scenario" = large ] && extra=(--qps 2000 --packets 20000)
    base=$work/$(basename "$scenario" .json).$seed
    "$gen" --scenario "$scenario" --seed "$seed" "${extra[@]}" --out "$base.pcap" \
        --truth "$base.truth.json" >/dev/null
    for workers in 1 2; do
        "$dp" replay "$base.pcap" --workers "$workers" --quiet \
            --records "$base.w$workers.jsonl" >/dev/null
        if python3 "$compare" truth "$base.w$workers.jsonl" "$base.truth.json" \
            >"$base.w$workers.diff"; then
            passed=$((passed + 1))
        else
            failed=$((failed + 1))
            echo "FAIL $scenario seed $seed workers $workers:"
            head -20 "$base.w$workers.diff"
        fi
    done
    if ! python3 "$compare" same "$base.w1.jsonl" "$base.w2.jsonl" >"$base.same.diff"; then
        failed=$((failed + 1))
        echo "FAIL $scenario seed $seed: 1 and 2 workers differ"
        head -20 "$base.same.diff"
    else
        passed=$((passed + 1))
    fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
