#!/usr/bin/env bash
# scripts/demo.sh: the main job on the bundled default capture. Installs what is missing,
# builds insert-dp if needed, then decodes pcaps/rc_mixed.pcap (a small RC conversation:
# CM set-up, WRITEs, SENDs, READs with their responses, ACKs, one FETCH_ADD) to CSV on
# stdout, with the frame counts on stderr.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build=${INSERT_BUILD_DIR:-build}

scripts/setup.sh >&2
[ -f "$build/build.ninja" ] || meson setup "$build" >&2
ninja -C "$build" dataplane/tools/insert-dp >&2

exec "$build/dataplane/tools/insert-dp" decode pcaps/rc_mixed.pcap --summary
