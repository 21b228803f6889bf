#!/usr/bin/env python3
"""soak-tracer.py [--seconds S] [--pairs N] [--ops N] [--run-ops N] [--max-growth-mb M]
                 [--max-rss-mb R] [--warmup S] [--csv FILE] [-- INSERT-TRACE OPTIONS]

Runs `insert-trace` over verbs workloads that create and destroy everything continuously
for S seconds and shows that its memory stays flat (docs/performance.md, "insert-trace:
memory over time"). In a network namespace of its own (the tracer's --netns), over
softverbs:
- one long-lived process, `verbs_workload churn S`: rounds of a new thread that opens the
  devices, connects --pairs QP pairs, registers MRs, posts --ops WRITEs and SENDs on each
  pair, polls their completions and destroys it all (contexts, QPs, MRs, CQs, PDs and
  threads come and go inside one process);
- beside it, short-lived processes one after another, `verbs_workload run --ops N` (a
  process with two QPs and three MRs each: new pids, each reaped by the tracer with its
  process_exit record).
The tracer writes to a pipe this script counts and discards. Every second one CSV line:
seconds, records written, the tracer's RSS in MB, then short-lived processes started,
QPs created and process_exit records so far. With --max-rss-mb, exits 1 when RSS is ever
above R MB; with --max-growth-mb, when it grows by more than M MB from the end of the
warm-up (--warmup, default a quarter of the run) to its peak after it. Also exits 1 when
the tracer or the churn process fails, or most short-lived processes do (a few may: on a
loaded machine softverbs can run out of retries, which the churn process counts as errors
and goes on).

Needs root (BPF, namespaces) and the build (INSERT_BUILD_ROOT, default build/). The
namespace is named soaktr<pid> and removed at the end, on failure and on SIGINT/SIGTERM."""
import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

from soak_rss import (
    BUILD, HERE, RecordCounter, RssVerdict, add_limit_options, logger,
    missing_prerequisite, rss_mb, split_passthrough, terminate, write_csv)

TRACER = os.path.join(BUILD, "hosttrace", "insert-trace")
WORKLOAD = os.path.join(BUILD, "tests", "hosttrace", "verbs_workload")
SOFTVERBS_DIR = os.path.join(BUILD, "hosttrace", "softverbs")
SOFTVERBS_LIB = os.path.join(SOFTVERBS_DIR, "libibverbs.so.1")
# softverbs binds UDP 4791 on each of its addresses: one pair per concurrent process.
CHURN_IPS = "127.78.0.1,127.78.0.2"
RUN_IPS = "127.78.0.3,127.78.0.4"


log = logger("soak-tracer")


def main():
    argv, extra = split_passthrough(sys.argv[1:])
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=600)
    ap.add_argument("--pairs", type=int, default=4, help="QP pairs per churn round (default 4)")
    ap.add_argument("--ops", type=int, default=16,
                    help="WRITEs and SENDs per pair and round (default 16)")
    ap.add_argument("--run-ops", type=int, default=8,
                    help="ops of each short-lived process (default 8)")
    add_limit_options(ap, warmup_option=True)
    args = ap.parse_args(argv)
    warmup = args.warmup if args.warmup is not None else args.seconds / 4
    refused = missing_prerequisite("BPF, network namespaces", (TRACER, WORKLOAD, SOFTVERBS_LIB), log)
    if refused:
        return refused

    stop_requested = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop_requested.set())

    ns = f"soaktr{os.getpid() % 100000}"
    subprocess.run(["ip", "netns", "del", ns], capture_output=True)
    subprocess.run(["ip", "netns", "add", ns], check=True, timeout=30)
    procs = []
    failure = None
    samples = []
    started = run_failures = 0
    run_error = ""
    try:
        subprocess.run(["ip", "-n", ns, "link", "set", "lo", "up"], check=True, timeout=30)
        with tempfile.TemporaryDirectory(prefix="soaktr.") as tmp:
            err_path = os.path.join(tmp, "trace.err")
            err = open(err_path, "w")
            tracer = subprocess.Popen([TRACER, "-l", SOFTVERBS_LIB, "--netns", ns, "-o", "-",
                                       "--host", "soak", *extra],
                                      stdout=subprocess.PIPE, stderr=err)
            procs.append(tracer)
            counter = RecordCounter(tracer.stdout, {"qps": b'"verb":"create_qp"',
                                                    "exits": b'"type":"process_exit"'})
            counter.start()
            deadline = time.monotonic() + 60
            while b'"type":"trace_start"' not in counter.tail:
                if tracer.poll() is not None or time.monotonic() > deadline:
                    with open(err_path) as f:
                        raise RuntimeError("insert-trace did not start: " + f.read())
                time.sleep(0.05)

            def in_ns(ips, *argv):
                env = dict(os.environ, SOFTVERBS_IPS=ips, LD_LIBRARY_PATH=SOFTVERBS_DIR)
                p = subprocess.Popen(["ip", "netns", "exec", ns, WORKLOAD, *argv], env=env,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                procs.append(p)
                return p

            churn = in_ns(CHURN_IPS, "churn", str(args.seconds), "--pairs", str(args.pairs),
                          "--ops", str(args.ops))
            churn_out = []
            churn_reader = threading.Thread(
                target=lambda: churn_out.extend(churn.stdout), daemon=True)
            churn_reader.start()
            run = None
            print("seconds,records,rss_mb,processes,qps,exits", flush=True)
            start = time.monotonic()
            next_sample = start
            while not stop_requested.is_set():
                now = time.monotonic()
                if tracer.poll() is not None:
                    raise RuntimeError(f"insert-trace exited {tracer.returncode} during the run")
                if churn.poll() not in (None, 0):
                    raise RuntimeError(f"verbs_workload churn exited {churn.returncode}: "
                                       + churn.stderr.read().decode())
                if run is not None and run.poll() is not None:
                    _, e = run.communicate()
                    if run.returncode != 0:  # a loaded machine can starve softverbs
                        run_failures += 1
                        run_error = run_error or e.decode().strip()
                    procs.remove(run)
                    run = None
                if run is None and now - start < args.seconds:
                    run = in_ns(RUN_IPS, "run", "--ops", str(args.run_ops))
                    started += 1
                if now >= next_sample:
                    next_sample += 1.0
                    samples.append((now - start, counter.lines, rss_mb(tracer.pid), started,
                                    counter.counts["qps"], counter.counts["exits"]))
                    s = samples[-1]
                    print(f"{s[0]:.0f},{s[1]},{s[2]:.1f},{s[3]},{s[4]},{s[5]}", flush=True)
                    if now - start >= args.seconds and run is None and churn.poll() is not None:
                        break
                time.sleep(0.01)
            # The last process_exit records: the tracer reaps every 250 ms.
            end = time.monotonic() + 2
            while counter.counts["exits"] < started + 1 and time.monotonic() < end:
                time.sleep(0.05)
            tracer.send_signal(signal.SIGTERM)
            try:
                tracer.wait(30)
            except subprocess.TimeoutExpired:
                raise RuntimeError("insert-trace did not stop on SIGTERM")
            counter.join(10)
            err.close()
            with open(err_path) as f:
                trace_err = f.read()
            if tracer.returncode != 0:
                raise RuntimeError(f"insert-trace exited {tracer.returncode}: {trace_err}")
            stats = counter.last_record("trace_stats") or {}
            churn_reader.join(5)
            churn_last = churn_out[-1].decode().strip() if churn_out else "(none)"
    except (RuntimeError, OSError, subprocess.SubprocessError) as e:
        failure = str(e)
    finally:
        for p in procs:
            terminate(p, 10)
        subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=30)
    if failure:
        log(failure)
        return 1
    if args.csv:
        write_csv(args.csv, "seconds,records,rss_mb,processes,qps,exits",
                  (f"{s[0]:.1f},{s[1]},{s[2]:.1f},{s[3]},{s[4]},{s[5]}" for s in samples))
    if not samples:
        log("no samples")
        return 1
    verdict = RssVerdict([s[2] for s in samples], [s[2] for s in samples if s[0] >= warmup])
    log(f"{counter.lines} records in {samples[-1][0]:.0f} s: {counter.counts['qps']} QPs created, "
        f"{started} short-lived processes, {counter.counts['exits']} process_exit records; churn: "
        f"{churn_last}")
    log(f"{verdict.describe()} (warm-up {warmup:.0f} s)")
    log(f"final trace_stats: events {stats.get('events')}, ringbuf_drops "
        f"{stats.get('ringbuf_drops')}, read_errors {stats.get('read_errors')}")
    rc = 0
    if run_failures:
        log(f"{run_failures} of {started} short-lived processes failed, e.g. {run_error}")
    if run_failures * 2 > started:
        log("most short-lived processes failed: the workload is broken")
        rc = 1
    return verdict.check(args, log) or rc


if __name__ == "__main__":
    sys.exit(main())
