#!/usr/bin/env bash
# scripts/demo.sh: the main job on the bundled default capture. Installs what is missing,
# builds insert-dp if needed, then runs the telemetry pipeline (`insert-dp replay`) over
# pcaps/rc_mixed.pcap (a small RC conversation: CM set-up, WRITEs, SENDs, READs with their
# responses, ACKs, one FETCH_ADD) on two worker lcores: the terminal summary on stdout, the
# JSON Lines records (SPEC.md section 7) in build/demo-records.jsonl.
# Any other capture: scripts/demo.sh FILE.pcap
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build=${INSERT_BUILD_DIR:-build}
capture=${1:-pcaps/rc_mixed.pcap}

scripts/setup.sh >&2
[ -f "$build/build.ninja" ] || meson setup "$build" >&2
ninja -C "$build" dataplane/tools/insert-dp >&2

records=$build/demo-records.jsonl
"$build/dataplane/tools/insert-dp" replay "$capture" --workers 2 --records "$records"
echo
echo "records: $records ($(grep -c '"type":"msg"' "$records") msg records); first message:"
grep -m1 '"type":"msg"' "$records"
