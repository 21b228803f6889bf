#!/usr/bin/env bash
# scripts/test.sh: everything CI checks. Installs packages (setup.sh), configures and builds
# build/ (build.sh, plain: see below), runs every meson test suite (unit, eal, system, perf:
# README.md "Tests"), then checks the formatting of the project's C/C++ sources against
# .clang-format. Exits non-zero if any step fails; the format check runs even when tests
# failed, so one run shows both.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build=${INSERT_BUILD_DIR:-build}

scripts/setup.sh

# Configures and builds build/ without profile feedback and link-time optimization: they
# change speed, not behaviour, and cost as much build time as everything else (a second
# build, a training run, every test linked with LTO). INSERT_PGO=on INSERT_LTO=on tests the
# optimized binaries instead; scripts/build.sh alone builds them for benchmarks.
INSERT_PGO=${INSERT_PGO:-off} INSERT_LTO=${INSERT_LTO:-off} scripts/build.sh "$build"

status=0
meson test -C "$build" --print-errorlogs || status=1

# One closing line with the totals, from meson's machine-readable log.
python3 - "$build/meson-logs/testlog.json" <<'PY' || true
import json, sys
passed = failed = skipped = 0
for line in open(sys.argv[1]):
    r = json.loads(line)["result"]
    if r in ("OK", "EXPECTEDFAIL"):
        passed += 1
    elif r == "SKIP":
        skipped += 1
    else:
        failed += 1
print(f"tests: {passed} passed, {failed} failed, {skipped} skipped")
PY

# Formatting: every tracked C/C++ source, with clang-format 14 and the committed style.
mapfile -t sources < <(git ls-files '*.c' '*.h' '*.cpp' '*.hpp' | grep -v -E '(^|/)vmlinux\.h$' || true)
if [ ${#sources[@]} -gt 0 ]; then
    if clang-format-14 --dry-run --Werror "${sources[@]}"; then
        echo "clang-format: ${#sources[@]} files formatted"
    else
        echo "clang-format: files above differ from .clang-format (fix: clang-format-14 -i FILE)" >&2
        status=1
    fi
fi
exit $status
