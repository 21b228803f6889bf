#!/usr/bin/env bash
# scripts/output-snapshot.sh BUILD OUT [INPUT_DIR...]
# scripts/output-snapshot.sh --compare OUT_BEFORE OUT_AFTER
#
# Restructuring must not change behaviour: this writes every output the programs of BUILD
# produce over fixed inputs into OUT, so that two builds (before and after a change) can
# be compared byte for byte with --compare (a diff of the two trees; exit 1 on any
# difference). What is written, for every insert-gen scenario (built in and
# bench/gen/scenarios/*.json) at seeds 41 and 42:
#   - insert-gen's pcap, truth, host traces and e2e truth;
#   - insert-dp replay's records with 1 and 2 workers, and its terminal summary;
#   - insert-dp decode's CSV;
#   - insert-correlate's records with 1 and 2 threads, piped (live), its terminal report,
#     and the HTML page of --html and of insert-report.
# Each INPUT_DIR (e.g. a demo run's out/demo-TIME/, kept aside) holding producer records
# (dp*.jsonl, trace*.jsonl) is correlated the same ways as the scenarios' records.
# Wall-clock fields (`wall_s`, `mpps`, durations and rates in terminal text) and the output
# directory's path are removed, and the records of 2 workers sorted (their order is free),
# so that two runs of one build give identical trees.
set -euo pipefail

if [ "${1:-}" = --compare ]; then
    [ $# -eq 3 ] || { echo "usage: $0 --compare OUT_BEFORE OUT_AFTER" >&2; exit 2; }
    if diff -r -q "$2" "$3"; then
        echo "output-snapshot: identical ($(find "$2" -type f | wc -l) files)"
        exit 0
    fi
    echo "output-snapshot: the trees above differ" >&2
    exit 1
fi
[ $# -ge 2 ] || { echo "usage: $0 BUILD OUT [INPUT_DIR...] | --compare A B" >&2; exit 2; }

root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$1" && pwd)
out=$2
shift 2
mkdir -p "$out"
out=$(cd "$out" && pwd)

gen=$build/bench/gen/insert-gen
dp=$build/dataplane/tools/insert-dp
correlate=$build/correlator/insert-correlate
report=$build/correlator/insert-report
for tool in "$gen" "$dp" "$correlate" "$report"; do
    [ -x "$tool" ] || { echo "output-snapshot: $tool is not built" >&2; exit 2; }
done

# Wall-clock fields out of JSON Lines, durations and rates out of terminal text and of the
# HTML page's summary table, and the output directory's path out of everything.
strip_wall() {
    sed -E -i -e 's/"(wall_s|mpps)":[-0-9.eE+]+/"\1":0/g' \
        -e 's#(wall_s|mpps)</th><td>[^<]*#\1</th><td>X#g' -e "s#$out#OUT#g" "$@"
}
strip_durations() {
    sed -E -i -e 's/[0-9]+(\.[0-9]+)? ?(s|M lines\/s|Mpps)\b/X \2/g' "$@"
}

correlate_all() {  # name, inputs...
    local name=$1
    shift
    local base=$out/$name
    "$correlate" --threads 1 --records "$base.c1.jsonl" --html "$base.c1.html" "$@" \
        >"$base.c1.terminal" 2>&1 || echo "exit $?" >>"$base.c1.terminal"
    "$correlate" --threads 2 --quiet --records "$base.c2.jsonl" "$@" >/dev/null 2>&1 ||
        echo "exit $?" >>"$base.c2.jsonl"
    cat "$@" | "$correlate" - --quiet --ttl 3600 --records "$base.live.jsonl" >/dev/null 2>&1 ||
        echo "exit $?" >>"$base.live.jsonl"
    "$report" "$base.c1.jsonl" --html "$base.report.html" >/dev/null 2>&1 ||
        echo "exit $?" >>"$base.report.html"
    strip_wall "$base".c1.jsonl "$base".c2.jsonl "$base".live.jsonl "$base".c1.terminal \
        "$base".c1.html "$base".report.html
    strip_durations "$base".c1.terminal
}

scenarios=($("$gen" --list-scenarios) "$root"/bench/gen/scenarios/*.json)
for scenario in "${scenarios[@]}"; do
    extra=()
    [ "$scenario" = large ] && extra=(--qps 2000 --packets 20000)
    seeds=(41 42)
    [ "$scenario" = large ] && seeds=(41)  # the biggest: one seed is enough
    for seed in "${seeds[@]}"; do
        name=$(basename "$scenario" .json).$seed
        base=$out/$name
        "$gen" --scenario "$scenario" --seed "$seed" "${extra[@]}" --out "$base.pcap" \
            --truth "$base.truth.json" --host-traces "$base.hosts.jsonl" \
            --e2e-truth "$base.e2e.jsonl" --quiet >/dev/null
        "$dp" replay "$base.pcap" --workers 1 --records "$base.dp1.jsonl" >"$base.dp1.terminal" 2>&1
        "$dp" replay "$base.pcap" --workers 2 --quiet --records "$base.dp2.jsonl" >/dev/null 2>&1
        "$dp" decode "$base.pcap" >"$base.decode.csv" 2>&1
        strip_wall "$base.dp1.jsonl" "$base.dp2.jsonl" "$base.dp1.terminal"
        strip_durations "$base.dp1.terminal"
        sort -o "$base.dp2.jsonl" "$base.dp2.jsonl"  # SPEC invariant 1: order aside
        correlate_all "$name" "$base.dp1.jsonl" "$base.hosts.jsonl"
        echo "output-snapshot: $name" >&2
    done
done

for dir in "$@"; do
    name=input-$(basename "$dir")
    mapfile -t inputs < <(find "$dir" -maxdepth 1 \( -name 'dp*.jsonl' -o -name 'trace*.jsonl' \) | sort)
    [ ${#inputs[@]} -gt 0 ] || { echo "output-snapshot: no *.jsonl in $dir" >&2; exit 2; }
    correlate_all "$name" "${inputs[@]}"
    echo "output-snapshot: $name (${#inputs[@]} inputs)" >&2
done
echo "output-snapshot: $(find "$out" -type f | wc -l) files in $out"
