#!/usr/bin/env python3
"""docs/records.md's field tables are the field table in the code
(dataplane/common/record_fields.cpp): the text between the lines `<!-- fields: begin -->`
and `<!-- fields: end -->` equals `record_fields_print markdown` exactly. On a difference,
prints a unified diff (the page, then the program) and exits 1. With --write, puts the
program's text there instead (`ninja -C build records-doc`); the rest of the page is
written by hand.

usage: records_doc_test.py RECORD_FIELDS_PRINT RECORDS_MD [--write]"""
import difflib
import subprocess
import sys

BEGIN, END = "<!-- fields: begin -->", "<!-- fields: end -->"


def split(path):
    """(before, the generated text, after) of the page."""
    lines = open(path, encoding="utf-8").read().splitlines(keepends=True)
    starts = [i for i, l in enumerate(lines) if l.rstrip("\n") == BEGIN]
    ends = [i for i, l in enumerate(lines) if l.rstrip("\n") == END]
    if len(starts) != 1 or len(ends) != 1 or ends[0] < starts[0]:
        sys.exit(f"FAIL: {path}: expected one '{BEGIN}' line and one '{END}' line after it "
                 f"(found {len(starts)} and {len(ends)})")
    return ("".join(lines[:starts[0] + 1]), "".join(lines[starts[0] + 1:ends[0]]),
            "".join(lines[ends[0]:]))


def main():
    if len(sys.argv) not in (3, 4) or sys.argv[3:] not in ([], ["--write"]):
        print(__doc__, file=sys.stderr)
        return 2
    printer, doc = sys.argv[1:3]
    p = subprocess.run([printer, "markdown"], capture_output=True, text=True, timeout=60)
    if p.returncode != 0 or p.stderr or not p.stdout:
        print(f"FAIL: {printer} markdown: exit {p.returncode}, stderr {p.stderr!r}")
        return 1
    before, text, after = split(doc)
    if sys.argv[3:] == ["--write"]:
        with open(doc, "w", encoding="utf-8") as f:
            f.write(before + p.stdout + after)
        print(f"{doc}: field tables written")
        return 0
    if text != p.stdout:
        print(f"FAIL: {doc} differs from the field table (dataplane/common/record_fields.cpp); "
              "`ninja -C build records-doc` rewrites it:")
        sys.stdout.writelines(difflib.unified_diff(
            text.splitlines(keepends=True), p.stdout.splitlines(keepends=True),
            fromfile=f"{doc} ({BEGIN} .. {END})", tofile="record_fields_print markdown"))
        return 1
    print(f"PASS: {doc} shows the field table ({p.stdout.count(chr(10))} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
