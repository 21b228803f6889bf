#!/usr/bin/env python3
"""perftest over softverbs between two namespaces, without and with insert-trace
(docs/insert-trace.md). Not a test: prints a Markdown table of perftest's own figures.

    INSERT_BUILD_ROOT=build python3 tests/hosttrace/trace/perftest_cost.py [--reps R]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import trace_test as t  # noqa: E402


def run_pair(net, tmp, args):
    slog, clog = os.path.join(tmp, "s.log"), os.path.join(tmp, "c.log")
    with open(slog, "w") as so, open(clog, "w") as co:
        server = net.run(net.a, args, stdout=so, stderr=subprocess.STDOUT)
        t.wait_until(lambda: net.listening(net.a, 18515) or server.poll() is not None, "perftest server")
        client = net.run(net.b, args + [net.ip_a], stdout=co, stderr=subprocess.STDOUT)
        crc, src = client.wait(timeout=120), server.wait(timeout=120)
    with open(clog) as f:
        log = f.read()
    t.check(crc == 0 and src == 0, f"{args}: {log}")
    lines = log.splitlines()
    i = next(i for i, l in enumerate(lines) if l.strip().startswith("#bytes"))
    return lines[i].split(), lines[i + 1].split()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    tools = [("ib_write_bw 64 KiB", ["ib_write_bw", "-F", "-s", "65536", "-n", "1000"], "BW average[MB/sec]"),
             ("ib_write_bw 5 KiB", ["ib_write_bw", "-F", "-s", "5120", "-n", "3000"], "BW average[MB/sec]"),
             ("ib_write_lat 64 B", ["ib_write_lat", "-F", "-s", "64", "-n", "3000"], "t_avg[usec]")]
    configs = [("no tracer", None), ("datapath all", []), ("datapath sample:100", ["--datapath", "sample:100"]),
               ("datapath off", ["--datapath", "off"])]
    table = {}
    with tempfile.TemporaryDirectory() as tmp:
        net = t.Netns()
        try:
            for tname, args, column in tools:
                for cname, targs in configs:
                    values = []
                    failures = 0
                    while len(values) < a.reps:
                        tracer = None
                        if targs is not None:
                            tracer = t.Tracer(tmp, "-l", t.SOFTVERBS_LIB, "--scan-ms", "0", *targs)
                        try:
                            header, row = run_pair(net, tmp, args)
                        except t.Failure as e:
                            # softverbs over a loaded VM occasionally exhausts its retries
                            # (IBV_WC_RETRY_EXC_ERR); such a run is repeated and counted.
                            failures += 1
                            print(f"{tname} / {cname}: run failed: {str(e).splitlines()[0]}", file=sys.stderr)
                            t.check(failures <= a.reps, f"{tname} / {cname}: {failures} failed runs")
                            continue
                        finally:
                            if tracer:
                                tracer.stop()
                                os.unlink(tracer.path)
                        # perftest's headers contain spaces: match the column by position.
                        names = [h for h in " ".join(header).replace("BW peak", "BW_peak").replace(
                            "BW average", "BW_average").replace("t_min", "t_min").split()]
                        key = column.replace("BW average", "BW_average")
                        values.append(float(row[names.index(key)]))
                    table[(tname, cname)] = (statistics.median(values), min(values), max(values), failures)
                    print(f"{tname} / {cname}: {values}", file=sys.stderr)
        finally:
            for proc in t.SPAWNED:
                if proc.poll() is None:
                    proc.kill()
            net.close()
    print("| perftest (softverbs, two namespaces) | " + " | ".join(c for c, _ in configs) + " |")
    print("|---" * (len(configs) + 1) + "|")
    for tname, _, column in tools:
        cells = [f"{table[(tname, c)][0]:.1f} ({table[(tname, c)][1]:.1f}-{table[(tname, c)][2]:.1f})"
                 + (f" [{table[(tname, c)][3]} failed]" if table[(tname, c)][3] else "") for c, _ in configs]
        print(f"| {tname}: {column} | " + " | ".join(cells) + " |")
    print(f"\nmedian of {a.reps} runs (min-max)")


if __name__ == "__main__":
    sys.exit(main())
