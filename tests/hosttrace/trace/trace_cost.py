#!/usr/bin/env python3
"""Cost model of insert-trace: ns added per traced verb call (docs/insert-trace.md).

Runs verbs_workload's loops without the tracer and with it (data path all, sample:100,
off), N repetitions each, and prints the medians as a Markdown table. Not a test: the
figures depend on the machine. Needs root.

    INSERT_BUILD_ROOT=build python3 tests/hosttrace/trace/trace_cost.py [--calls N] [--reps R]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import trace_test as t  # noqa: E402  (shares the process helpers)


def run_bench(mode, calls, env, tracer_args, lib_args, tmp):
    tracer = None
    if tracer_args is not None:
        tracer = t.Tracer(tmp, *lib_args, "--scan-ms", "0", "--comm", "verbs_workload", *tracer_args)
    sync = mode == "bench-fake"
    w = t.Workload([mode, str(calls)] + (["--sync"] if sync else []), env=env)
    if sync:
        w.wait_phase("setup")
        if tracer and "off" not in tracer_args:
            t.datapath_attached(tracer, w.pid)
        w.release()
    w.finish()
    stats = tracer.stop() if tracer else None
    if tracer:
        os.unlink(tracer.path)
    return {r["bench"]: r["cpu_ns_per_call"] for r in w.other if "bench" in r}, stats


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=200000)
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    configs = [("no tracer", None), ("datapath all", []), ("datapath sample:100", ["--datapath", "sample:100"]),
               ("datapath off", ["--datapath", "off"])]
    benches = [("bench-fake", a.calls, t.system_env(), []),
               ("bench-reg", a.calls // 10, t.softverbs_env(), ["-l", t.SOFTVERBS_LIB])]
    results = {}
    drops = {}
    with tempfile.TemporaryDirectory() as tmp:
        try:
            for mode, calls, env, lib in benches:
                for name, targs in configs:
                    samples = {}
                    for _ in range(a.reps):
                        r, stats = run_bench(mode, calls, env, targs, lib, tmp)
                        for k, v in r.items():
                            samples.setdefault(k, []).append(v)
                        if stats:
                            drops[(mode, name)] = drops.get((mode, name), 0) + stats["ringbuf_drops"]
                    for k, v in samples.items():
                        results[(k, name)] = (statistics.median(v), min(v), max(v))
        finally:
            for proc in t.SPAWNED:
                if proc.poll() is None:
                    proc.kill()
    verbs = sorted({k for k, _ in results})
    print("| call | " + " | ".join(n for n, _ in configs) + " |")
    print("|---" * (len(configs) + 1) + "|")
    for v in verbs:
        cells = []
        for n, _ in configs:
            med, lo, hi = results[(v, n)]
            cells.append(f"{med:.0f} ({lo:.0f}-{hi:.0f})")
        print(f"| {v} | " + " | ".join(cells) + " |")
    print(f"\nCPU ns per call of the calling thread (user + kernel): median of {a.reps} runs (min-max); ring-buffer drops: {json.dumps({f'{m} {n}': d for (m, n), d in drops.items()})}")


if __name__ == "__main__":
    sys.exit(main())
