#!/usr/bin/env python3
"""Cost model of insert-trace: ns added per traced verb call (docs/insert-trace.md).

Runs verbs_workload's loops without the tracer and with it in several configurations, R
repetitions each, and prints the medians as a Markdown table. Not a test: the figures
depend on the machine. Needs root.

    INSERT_BUILD_ROOT=build python3 tests/hosttrace/trace_cost.py [--calls N] [--reps R]
        [--pin CPU] [--only fake,sv,reg] [--ringbuf-kb K]

Figures are CPU time of the calling thread (CLOCK_THREAD_CPUTIME_ID: user + kernel, so
uprobe traps and BPF programs count, time other jobs take from the machine does not).
--pin runs the workload on one CPU (taskset), the tracer on the others.
"""
import argparse
import json
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import trace_test as t  # noqa: E402  (shares the process helpers)

# name, tracer arguments (None: no tracer), benches it applies to
CONFIGS = [
    ("none", "no tracer", None, {"fake", "sv", "reg"}),
    ("all", "all", [], {"fake", "sv", "reg"}),
    ("entries", "all, --sites off (ops entries)", ["--sites", "off"], {"sv"}),
    ("sample", "sample:100", ["--datapath", "sample:100"], {"fake", "sv", "reg"}),
    ("off", "off", ["--datapath", "off"], {"fake", "sv", "reg"}),
]


def run_bench(mode, calls, env, tracer_args, lib_args, tmp, pin, ringbuf_kb, comm_filter):
    tracer = None
    if tracer_args is not None:
        filt = ["--comm", "verbs_workload"] if comm_filter else []
        tracer = t.Tracer(tmp, *lib_args, "--scan-ms", "0", *filt, "--ringbuf-kb", str(ringbuf_kb),
                          *tracer_args)
    sync = mode in ("bench-fake", "bench-sv")
    args = [mode, str(calls)] + (["--sync"] if sync else [])
    if pin is not None:
        w = t.Workload(["-c", str(pin), t.WORKLOAD] + args, env=env, program="taskset")
    else:
        w = t.Workload(args, env=env)
    if sync:
        w.wait_phase("setup")
        if tracer and tracer_args[:2] != ["--datapath", "off"]:
            t.datapath_attached(tracer, w.pid)
        w.release()
    w.finish()
    stats = tracer.stop() if tracer else None
    if tracer:
        os.unlink(tracer.path)
    figures = {r["bench"]: r["cpu_ns_per_call"] for r in w.other if "bench" in r}
    figures.update({r["bench_info"]: r["value"] for r in w.other if "bench_info" in r})
    return figures, stats


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=200000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--pin", type=int, default=None, help="CPU to run the workload on")
    ap.add_argument("--only", default="fake,sv,reg")
    # The JSON reader handles ~10^5 events/s; a loop that makes more fills the ring, and a
    # dropped event costs less than a recorded one. A ring that holds the whole loop
    # measures the recorded event.
    ap.add_argument("--ringbuf-kb", type=int, default=65536)
    # The tracer runs with --comm verbs_workload (a filter costs a comm read per probe hit)
    # unless this is given.
    ap.add_argument("--no-comm-filter", action="store_true")
    ap.add_argument("--configs", default="none,all,entries,sample,off")
    ap.add_argument("--tracer", default=None, help="another insert-trace binary (e.g. an older build)")
    a = ap.parse_args()
    if a.tracer:
        t.TRACER = a.tracer
    configs = [(name, targs, applies) for key, name, targs, applies in CONFIGS
               if key in a.configs.split(",")]
    benches = [("fake", "bench-fake", a.calls, t.system_env(), []),
               ("sv", "bench-sv", a.calls // 4, t.softverbs_env(), ["-l", t.SOFTVERBS_LIB]),
               ("reg", "bench-reg", a.calls // 10, t.softverbs_env(), ["-l", t.SOFTVERBS_LIB])]
    only = set(a.only.split(","))
    results = {}
    drops = {}
    load = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory() as tmp:
        try:
            for key, mode, calls, env, lib in benches:
                if key not in only:
                    continue
                for name, targs, applies in configs:
                    if key not in applies:
                        continue
                    samples = {}
                    for _ in range(a.reps):
                        r, stats = run_bench(mode, calls, env, targs, lib, tmp, a.pin, a.ringbuf_kb,
                                             not a.no_comm_filter)
                        for k, v in r.items():
                            samples.setdefault(k, []).append(v)
                        if stats:
                            drops[(mode, name)] = drops.get((mode, name), 0) + stats["ringbuf_drops"]
                    for k, v in samples.items():
                        results[(k, name)] = (statistics.median(v), min(v), max(v))
                    print(f"{mode} / {name}: {json.dumps(samples)}", file=sys.stderr)
        finally:
            for proc in t.SPAWNED:
                if proc.poll() is None:
                    proc.kill()
    load.append(os.getloadavg()[0])
    rows = []
    for k, _ in results:
        if k not in rows:
            rows.append(k)
    print("| call | " + " | ".join(n for n, _, _ in configs) + " |")
    print("|---" * (len(configs) + 1) + "|")
    for v in rows:
        cells = []
        for n, _, _ in configs:
            if (v, n) not in results:
                cells.append("-")
                continue
            med, lo, hi = results[(v, n)]
            fmt = "{:.1f}" if med < 100 and med != int(med) else "{:.0f}"
            cells.append(f"{fmt.format(med)} ({fmt.format(lo)}-{fmt.format(hi)})")
        print(f"| {v} | " + " | ".join(cells) + " |")
    print(f"\nCPU ns per call of the calling thread (user + kernel): median of {a.reps} runs (min-max); "
          f"load average {load[0]:.2f} -> {load[1]:.2f}; ring-buffer drops: "
          f"{json.dumps({f'{m} {n}': d for (m, n), d in drops.items()})}")


if __name__ == "__main__":
    sys.exit(main())
