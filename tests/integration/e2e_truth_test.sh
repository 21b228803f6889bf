#!/usr/bin/env bash
# The correlator's end-to-end test: on every insert-gen scenario with host traces, on seeds
# no one tuned the code on, the end-to-end join equals the generator's truth exactly:
#   insert-gen (pcap, host traces, e2e truth) -> insert-dp replay -> insert-correlate
#   -> tests/integration/compare_e2e.py (e2e, alert, congestion, app, clock, pair records and
#      summary counts; app percentiles within 1%).
# The correlator runs three ways that must all match: 1 thread on [dp, traces]; 2 threads
# on the same records shuffled and split into three files (SPEC 10: thread count and input
# split never change the output); and live, the same files streamed through a pipe.
# The truth has every alert and congestion episode (docs/correlation.md sections 8, 9): the
# attacks of the `attacks` scenario, the rkey_unknown of an access_error target, nothing
# else from normal traffic (gen_alert_truth checks that against the generator's knowledge).
# Usage: e2e_truth_test.sh BUILD_ROOT SOURCE_ROOT [SEEDS...]
set -euo pipefail
build=$1
src=$2
shift 2
seeds=("${@:-41 42}")
gen=$build/bench/gen/insert-gen
dp=$build/dataplane/tools/insert-dp
correlate=$build/correlator/insert-correlate
compare=$src/tests/integration/compare_e2e.py
work=$(mktemp -d /tmp/insert-e2e.XXXXXX)
trap 'rm -rf "$work"' EXIT

failed=0
passed=0
check() {  # name, truth, actual
    if python3 "$compare" "$2" "$3" >"$3.diff"; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        echo "FAIL $1:"
        head -20 "$3.diff"
    fi
}

for scenario in $("$gen" --list-scenarios) "$src"/bench/gen/scenarios/*.json; do
    extra=()
    [ "$scenario" = large ] && extra=(--qps 2000 --packets 20000)
    for seed in ${seeds[*]}; do
        name=$(basename "$scenario" .json).$seed
        base=$work/$name
        "$gen" --scenario "$scenario" --seed "$seed" "${extra[@]}" --out "$base.pcap" \
            --truth "$base.truth.json" --host-traces "$base.hosts.jsonl" \
            --e2e-truth "$base.e2e.jsonl" --quiet >/dev/null
        "$dp" replay "$base.pcap" --quiet --records "$base.dp.jsonl" >/dev/null

        "$correlate" --threads 1 --quiet --records "$base.c1.jsonl" "$base.dp.jsonl" \
            "$base.hosts.jsonl"
        check "$name (1 thread)" "$base.e2e.jsonl" "$base.c1.jsonl"

        # Every record shuffled (a fixed permutation per scenario) into three files.
        cat "$base.dp.jsonl" "$base.hosts.jsonl" | python3 -c '
import random, sys
lines = sys.stdin.readlines()
random.Random(sys.argv[1]).shuffle(lines)
for k in range(3):
    with open(f"{sys.argv[2]}.part{k}.jsonl", "w") as f:
        f.writelines(lines[k::3])' "$name" "$base"
        "$correlate" --threads 2 --quiet --records "$base.c2.jsonl" "$base".part{0,1,2}.jsonl
        check "$name (2 threads, split and shuffled)" "$base.e2e.jsonl" "$base.c2.jsonl"

        # Live: the time-ordered records through a pipe (windows of data time).
        cat "$base.dp.jsonl" "$base.hosts.jsonl" | "$correlate" - --quiet --records "$base.live.jsonl" \
            --ttl 3600
        check "$name (live, piped)" "$base.e2e.jsonl" "$base.live.jsonl"
    done
done
# The comparisons covered every alert kind and congestion episodes (not empty on both sides).
if ! python3 - "$work" <<'PY'
import glob, json, sys
kinds, episodes = set(), 0
for path in glob.glob(sys.argv[1] + "/*.e2e.jsonl"):
    for line in open(path):
        r = json.loads(line)
        kinds.update([r["kind"]] if r["type"] == "alert" else [])
        episodes += r["type"] == "congestion"
want = {"rkey_unknown", "rkey_stale", "out_of_bounds", "access_denied", "rkey_scan",
        "unowned_qp", "peer_mismatch", "injected_message"}
print(f"truth: alert kinds {sorted(kinds)}, {episodes} congestion episodes")
sys.exit(0 if kinds == want and episodes > 0 else 1)
PY
then
    failed=$((failed + 1))
    echo "FAIL: the truths lack an alert kind or congestion episodes"
fi
echo "e2e truth: $passed comparisons equal, $failed failed"
[ "$failed" -eq 0 ]
