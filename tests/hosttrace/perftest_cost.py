#!/usr/bin/env python3
"""perftest over softverbs between two namespaces, without and with insert-trace
(docs/insert-trace.md). Not a test: prints a Markdown table of perftest's own figures.

    INSERT_BUILD_ROOT=build python3 tests/hosttrace/perftest_cost.py [--reps R]
        [--pin] [--scale K]

--pin runs the perftest server on CPU 0 and the client on CPU 1 (taskset; softverbs'
progress thread inherits it), so the two sides do not migrate and compete for one core.
--scale multiplies the iteration counts (longer runs average out scheduling noise).
Configurations run round-robin (one run of each, then the next repetition), so a change
in the machine's load hits all of them alike.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import trace_test as t  # noqa: E402


def run_pair(net, tmp, args, pin):
    slog, clog = os.path.join(tmp, "s.log"), os.path.join(tmp, "c.log")
    spin = ["taskset", "-c", "0"] if pin else []
    cpin = ["taskset", "-c", "1"] if pin else []
    with open(slog, "w") as so, open(clog, "w") as co:
        server = net.run(net.a, spin + args, stdout=so, stderr=subprocess.STDOUT)
        t.wait_until(lambda: net.listening(net.a, 18515) or server.poll() is not None, "perftest server")
        client = net.run(net.b, cpin + args + [net.ip_a], stdout=co, stderr=subprocess.STDOUT)
        crc, src = client.wait(timeout=120), server.wait(timeout=120)
    with open(clog) as f:
        log = f.read()
    t.check(crc == 0 and src == 0, f"{args}: {log}")
    lines = log.splitlines()
    i = next(i for i, l in enumerate(lines) if l.strip().startswith("#bytes"))
    return lines[i].split(), lines[i + 1].split()


def parse_row(header, row, column):
    # perftest's headers contain spaces: join the multi-word names, then match by position.
    names = " ".join(header).replace("BW peak", "BW_peak").replace("BW average", "BW_average") \
        .replace("% percentile", "%_percentile").split()
    return float(row[names.index(column.replace("BW average", "BW_average"))])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--pin", action="store_true")
    ap.add_argument("--scale", type=float, default=1.0)
    a = ap.parse_args()
    n = lambda k: str(int(k * a.scale))
    tools = [("ib_write_bw 64 KiB", ["ib_write_bw", "-F", "-s", "65536", "-n", n(1000)], ["BW average[MB/sec]"]),
             ("ib_write_bw 5 KiB", ["ib_write_bw", "-F", "-s", "5120", "-n", n(3000)], ["BW average[MB/sec]"]),
             ("ib_write_lat 64 B", ["ib_write_lat", "-F", "-s", "64", "-n", n(3000)],
              ["t_typical[usec]", "t_avg[usec]"])]
    configs = [("no tracer", None), ("all", []), ("all, --sites off", ["--sites", "off"]),
               ("sample:100", ["--datapath", "sample:100"]), ("off", ["--datapath", "off"])]
    values = {}
    failures = {}
    load = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory() as tmp:
        net = t.Netns()
        try:
            for tname, args, columns in tools:
                for rep in range(a.reps):
                    for cname, targs in configs:
                        while True:
                            tracer = None
                            if targs is not None:
                                tracer = t.Tracer(tmp, "-l", t.SOFTVERBS_LIB, "--scan-ms", "0", *targs)
                            try:
                                header, row = run_pair(net, tmp, args, a.pin)
                                break
                            except t.Failure as e:
                                # softverbs over a loaded VM occasionally exhausts its retries
                                # (IBV_WC_RETRY_EXC_ERR); such a run is repeated and counted.
                                failures[(tname, cname)] = failures.get((tname, cname), 0) + 1
                                print(f"{tname} / {cname}: run failed: {str(e).splitlines()[0]}", file=sys.stderr)
                                t.check(failures[(tname, cname)] <= a.reps, f"{tname} / {cname}: too many failed runs")
                            finally:
                                if tracer:
                                    tracer.stop()
                                    os.unlink(tracer.path)
                        for col in columns:
                            values.setdefault((tname, col, cname), []).append(parse_row(header, row, col))
                    print(f"{tname} rep {rep}: " + ", ".join(
                        f"{c}={values[(tname, columns[0], c)][-1]}" for c, _ in configs), file=sys.stderr)
        finally:
            for proc in t.SPAWNED:
                if proc.poll() is None:
                    proc.kill()
            net.close()
    load.append(os.getloadavg()[0])
    print("| perftest (softverbs, two namespaces) | " + " | ".join(c for c, _ in configs) + " |")
    print("|---" * (len(configs) + 1) + "|")
    for tname, args, columns in tools:
        for col in columns:
            cells = []
            for c, _ in configs:
                v = values[(tname, col, c)]
                f = failures.get((tname, c), 0)
                cells.append(f"{statistics.median(v):.1f} ({min(v):.1f}-{max(v):.1f})" + (f" [{f} failed]" if f else ""))
            print(f"| {tname} (-n {args[args.index('-n') + 1]}): {col} | " + " | ".join(cells) + " |")
    print(f"\nmedian of {a.reps} runs (min-max); {'pinned (server CPU 0, client CPU 1)' if a.pin else 'not pinned'}; "
          f"load average {load[0]:.2f} -> {load[1]:.2f}")


if __name__ == "__main__":
    sys.exit(main())
