#!/usr/bin/env python3
"""`insert-dp bench` end to end (suite 'perf'): both traffic shapes through the real workers.

    bench_test.py INSERT_DP

Runs on 4 KB pages (--no-huge) for 1 and 2 workers over 1000 endpoints and checks what the
output promises: the header names the traffic and a mean frame that fits it (line rate:
mostly full 1 KB frames), one row per worker and a total per worker count, totals that
add up, Gb/s that is Mpps times the mean frame, and messages counted. Bad values are
refused with exit 2 and the option named.
"""
import re
import subprocess
import sys

INSERT_DP = sys.argv[1]
EAL = ["--", "--no-huge"]


def fail(msg):
    print("FAIL:", msg, file=sys.stderr)
    sys.exit(1)


def bench(*args):
    cmd = [INSERT_DP, "bench", *args]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    return p


def check_run(traffic, min_mean, max_mean):
    p = bench("--traffic", traffic, "--endpoints", "1000", "--seconds", "0.2", "--workers", "2",
              *EAL)
    if p.returncode != 0:
        fail(f"--traffic {traffic} exited {p.returncode}: {p.stderr.strip()}")
    lines = [l for l in p.stdout.splitlines() if l.strip()]
    head = re.match(r"insert-dp bench: 1000 endpoints, 1024 B MTU mixed RC workload "
                    r"\((\S+) traffic\), (\d+) frames per pass, mean frame (\d+) B", lines[0])
    if not head:
        fail(f"unexpected header: {lines[0]!r}")
    if head.group(1) != traffic:
        fail(f"header names {head.group(1)} traffic, asked for {traffic}")
    mean = int(head.group(3))
    if not min_mean <= mean <= max_mean:
        fail(f"{traffic}: mean frame {mean} B, expected {min_mean}-{max_mean}")
    rows = {}
    for l in lines[2:]:
        f = l.split()
        rows[(int(f[0]), f[1])] = f
    expected = {(1, "0"), (1, "total"), (2, "0"), (2, "1"), (2, "total")}
    if set(rows) != expected:
        fail(f"{traffic}: rows {sorted(rows)}, expected {sorted(expected)}")
    for n in (1, 2):
        per = [float(rows[(n, str(q))][2]) for q in range(n)]
        total = float(rows[(n, "total")][2])
        if min(per) <= 0:
            fail(f"{traffic}: a worker of {n} reported no frames: {per}")
        if abs(sum(per) - total) > 0.02 * n:
            fail(f"{traffic}: {n} workers' Mpps {per} do not add up to {total}")
        gbps = float(rows[(n, "total")][3])
        # Frames per worker differ a little in size; the mean is over all of them.
        if abs(gbps - total * mean * 8 / 1000) > 0.05 * gbps:
            fail(f"{traffic}: {gbps} Gb/s is not {total} Mpps of {mean} B frames")
        msgs = re.search(r"([\d.]+) M msgs", " ".join(rows[(n, "total")]))
        if not msgs or float(msgs.group(1)) <= 0:
            fail(f"{traffic}: no messages counted for {n} workers")


def main():
    # Small messages: a third of the frames are ACKs and READ requests (~60-80 B).
    check_run("small", 400, 700)
    # Line rate: 1024 B payloads plus ~70 B of headers on most frames.
    check_run("line-rate", 950, 1100)
    p = bench("--traffic", "huge", *EAL)
    if p.returncode != 2 or "--traffic" not in p.stderr:
        fail(f"--traffic huge: exit {p.returncode}, stderr {p.stderr.strip()!r}")
    p = bench("--help")
    if p.returncode != 0 or "--traffic" not in p.stdout or "line-rate" not in p.stdout:
        fail("--help does not describe --traffic")
    print("ok")


if __name__ == "__main__":
    main()
