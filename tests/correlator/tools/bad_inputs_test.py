#!/usr/bin/env python3
"""insert-correlate refuses inputs that hold nothing to join (docs/correlation.md "Running
it"): each case exits 2 with exactly one line on stderr naming the input or value, writes
nothing to stdout, and no --records file.
- a directory;
- a file that holds no record of insert-dp or insert-trace: a pcap capture, an empty file,
  a text file - the line names the first bad line and why;
- --clock-offset for a host that no input names (the hosts it does name are listed).
And what still runs: the same inputs with the host spelled right.

usage: bad_inputs_test.py INSERT_CORRELATE SOURCE_ROOT"""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "report"))
import fixture  # noqa: E402


def main():
    correlate, src = sys.argv[1], sys.argv[2]
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        dp, trace = fixture.write_inputs(tmp)
        empty = os.path.join(tmp, "empty.jsonl")
        open(empty, "w").close()
        text = os.path.join(tmp, "notes.txt")
        with open(text, "w") as f:
            f.write("hello\nworld\n")
        pcap = os.path.join(src, "pcaps", "rc_mixed.pcap")
        records = os.path.join(tmp, "out.jsonl")
        cases = [
            ([tmp], f"{tmp}: a directory (give the record files in it, e.g. {tmp}/*.jsonl)"),
            ([dp, pcap], f"{pcap}: no records of insert-dp or insert-trace (79 lines, line 1: "
                         "not a JSON object)"),
            ([empty, dp], f"{empty}: no records of insert-dp or insert-trace (0 lines)"),
            ([dp, trace, text], f"{text}: no records of insert-dp or insert-trace (2 lines, "
                                "line 1: not a JSON object)"),
            ([dp, trace, "--clock-offset", "node7=-2500"],
             "--clock-offset node7=-2500: no host node7 in the inputs (hosts: hA hB "
             f"{fixture.HOSTILE_HOST})"),
        ]
        for argv, want in cases:
            r = subprocess.run([correlate, *argv, "--records", records], capture_output=True,
                               text=True, timeout=60)
            lines = r.stderr.splitlines()
            if r.returncode != 2 or lines != ["insert-correlate: " + want] or r.stdout:
                failures.append(f"{argv}: exit {r.returncode}, stderr {r.stderr!r}, "
                                f"stdout {r.stdout[:200]!r}; expected exit 2 and {want!r}")
            if os.path.exists(records):
                failures.append(f"{argv}: --records was written")
                os.remove(records)
        r = subprocess.run([correlate, dp, trace, "--clock-offset", "hA=-2500", "--records",
                            records, "--quiet"], capture_output=True, text=True, timeout=60)
        if r.returncode != 0 or not os.path.getsize(records):
            failures.append(f"a known host: exit {r.returncode}, {r.stderr!r}")
    for f in failures:
        print("FAIL: " + f)
    if not failures:
        print(f"PASS: {len(cases)} bad inputs refused, one line each")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
