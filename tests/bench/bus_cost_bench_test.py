#!/usr/bin/env python3
"""insert-bus-cost-bench (bench/bus_cost_bench.cpp; suite 'perf'): its figures are the bus's.

    bus_cost_bench_test.py INSERT_BUS_COST_BENCH INSERT_GEN INSERT_DP SOURCE_ROOT

Makes the records the benchmark makes (insert-gen mixed_ops, seed 1, unscaled: small),
runs every benchmark briefly over them and checks each reported count against what
docs/scale-out.md defines, recomputed here independently (tests/nats/bus.py's partition
rule): the copies per record (partition records, at 8 and 64 partitions), the bytes of the
copies' lines per record, and for the batches sealed at 64 KiB the records per batch and
the bytes of their headers (`NATS/1.0`, the seven documented headers with the benchmark's
producer identity - insert-dp.HOST.PID.MS, its PID known here - and the subject). Times
are only checked to be reported (positive): no timed assertion.
"""
import json
import os
import socket
import subprocess
import sys
import tempfile
from collections import defaultdict

BENCH, GEN, DP, SRC = sys.argv[1:5]
sys.path.insert(0, os.path.join(SRC, "tests", "nats"))
import bus  # noqa: E402

SETS = {0: "insert-dp", 1: "insert-trace"}
SCHEMA = "1.3"


def fail(msg):
    print("FAIL:", msg, file=sys.stderr)
    sys.exit(1)


def run(args, **kwargs):
    p = subprocess.run(args, capture_output=True, text=True, timeout=120, **kwargs)
    if p.returncode != 0:
        fail(f"{' '.join(args)}: exit {p.returncode}: {p.stderr.strip()[-2000:]}")
    return p


def header_bytes(producer, partition, seq, records, partitions):
    """A message's headers as NATS writes them, and its subject (docs/scale-out.md)."""
    headers = [("Nats-Msg-Id", f"{producer}:{partition}:{seq}"), ("Insert-Producer", producer),
               ("Insert-Partition", str(partition)), ("Insert-Partitions", str(partitions)),
               ("Insert-Seq", str(seq)), ("Insert-Records", str(records)),
               ("Insert-Schema", SCHEMA)]
    text = "NATS/1.0\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers) + "\r\n"
    return len(text) + len(f"insert.part.{partition}")


def expected(lines, n, producer):
    """Copies, line bytes, and the full batches (sealed by size: docs/scale-out.md
    "Messages") of one producer's lines at n partitions."""
    copies = body = 0
    open_bytes, open_records, seq = defaultdict(int), defaultdict(int), defaultdict(int)
    full = []  # (records, header bytes)

    def seal(k):
        seq[k] += 1
        full.append((open_records[k], header_bytes(producer, k, seq[k], open_records[k], n)))
        open_bytes[k] = open_records[k] = 0

    for line in lines:
        parts = bus.partitions_of(json.loads(line), n)
        size = len(line.encode())
        copies += len(parts)
        body += len(parts) * size
        for k in parts:
            if open_bytes[k] and open_bytes[k] + size > bus.BATCH_BYTES:
                seal(k)
            open_bytes[k] += size
            open_records[k] += 1
            if open_bytes[k] >= bus.BATCH_BYTES:
                seal(k)
    want = {"copies": copies / len(lines), "body_bytes": body / len(lines)}
    if full:
        want["records_per_batch"] = sum(r for r, _ in full) / len(full)
        want["header_bytes_per_batch"] = sum(h for _, h in full) / len(full)
        want["header_bytes"] = want["header_bytes_per_batch"] / want["records_per_batch"] * \
            want["copies"]
    return want


def close(a, b):
    return abs(a - b) <= 1e-9 * max(1.0, abs(b))


def main():
    with tempfile.TemporaryDirectory(prefix="bus-cost-bench-test-") as tmp:
        base = os.path.join(tmp, "mixed_ops")
        run([GEN, "--scenario", "mixed_ops", "--seed", "1", "--quiet", "--out", base + ".pcap",
             "--truth", base + ".truth.json", "--host-traces", base + ".hosts.jsonl"])
        run([DP, "replay", base + ".pcap", "--quiet", "--records", base + ".dp.jsonl"])
        files = {0: base + ".dp.jsonl", 1: base + ".hosts.jsonl"}
        lines = {}
        for s, path in files.items():
            with open(path) as f:
                lines[s] = [line for line in f if line.strip()]
        env = dict(os.environ, INSERT_BUS_BENCH_DP=files[0], INSERT_BUS_BENCH_TRACE=files[1])
        proc = subprocess.Popen([BENCH, "--benchmark_min_time=0.01", "--benchmark_format=json"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=env)
        out, err = proc.communicate(timeout=120)
        if proc.returncode != 0:
            fail(f"the benchmark exited {proc.returncode}: {err.strip()[-2000:]}")
        host = socket.gethostname()
        results = json.loads(out)["benchmarks"]
        seen = set()
        for r in results:
            name = r["name"]  # BM_Route/set:0/partitions:8
            kind, set_arg, parts_arg = name.split("/")[:3]
            s, n = int(set_arg.split(":")[1]), int(parts_arg.split(":")[1])
            seen.add((kind, s, n))
            if r.get("label") != SETS[s]:
                fail(f"{name}: label {r.get('label')}, want {SETS[s]}")
            if not r["time_per_record"] > 0:
                fail(f"{name}: time_per_record {r['time_per_record']}")
            # 13 digits of milliseconds since 1970 until the year 2286.
            producer = f"{SETS[s]}.{host}.{proc.pid}.{'9' * 13}"
            want = expected(lines[s], n, producer)
            keys = ["copies"] if kind == "BM_Route" else list(want)
            for key in keys:
                if key not in r:
                    fail(f"{name}: no {key} reported (want {want[key]})")
                if not close(r[key], want[key]):
                    fail(f"{name}: {key} {r[key]}, want {want[key]}")
            if kind == "BM_RouteAndBatch" and "header_bytes" not in want and "header_bytes" in r:
                fail(f"{name}: header_bytes reported without a full batch")
        want_runs = {(k, s, n) for k in ("BM_Route", "BM_RouteAndBatch") for s in SETS
                     for n in (8, 64)}
        if seen != want_runs:
            fail(f"benchmarks run: {sorted(seen)}, want {sorted(want_runs)}")
        # The control plane goes to every partition: more partitions, more copies.
        by = {(r["name"].split("/")[0], r["name"].split("/")[1]): r for r in results
              if r["name"].endswith("partitions:64")}
        if not by[("BM_Route", "set:1")]["copies"] > 1:
            fail("insert-trace's records at 64 partitions: no control-plane copies")
    print("ok")


main()
