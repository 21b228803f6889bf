#!/usr/bin/env python3
"""insert-correlate's progress lines in a batch run (docs/correlation.md "Running it"):

  - with --progress and stderr a file: a first `reading` line, then `read N lines`,
    `joined`, `wrote K e2e records` with the run's own counts, whole lines (no carriage
    returns), and the records unchanged;
  - stderr a file without --progress: none of them;
  - stderr a terminal (a pty): the same lines, the reading line rewritten in place ('\\r');
    with --quiet on the terminal: none.

usage: batch_progress_test.py"""
import os
import pty
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "live"))
from live_test import CORRELATE, Failure, check, read_records, workload  # noqa: E402

PHASES = ["reading", "read", "joined", "wrote"]


def phases(text):
    """The progress lines' kinds in order, from text with '\\r' rewrites."""
    out = []
    for piece in re.split(r"[\r\n]", text):
        m = re.match(r"insert-correlate: (reading|read|joined|wrote) ", piece)
        if m:
            out.append(m.group(1))
    return out


def run_on_pty(argv):
    """Runs argv with stderr on a pseudo-terminal; returns (exit status, what it wrote there)."""
    master, slave = pty.openpty()
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=slave)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    return p.wait(timeout=60), b"".join(chunks).decode(errors="replace")


def main(tmp):
    path = os.path.join(tmp, "in.jsonl")
    lines = workload(4000)  # 12,002 lines: counted in thousands ("12.0k")
    with open(path, "w") as f:
        f.writelines(lines)
    out = os.path.join(tmp, "out.jsonl")

    r = subprocess.run([CORRELATE, path, "--records", out, "--quiet", "--progress"],
                       capture_output=True, text=True, timeout=60)
    check(r.returncode == 0, f"exit {r.returncode}: {r.stderr}")
    check("\r" not in r.stderr, f"carriage returns in a file: {r.stderr!r}")
    check(phases(r.stderr) == PHASES, f"progress lines {phases(r.stderr)}: {r.stderr}")
    summary = read_records(out)[-1]
    n, e2e = summary["inputs"]["lines"], summary["e2e"]
    check(n == len(lines) == 12002 and e2e == 3999, f"summary lines {n}, e2e {e2e}")
    check("insert-correlate: read 12.0k lines (" in r.stderr, f"line count: {r.stderr}")
    check(f"insert-correlate: wrote {e2e} e2e records in " in r.stderr, f"e2e count: {r.stderr}")
    share = float(re.search(r"reading +([0-9.]+)%", r.stderr).group(1))
    check(0 < share <= 100, f"reading {share}%")
    with_progress = [l for l in open(out) if '"type":"summary"' not in l]

    r = subprocess.run([CORRELATE, path, "--records", out, "--quiet"], capture_output=True,
                       text=True, timeout=60)
    check(r.returncode == 0 and r.stderr == "", f"without --progress: {r.stderr!r}")
    check([l for l in open(out) if '"type":"summary"' not in l] == with_progress,
          "the records differ with --progress")

    status, text = run_on_pty([CORRELATE, path, "--records", os.devnull])
    check(status == 0, f"on a terminal: exit {status}: {text}")
    check(phases(text) == PHASES, f"on a terminal: {phases(text)}: {text!r}")
    check("\rinsert-correlate: reading" in text, f"not rewritten in place: {text!r}")
    status, text = run_on_pty([CORRELATE, path, "--records", os.devnull, "--quiet"])
    check(status == 0 and phases(text) == [], f"--quiet on a terminal: {text!r}")
    print(f"PASS batch_progress: {n} lines, {e2e} e2e records, the phases on a file and a terminal")


if __name__ == "__main__":
    if len(sys.argv) != 1:
        print(__doc__)
        sys.exit(2)
    with tempfile.TemporaryDirectory() as tmp:
        try:
            main(tmp)
        except Failure as e:
            print(f"FAIL: {e}")
            sys.exit(1)
