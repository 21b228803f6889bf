#!/usr/bin/env python3
"""docs/correlation.md's rule table is what `insert-correlate --list-rules` prints: the text
between the lines `<!-- rules: begin -->` and `<!-- rules: end -->` equals its output
exactly (the table is made from correlator/usecases/security_rules.cpp). On a difference,
prints a unified diff (docs, then the program) and exits 1.

usage: list_rules_test.py INSERT_CORRELATE CORRELATION_MD"""
import difflib
import subprocess
import sys

BEGIN, END = "<!-- rules: begin -->", "<!-- rules: end -->"


def documented(path):
    lines = open(path, encoding="utf-8").read().splitlines(keepends=True)
    starts = [i for i, l in enumerate(lines) if l.rstrip("\n") == BEGIN]
    ends = [i for i, l in enumerate(lines) if l.rstrip("\n") == END]
    if len(starts) != 1 or len(ends) != 1 or ends[0] < starts[0]:
        sys.exit(f"FAIL: {path}: expected one '{BEGIN}' line and one '{END}' line after it "
                 f"(found {len(starts)} and {len(ends)})")
    return "".join(lines[starts[0] + 1:ends[0]])


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    correlate, doc = sys.argv[1:]
    p = subprocess.run([correlate, "--list-rules"], capture_output=True, text=True, timeout=60)
    if p.returncode != 0 or p.stderr:
        print(f"FAIL: insert-correlate --list-rules: exit {p.returncode}, stderr {p.stderr!r}")
        return 1
    if not p.stdout:
        print("FAIL: insert-correlate --list-rules printed nothing")
        return 1
    text = documented(doc)
    if text != p.stdout:
        print(f"FAIL: {doc}: the rule table differs from insert-correlate --list-rules:")
        sys.stdout.writelines(difflib.unified_diff(
            text.splitlines(keepends=True), p.stdout.splitlines(keepends=True),
            fromfile=f"{doc} ({BEGIN} .. {END})", tofile="insert-correlate --list-rules"))
        return 1
    print(f"PASS: {doc} shows the {p.stdout.count(chr(10)) - 2} rules --list-rules prints")
    return 0


if __name__ == "__main__":
    sys.exit(main())
