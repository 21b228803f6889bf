#!/usr/bin/env python3
"""insert-pipeline-bench's command line (suite 'perf'): both engines over one workload.

    pipeline_bench_test.py INSERT_PIPELINE_BENCH

Runs 1000 endpoints, one worker, on 4 KB pages (--no-huge), with the state engine and with
--engine none, and checks what the output promises: one row each, the same frame count
(the workload does not depend on the engine), messages counted only by the state engine,
a positive rate, and the header line that says the engine was left out. A bad --engine
value is refused with exit 2, naming the option.
"""
import subprocess
import sys

BENCH = sys.argv[1]
EAL = ["--", "--no-huge", "--no-pci"]


def fail(msg):
    print("FAIL:", msg, file=sys.stderr)
    sys.exit(1)


def run(*args):
    return subprocess.run([BENCH, *args], capture_output=True, text=True, timeout=240)


def row(engine):
    p = run("--endpoints", "1000", "--workers", "1", "--repeat", "1", "--engine", engine, *EAL)
    if p.returncode != 0:
        fail(f"--engine {engine} exited {p.returncode}: {p.stderr.strip()}")
    lines = p.stdout.splitlines()
    rows = [l.split() for l in lines if l and l[0].isdigit()]
    if len(rows) != 1:
        fail(f"--engine {engine}: expected one result row, got {rows}")
    endpoints, workers, frames, msgs, per_worker, total, balance = rows[0]
    if (endpoints, workers) != ("1000", "1"):
        fail(f"--engine {engine}: row is for {endpoints} endpoints, {workers} workers")
    if float(per_worker) <= 0 or float(total) <= 0 or float(balance) != 1.0:
        fail(f"--engine {engine}: rates {per_worker}/{total}, balance {balance}")
    said_none = any(l.startswith("# engine: none") for l in lines)
    if said_none != (engine == "none"):
        fail(f"--engine {engine}: header line about the engine is {'there' if said_none else 'missing'}")
    return int(frames), int(msgs)


def main():
    state_frames, state_msgs = row("state")
    none_frames, none_msgs = row("none")
    if state_frames != none_frames or state_frames < 4000:
        fail(f"frames: state {state_frames}, none {none_frames}")
    # 4 messages per endpoint by default: every one is completed and counted.
    if state_msgs != 4000:
        fail(f"state engine counted {state_msgs} messages, expected 4000")
    if none_msgs != 0:
        fail(f"--engine none counted {none_msgs} messages")
    p = run("--engine", "fast", *EAL)
    if p.returncode != 2 or "--engine" not in p.stderr:
        fail(f"--engine fast: exit {p.returncode}, stderr {p.stderr.strip()!r}")
    p = run("--help")
    if p.returncode != 0 or "--engine state|none" not in p.stdout:
        fail("--help does not describe --engine")
    print("ok")


main()
